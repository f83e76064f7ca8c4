// What an htmx request of a page other than the coding page says when it is not answered: htmx swaps nothing on
// an error, so what was typed stays, and the reason is shown where the answer would have gone. A session that has
// ended is answered 401 with why (access/htmx_sign_in.py); a form token no longer valid (the browser's cookies
// cleared, or another sign-in) is Django's 403; a failure of the server or of the network says so. The coding
// page handles its own (static/js/turn/save.js).
(function () {
  "use strict";

  const REFUSED = "Not sent: this page's sign-in is no longer valid. Copy what you typed, reload the page, and " +
    "send it again.";
  const FAILED = "Not sent: the server could not be reached or failed. Try again in a moment.";

  function say(detail, text) {
    if (detail.elt.closest(".turn-page")) return;
    const where = detail.target || detail.elt;
    const said = document.createElement("p");
    said.className = "error not-sent";
    said.setAttribute("role", "alert");
    said.textContent = text;
    where.replaceChildren(said);
    if (where.hasAttribute("hx-trigger") && /every/.test(where.getAttribute("hx-trigger"))) {
      where.removeAttribute("hx-trigger");  // a refresh stops asking once it is no longer answered
      htmx.process(where);
    }
  }

  document.body.addEventListener("htmx:responseError", function (event) {
    const status = event.detail.xhr.status;
    if (status === 401) say(event.detail, event.detail.xhr.responseText);
    else if (status === 403) say(event.detail, REFUSED);
    else if (status >= 500) say(event.detail, FAILED);
  });
  document.body.addEventListener("htmx:sendError", function (event) { say(event.detail, FAILED); });
})();
