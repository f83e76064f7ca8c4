// Saving: one request at a time per form (and for the comment and flags), always the newest values, every outcome
// shown in the form and summed up in the header: saved, saving, retrying with back-off (at once when back online),
// waiting for sign-in (the change is kept and sent again once signed in), refused, stale (the newer value shown), or
// locked (the item no longer takes changes: the value it keeps shown); an edit still being typed (a count whose field
// was not left, a comment within its typing pause) is on the page only, and said so until it is sent. Also the
// header's progress and the warning on leaving with unsaved changes (an edit still being typed is sent then; a change
// refused as stale or locked warns until its message is dismissed or the change made again), and telling the page's
// other tabs in this browser of each save, which they show at once where they have no edit of their own.
import {
  button, closeDialog, coder, editable, forms, globalState, maxCount, note, openRelogin, page, relogin, renewToken,
  token,
} from "./page.js";
import { applyNewer } from "./values.js";

const MAX_BACKOFF_MS = 30000;
const NOTE_TYPING_PAUSE_MS = 1200;
const EDITING = "Editing… not saved yet";

let authPaused = false;
let signInsWithoutSuccess = 0;
let signIns = 0; // each sign-in in the dialog: a save sent before the last one went with the ended session
let renewing = null; // the token being fetched afresh after a 403
let noteTyping = null; // the comment's typing pause: the comment is sent at its end (or when the field is left)

export function saveables() { return note ? forms.concat([note]) : forms; }

function clientProblem(form) {
  const count = form.elements.instance_count;
  if (!count) return null;
  const raw = count.value.trim();
  if (count.validity.badInput || (raw !== "" && (!/^\d+$/.test(raw) || Number(raw) > maxCount))) {
    return form.dataset.code + ": instance count must be a whole number from 0 to " + maxCount;
  }
  return null;
}

// A form's save queue. sent: the values of the last save sent, sentAfter: the sign-ins by then; unanswered: the
// values of the saves left without an answer since the last one answered (no connection, a 5xx), each of which may
// have been written all the same; renewed: sent again on a renewed token after a 403, and refused again since.
export function newQueue() {
  return {
    dirty: false, inflight: false, retries: 0, timer: null, sent: null, sentAfter: 0, unanswered: [], renewed: false,
  };
}

export function requestSave(form) {
  window.clearTimeout(form.q.timer);
  form.q.timer = null;
  form.q.retries = 0;
  form.q.dirty = true;
  pump(form);
  // An edit typed and now sent (or waiting for the save on its way) is no longer said to be on the page only.
  drawState(form);
  updateGlobal();
}

function bodyOf(form) {
  // URL-encoded, not multipart: the server reads such a body for a fraction of a multipart one's CPU.
  const data = new URLSearchParams();
  data.append("coder", coder);
  if (form === note) {
    data.append("comment", form.elements.comment.value);
    form.querySelectorAll('input[name="flags"]:checked').forEach(function (box) { data.append("flags", box.value); });
    data.append("base_comment", note.base.comment);
    note.base.flags.forEach(function (flag) { data.append("base_flags", flag); });
    return data;
  }
  data.append("form_id", form.id);
  data.append("attribute", form.dataset.code);
  if (form.dataset.response) data.append("response", form.dataset.response);
  data.append("version", form.dataset.version || "0");
  const checked = form.querySelector('input[name="score"]:checked');
  data.append("score", checked ? checked.value : "");
  if (form.elements.instance_count) data.append("instance_count", form.elements.instance_count.value.trim());
  if (form.classList.contains("has-spans")) data.append("spans", JSON.stringify(form.spans));
  return data;
}

