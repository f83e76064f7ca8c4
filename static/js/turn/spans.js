// Spans on the response texts: the texts as code points (offsets counted as Python counts them), the highlights
// drawn over them (overlapping ones nested, each with its own underline) and listed below them, the selection turned
// into offsets of whole characters, and adding, changing and removing a span through the subcategory palette or a
// highlight's popover.
// Every change goes to the form's undo history and save queue (forms.js).
import { changed } from "./forms.js";
import { button, editable, forms, palette, popover, selectionNote, subName, subcategories } from "./page.js";
import { SPANS_REPLACED } from "./values.js";

// ---- text and offsets -----------------------------------------------------------------------------------
// A response is known here only by its handle (data-response): opaque, per reviewer, never its database id.
const strings = {};
const texts = {};
document.querySelectorAll(".response-text").forEach(function (el) {
  strings[el.dataset.response] = JSON.parse(document.getElementById("text-" + el.dataset.response).textContent);
  texts[el.dataset.response] = Array.from(strings[el.dataset.response]);
});

// The characters a reader sees (grapheme clusters): a letter and its accents, an emoji sequence, a flag, a CRLF.
// A span starts and ends between two of them, as the server requires (docs/reference.md#spans-and-characters).
const graphemes = new Intl.Segmenter(undefined, { granularity: "grapheme" });

// The code-point range [from, to) of the character that holds code point `at` of a response text.
function characterAt(responseId, at) {
  const units = texts[responseId].slice(0, at).join("").length;
  const found = graphemes.segment(strings[responseId]).containing(units);
  const from = at - Array.from(strings[responseId].slice(found.index, units)).length;
  return [from, from + Array.from(found.segment).length];
}

function blankAt(responseId, at) {
  const [from, to] = characterAt(responseId, at);
  return /^\s+$/.test(texts[responseId].slice(from, to).join(""));
}

function spanForms(responseId) {
  return forms.filter(function (f) { return f.dataset.response === responseId && f.classList.contains("has-spans"); });
}

function allSpans(responseId) {
  const out = [];
  spanForms(responseId).forEach(function (form) {
    form.spans.forEach(function (s) {
      out.push({ start: s.start, end: s.end, subcategory: s.subcategory, code: form.dataset.code, form: form });
    });
  });
  return out;
}

export function textOf(responseId) { return document.querySelector('.response-text[data-response="' + responseId + '"]'); }

// Overlapping highlights nest: each has its own underline (colour and line style of its subcategory), stacked
// one below the other, so two attributes' spans on the same words both stay visible.
function render(responseId) {
  const el = textOf(responseId);
  const cps = texts[responseId];
  const spans = allSpans(responseId);
  const cuts = new Set([0, cps.length]);
  spans.forEach(function (s) { cuts.add(s.start); cuts.add(s.end); });
  const bounds = Array.from(cuts).sort(function (a, b) { return a - b; });
  const fragment = document.createDocumentFragment();
  for (let i = 0; i + 1 < bounds.length; i++) {
    const a = bounds[i], b = bounds[i + 1];
    const seg = document.createElement("span");
    seg.className = "seg";
    seg.dataset.start = a;
    seg.dataset.end = b;
    const covering = spans.filter(function (s) { return s.start <= a && s.end >= b; })
      .sort(function (x, y) { return (x.start - y.start) || (y.end - x.end) || x.subcategory.localeCompare(y.subcategory); });
    let inner = seg;
    covering.forEach(function (s, depth) {
      const layer = document.createElement("span");
      layer.className = "hl-" + s.subcategory + " lv" + Math.min(covering.length - 1 - depth, 3);
      inner.appendChild(layer);
      inner = layer;
    });
    inner.textContent = cps.slice(a, b).join("");
    if (covering.length) {
      seg.classList.add("hl");
      seg.title = covering.map(function (s) { return s.code + " " + subName(s.subcategory); }).join(" + ");
    }
    if (covering.length > 1) seg.classList.add("overlap");
    fragment.appendChild(seg);
  }
  el.replaceChildren(fragment);
  renderList(responseId, spans);
}

// The passage as a highlight's chip and popover show it: its first 57 characters (code points, so that an emoji is
// never cut in half) when it has more than 60.
function excerptOf(responseId, s) {
  const passage = texts[responseId].slice(s.start, s.end);
  return passage.length > 60 ? passage.slice(0, 57).join("") + "…" : passage.join("");
}

