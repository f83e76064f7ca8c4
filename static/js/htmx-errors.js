// What an htmx request of a page other than the coding page says when the session has ended: the server answers
// 401 (access/htmx_sign_in.py) instead of the sign-in page, and htmx swaps nothing, so what was typed stays; the
// reason is shown where the answer would have gone. The coding page handles its own (static/js/turn/save.js).
(function () {
  "use strict";

  document.body.addEventListener("htmx:responseError", function (event) {
    const detail = event.detail;
    if (detail.xhr.status !== 401 || detail.elt.closest(".turn-page")) return;
    const where = detail.target || detail.elt;
    const said = document.createElement("p");
    said.className = "error session-ended";
    said.setAttribute("role", "alert");
    said.textContent = detail.xhr.responseText;
    where.replaceChildren(said);
    if (where.hasAttribute("hx-trigger") && /every/.test(where.getAttribute("hx-trigger"))) {
      where.removeAttribute("hx-trigger");  // a refresh stops asking once the session has ended
      htmx.process(where);
    }
  });
})();