function pump(form) {
  if (!form.q.dirty || form.q.inflight || form.q.timer) return;
  // Checked when the values are about to be sent, not when they changed: the answer to an earlier save still on its
  // way (saved, or failed and retried) then never covers a refusal with "Saved", nor sends the refused value.
  const problem = form === note ? null : clientProblem(form);
  if (problem) {
    form.q.dirty = false;
    setState(form, "refused", "Not saved: " + problem);
    return;
  }
  if (authPaused) { setState(form, "auth", "Not saved yet: sign in again"); openRelogin(); return; }
  form.q.dirty = false;
  form.q.inflight = true;
  form.q.sent = bodyOf(form);
  form.q.sentAfter = signIns;
  setState(form, "saving", "Saving…");
  fetch(form === note ? note.dataset.url : page.dataset.saveUrl, {
    method: "POST", body: form.q.sent, credentials: "same-origin", redirect: "manual",
    headers: { "X-CSRFToken": token(), "HX-Request": "true" },
  }).then(function (response) {
    // A redirect (to the login page) means the session is gone, like a 401.
    const status = response.type === "opaqueredirect" ? 401 : response.status;
    return response.text().then(function (text) { return { status: status, text: text }; });
  }).catch(function () {
    return { status: 0, text: "" };
  }).then(function (answer) {
    form.q.inflight = false;
    handle(form, answer.status, answer.text);
  });
}

// Whether a save's values (its body) are the judgment a stale answer shows: score, instance count and spans.
function sameAsResult(form, body, result) {
  const spans = function (list) {
    return list.map(function (s) { return s.start + " " + s.end + " " + s.subcategory; }).sort().join(",");
  };
  return body.get("score") === result.dataset.score
    && (!form.elements.instance_count || body.get("instance_count") === result.dataset.count)
    && (!form.classList.contains("has-spans")
      || spans(JSON.parse(body.get("spans"))) === spans(JSON.parse(result.dataset.spans || "[]")));
}

function resultOf(text) {
  const holder = document.createElement("template");
  holder.innerHTML = text;
  return holder.content.querySelector(".state");
}

// A 403 is the CSRF check's (a change the server refuses is a 422): the token changed at a sign-in in another tab,
// the session the page's account's all the same. The change is sent again once on the token the server has now (the
// form's queue held meanwhile), and only a second 403 asks to sign in.
function renewThenSend(form) {
  form.q.renewed = true;
  form.q.dirty = true;
  form.q.inflight = true;
  if (!renewing) renewing = renewToken().catch(function () {}).then(function () { renewing = null; });
  renewing.then(function () { form.q.inflight = false; pump(form); });
}