function renderList(responseId, spans) {
  const list = document.querySelector('.span-list[data-response="' + responseId + '"]');
  list.replaceChildren();
  spans.sort(function (x, y) { return x.start - y.start || x.end - y.end; }).forEach(function (s, position) {
    const chip = document.createElement("span");
    chip.className = "chip";
    const swatch = document.createElement("span");
    swatch.className = "swatch sw-" + s.subcategory;
    const label = document.createElement("span");
    const name = s.code + " " + subName(s.subcategory) + ": “" + excerptOf(responseId, s) + "”";
    label.textContent = name;
    chip.append(swatch, label);
    if (editable) {
      const change = button("link change-span", "Change", "Change or remove highlight " + name);
      change.dataset.position = position;
      change.addEventListener("click", function () {
        showPopover([s], change.getBoundingClientRect(), change);
      });
      const remove = button("link remove-span", "✕", "Remove highlight " + name);
      remove.addEventListener("click", function () { removeSpan(s.form, s, list, position); dropRepeat(); });
      chip.append(change, remove);
    }
    list.appendChild(chip);
  });
}

// Code-point offset of a DOM position inside a response text: the text before it, counted as Python does.
function offsetOf(container, node, offset) {
  const range = document.createRange();
  range.setStart(container, 0);
  range.setEnd(node, offset);
  return Array.from(range.toString()).length;
}

// The selection as offsets into the one response text it reaches, cut to that text: a triple click on the last
// paragraph, or a drag that runs past the text's end or starts above it (in the client's message, the earlier
// turns), selects more than the text, and its part in the text is the passage. A selection reaching into none is no
// passage; one reaching into two texts is refused ({refused, rect}): neither part is the passage the reviewer meant,
// and a highlight belongs to one response. Its ends move out to the
// whole characters they fall in (a selection set by a script or a browser's own may end between a letter and its
// accent), then the blank characters at either end are left out whole (a space with a combining accent is no blank,
// a CRLF is one).
function selectionIn() {
  const sel = window.getSelection();
  if (!sel || sel.rangeCount === 0 || sel.isCollapsed) return null;
  const range = sel.getRangeAt(0);
  const reached = Array.from(document.querySelectorAll(".response-text")).filter(function (el) {
    return range.intersectsNode(el);
  });
  if (reached.length > 1) return { refused: true, rect: range.getBoundingClientRect() };
  if (reached.length !== 1) return null;
  const container = reached[0];
  const whole = document.createRange();
  whole.selectNodeContents(container);
  const inText = range.cloneRange();
  if (range.compareBoundaryPoints(Range.START_TO_START, whole) < 0) inText.setStart(container, 0);
  if (range.compareBoundaryPoints(Range.END_TO_END, whole) > 0) inText.setEnd(container, container.childNodes.length);
  const id = container.dataset.response;
  let start = offsetOf(container, inText.startContainer, inText.startOffset);
  let end = offsetOf(container, inText.endContainer, inText.endOffset);
  if (end <= start) return null;
  start = characterAt(id, start)[0];
  end = characterAt(id, end - 1)[1];
  while (start < end && blankAt(id, start)) start = characterAt(id, start)[1];
  while (end > start && blankAt(id, end - 1)) end = characterAt(id, end - 1)[0];
  if (end <= start) return null;
  return { responseId: id, start: start, end: end, rect: inText.getBoundingClientRect() };
}

// ---- adding, changing, removing spans ---------------------------------------------------------------------
function formFor(responseId, code) { return document.getElementById("r" + responseId + "-" + code); }

function writeSpans(form, spans) {
  form.spans = spans;
  const count = form.elements.instance_count;
  if (count && !count.dataset.manual) count.value = String(spans.length);
  render(form.dataset.response);
  changed(form);
}

function addSpan(selection, slug) {
  const form = formFor(selection.responseId, subcategories[slug].code);
  if (!form || !editable) return;
  const spans = form.spans.slice();
  // The same passage with the same subcategory is one span (the server refuses a repeat).
  if (spans.some(function (s) { return s.start === selection.start && s.end === selection.end && s.subcategory === slug; })) return;
  spans.push({ start: selection.start, end: selection.end, subcategory: slug });
  writeSpans(form, spans);
}

function focusAfterListChange(list, position, responseId) {
  const buttons = list.querySelectorAll(".change-span");
  const next = buttons[Math.min(position, buttons.length - 1)];
  (next || textOf(responseId)).focus();
}

// A highlight is found by its passage and subcategory when it is changed, not by where it was in the form's spans:
// an undo, a redo or the server's newer value may have replaced them since its popover was drawn.
function placeOf(form, span) {
  return form.spans.findIndex(function (s) {
    return s.start === span.start && s.end === span.end && s.subcategory === span.subcategory;
  });
}

function removeSpan(form, span, list, position) {
  const index = placeOf(form, span);
  if (index < 0) return;
  const spans = form.spans.slice();
  spans.splice(index, 1);
  writeSpans(form, spans);
  if (list) focusAfterListChange(list, position, form.dataset.response);
}

