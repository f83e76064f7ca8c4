// The attribute forms: each built from its attribute's <template> (sent once per page) with the judgment the server
// wrote as data, its definition and anchors on demand, and every change recorded for undo and redo and handed to
// the save queue.
import { button, editable, focusForm, maxCount } from "./page.js";
import { newQueue, requestSave, showState, typed } from "./save.js";
import { applySnapshot, same, snapshot } from "./values.js";

const UNDO_LIMIT = 200;

const templates = {};
document.querySelectorAll("#attribute-templates template").forEach(function (t) { templates[t.dataset.code] = t; });

function parseCompact(text) {
  return text ? text.split(",").map(function (item) {
    const parts = item.split(" ");
    return { start: Number(parts[0]), end: Number(parts[1]), subcategory: parts[2] };
  }) : [];
}

export function buildForm(form) {
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
    // Typed: on the page only until the field is left (its change event saves it), and said so meanwhile.
    count.addEventListener("input", function () { count.dataset.manual = count.value; typed(form); });
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
  form.q = newQueue();
  if (form.savedScore !== "") showState(form, "saved", "Saved");
}

export function toggleDefinition(form) {
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

// ---- undo and redo: every change to a form, saved like any change -----------------------------------------------
const undoStack = [];
const redoStack = [];

export function changed(form) {
  const after = snapshot(form);
  if (!same(after, form.current)) {
    undoStack.push({ form: form, before: form.current, after: after });
    if (undoStack.length > UNDO_LIMIT) undoStack.shift();
    redoStack.length = 0;
    form.current = after;
  } else if (form.dataset.state === "stale" || form.dataset.state === "locked") {
    // The form holds the server's value a refusal put in (an instance count field left after it replaced what was
    // typed there, which the refusal quotes): no change, nothing to send, and the refusal stays said.
    return;
  }
  requestSave(form);
}

// An entry is taken back (or made again) only while its form still shows what that change left (or what undoing it
// put back): once the form shows a newer value from another tab or device instead (told at once, or with a save
// refused as stale or locked), putting an older value back would overwrite that edit unasked. Such entries are
// dropped, and the next one is tried.
function undoRedo(from, to, which) {
  const shown = which === "before" ? "after" : "before";
  let entry = from.pop();
  while (entry && !same(entry.form.current, entry[shown])) entry = from.pop();
  if (!entry) return;
  applySnapshot(entry.form, entry[which]);
  to.push(entry);
  requestSave(entry.form);
  focusForm(entry.form);
}

export function undo() { undoRedo(undoStack, redoStack, "before"); }
export function redo() { undoRedo(redoStack, undoStack, "after"); }

export function clearScore(form) {
  form.querySelectorAll('input[name="score"]').forEach(function (radio) { radio.checked = false; });
  const count = form.elements.instance_count;
  if (count) { count.value = ""; delete count.dataset.manual; }
  changed(form);
}
