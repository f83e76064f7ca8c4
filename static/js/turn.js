// The turn page: span highlighting (character offsets = Unicode code points, as Python counts them),
// autosave status with retries, keyboard control and time on task. Saves themselves are htmx requests.
(function () {
  "use strict";

  const MAX_BACKOFF_MS = 30000;
  const IDLE_AFTER_MS = 60000;
  const TIME_REPORT_EVERY_S = 15;

  const page = document.querySelector(".turn-page");
  if (!page) return;
  const csrfToken = JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
  const palette = document.getElementById("palette");
  const popover = document.getElementById("span-popover");
  const keysHelp = document.getElementById("keys-help");
  const globalState = document.getElementById("global-state");
  const subcategories = {};
  palette.querySelectorAll("button.sub").forEach(function (b) {
    subcategories[b.dataset.sub] = { code: b.dataset.code, name: b.textContent.trim() };
  });

  // ---- text and offsets -----------------------------------------------------------------------------------
  // A response is known here only by its handle (data-response): opaque, per reviewer, never its database id.
  const texts = {};
  document.querySelectorAll(".response-text").forEach(function (el) {
    const id = el.dataset.response;
    texts[id] = Array.from(JSON.parse(document.getElementById("text-" + id).textContent));
  });

  function spanForms(responseId) {
    return Array.from(document.querySelectorAll('form.attr.has-spans[data-response="' + responseId + '"]'));
  }

  function readSpans(form) {
    try { return JSON.parse(form.elements.spans.value || "[]"); } catch (e) { return []; }
  }

  function allSpans(responseId) {
    const out = [];
    spanForms(responseId).forEach(function (form) {
      readSpans(form).forEach(function (s, index) {
        out.push({ start: s.start, end: s.end, subcategory: s.subcategory, code: form.dataset.code, index: index, form: form });
      });
    });
    return out;
  }

  function render(responseId) {
    const el = document.querySelector('.response-text[data-response="' + responseId + '"]');
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
      seg.textContent = cps.slice(a, b).join("");
      const covering = spans.filter(function (s) { return s.start <= a && s.end >= b; });
      covering.forEach(function (s) { seg.classList.add("hl-" + s.subcategory); });
      if (covering.length) {
        seg.classList.add("hl");
        seg.title = covering.map(function (s) { return (subcategories[s.subcategory] || {}).name || s.subcategory; }).join(" + ");
      }
      if (covering.length > 1) seg.classList.add("overlap");
      fragment.appendChild(seg);
    }
    el.replaceChildren(fragment);
    renderList(responseId, spans);
  }

  function renderList(responseId, spans) {
    const list = document.querySelector('.span-list[data-response="' + responseId + '"]');
    const cps = texts[responseId];
    list.replaceChildren();
    spans.sort(function (x, y) { return x.start - y.start || x.end - y.end; }).forEach(function (s) {
      const chip = document.createElement("span");
      chip.className = "chip";
      const swatch = document.createElement("span");
      swatch.className = "swatch sw-" + s.subcategory;
      const label = document.createElement("span");
      const excerpt = cps.slice(s.start, s.end).join("");
      label.textContent = ((subcategories[s.subcategory] || {}).name || s.subcategory) + ": “" +
        (excerpt.length > 60 ? excerpt.slice(0, 57) + "…" : excerpt) + "”";
      const remove = document.createElement("button");
      remove.type = "button";
      remove.className = "link remove-span";
      remove.textContent = "✕";
      remove.setAttribute("aria-label", "Remove this highlight");
      remove.addEventListener("click", function () { removeSpan(s.form, s.index); });
      chip.append(swatch, label, remove);
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

  function selectionIn() {
    const sel = window.getSelection();
    if (!sel || sel.rangeCount === 0 || sel.isCollapsed) return null;
    const range = sel.getRangeAt(0);
    const container = range.commonAncestorContainer.nodeType === 1
      ? range.commonAncestorContainer.closest(".response-text")
      : range.commonAncestorContainer.parentElement.closest(".response-text");
    if (!container) return null;
    const id = container.dataset.response;
    let start = offsetOf(container, range.startContainer, range.startOffset);
    let end = offsetOf(container, range.endContainer, range.endOffset);
    const cps = texts[id];
    while (start < end && /\s/.test(cps[start])) start++;
    while (end > start && /\s/.test(cps[end - 1])) end--;
    if (end <= start) return null;
    return { responseId: id, start: start, end: end, rect: range.getBoundingClientRect() };
  }

  // ---- adding, changing, removing spans ---------------------------------------------------------------------
  function formFor(responseId, code) {
    return document.getElementById("r" + responseId + "-" + code);
  }

  function writeSpans(form, spans) {
    form.elements.spans.value = JSON.stringify(spans);
    const count = form.elements.instance_count;
    if (count && !count.dataset.manual) count.value = String(spans.length);
    render(form.dataset.response);
    htmx.trigger(form, "change");
  }

  function addSpan(selection, slug) {
    const form = formFor(selection.responseId, subcategories[slug].code);
    if (!form || form.querySelector('input[name="score"]:disabled')) return;
    const spans = readSpans(form);
    // The same passage with the same subcategory is one span (the server refuses a repeat).
    if (spans.some((s) => s.start === selection.start && s.end === selection.end && s.subcategory === slug)) return;
    spans.push({ start: selection.start, end: selection.end, subcategory: slug });
    writeSpans(form, spans);
  }

  function removeSpan(form, index) {
    const spans = readSpans(form);
    spans.splice(index, 1);
    writeSpans(form, spans);
    hide(popover);
  }

  function switchSpan(form, index, slug) {
    const spans = readSpans(form);
    spans[index].subcategory = slug;
    writeSpans(form, spans);
    hide(popover);
  }

  // ---- palette and popover ------------------------------------------------------------------------------------
  let pending = null;

  function place(el, rect) {
    el.hidden = false;
    const top = window.scrollY + rect.bottom + 6;
    const left = Math.max(8, Math.min(window.scrollX + rect.left, window.scrollX + window.innerWidth - el.offsetWidth - 8));
    el.style.top = top + "px";
    el.style.left = left + "px";
  }

  function hide(el) { el.hidden = true; }

  function openPalette(viaKeyboard) {
    const selection = selectionIn();
    if (!selection) return false;
    pending = selection;
    place(palette, selection.rect);
    if (viaKeyboard) palette.querySelector("button.sub").focus();
    return true;
  }

  palette.addEventListener("click", function (event) {
    const button = event.target.closest("button.sub");
    if (!button || !pending) return;
    addSpan(pending, button.dataset.sub);
    pending = null;
    hide(palette);
    window.getSelection().removeAllRanges();
  });

  palette.addEventListener("keydown", function (event) {
    const buttons = Array.from(palette.querySelectorAll("button.sub"));
    const index = buttons.indexOf(document.activeElement);
    if (event.key === "ArrowDown" || event.key === "ArrowRight") {
      buttons[(index + 1) % buttons.length].focus();
      event.preventDefault();
    } else if (event.key === "ArrowUp" || event.key === "ArrowLeft") {
      buttons[(index - 1 + buttons.length) % buttons.length].focus();
      event.preventDefault();
    } else if (event.key === "Escape") {
      hide(palette);
      event.preventDefault();
    }
    event.stopPropagation();
  });

  document.querySelectorAll(".response-text").forEach(function (el) {
    el.addEventListener("mouseup", function () {
      window.setTimeout(function () { openPalette(false); }, 0);
    });
    el.addEventListener("click", function (event) {
      const seg = event.target.closest(".seg.hl");
      const sel = window.getSelection();
      if (!seg || (sel && !sel.isCollapsed)) return;
      showPopover(el.dataset.response, Number(seg.dataset.start), Number(seg.dataset.end), seg.getBoundingClientRect());
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

  function showPopover(responseId, a, b, rect) {
    const here = allSpans(responseId).filter(function (s) { return s.start <= a && s.end >= b; });
    popover.replaceChildren();
    const cps = texts[responseId];
    here.forEach(function (s) {
      const row = document.createElement("div");
      row.className = "pop-row";
      const label = document.createElement("span");
      const swatch = document.createElement("span");
      swatch.className = "swatch sw-" + s.subcategory;
      label.append(swatch, document.createTextNode(" " + (subcategories[s.subcategory] || {}).name + " [" + s.start + "–" + s.end + "): “" + cps.slice(s.start, s.end).join("") + "”"));
      row.appendChild(label);
      Object.keys(subcategories).filter(function (slug) {
        return subcategories[slug].code === s.code && slug !== s.subcategory;
      }).forEach(function (slug) {
        const change = document.createElement("button");
        change.type = "button";
        change.textContent = "Change to " + subcategories[slug].name.replace(/^\S+\s/, "");
        change.addEventListener("click", function () { switchSpan(s.form, s.index, slug); });
        row.appendChild(change);
      });
      const remove = document.createElement("button");
      remove.type = "button";
      remove.className = "danger";
      remove.textContent = "Remove";
      remove.addEventListener("click", function () { removeSpan(s.form, s.index); });
      row.appendChild(remove);
      popover.appendChild(row);
    });
    if (here.length) place(popover, rect);
  }

  document.addEventListener("mousedown", function (event) {
    if (!palette.hidden && !palette.contains(event.target)) hide(palette);
    if (!popover.hidden && !popover.contains(event.target)) hide(popover);
  });

  // ---- autosave state, retries --------------------------------------------------------------------------------
  function setState(form, state, text) {
    form.dataset.state = state;
    const holder = form.querySelector(".save");
    if (text !== undefined) {
      const span = document.createElement("span");
      span.className = "state state-" + state;
      span.dataset.state = state;
      span.textContent = text;
      holder.replaceChildren(span);
    }
    updateGlobal();
  }

  function updateGlobal() {
    const forms = Array.from(document.querySelectorAll("form.attr"));
    const failed = forms.filter(function (f) { return f.dataset.state === "failed"; }).length;
    const saving = forms.filter(function (f) { return f.dataset.state === "saving"; }).length;
    const errors = forms.filter(function (f) { return f.dataset.state === "error"; }).length;
    let text = "All changes saved";
    let state = "saved";
    if (failed) { text = failed + " change(s) not saved yet — retrying"; state = "failed"; }
    else if (errors) { text = errors + " change(s) refused — see the red messages"; state = "error"; }
    else if (saving) { text = "Saving…"; state = "saving"; }
    globalState.textContent = text;
    globalState.dataset.state = state;
  }

  document.body.addEventListener("htmx:beforeRequest", function (event) {
    const form = event.detail.elt;
    if (form.matches && form.matches("form.attr")) setState(form, "saving", "Saving…");
  });

  document.body.addEventListener("htmx:afterRequest", function (event) {
    const form = event.detail.elt;
    if (!form.matches || !form.matches("form.attr")) return;
    const status = event.detail.xhr ? event.detail.xhr.status : 0;
    if (status === 0 || status >= 500 || (event.detail.failed && status !== 409 && status !== 422)) {
      const attempt = Number(form.dataset.retries || 0) + 1;
      form.dataset.retries = attempt;
      const delay = Math.min(MAX_BACKOFF_MS, 1000 * Math.pow(2, attempt - 1));
      setState(form, "failed", "Save failed — retrying in " + Math.round(delay / 1000) + " s");
      window.setTimeout(function () { htmx.trigger(form, "cab:retry"); }, delay);
    }
  });

  document.body.addEventListener("htmx:afterSwap", function (event) {
    const holder = event.detail.target;
    const form = holder.closest && holder.closest("form.attr");
    if (!form) return;
    const result = holder.querySelector(".state");
    if (!result) return;
    const state = result.dataset.state;
    if (state === "saved" || state === "stale") {
      form.dataset.retries = 0;
      form.elements.version.value = result.dataset.version;
    }
    if (state === "stale") applyNewer(form, result);
    setState(form, state);
  });

  function applyNewer(form, result) {
    form.querySelectorAll('input[name="score"]').forEach(function (radio) {
      radio.checked = radio.value === result.dataset.score;
    });
    const count = form.elements.instance_count;
    if (count) {
      count.value = result.dataset.count;
      if (result.dataset.count !== "") count.dataset.manual = result.dataset.count;
    }
    if (form.elements.spans && result.dataset.spans !== undefined) {
      form.elements.spans.value = result.dataset.spans;
      render(form.dataset.response);
    }
  }

  window.addEventListener("beforeunload", function (event) {
    const unsaved = document.querySelector('form.attr[data-state="saving"], form.attr[data-state="failed"]');
    if (unsaved) { event.preventDefault(); event.returnValue = ""; }
  });

  // The instance count follows the spans until the reviewer types a number of their own.
  document.querySelectorAll('form.attr input[name="instance_count"]').forEach(function (input) {
    input.addEventListener("input", function () { input.dataset.manual = input.value; });
  });

  // ---- keyboard --------------------------------------------------------------------------------------------
  const forms = Array.from(document.querySelectorAll("form.attr"));

  function focusForm(form) { if (form) { form.focus(); form.scrollIntoView({ block: "nearest" }); } }

  function toggleDefinition(form) {
    const definition = form.querySelector(".definition");
    definition.hidden = !definition.hidden;
    form.querySelector(".help-toggle").setAttribute("aria-expanded", String(!definition.hidden));
  }

  forms.forEach(function (form) {
    form.querySelector(".help-toggle").addEventListener("click", function () { toggleDefinition(form); });
    form.addEventListener("submit", function (event) { event.preventDefault(); });
  });

  document.getElementById("show-keys").addEventListener("click", function () { keysHelp.hidden = false; });
  document.getElementById("close-keys").addEventListener("click", function () { keysHelp.hidden = true; });

  document.addEventListener("keydown", function (event) {
    const target = event.target;
    if (target.matches && target.matches('input[type="number"], input[type="text"], textarea')) return;
    if (event.metaKey || (event.ctrlKey && event.key !== "ArrowLeft" && event.key !== "ArrowRight")) return;
    const form = target.closest ? target.closest("form.attr") : null;
    if (event.key === "Escape") {
      hide(palette); hide(popover); keysHelp.hidden = true;
      return;
    }
    if (event.key === "?") { keysHelp.hidden = !keysHelp.hidden; event.preventDefault(); return; }
    if (event.key === "h" && openPalette(true)) { event.preventDefault(); return; }
    if (event.key === "c") {
      const button = document.getElementById("complete-turn");
      if (button) { button.click(); event.preventDefault(); }
      return;
    }
    if (!form) return;
    if (/^[0-9]$/.test(event.key)) {
      const radio = form.querySelector('input[name="score"][value="' + event.key + '"]');
      if (radio && !radio.disabled) { radio.click(); }
      event.preventDefault();
    } else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      const index = forms.indexOf(form);
      focusForm(forms[index + (event.key === "ArrowDown" ? 1 : -1)]);
      event.preventDefault();
    } else if (event.key === "ArrowRight" || event.key === "ArrowLeft") {
      const same = forms.filter(function (f) { return f.dataset.code === form.dataset.code; });
      focusForm(same[same.indexOf(form) + (event.key === "ArrowRight" ? 1 : -1)]);
      event.preventDefault();
    } else if (event.key === "d") {
      toggleDefinition(form);
      event.preventDefault();
    }
  });

  // ---- time on task (idle time excluded) ------------------------------------------------------------------------
  let lastActivity = Date.now();
  let activeSeconds = 0;
  ["keydown", "mousedown", "mousemove", "wheel", "scroll", "touchstart"].forEach(function (name) {
    window.addEventListener(name, function () { lastActivity = Date.now(); }, { passive: true });
  });

  function reportTime(useBeacon) {
    if (activeSeconds <= 0) return;
    const seconds = activeSeconds;
    activeSeconds = 0;
    const body = new FormData();
    body.append("seconds", String(seconds));
    body.append("csrfmiddlewaretoken", csrfToken);
    if (useBeacon && navigator.sendBeacon) {
      navigator.sendBeacon(page.dataset.timeUrl, body);
      return;
    }
    fetch(page.dataset.timeUrl, { method: "POST", body: body, headers: { "X-CSRFToken": csrfToken }, credentials: "same-origin" })
      .then(function (response) { if (!response.ok) activeSeconds += seconds; })
      .catch(function () { activeSeconds += seconds; });
  }

  let tick = 0;
  window.setInterval(function () {
    if (document.visibilityState === "visible" && Date.now() - lastActivity < IDLE_AFTER_MS) activeSeconds++;
    if (++tick % TIME_REPORT_EVERY_S === 0) reportTime(false);
  }, 1000);
  window.addEventListener("pagehide", function () { reportTime(true); });

  // ---- start ---------------------------------------------------------------------------------------------------
  Object.keys(texts).forEach(render);
  updateGlobal();
})();