function switchSpan(form, span, slug) {
  const index = placeOf(form, span);
  if (index < 0) return;
  const spans = form.spans.map(function (s) { return Object.assign({}, s); });
  spans[index].subcategory = slug;
  writeSpans(form, spans);
}

// ---- a double click ----------------------------------------------------------------------------------------------
// A click that adds, changes or removes a highlight redraws the list or closes the palette or popover: the double
// click's second click then lands on what took its place (the next highlight's ✕, moved into the removed one's place;
// a score under the closed palette) and is dropped, never a change of its own. A new click (its count 1) ends this.
let repeatDropped = false;

function dropRepeat() { repeatDropped = true; }

function dropRepeatedClick(event) {
  if (repeatDropped && event.detail > 1) {
    event.preventDefault();
    event.stopImmediatePropagation();
    return;
  }
  repeatDropped = false;
}

// ---- palette and popover ------------------------------------------------------------------------------------
let pending = null;
let paletteOpener = null;
let popoverOpener = null;

function place(el, rect) {
  el.hidden = false;
  const top = window.scrollY + rect.bottom + 6;
  const left = Math.max(8, Math.min(window.scrollX + rect.left, window.scrollX + window.innerWidth - el.offsetWidth - 8));
  el.style.top = top + "px";
  el.style.left = left + "px";
}

export function paletteButtons() { return Array.from(palette.querySelectorAll("button.sub")); }


export function openPalette(viaKeyboard) {
  if (!palette || !editable) return false;
  const selection = selectionIn();
  if (!selection) return false;
  if (selection.refused) { place(selectionNote, selection.rect); return true; }
  pending = selection;
  paletteOpener = viaKeyboard ? document.activeElement : null;
  place(palette, selection.rect);
  if (viaKeyboard) paletteButtons()[0].focus();
  return true;
}

// The refusal of a selection across two responses, said where it was made until the next click or Esc.
export function hideSelectionNote() { if (selectionNote) selectionNote.hidden = true; }

export function closePalette() {
  if (!palette || palette.hidden) return;
  palette.hidden = true;
  pending = null;
  if (paletteOpener && document.contains(paletteOpener)) paletteOpener.focus();
  paletteOpener = null;
}

export function pick(slug) {
  // The passage selected as the subcategory is picked: a digit pressed right after Shift+arrow, or after an arrow
  // that left no passage, may come before the browser's selectionchange says so (it is dispatched later, in a task
  // of its own), and the passage that event last gave would be highlighted instead.
  const now = selectionIn();
  if (!now || now.refused) { closePalette(); return; }
  pending = now;
  const selection = pending;
  addSpan(selection, slug);
  closePalette();
  window.getSelection().removeAllRanges();
  if (document.activeElement === document.body) textOf(selection.responseId).focus();
}

function arrowsAmong(container, event, selector) {
  const items = Array.from(container.querySelectorAll(selector));
  const index = items.indexOf(document.activeElement);
  if (event.key === "ArrowDown" || event.key === "ArrowRight") {
    items[(index + 1) % items.length].focus();
  } else if (event.key === "ArrowUp" || event.key === "ArrowLeft") {
    items[(index - 1 + items.length) % items.length].focus();
  } else {
    return false;
  }
  event.preventDefault();
  return true;
}


function showPopover(here, rect, opener) {
  popover.replaceChildren();
  here.forEach(function (s) {
    const row = document.createElement("div");
    row.className = "pop-row";
    const label = document.createElement("span");
    const swatch = document.createElement("span");
    swatch.className = "swatch sw-" + s.subcategory;
    label.append(swatch, document.createTextNode(" " + s.code + " " + subName(s.subcategory) + ": “" + excerptOf(s.form.dataset.response, s) + "”"));
    row.appendChild(label);
    if (editable) {
      Object.keys(subcategories).filter(function (slug) {
        return subcategories[slug].code === s.code && slug !== s.subcategory;
      }).forEach(function (slug) {
        const change = button("", "Change to " + subName(slug));
        change.addEventListener("click", function () {
          switchSpan(s.form, s, slug);
          hidePopover(true);
          dropRepeat();
        });
        row.appendChild(change);
      });
      const remove = button("danger", "Remove");
      remove.addEventListener("click", function () {
        removeSpan(s.form, s, null, 0);
        hidePopover(true);
        dropRepeat();
      });
      row.appendChild(remove);
    }
    popover.appendChild(row);
  });
  if (!here.length) return;
  popoverOpener = opener || null;
  popover.openerList = opener ? opener.closest(".span-list") : null;
  place(popover, rect);
  const first = popover.querySelector("button");
  if (opener && first) first.focus();
}

