// Signing in again without leaving the page: the dialog's form posts the login with a fresh CSRF token, then takes
// the page's new token (for the saves and for htmx's requests) and lets save.js send the changes it kept.
import { page, setToken } from "./page.js";
import { resumeAfterSignIn } from "./save.js";

function freshToken(url) {
  return fetch(url, { credentials: "same-origin" }).then(function (r) { return r.text(); }).then(function (html) {
    const doc = new DOMParser().parseFromString(html, "text/html");
    const input = doc.querySelector('input[name="csrfmiddlewaretoken"]');
    if (input) return input.value;
    return JSON.parse(doc.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
  });
}

// signedIn: signed in in the dialog, not told so by "save again" (save.js gives up after two that did not help).
function resumeSaving(signedIn) {
  // The token changes at sign-in: take the page's new one, for our saves and for htmx's.
  return freshToken(window.location.href).then(function (token) {
    if (token) {
      setToken(token);
      document.body.setAttribute("hx-headers", JSON.stringify({ "X-CSRFToken": token }));
    }
    resumeAfterSignIn(signedIn);
  });
}

export function startRelogin() {
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
        return resumeSaving(true);
      }
      error.textContent = response.status === 429 ? "Too many failed attempts: sign-in is locked for a while."
        : "That username and password did not match. Please try again.";
      document.getElementById("relogin-password").focus();
      return null;
    }).catch(function () {
      error.textContent = "No connection to the server: try again in a moment.";
    });
  });
  document.getElementById("relogin-retry").addEventListener("click", function () { resumeSaving(false); });
}
