// The turn page: builds each attribute's form from its <template> (sent once per page), saves every change with
// a visible state (retries with back-off, sign-in again without losing anything, refusals said in place), undo and
// redo, span highlighting (character offsets = Unicode code points, as Python counts them), keyboard control and
// time on task. Completing the turn is an htmx request.
(function () {
  "use strict";

  const MAX_BACKOFF_MS = 30000;
  const IDLE_AFTER_MS = 60000;
  const TIME_REPORT_EVERY_S = 15;
  const NOTE_TYPING_PAUSE_MS = 1200;
  const UNDO_LIMIT = 200;

  const page = document.querySelector(".turn-page");
  if (!page) return;
  const editable = page.dataset.editable === "true";
  const maxCount = Number(page.dataset.maxCount);
  let csrfToken = JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
  const palette = document.getElementById("palette");
  const popover = document.getElementById("span-popover");
  const keysHelp = document.getElementById("keys-help");
  const relogin = document.getElementById("relogin");
  const globalState = document.getElementById("global-state");
  const completeResult = document.getElementById("complete-result");
  const note = document.getElementById("item-note");

  const subcategories = {};
  document.querySelectorAll("#palette button.sub, #subcategory-names span").forEach(function (el) {
    subcategories[el.dataset.sub] = { code: el.dataset.code, name: el.textContent.trim() };
  });
  function subName(slug) { return (subcategories[slug] || {}).name || slug; }

  // ---- building the forms -------------------------------------------------------------------------------------
  const templates = {};
  document.querySelectorAll("#attribute-templates template").forEach(function (t) { templates[t.dataset.code] = t; });
  const forms = Array.from(document.querySelectorAll("form.attr"));

  function parseCompact(text) {
    return text ? text.split(",").map(function (item) {
      const parts = item.split(" ");
      return { start: Number(parts[0]), end: Number(parts[1]), subcategory: parts[2] };
    }) : [];
  }

  function button(className, text, label) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = className;
    b.textContent = text;
    if (label) b.setAttribute("aria-label", label);
    return b;
  }

  function buildForm(form) {
    const card = form.closest(".response-card");
    if (card) form.dataset.response = card.dataset.response;
    form.appendChild(templates[form.dataset.code].content.cloneNode(true));
    const title = form.dataset.code + " " + form.querySelector(".name").textContent;
    form.setAttribute("aria-label", (card ? card.querySelector(".label").textContent + ": " : "") + title);
    form.tabIndex = -1;
    form.spans = parseCompact(form.dataset.spans || "");
    const score = form.dataset.score;
    form.querySelectorAll('input[name="score"]').forEach(function (radio) {
      radio.checked = radio.value === score;
      radio.disabled = !editable;
    });
    const count = form.elements.instance_count;
    if (count) {
      count.max = String(maxCount);
      count.disabled = !editable;
      if (form.dataset.count !== undefined) { count.value = form.dataset.count; count.dataset.manual = form.dataset.count; }
      count.setAttribute("aria-label", "instance count of " + title);
      count.addEventListener("input", function () { count.dataset.manual = count.value; });
    }
    const help = button("help-toggle", "?", "Definition of " + title);
    help.setAttribute("aria-expanded", "false");
    form.querySelector(".name").after(help);
    help.addEventListener("click", function () { toggleDefinition(form); });
    if (editable) {
      const clear = button("link clear", "Clear", "Clear the score of " + title);
      form.querySelector(".save").before(clear);
      clear.addEventListener("click", function () { clearScore(form); });
      form.addEventListener("change", function (event) {
        if (event.target.name === "score" || event.target.name === "instance_count") changed(form);
      });
    }
    form.querySelector(".save").setAttribute("aria-live", "polite");
    form.addEventListener("submit", function (event) { event.preventDefault(); });
    form.savedScore = score === undefined ? "" : score;
    form.current = snapshot(form);
    form.q = { dirty: false, inflight: false, retries: 0, timer: null };
    if (form.savedScore !== "") showState(form, "saved", "Saved");
  }

  function toggleDefinition(form) {
    let definition = form.querySelector(".definition");
    if (!definition) {
      definition = document.createElement("div");
      definition.className = "definition";
      definition.hidden = true;
      const source = document.querySelector('#definitions [data-code="' + form.dataset.code + '"]');
      definition.append(...Array.from(source.childNodes).map(function (n) { return n.cloneNode(true); }));
      form.appendChild(definition);
    }
    definition.hidden = !definition.hidden;
    form.querySelector(".help-toggle").setAttribute("aria-expanded", String(!definition.hidden));
  }

  // ---- what a form holds, undo and redo ---------------------------------------------------------------------------
  function snapshot(form) {
    const checked = form.querySelector('input[name="score"]:checked');
    const count = form.elements.instance_count;
    return {
      score: checked ? checked.value : "",
      count: count ? count.value : null,
      manual: count ? count.dataset.manual : undefined,
      spans: JSON.stringify(form.spans || []),
    };
  }

  function same(a, b) { return a.score === b.score && a.count === b.count && a.spans === b.spans; }

  function applySnapshot(form, snap) {
    form.querySelectorAll('input[name="score"]').forEach(function (radio) { radio.checked = radio.value === snap.score; });
    const count = form.elements.instance_count;
    if (count) {
      count.value = snap.count;
      if (snap.manual === undefined) delete count.dataset.manual; else count.dataset.manual = snap.manual;
    }
    form.spans = JSON.parse(snap.spans);
    form.current = snapshot(form);
    if (form.classList.contains("has-spans")) render(form.dataset.response);
  }

  const undoStack = [];
  const redoStack = [];

  function changed(form) {
    const after = snapshot(form);
    if (!same(after, form.current)) {
      undoStack.push({ form: form, before: form.current, after: after });
      if (undoStack.length > UNDO_LIMIT) undoStack.shift();
      redoStack.length = 0;
      form.current = after;
    }
    requestSave(form);
  }

  function undoRedo(from, to, which) {
    const entry = from.pop();
    if (!entry) return;
    applySnapshot(entry.form, entry[which]);
    to.push(entry);
    requestSave(entry.form);
    focusForm(entry.form);
  }

  function clearScore(form) {
    form.querySelectorAll('input[name="score"]').forEach(function (radio) { radio.checked = false; });
    const count = form.elements.instance_count;
    if (count) { count.value = ""; delete count.dataset.manual; }
    changed(form);
  }

  // ---- saving: one request at a time per form, the newest values, every outcome shown ----------------------------
  let authPaused = false;
  let signInsWithoutSuccess = 0;

  function saveables() { return note ? forms.concat([note]) : forms; }

  function clientProblem(form) {
    const count = form.elements.instance_count;
    if (!count) return null;
    const raw = count.value.trim();
    if (count.validity.badInput || (raw !== "" && (!/^\d+$/.test(raw) || Number(raw) > maxCount))) {
      return form.dataset.code + ": instance count must be a whole number from 0 to " + maxCount;
    }
    return null;
  }

  function requestSave(form) {
    window.clearTimeout(form.q.timer);
    form.q.timer = null;
    form.q.retries = 0;
    const problem = form === note ? null : clientProblem(form);
    if (problem) {
      form.q.dirty = false;
      setState(form, "refused", "Not saved: " + problem);
      return;
    }
    form.q.dirty = true;
    pump(form);
  }

  function bodyOf(form) {
    // URL-encoded, not multipart: the server reads such a body for a fraction of a multipart one's CPU.
    const data = new URLSearchParams();
    if (form === note) {
      data.append("comment", form.elements.comment.value);
      form.querySelectorAll('input[name="flags"]:checked').forEach(function (box) { data.append("flags", box.value); });
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
    if (authPaused) { setState(form, "auth", "Not saved yet: sign in again"); openRelogin(); return; }
    form.q.dirty = false;
    form.q.inflight = true;
    setState(form, "saving", "Saving…");
    fetch(form === note ? note.dataset.url : page.dataset.saveUrl, {
      method: "POST", body: bodyOf(form), credentials: "same-origin", redirect: "manual",
      headers: { "X-CSRFToken": csrfToken, "HX-Request": "true" },
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

  function resultOf(text) {
    const holder = document.createElement("template");
    holder.innerHTML = text;
    return holder.content.querySelector(".state");
  }

  function handle(form, status, text) {
    if (status === 401 || status === 403) {
      form.q.dirty = true; // kept, and sent again once signed in
      if (signInsWithoutSuccess >= 2) {
        form.q.dirty = false;
        setState(form, "refused", "Not saved: the server refused it (" + status + ") even after signing in");
        return;
      }
      authPaused = true;
      setState(form, "auth", "Not saved yet: sign in again");
      openRelogin();
      return;
    }
    if (status === 0 || status >= 500 || status === 429) {
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
    if (status === 200 && state === "saved") {
      signInsWithoutSuccess = 0;
      form.q.retries = 0;
      if (result.dataset.version) form.dataset.version = result.dataset.version;
      if (result.dataset.score !== undefined) form.savedScore = result.dataset.score;
      if (form.q.dirty) { pump(form); return; }
      setState(form, "saved", "Saved");
      return;
    }
    if (status === 409 && state === "stale") {
      form.q.dirty = false; // the change was made on an older value: shown as not saved, the newer value shown
      form.dataset.version = result.dataset.version;
      applyNewer(form, result);
      setState(form, "stale", result.textContent);
      return;
    }
    if (form.q.dirty) { pump(form); return; } // a newer change is waiting: it may well be accepted
    let message = result ? result.textContent : "Not saved: refused by the server (" + status + ")";
    if (!result && status === 404) message = "Not saved: this item is no longer yours to code (404)";
    setState(form, "refused", message);
  }

  function applyNewer(form, result) {
    form.querySelectorAll('input[name="score"]').forEach(function (radio) {
      radio.checked = radio.value === result.dataset.score;
    });
    form.savedScore = result.dataset.score || "";
    const count = form.elements.instance_count;
    if (count) {
      count.value = result.dataset.count;
      if (result.dataset.count !== "") count.dataset.manual = result.dataset.count; else delete count.dataset.manual;
    }
    if (form.classList.contains("has-spans")) {
      form.spans = result.dataset.spans !== undefined ? JSON.parse(result.dataset.spans) : [];
      render(form.dataset.response);
    }
    form.current = snapshot(form);
  }

  function showState(form, state, text) {
    form.dataset.state = state;
    const span = document.createElement("span");
    span.className = "state state-" + state;
    span.dataset.state = state;
    span.textContent = text;
    form.querySelector(".save").replaceChildren(span);
  }

  function setState(form, state, text) {
    showState(form, state, text);
    updateGlobal();
  }

  function updateGlobal() {
    const counts = { auth: 0, refused: 0, stale: 0, failed: 0, saving: 0 };
    saveables().forEach(function (f) {
      let state = f.dataset.state;
      if (state === "saved" && f.q && (f.q.dirty || f.q.inflight)) state = "saving";
      if (state in counts) counts[state]++;
    });
    let text = "All changes saved";
    let state = "saved";
    const notSaved = counts.refused + counts.stale;
    if (counts.auth) {
      text = counts.auth + " change(s) waiting: sign in again to save them"; state = "auth";
    } else if (notSaved) {
      text = notSaved + " change(s) not saved — see the red messages"; state = "error";
    } else if (counts.failed) {
      const tries = Math.max.apply(null, saveables().map(function (f) { return f.q ? f.q.retries : 0; }));
      text = counts.failed + " change(s) not saved yet — retrying (" + tries + (tries === 1 ? " try" : " tries") + ")";
      state = "failed";
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

  window.addEventListener("beforeunload", function (event) {
    const waiting = saveables().some(function (f) {
      return f.q && (f.q.dirty || f.q.inflight || f.dataset.state === "failed" || f.dataset.state === "auth");
    });
    if (waiting) { event.preventDefault(); event.returnValue = ""; }
  });

  // ---- comment and flags --------------------------------------------------------------------------------------
  if (note) {
    note.q = { dirty: false, inflight: false, retries: 0, timer: null };
    note.addEventListener("submit", function (event) { event.preventDefault(); });
    if (editable) {
      let typing = null;
      note.addEventListener("change", function () { window.clearTimeout(typing); requestSave(note); });
      note.elements.comment.addEventListener("input", function () {
        window.clearTimeout(typing);
        typing = window.setTimeout(function () { requestSave(note); }, NOTE_TYPING_PAUSE_MS);
      });
    }
  }

  // ---- signing in again ---------------------------------------------------------------------------------------
  let dialogOpener = null;

  function openDialog(dialog, focusTarget) {
    if (!dialog.hidden) return;
    dialogOpener = document.activeElement;
    dialog.hidden = false;
    focusTarget.focus();
  }

  function closeDialog(dialog) {
    if (dialog.hidden) return;
    dialog.hidden = true;
    if (dialogOpener && document.contains(dialogOpener)) dialogOpener.focus();
    dialogOpener = null;
  }

  function openRelogin() {
    document.getElementById("relogin-error").textContent = "";
    openDialog(relogin, document.getElementById("relogin-password"));
  }

  function freshToken(url) {
    return fetch(url, { credentials: "same-origin" }).then(function (r) { return r.text(); }).then(function (html) {
      const doc = new DOMParser().parseFromString(html, "text/html");
      const input = doc.querySelector('input[name="csrfmiddlewaretoken"]');
      if (input) return input.value;
      return JSON.parse(doc.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
    });
  }

  function resumeSaving() {
    // The token changes at sign-in: take the page's new one, for our saves and for htmx's.
    return freshToken(window.location.href).then(function (token) {
      if (token) {
        csrfToken = token;
        document.body.setAttribute("hx-headers", JSON.stringify({ "X-CSRFToken": token }));
      }
      signInsWithoutSuccess++;
      authPaused = false;
      closeDialog(relogin);
      saveables().forEach(function (f) {
        if (f.dataset.state === "auth") f.q.dirty = true;
        pump(f);
      });
      updateGlobal();
    });
  }

  document.getElementById("relogin-form").addEventListener("submit", function (event) {
    event.preventDefault();
    const error = document.getElementById("relogin-error");
    const loginUrl = page.dataset.loginUrl;
    error.textContent = "Signing in…";
    freshToken(loginUrl).then(function (token) {
      const body = new FormData();
      body.append("csrfmiddlewaretoken", token);
      body.append("username", document.getElementById("relogin-username").value);
      body.append("password", document.getElementById("relogin-password").value);
      return fetch(loginUrl, { method: "POST", body: body, credentials: "same-origin", redirect: "manual" });
    }).then(function (response) {
      if (response.type === "opaqueredirect") {
        document.getElementById("relogin-password").value = "";
        error.textContent = "";
        return resumeSaving();
      }
      error.textContent = response.status === 429 ? "Too many failed attempts: sign-in is locked for a while."
        : "That username and password did not match. Please try again.";
      document.getElementById("relogin-password").focus();
      return null;
    }).catch(function () {
      error.textContent = "No connection to the server: try again in a moment.";
    });
  });
  document.getElementById("relogin-retry").addEventListener("click", function () { resumeSaving(); });

  // ---- text and offsets -----------------------------------------------------------------------------------
  // A response is known here only by its handle (data-response): opaque, per reviewer, never its database id.
  const texts = {};
  document.querySelectorAll(".response-text").forEach(function (el) {
    texts[el.dataset.response] = Array.from(JSON.parse(document.getElementById("text-" + el.dataset.response).textContent));
  });

  function spanForms(responseId) {
    return forms.filter(function (f) { return f.dataset.response === responseId && f.classList.contains("has-spans"); });
  }

  function allSpans(responseId) {
    const out = [];
    spanForms(responseId).forEach(function (form) {
      form.spans.forEach(function (s, index) {
        out.push({ start: s.start, end: s.end, subcategory: s.subcategory, code: form.dataset.code, index: index, form: form });
      });
    });
    return out;
  }

  function textOf(responseId) { return document.querySelector('.response-text[data-response="' + responseId + '"]'); }

  // Overlapping highlights nest: each has its own underline (colour and line style of its subcategory), stacked
  // one below the other, so two attributes' spans on the same words both stay visible.
  function render(responseId) {
    const el = textOf(responseId);
    const cps = texts[responseId];
    const spans = allSpans(responseId);
    const cuts = new Set([0, cps.length]);
    spans.forEach(function (s) { cuts.add(s.start); cuts.add(s.end); });
    const bounds = Array.from(cuts).sort(function (a, b) { return a - b; });
    const fragment = document.createDocumentFragment();
    for (let i = 0; i + 1 < bounds.length; i++) {
      const a = bounds[i], b = bounds[i + 1];
      const seg = document.createElement("span");
      seg.className = "seg";
      seg.dataset.start = a;
      seg.dataset.end = b;
      const covering = spans.filter(function (s) { return s.start <= a && s.end >= b; })
        .sort(function (x, y) { return (x.start - y.start) || (y.end - x.end) || x.subcategory.localeCompare(y.subcategory); });
      let inner = seg;
      covering.forEach(function (s, depth) {
        const layer = document.createElement("span");
        layer.className = "hl-" + s.subcategory + " lv" + Math.min(covering.length - 1 - depth, 3);
        inner.appendChild(layer);
        inner = layer;
      });
      inner.textContent = cps.slice(a, b).join("");
      if (covering.length) {
        seg.classList.add("hl");
        seg.title = covering.map(function (s) { return s.code + " " + subName(s.subcategory); }).join(" + ");
      }
      if (covering.length > 1) seg.classList.add("overlap");
      fragment.appendChild(seg);
    }
    el.replaceChildren(fragment);
    renderList(responseId, spans);
  }

  function excerptOf(responseId, s) {
    const excerpt = texts[responseId].slice(s.start, s.end).join("");
    return excerpt.length > 60 ? excerpt.slice(0, 57) + "…" : excerpt;
  }

  function renderList(responseId, spans) {
    const list = document.querySelector('.span-list[data-response="' + responseId + '"]');
    list.replaceChildren();
    spans.sort(function (x, y) { return x.start - y.start || x.end - y.end; }).forEach(function (s, position) {
      const chip = document.createElement("span");
      chip.className = "chip";
      const swatch = document.createElement("span");
      swatch.className = "swatch sw-" + s.subcategory;
      const label = document.createElement("span");
      const name = s.code + " " + subName(s.subcategory) + ": “" + excerptOf(responseId, s) + "”";
      label.textContent = name;
      chip.append(swatch, label);
      if (editable) {
        const change = button("link change-span", "Change", "Change or remove highlight " + name);
        change.dataset.position = position;
        change.addEventListener("click", function () {
          showPopover([s], change.getBoundingClientRect(), change);
        });
        const remove = button("link remove-span", "✕", "Remove highlight " + name);
        remove.addEventListener("click", function () { removeSpan(s.form, s.index, list, position); });
        chip.append(change, remove);
      }
      list.appendChild(chip);
    });
  }

  // Code-point offset of a DOM position inside a response text: the text before it, counted as Python does.
  function offsetOf(container, node, offset) {
    const range = document.createRange();
    range.setStart(container, 0);
    range.setEnd(node, offset);
    return Array.from(range.toString()).length;
  }

  function selectionIn() {
    const sel = window.getSelection();
    if (!sel || sel.rangeCount === 0 || sel.isCollapsed) return null;
    const range = sel.getRangeAt(0);
    const common = range.commonAncestorContainer;
    const container = (common.nodeType === 1 ? common : common.parentElement).closest(".response-text");
    if (!container) return null;
    const id = container.dataset.response;
    let start = offsetOf(container, range.startContainer, range.startOffset);
    let end = offsetOf(container, range.endContainer, range.endOffset);
    const cps = texts[id];
    while (start < end && /\s/.test(cps[start])) start++;
    while (end > start && /\s/.test(cps[end - 1])) end--;
    if (end <= start) return null;
    return { responseId: id, start: start, end: end, rect: range.getBoundingClientRect() };
  }

  // ---- adding, changing, removing spans ---------------------------------------------------------------------
  function formFor(responseId, code) { return document.getElementById("r" + responseId + "-" + code); }

  function writeSpans(form, spans) {
    form.spans = spans;
    const count = form.elements.instance_count;
    if (count && !count.dataset.manual) count.value = String(spans.length);
    render(form.dataset.response);
    changed(form);
  }

  function addSpan(selection, slug) {
    const form = formFor(selection.responseId, subcategories[slug].code);
    if (!form || !editable) return;
    const spans = form.spans.slice();
    // The same passage with the same subcategory is one span (the server refuses a repeat).
    if (spans.some(function (s) { return s.start === selection.start && s.end === selection.end && s.subcategory === slug; })) return;
    spans.push({ start: selection.start, end: selection.end, subcategory: slug });
    writeSpans(form, spans);
  }

  function focusAfterListChange(list, position, responseId) {
    const buttons = list.querySelectorAll(".change-span");
    const next = buttons[Math.min(position, buttons.length - 1)];
    (next || textOf(responseId)).focus();
  }

  function removeSpan(form, index, list, position) {
    const spans = form.spans.slice();
    spans.splice(index, 1);
    writeSpans(form, spans);
    if (list) focusAfterListChange(list, position, form.dataset.response);
  }

  function switchSpan(form, index, slug) {
    const spans = form.spans.map(function (s) { return Object.assign({}, s); });
    spans[index].subcategory = slug;
    writeSpans(form, spans);
  }

  // ---- palette and popover ------------------------------------------------------------------------------------
  let pending = null;
  let paletteOpener = null;
  let popoverOpener = null;

  function place(el, rect) {
    el.hidden = false;
    const top = window.scrollY + rect.bottom + 6;
    const left = Math.max(8, Math.min(window.scrollX + rect.left, window.scrollX + window.innerWidth - el.offsetWidth - 8));
    el.style.top = top + "px";
    el.style.left = left + "px";
  }

  function paletteButtons() { return Array.from(palette.querySelectorAll("button.sub")); }

  if (palette) {
    paletteButtons().forEach(function (b, i) {
      const name = b.textContent.trim();
      const swatch = document.createElement("span");
      swatch.className = "swatch sw-" + b.dataset.sub;
      const code = document.createElement("span");
      code.className = "sub-code";
      code.textContent = b.dataset.code;
      b.replaceChildren(swatch, code, document.createTextNode(" " + name));
      if (i < 9) {
        const digit = document.createElement("kbd");
        digit.textContent = String(i + 1);
        b.prepend(digit);
      }
    });
  }

  function openPalette(viaKeyboard) {
    if (!palette || !editable) return false;
    const selection = selectionIn();
    if (!selection) return false;
    pending = selection;
    paletteOpener = viaKeyboard ? document.activeElement : null;
    place(palette, selection.rect);
    if (viaKeyboard) paletteButtons()[0].focus();
    return true;
  }

  function closePalette() {
    if (!palette || palette.hidden) return;
    palette.hidden = true;
    pending = null;
    if (paletteOpener && document.contains(paletteOpener)) paletteOpener.focus();
    paletteOpener = null;
  }

  function pick(slug) {
    if (!pending) return;
    const selection = pending;
    addSpan(selection, slug);
    closePalette();
    window.getSelection().removeAllRanges();
    if (document.activeElement === document.body) textOf(selection.responseId).focus();
  }

  function arrowsAmong(container, event, selector) {
    const items = Array.from(container.querySelectorAll(selector));
    const index = items.indexOf(document.activeElement);
    if (event.key === "ArrowDown" || event.key === "ArrowRight") {
      items[(index + 1) % items.length].focus();
    } else if (event.key === "ArrowUp" || event.key === "ArrowLeft") {
      items[(index - 1 + items.length) % items.length].focus();
    } else {
      return false;
    }
    event.preventDefault();
    return true;
  }

  if (palette) {
    palette.addEventListener("click", function (event) {
      const b = event.target.closest("button.sub");
      if (b) pick(b.dataset.sub);
    });
    palette.addEventListener("keydown", function (event) {
      if (/^[1-9]$/.test(event.key)) {
        const b = paletteButtons()[Number(event.key) - 1];
        if (b) pick(b.dataset.sub);
        event.preventDefault();
      } else if (event.key === "Escape") {
        closePalette();
        event.preventDefault();
      } else {
        arrowsAmong(palette, event, "button.sub");
      }
      event.stopPropagation();
    });
  }

  function showPopover(here, rect, opener) {
    popover.replaceChildren();
    here.forEach(function (s) {
      const row = document.createElement("div");
      row.className = "pop-row";
      const label = document.createElement("span");
      const swatch = document.createElement("span");
      swatch.className = "swatch sw-" + s.subcategory;
      label.append(swatch, document.createTextNode(" " + s.code + " " + subName(s.subcategory) + ": “" + excerptOf(s.form.dataset.response, s) + "”"));
      row.appendChild(label);
      if (editable) {
        Object.keys(subcategories).filter(function (slug) {
          return subcategories[slug].code === s.code && slug !== s.subcategory;
        }).forEach(function (slug) {
          const change = button("", "Change to " + subName(slug));
          change.addEventListener("click", function () {
            switchSpan(s.form, s.index, slug);
            hidePopover(true);
          });
          row.appendChild(change);
        });
        const remove = button("danger", "Remove");
        remove.addEventListener("click", function () { removeSpan(s.form, s.index, null, 0); hidePopover(true); });
        row.appendChild(remove);
      }
      popover.appendChild(row);
    });
    if (!here.length) return;
    popoverOpener = opener || null;
    popover.openerList = opener ? opener.closest(".span-list") : null;
    place(popover, rect);
    const first = popover.querySelector("button");
    if (opener && first) first.focus();
  }

  function hidePopover(returnFocus) {
    if (popover.hidden) return;
    popover.hidden = true;
    const opener = popoverOpener;
    popoverOpener = null;
    if (!returnFocus || !opener) return;
    if (document.contains(opener)) { opener.focus(); return; }
    // The opener was a highlight's button, drawn anew after the change: the one now in its place, or the text.
    const list = popover.openerList;
    focusAfterListChange(list, Number(opener.dataset.position), list.dataset.response);
  }

  popover.addEventListener("keydown", function (event) {
    if (event.key === "Escape") { hidePopover(true); event.preventDefault(); } else { arrowsAmong(popover, event, "button"); }
    event.stopPropagation();
  });

  document.querySelectorAll(".response-text").forEach(function (el) {
    el.addEventListener("mouseup", function () {
      window.setTimeout(function () { openPalette(false); }, 0);
    });
    el.addEventListener("click", function (event) {
      const seg = event.target.closest(".seg.hl");
      const sel = window.getSelection();
      if (!seg || (sel && !sel.isCollapsed)) return;
      const a = Number(seg.dataset.start), b = Number(seg.dataset.end);
      showPopover(allSpans(el.dataset.response).filter(function (s) { return s.start <= a && s.end >= b; }),
        seg.getBoundingClientRect(), null);
    });
    el.addEventListener("focus", function () {
      const sel = window.getSelection();
      if (!sel.rangeCount || !el.contains(sel.anchorNode)) sel.collapse(el, 0);
    });
    // Keyboard selection in read-only text: the browser's selection can be moved and extended directly.
    el.addEventListener("keydown", function (event) {
      if (event.key !== "ArrowLeft" && event.key !== "ArrowRight") return;
      const sel = window.getSelection();
      if (!sel.rangeCount || !el.contains(sel.anchorNode)) sel.collapse(el, 0);
      sel.modify(event.shiftKey ? "extend" : "move", event.key === "ArrowRight" ? "forward" : "backward",
        event.ctrlKey || event.altKey ? "word" : "character");
      event.preventDefault();
      event.stopPropagation();
    });
  });

  document.addEventListener("mousedown", function (event) {
    if (palette && !palette.hidden && !palette.contains(event.target)) { paletteOpener = null; closePalette(); }
    if (!popover.hidden && !popover.contains(event.target)) hidePopover(false);
  });

  // ---- completing the turn ------------------------------------------------------------------------------------
  // The missing and to-confirm items name a unit and an attribute ("Response A · AUR · …"): each becomes a link
  // that focuses that attribute.
  function linkItems() {
    const keys = forms.map(function (f) {
      const card = f.closest(".response-card");
      return { key: (card ? card.querySelector(".label").textContent + " · " : "") + f.dataset.code, form: f };
    }).sort(function (x, y) { return y.key.length - x.key.length; });
    completeResult.querySelectorAll(".where-list li").forEach(function (li) {
      const text = li.textContent;
      const hit = keys.find(function (k) { return text.startsWith(k.key) && /^[ :]/.test(text.slice(k.key.length)); });
      if (!hit) return;
      const link = document.createElement("a");
      link.href = "#" + hit.form.id;
      link.textContent = text;
      link.addEventListener("click", function (event) { event.preventDefault(); focusForm(hit.form, "center"); });
      li.replaceChildren(link);
    });
  }

  function say(text) {
    const p = document.createElement("p");
    p.className = "error";
    p.tabIndex = -1;
    p.textContent = text;
    completeResult.replaceChildren(p);
    p.focus();
  }

  // The check runs on what the server has: not while changes are still on their way.
  document.body.addEventListener("htmx:confirm", function (event) {
    if (!completeResult.contains(event.detail.elt) && event.detail.elt.id !== "complete-turn") return;
    const waiting = forms.filter(function (f) {
      return f.q.dirty || f.q.inflight || f.q.timer || f.dataset.state === "failed" || f.dataset.state === "auth";
    });
    if (!waiting.length) return;
    event.preventDefault();
    say("Not yet: " + waiting.length + " change(s) are not saved (see the header). Complete the turn once they are.");
  });

  // After the settle, not the swap: htmx binds the new Confirm button's hx-post only then, and an Enter on it any
  // earlier would do nothing.
  document.body.addEventListener("htmx:afterSettle", function (event) {
    if (event.detail.target !== completeResult) return;
    linkItems();
    const target = completeResult.querySelector("#confirm-complete") || completeResult.querySelector("[tabindex='-1']");
    if (target) { target.focus({ preventScroll: true }); target.scrollIntoView({ block: "center" }); }
  });

  document.body.addEventListener("htmx:responseError", function (event) {
    const status = event.detail.xhr ? event.detail.xhr.status : 0;
    if (status === 401 || status === 403) { openRelogin(); return; }
    say("Could not complete the turn (" + status + "): try again in a moment.");
  });
  document.body.addEventListener("htmx:sendError", function () {
    say("Could not complete the turn: no connection. Try again in a moment.");
  });

  // ---- keyboard --------------------------------------------------------------------------------------------
  function focusForm(form, block) {
    if (!form) return;
    form.focus({ preventScroll: true });
    form.scrollIntoView({ block: block || "nearest" });
  }

  // Tab and Shift+Tab stay inside an open dialog.
  function trapFocus(dialog, event) {
    const items = Array.from(dialog.querySelectorAll("button, input, a[href], textarea")).filter(function (el) {
      return !el.disabled && el.offsetParent !== null;
    });
    if (!items.length) return;
    const first = items[0], last = items[items.length - 1];
    if (event.shiftKey && document.activeElement === first) { last.focus(); event.preventDefault(); }
    else if (!event.shiftKey && document.activeElement === last) { first.focus(); event.preventDefault(); }
  }

  document.getElementById("show-keys").addEventListener("click", function () {
    openDialog(keysHelp, document.getElementById("close-keys"));
  });
  document.getElementById("close-keys").addEventListener("click", function () { closeDialog(keysHelp); });

  document.addEventListener("keydown", function (event) {
    const target = event.target;
    const openOverlay = [keysHelp, relogin].find(function (d) { return !d.hidden; });
    if (openOverlay) {
      if (event.key === "Tab") trapFocus(openOverlay, event);
      if (event.key === "Escape") { closeDialog(openOverlay); event.preventDefault(); }
      if (openOverlay === keysHelp && event.key === "?") { closeDialog(keysHelp); event.preventDefault(); }
      return;
    }
    if (target.matches && target.matches('input[type="number"], input[type="text"], input[type="password"], textarea')) return;
    const key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
    if ((event.ctrlKey || event.metaKey) && (key === "z" || key === "y")) {
      if (!editable) return;
      if (key === "y" || event.shiftKey) undoRedo(redoStack, undoStack, "after");
      else undoRedo(undoStack, redoStack, "before");
      event.preventDefault();
      return;
    }
    if (event.metaKey || event.ctrlKey || event.altKey) return;
    // The palette opened by the mouse: its digits work without moving focus into it.
    if (palette && !palette.hidden && /^[1-9]$/.test(event.key)) {
      const b = paletteButtons()[Number(event.key) - 1];
      if (b) pick(b.dataset.sub);
      event.preventDefault();
      return;
    }
    if (event.key === "Escape") {
      closePalette();
      hidePopover(true);
      return;
    }
    if (event.key === "?") { openDialog(keysHelp, document.getElementById("close-keys")); event.preventDefault(); return; }
    if (event.key === "h" && openPalette(true)) { event.preventDefault(); return; }
    if (event.key === "c") {
      const complete = document.getElementById("complete-turn");
      if (complete) { complete.click(); event.preventDefault(); }
      return;
    }
    const form = target.closest ? target.closest("form.attr") : null;
    if (!form) return;
    if (/^[0-9]$/.test(event.key)) {
      const radio = form.querySelector('input[name="score"][value="' + event.key + '"]');
      if (radio && !radio.disabled && !radio.checked) radio.click();
      event.preventDefault();
    } else if ((event.key === "Delete" || event.key === "Backspace") && editable) {
      clearScore(form);
      event.preventDefault();
    } else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      focusForm(forms[forms.indexOf(form) + (event.key === "ArrowDown" ? 1 : -1)]);
      event.preventDefault();
    } else if (event.key === "ArrowRight" || event.key === "ArrowLeft") {
      const same = forms.filter(function (f) { return f.dataset.code === form.dataset.code; });
      focusForm(same[same.indexOf(form) + (event.key === "ArrowRight" ? 1 : -1)]);
      event.preventDefault();
    } else if (event.key === "d") {
      toggleDefinition(form);
      event.preventDefault();
    } else if (event.key === "t" && form.dataset.response) {
      textOf(form.dataset.response).focus();
      event.preventDefault();
    }
  });

  // ---- time on task (idle time excluded) ------------------------------------------------------------------------
  let lastActivity = Date.now();
  let activeSeconds = 0;
  ["keydown", "mousedown", "mousemove", "wheel", "scroll", "touchstart"].forEach(function (name) {
    window.addEventListener(name, function () { lastActivity = Date.now(); }, { passive: true });
  });

  function reportTime(useBeacon) {
    if (activeSeconds <= 0) return;
    const seconds = activeSeconds;
    activeSeconds = 0;
    const body = new FormData();
    body.append("seconds", String(seconds));
    body.append("csrfmiddlewaretoken", csrfToken);
    if (useBeacon && navigator.sendBeacon) {
      navigator.sendBeacon(page.dataset.timeUrl, body);
      return;
    }
    fetch(page.dataset.timeUrl, { method: "POST", body: body, headers: { "X-CSRFToken": csrfToken }, credentials: "same-origin", redirect: "manual" })
      .then(function (response) { if (!response.ok) activeSeconds += seconds; })
      .catch(function () { activeSeconds += seconds; });
  }

  let tick = 0;
  window.setInterval(function () {
    if (document.visibilityState === "visible" && Date.now() - lastActivity < IDLE_AFTER_MS) activeSeconds++;
    if (++tick % TIME_REPORT_EVERY_S === 0) reportTime(false);
  }, 1000);
  window.addEventListener("pagehide", function () { reportTime(true); });

  // ---- start ---------------------------------------------------------------------------------------------------
  // The sticky text columns and scroll-padding sit below the sticky bar, whose height depends on the width.
  const nav = document.querySelector(".turn-nav");
  function measureNav() { document.documentElement.style.setProperty("--nav-h", nav.offsetHeight + "px"); }
  window.addEventListener("resize", measureNav);
  measureNav();
  forms.forEach(buildForm);
  Object.keys(texts).forEach(render);
  updateGlobal();
})();