export function hidePopover(returnFocus) {
  if (popover.hidden) return;
  popover.hidden = true;
  const opener = popoverOpener;
  popoverOpener = null;
  if (!returnFocus || !opener) return;
  if (document.contains(opener)) { opener.focus(); return; }
  // The opener was a highlight's button, drawn anew after the change: the one now in its place, or the text.
  const list = popover.openerList;
  focusAfterListChange(list, Number(opener.dataset.position), list.dataset.response);
}

// ---- starting ----------------------------------------------------------------------------------------------------
export function startSpans() {
  if (palette) {
    paletteButtons().forEach(function (b, i) {
      const name = b.textContent.trim();
      const swatch = document.createElement("span");
      swatch.className = "swatch sw-" + b.dataset.sub;
      const code = document.createElement("span");
      code.className = "sub-code";
      code.textContent = b.dataset.code;
      b.replaceChildren(swatch, code, document.createTextNode(" " + name));
      if (i < 9) {
        const digit = document.createElement("kbd");
        digit.textContent = String(i + 1);
        b.prepend(digit);
      }
    });
    palette.addEventListener("click", function (event) {
      const b = event.target.closest("button.sub");
      if (b) { pick(b.dataset.sub); dropRepeat(); }
    });
    palette.addEventListener("keydown", function (event) {
      if (/^[1-9]$/.test(event.key)) {
        const b = paletteButtons()[Number(event.key) - 1];
        if (b) pick(b.dataset.sub);
        event.preventDefault();
      } else if (event.key === "Escape") {
        closePalette();
        event.preventDefault();
      } else {
        arrowsAmong(palette, event, "button.sub");
      }
      event.stopPropagation();
    });
  }

  popover.addEventListener("keydown", function (event) {
    if (event.key === "Escape") { hidePopover(true); event.preventDefault(); } else { arrowsAmong(popover, event, "button"); }
    event.stopPropagation();
  });

  document.querySelectorAll(".response-text").forEach(function (el) {
    el.addEventListener("click", function (event) {
      const seg = event.target.closest(".seg.hl");
      const sel = window.getSelection();
      if (!seg || (sel && !sel.isCollapsed)) return;
      const a = Number(seg.dataset.start), b = Number(seg.dataset.end);
      showPopover(allSpans(el.dataset.response).filter(function (s) { return s.start <= a && s.end >= b; }),
        seg.getBoundingClientRect(), null);
    });
    el.addEventListener("focus", function () {
      const sel = window.getSelection();
      if (!sel.rangeCount || !el.contains(sel.anchorNode)) sel.collapse(el, 0);
    });
    // Keyboard selection in read-only text: the browser's selection can be moved and extended directly.
    el.addEventListener("keydown", function (event) {
      if (event.key !== "ArrowLeft" && event.key !== "ArrowRight") return;
      const sel = window.getSelection();
      if (!sel.rangeCount || !el.contains(sel.anchorNode)) sel.collapse(el, 0);
      sel.modify(event.shiftKey ? "extend" : "move", event.key === "ArrowRight" ? "forward" : "backward",
        event.ctrlKey || event.altKey ? "word" : "character");
      event.preventDefault();
      event.stopPropagation();
    });
  });

  document.addEventListener("click", dropRepeatedClick, true);

  // The selection changed while the palette is open (widened by Shift+arrows in the text, collapsed by an arrow):
  // the palette takes the passage selected now, or closes when no passage is left; a pick is never of the passage
  // selected when it opened.
  document.addEventListener("selectionchange", function () {
    if (!palette || palette.hidden) return;
    const selection = selectionIn();
    if (!selection || selection.refused) { closePalette(); return; }
    pending = selection;
    place(palette, selection.rect);
  });

  // A mouse selection begun on a response's text or heading opens the palette wherever the button is let go: a drag
  // may run on past the text.
  let pressedOnText = false;
  document.addEventListener("mouseup", function () {
    if (pressedOnText) window.setTimeout(function () { openPalette(false); }, 0);
    pressedOnText = false;
  });
  document.addEventListener("mousedown", function (event) {
    pressedOnText = Boolean(event.target.closest(".unit-text")) && !event.target.closest("button");
    hideSelectionNote();
    if (palette && !palette.hidden && !palette.contains(event.target)) { paletteOpener = null; closePalette(); }
    if (!popover.hidden && !popover.contains(event.target)) hidePopover(false);
  });
  // An undo, a redo or the server's newer value replaced a form's spans (values.js).
  forms.forEach(function (form) {
    form.addEventListener(SPANS_REPLACED, function () { render(form.dataset.response); });
  });
}

// Once the forms are built (their spans read): every text drawn with its highlights.
export function drawTexts() { Object.keys(texts).forEach(render); }