function handle(form, status, text) {
  if (status === 403 && !form.q.renewed) { renewThenSend(form); return; }
  if (status !== 403) form.q.renewed = false;
  if (status === 401 || status === 403) {
    form.q.dirty = true; // kept, and sent again once signed in
    // Sent before the sign-in that has happened since (its answer came late): sent again, no new sign-in asked for.
    if (form.q.sentAfter < signIns) { pump(form); return; }
    if (signInsWithoutSuccess >= 2) {
      form.q.dirty = false;
      setState(form, "refused", "Not saved: the server refused it (" + status + ") even after signing in");
      return;
    }
    authPaused = true;
    setState(form, "auth", "Not saved yet: sign in again");
    // A 401's plain text says why (ended, or another account's session); a redirect or a 403 has none to show.
    openRelogin(status === 401 && !text.trimStart().startsWith("<") ? text.trim() : "");
    return;
  }
  if (status === 0 || status >= 500 || status === 429) {
    if (status !== 429) form.q.unanswered.push(form.q.sent);
    form.q.dirty = true;
    const attempt = ++form.q.retries;
    const delay = Math.min(MAX_BACKOFF_MS, 1000 * Math.pow(2, attempt - 1));
    setState(form, "failed", "Not saved: " + (status ? "server error " + status : "no connection") + " (" + attempt +
      (attempt === 1 ? " try" : " tries") + ") — retrying in " + Math.round(delay / 1000) + " s");
    form.q.timer = window.setTimeout(function () { form.q.timer = null; pump(form); }, delay);
    return;
  }
  const result = resultOf(text);
  const state = result ? result.dataset.state : null;
  const unanswered = form.q.unanswered;
  form.q.unanswered = [];
  if (status === 200 && state === "saved") {
    signInsWithoutSuccess = 0;
    form.q.retries = 0;
    if (form === note) note.base = noteOf(form.q.sent);
    if (result.dataset.version) form.dataset.version = result.dataset.version;
    if (result.dataset.score !== undefined) form.savedScore = result.dataset.score;
    tellOtherTabs(form, result);
    // The save took a completed turn out of the completed ones (js/turn/complete.js shows what it wants again).
    if (result.dataset.reopened) {
      document.dispatchEvent(new CustomEvent("turn:reopened", { detail: JSON.parse(result.dataset.reopened) }));
    }
    if (form.q.dirty) { pump(form); return; }
    setState(form, "saved", "Saved");
    return;
  }
  if (form === note && status === 409 && state === "stale") { noteStale(result, unanswered); return; }
  if (status === 409 && state === "stale" && (sameAsResult(form, bodyOf(form), result)
      || sameAsResult(form, form.q.sent, result)
      || unanswered.some(function (b) { return sameAsResult(form, b, result); }))) {
    // The newer value is this page's own save whose answer was lost, the very value this save sent or the page
    // shows (another tab or device saved the same): taken as saved, and the newest values (if they changed since)
    // sent on its version; never shown as another tab's change, a later change never dropped.
    form.dataset.version = result.dataset.version;
    form.savedScore = result.dataset.score;
    if (!sameAsResult(form, bodyOf(form), result)) form.q.dirty = true;
    if (form.q.dirty) { pump(form); return; }
    setState(form, "saved", "Saved");
    return;
  }
  if (status === 409 && state === "stale") {
    form.q.dirty = false; // the change was made on an older value: shown as not saved, the newer value shown
    form.dataset.version = result.dataset.version;
    const yours = replaceWithNewer(form, result);
    setState(form, "stale", result.textContent + yours);
    return;
  }
  if (state === "locked") {
    // The item no longer takes changes (its round closed, feedback locked it): a newer change would be refused the
    // same way, so none is sent; the form shows the judgment as it stays, and a change made again after a reopening
    // is a change the page sends (the refused value shown would have been one the reviewer could not pick again).
    form.q.dirty = false;
    form.dataset.version = result.dataset.version;
    const yours = replaceWithNewer(form, result);
    setState(form, "locked", result.textContent + yours);
    return;
  }
  if (form.q.dirty) { pump(form); return; } // a newer change is waiting: it may well be accepted
  let message = result ? result.textContent : "Not saved: refused by the server (" + status + ")";
  if (!result && status === 404) message = "Not saved: this item is no longer yours to code (404)";
  setState(form, "refused", message);
}

// The server's value put in the form in place of what it showed (a save refused as stale or locked). An instance count
// typed meanwhile, its field not left (nothing sent for it yet), is replaced in the field and said in the message
// (returned), as a comment typed in its typing pause is: what the reviewer typed never vanishes without a word.
function replaceWithNewer(form, result) {
  const count = form.elements.instance_count;
  const typedCount = typing(form) ? count.value.trim() : "";
  applyNewer(form, result);
  return typedCount && typedCount !== count.value ? " (your instance count was: “" + typedCount + "”)" : "";
}

// The note (comment and flags) in a save's body, or as the page holds it; two compared as the server stores them.
function noteOf(body) { return { comment: body.get("comment"), flags: body.getAll("flags") }; }

function sameNote(a, b) {
  return a.comment.trim() === b.comment.trim() && a.flags.slice().sort().join(" ") === b.flags.slice().sort().join(" ");
}

