// The coding page itself, read once: its elements and settings (data-* of .turn-page), the CSRF token (renewed after
// a sign-in), the attribute forms, the subcategory names, small DOM helpers and the page's dialogs (the keys help and
// the sign-in-again dialog; each opens and closes the same way). No other module reads these from the DOM again.

export const page = document.querySelector(".turn-page");
export const editable = page !== null && page.dataset.editable === "true";
export const maxCount = page !== null ? Number(page.dataset.maxCount) : 0;
// The account that opened the page, sent with every change (the server refuses a change from a page another
// account opened: annotation.views._page_of_another_account).
export const coder = page !== null ? page.dataset.coder || "" : "";
export const palette = document.getElementById("palette");
export const popover = document.getElementById("span-popover");
export const selectionNote = document.getElementById("selection-note");
export const keysHelp = document.getElementById("keys-help");
export const relogin = document.getElementById("relogin");
export const globalState = document.getElementById("global-state");
export const completeResult = document.getElementById("complete-result");
export const note = document.getElementById("item-note");
export const forms = Array.from(document.querySelectorAll("form.attr"));

let csrfToken = JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
export function token() { return csrfToken; }

// The CSRF token of the page at ``url`` fetched afresh (a form's, or the page's hx-headers): "" when it has none.
export function tokenAt(url) {
  return fetch(url, { credentials: "same-origin" }).then(function (r) { return r.text(); }).then(function (html) {
    const doc = new DOMParser().parseFromString(html, "text/html");
    const input = doc.querySelector('input[name="csrfmiddlewaretoken"]');
    if (input) return input.value;
    return JSON.parse(doc.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
  });
}

// The token changes at every sign-in, in this tab or another: the one the server has now is taken, for the page's
// own requests and for htmx's.
export function renewToken() {
  return tokenAt(window.location.href).then(function (value) {
    if (!value) return;
    csrfToken = value;
    document.body.setAttribute("hx-headers", JSON.stringify({ "X-CSRFToken": value }));
  });
}

export const subcategories = {};
document.querySelectorAll("#palette button.sub, #subcategory-names span").forEach(function (el) {
  subcategories[el.dataset.sub] = { code: el.dataset.code, name: el.textContent.trim() };
});
export function subName(slug) { return (subcategories[slug] || {}).name || slug; }

export function button(className, text, label) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = className;
  b.textContent = text;
  if (label) b.setAttribute("aria-label", label);
  return b;
}

export function focusForm(form, block) {
  if (!form) return;
  form.focus({ preventScroll: true });
  form.scrollIntoView({ block: block || "nearest" });
}

// ---- dialogs ---------------------------------------------------------------------------------------------------
let dialogOpener = null;

export function openDialog(dialog, focusTarget) {
  if (!dialog.hidden) return;
  dialogOpener = document.activeElement;
  dialog.hidden = false;
  focusTarget.focus();
}

export function closeDialog(dialog) {
  if (dialog.hidden) return;
  dialog.hidden = true;
  if (dialogOpener && document.contains(dialogOpener)) dialogOpener.focus();
  dialogOpener = null;
}

// ``why``: the server's reason (a 401's plain text: the session ended, or the page is another account's); "" for
// the dialog's own words; left out, the reason shown last stays (another change waiting behind the same one).
export function openRelogin(why) {
  document.getElementById("relogin-error").textContent = "";
  const reason = document.getElementById("relogin-why");
  if (why !== undefined) reason.textContent = why || reason.dataset.default;
  openDialog(relogin, document.getElementById("relogin-password"));
}

// Tab and Shift+Tab stay inside an open dialog.
export function trapFocus(dialog, event) {
  const items = Array.from(dialog.querySelectorAll("button, input, a[href], textarea")).filter(function (el) {
    return !el.disabled && el.offsetParent !== null;
  });
  if (!items.length) return;
  const first = items[0], last = items[items.length - 1];
  if (event.shiftKey && document.activeElement === first) { last.focus(); event.preventDefault(); }
  else if (!event.shiftKey && document.activeElement === last) { first.focus(); event.preventDefault(); }
}
