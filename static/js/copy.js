// "Copy" buttons: a button with data-copy="ID" copies the value of the field ID to the clipboard and says so in
// the .copy-state beside it. The buttons are hidden in the page and shown here, so a page without JavaScript
// offers only the (selectable, read-only) field.
(function () {
  "use strict";

  function said(button, text) {
    const state = button.parentElement.querySelector(".copy-state");
    if (state) state.textContent = text;
  }

  function copyBySelection(field) {
    field.focus();
    field.select();
    return document.execCommand("copy");
  }

  document.querySelectorAll("button.copy[data-copy]").forEach(function (button) {
    const field = document.getElementById(button.dataset.copy);
    if (!field) return;
    button.hidden = false;
    button.addEventListener("click", function () {
      const done = function () { said(button, "Copied"); };
      const failed = function () {
        field.select();
        said(button, "Could not copy: the link is selected, press Ctrl+C");
      };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(field.value).then(done, function () {
          (copyBySelection(field) ? done : failed)();
        });
      } else {
        (copyBySelection(field) ? done : failed)();
      }
    });
  });
})();