// The note changed since the page had it (another tab or device): refused, the newer note shown, and the comment
// typed and the flags ticked here said in the message (the fields now hold the newer ones). Unless the newer note is this page's own save
// whose answer was lost, or the note the page shows: then taken as saved, and the newest values (if they changed
// since) sent on it.
function noteStale(result, unanswered) {
  const newer = { comment: result.dataset.comment, flags: result.dataset.flags ? result.dataset.flags.split(" ") : [] };
  note.base = newer;
  const own = function (body) { return sameNote(noteOf(body), newer); };
  if (own(bodyOf(note)) || unanswered.some(own)) {
    if (!sameNote(noteOf(bodyOf(note)), newer)) note.q.dirty = true;
    if (note.q.dirty) { pump(note); return; }
    setState(note, "saved", "Saved");
    return;
  }
  note.q.dirty = false;
  // A comment typed meanwhile, its typing pause not over, is the one quoted below and replaced in the field: the
  // pause's end sends nothing (it sent the newer note, unchanged, and "Saved" took the quote's place).
  window.clearTimeout(noteTyping);
  noteTyping = null;
  const typed = note.elements.comment.value.trim();
  const boxes = Array.from(note.querySelectorAll('input[name="flags"]'));
  const ticked = boxes.filter(function (box) { return box.checked; });
  const flagsChanged = ticked.map(function (box) { return box.value; }).sort().join(" ") !== newer.flags.slice().sort()
    .join(" ");
  note.elements.comment.value = newer.comment;
  boxes.forEach(function (box) { box.checked = newer.flags.includes(box.value); });
  // What this page had of the note and the newer one replaced, said: the comment typed, and the flags ticked (by
  // their labels; "none" when every flag was unticked here).
  const yours = [];
  if (typed && typed !== newer.comment.trim()) yours.push("your comment was: “" + typed + "”");
  if (flagsChanged) {
    yours.push("your flags were: " + (ticked.map(function (box) { return box.parentElement.textContent.trim(); })
      .join(", ") || "none"));
  }
  setState(note, "stale", result.textContent + (yours.length ? " (" + yours.join("; ") + ")" : ""));
}

// Signed in again (relogin.js), or told so ("save again" after signing in in another tab): the kept changes are
// sent. Only a sign-in made here counts towards giving up: "save again" clicked before the other tab's sign-in was
// done is asked again as often as it is clicked, the changes kept.
export function resumeAfterSignIn(signedIn) {
  if (signedIn) signInsWithoutSuccess++;
  signIns++;
  authPaused = false;
  closeDialog(relogin);
  saveables().forEach(function (f) {
    if (f.dataset.state === "auth") f.q.dirty = true;
    pump(f);
  });
  updateGlobal();
}

// Whether a form shows a change the server does not have: on its way, kept to be sent again, or refused (until it is
// put right, cleared or undone); or a change refused as stale or locked, the server's value shown in its place,
// whose message the reviewer has not yet dismissed (the change is lost unless made again: the message stays until
// dismissed or that attribute, or the note, is changed again). Completing waits for them; leaving the page warns.
export function unsaved(form) {
  return form.q.dirty || form.q.inflight || form.q.timer
    || ["failed", "auth", "refused", "stale", "locked"].includes(form.dataset.state);
}

// An edit on the page only, not sent yet: an instance count typed whose field was not left (its change event, on
// leaving the field, saves it; typed back to the value it had, there is nothing to save), or a comment within its
// typing pause. Nothing is sent for it before then (a save for each key typed would make a version of each).
function typing(form) {
  if (form === note) return noteTyping !== null;
  const count = form.elements.instance_count;
  return Boolean(count && form.current && (count.value !== form.current.count || count.validity.badInput));
}

// ---- states, in the form and in the header ----------------------------------------------------------------------
// form.dataset.state is the save queue's; what the form shows is that, except that an edit still being typed is said
// over "Saved", "Saving…" (a save of the values before it) and no state at all. A state that already says the form
// holds a change not saved (failed, waiting for sign-in, refused, stale, locked) stays as it is until the edit is sent.
function shownState(form) {
  const state = form.dataset.state;
  return typing(form) && (!state || state === "saved" || state === "saving") ? "editing" : state;
}

