// Completing the turn, an htmx request (the Complete and Confirm buttons): held back while changes are still on
// their way; what the server answers (the items still to code or to confirm) gets a link to each item and the
// focus; a token changed by a sign-in in another tab renewed and the request sent again; a refusal or a lost
// connection said in place; a save that took the completed turn out of the completed ones
// says so there, with what the turn wants again.
import { completeResult, focusForm, forms, openRelogin, renewToken } from "./page.js";
import { saveables, unsaved } from "./save.js";

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

// A save took the completed turn out of the completed ones (annotation.services.item_judgment_save): what it wants
// again, said where Complete answers, each item linked to its attribute; the focus stays where the coder works.
function showReopened(missing) {
  const box = document.createElement("div");
  box.className = "check missing reopened";
  const heading = document.createElement("h3");
  heading.textContent = "No longer completed: still to code (" + missing.length + ")";
  const list = document.createElement("ul");
  list.className = "where-list";
  missing.forEach(function (item) {
    const li = document.createElement("li");
    li.textContent = item;
    list.append(li);
  });
  box.append(heading, list);
  completeResult.replaceChildren(box);
  linkItems();
}

export function startCompleting() {
  document.addEventListener("turn:reopened", function (event) { showReopened(event.detail); });

  // The check runs on what the server has: not while changes are still on their way, the comment and flags too
  // (completing moves to the next item, and a change still on its way would be lost with the page).
  document.body.addEventListener("htmx:confirm", function (event) {
    if (!completeResult.contains(event.detail.elt) && event.detail.elt.id !== "complete-turn") return;
    const waiting = saveables().filter(unsaved);
    if (!waiting.length) return;
    event.preventDefault();
    // Changes refused as stale or locked are lost unless made again: saying "once they are" would wait for nothing.
    const lost = waiting.filter(function (f) { return f.dataset.state === "stale" || f.dataset.state === "locked"; });
    if (lost.length === waiting.length) {
      say("Not yet: " + lost.length + " change(s) were not saved (see the red messages): make them again, or dismiss "
        + "their messages, then complete the turn.");
      return;
    }
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

  // A 403 is the CSRF check's (save.js): a sign-in in another tab changed the token. The button is pressed again
  // once on the token the server has now; a second 403 asks to sign in.
  let renewedFor = null;
  document.body.addEventListener("htmx:afterRequest", function (event) {
    if (event.detail.successful) renewedFor = null;
  });
  document.body.addEventListener("htmx:responseError", function (event) {
    const status = event.detail.xhr ? event.detail.xhr.status : 0;
    const button = event.detail.elt;
    if (status === 403 && renewedFor !== button) {
      renewedFor = button;
      renewToken().then(function () { button.click(); }, function () { openRelogin(); });
      return;
    }
    if (status === 401 || status === 403) { openRelogin(); return; }
    say("Could not complete the turn (" + status + "): try again in a moment.");
  });
  document.body.addEventListener("htmx:sendError", function () {
    say("Could not complete the turn: no connection. Try again in a moment.");
  });
}
