// Signing in again without leaving the page: the dialog's form posts the login with a fresh CSRF token, then takes
// the page's new token (for the saves and for htmx's requests) and lets save.js send the changes it kept.
import { page, renewToken, tokenAt } from "./page.js";
import { resumeAfterSignIn } from "./save.js";

// signedIn: signed in in the dialog, not told so by "save again" (save.js gives up after two that did not help).
function resumeSaving(signedIn) {
  // The token changes at sign-in: take the page's new one, for our saves and for htmx's.
  return renewToken().then(function () { resumeAfterSignIn(signedIn); });
}

export function startRelogin() {
  document.getElementById("relogin-form").addEventListener("submit", function (event) {
    event.preventDefault();
    const error = document.getElementById("relogin-error");
    const loginUrl = page.dataset.loginUrl;
    error.textContent = "Signing in…";
    tokenAt(loginUrl).then(function (token) {
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