export function showState(form, state, text) {
  form.dataset.state = state;
  form.stateText = text;
  drawState(form);
}

function drawState(form) {
  const state = shownState(form);
  const holder = form.querySelector(".save");
  if (!state) { holder.replaceChildren(); return; }
  const span = document.createElement("span");
  span.className = "state state-" + state;
  span.dataset.state = state;
  span.textContent = state === form.dataset.state ? form.stateText : EDITING;
  if (state === "stale" || state === "locked") {
    const dismiss = button("link dismiss", "Dismiss");
    dismiss.addEventListener("click", function () { dismissRefusal(form); });
    span.append(" ", dismiss);
  }
  holder.replaceChildren(span);
}

// A change refused as stale or locked, its message dismissed: the form shows what the server has (the change made
// here is not saved), as it did when the page was loaded, and leaving the page no longer asks for it.
function dismissRefusal(form) {
  (form === note ? note.elements.comment : form).focus({ preventScroll: true });
  setState(form, form === note || form.savedScore !== "" ? "saved" : "", "Saved");
}

// An edit typed (or typed back to the saved value): the form and the header say whether it is on the page only.
export function typed(form) {
  drawState(form);
  updateGlobal();
}

function setState(form, state, text) {
  showState(form, state, text);
  updateGlobal();
}

export function updateGlobal() {
  const counts = { auth: 0, refused: 0, stale: 0, locked: 0, failed: 0, editing: 0, saving: 0 };
  saveables().forEach(function (f) {
    let state = f.q ? shownState(f) : f.dataset.state;
    if (state === "saved" && f.q && (f.q.dirty || f.q.inflight)) state = "saving";
    if (state in counts) counts[state]++;
  });
  let text = "All changes saved";
  let state = "saved";
  const notSaved = counts.refused + counts.stale + counts.locked;
  if (counts.auth) {
    text = counts.auth + " change(s) waiting: sign in again to save them"; state = "auth";
  } else if (notSaved) {
    text = notSaved + " change(s) not saved — see the red messages"; state = "error";
  } else if (counts.failed) {
    const tries = Math.max.apply(null, saveables().map(function (f) { return f.q ? f.q.retries : 0; }));
    text = counts.failed + " change(s) not saved yet — retrying (" + tries + (tries === 1 ? " try" : " tries") + ")";
    state = "failed";
  } else if (counts.editing) {
    text = EDITING; state = "editing";
  } else if (counts.saving) {
    text = "Saving…"; state = "saving";
  }
  globalState.textContent = text;
  globalState.dataset.state = state;
  updateProgress();
}

function updateProgress() {
  const scored = function (f) { return f.savedScore !== "" && f.savedScore !== undefined; };
  const progress = document.getElementById("turn-progress");
  progress.textContent = forms.filter(scored).length + " / " + progress.dataset.total + " scored";
  document.querySelectorAll(".response-card").forEach(function (card) {
    const own = forms.filter(function (f) { return f.dataset.response === card.dataset.response; });
    const holder = card.querySelector(".unit-progress");
    holder.textContent = own.filter(scored).length + " / " + holder.dataset.total + " scored";
  });
}

// ---- other tabs of the same page -----------------------------------------------------------------------------
// Tabs of one coding page (one item, one account) in one browser tell each other of each save that lands
// (BroadcastChannel): the other tab shows the newer value at once, on its version, where that attribute (or the note)
// has no edit of its own there: nothing on its way, kept or being typed, no refusal shown, its field not focused.
// Where it has one, the newer value is met as a tab of another browser meets it: its next save is refused as stale.
let tabs = null;

function tellOtherTabs(form, result) {
  if (!tabs) return;
  if (form === note) { tabs.postMessage({ note: note.base }); return; }
  tabs.postMessage({
    form: form.id, version: result.dataset.version, score: result.dataset.score, count: result.dataset.count,
    spans: form.classList.contains("has-spans") ? form.q.sent.get("spans") : undefined,
  });
}

