// The keyboard: scores, clearing, moving between attributes and responses, definitions, undo and redo, the
// subcategory palette's digits, the keys help, and focus kept inside an open dialog. One listener on the document,
// so the order in which keys are tried is the one written here.
import { clearScore, redo, toggleDefinition, undo } from "./forms.js";
import { closeDialog, editable, focusForm, forms, keysHelp, openDialog, palette, relogin, trapFocus } from "./page.js";
import { closePalette, hidePopover, hideSelectionNote, openPalette, paletteButtons, pick, textOf } from "./spans.js";

export function startKeys() {
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
      if (key === "y" || event.shiftKey) redo();
      else undo();
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
      hideSelectionNote();
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
}
