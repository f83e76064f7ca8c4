// The coding page (templates/annotation/turn.html, and a study kind's own coding page): the entry module
// that starts the others in order. Builds each attribute's form from its <template>, then draws the response texts
// with their highlights and the header's save state. A study kind's page script (js/<kind>/) loads this module before they run, so the
// forms they extend are built by then.
//   page.js      the page's elements, settings, CSRF token and dialogs
//   values.js    what a form holds (snapshots; values put back)
//   save.js      the save queue: retries, sign-in pauses, refusals, the header's state and progress
//   relogin.js   signing in again without leaving the page
//   forms.js     building the forms; undo and redo
//   spans.js     the response texts, highlights, palette and popover
//   complete.js  completing the turn (htmx)
//   keys.js      the keyboard
//   time.js      time on task
import { startCompleting } from "./complete.js";
import { buildForm } from "./forms.js";
import { startKeys } from "./keys.js";
import { forms, globalState, page } from "./page.js";
import { startRelogin } from "./relogin.js";
import { startSaving, updateGlobal } from "./save.js";
import { drawTexts, startSpans } from "./spans.js";
import { startTimer } from "./time.js";

// The sticky text columns and scroll-padding sit below the sticky bar, whose height depends on the width.
const nav = document.querySelector(".turn-nav");
function measureNav() { document.documentElement.style.setProperty("--nav-h", nav.offsetHeight + "px"); }

// The schema's parts (each attribute's <template>, the definitions, the palette): on the turn page, put in by the
// script it names (annotation.views.coding_parts_page) before this module runs; without them nothing can be coded.
const partsLoaded = document.getElementById("attribute-templates") !== null;
if (page && !partsLoaded) {
  globalState.textContent = "The attribute forms could not be loaded: reload the page.";
  globalState.dataset.state = "error";
}

if (page && partsLoaded) {
  startSaving();
  startRelogin();
  startSpans();
  startCompleting();
  startKeys();
  startTimer();
  window.addEventListener("resize", measureNav);
  measureNav();
  forms.forEach(buildForm);
  drawTexts();
  updateGlobal();
}