function quiet(form) {
  const state = form.dataset.state;
  const field = form === note ? form.elements.comment : form.elements.instance_count;
  return !form.q.dirty && !form.q.inflight && !form.q.timer && !typing(form) && (!state || state === "saved")
    && !(field && document.activeElement === field);
}

function savedInAnotherTab(data) {
  if (data.note) {
    if (!note || !quiet(note) || !sameNote(noteOf(bodyOf(note)), note.base)) return;
    note.base = data.note;
    note.elements.comment.value = data.note.comment;
    note.querySelectorAll('input[name="flags"]').forEach(function (box) {
      box.checked = data.note.flags.includes(box.value);
    });
    setState(note, "saved", "Saved in another tab");
    return;
  }
  const form = document.getElementById(data.form);
  if (!form || !form.q || Number(data.version) <= Number(form.dataset.version || 0) || !quiet(form)) return;
  form.dataset.version = data.version;
  applyNewer(form, { dataset: { score: data.score, count: data.count, spans: data.spans } });
  setState(form, "saved", "Saved in another tab");
}

// ---- starting: the warning on leaving, and the comment and flags (saved as the forms are) ------------------------

// Nothing of the note to send: none on its way or kept, its state none or "Saved", and the comment and flags the ones
// the server has (a comment typed back to its saved text, within its typing pause). Sent all the same, such a save
// would change nothing, or, the note changed in another tab since, be refused as stale: "not saved" for no change.
function noteUnchanged() {
  const state = note.dataset.state;
  return !note.q.dirty && !note.q.inflight && !note.q.timer && (!state || state === "saved")
    && sameNote(noteOf(bodyOf(note)), note.base);
}

function saveNote() {
  window.clearTimeout(noteTyping);
  noteTyping = null;
  if (noteUnchanged()) { typed(note); return; }
  requestSave(note);
}

// An edit still being typed, sent now: an instance count whose field was not left yet (its change event comes on
// leaving the field) and a comment within its typing pause. Closing the tab or going back leaves neither field.
function sendTyped() {
  if (!editable) return;
  forms.forEach(function (f) {
    if (typing(f)) f.elements.instance_count.dispatchEvent(new Event("change", { bubbles: true }));
  });
  if (note && noteTyping !== null) saveNote();
}

export function startSaving() {
  if (editable && "BroadcastChannel" in window) {
    tabs = new BroadcastChannel("cab-turn " + coder + " " + page.dataset.saveUrl);
    tabs.addEventListener("message", function (event) { savedInAnotherTab(event.data); });
  }
  window.addEventListener("beforeunload", function (event) {
    sendTyped();
    if (saveables().some(unsaved)) { event.preventDefault(); event.returnValue = ""; }
  });
  // Back online: the changes waiting for their next try are sent now, not at the end of their back-off.
  window.addEventListener("online", function () {
    saveables().forEach(function (f) {
      if (!f.q || f.q.timer === null) return;
      window.clearTimeout(f.q.timer);
      f.q.timer = null;
      pump(f);
    });
  });
  if (!note) return;
  note.q = newQueue();
  // The note as the server sent it (the HTML's, not what the browser may have put back in the fields).
  note.base = {
    comment: note.elements.comment.defaultValue,
    flags: Array.from(note.querySelectorAll('input[name="flags"]')).filter(function (box) {
      return box.defaultChecked;
    }).map(function (box) { return box.value; }),
  };
  note.addEventListener("submit", function (event) { event.preventDefault(); });
  if (editable) {
    note.addEventListener("change", saveNote);
    note.elements.comment.addEventListener("input", function () {
      window.clearTimeout(noteTyping);
      // Typed back to the note the server has: no longer an edit on the page only, and nothing to send.
      noteTyping = noteUnchanged() ? null : window.setTimeout(saveNote, NOTE_TYPING_PAUSE_MS);
      typed(note);
    });
  }
}
