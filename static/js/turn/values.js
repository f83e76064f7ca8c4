// What an attribute form holds: its score, instance count and spans as one comparable snapshot, and putting values
// back into the form (an undo or redo, or the newer value the server answered with). When a form's spans are
// replaced so, the form gets a SPANS_REPLACED event: spans.js draws its text again.

export const SPANS_REPLACED = "turn:spans-replaced";

export function snapshot(form) {
  const checked = form.querySelector('input[name="score"]:checked');
  const count = form.elements.instance_count;
  return {
    score: checked ? checked.value : "",
    count: count ? count.value : null,
    manual: count ? count.dataset.manual : undefined,
    spans: JSON.stringify(form.spans || []),
  };
}

export function same(a, b) { return a.score === b.score && a.count === b.count && a.spans === b.spans; }

function spansReplaced(form) {
  if (form.classList.contains("has-spans")) form.dispatchEvent(new CustomEvent(SPANS_REPLACED));
}

export function applySnapshot(form, snap) {
  form.querySelectorAll('input[name="score"]').forEach(function (radio) { radio.checked = radio.value === snap.score; });
  const count = form.elements.instance_count;
  if (count) {
    count.value = snap.count;
    if (snap.manual === undefined) delete count.dataset.manual; else count.dataset.manual = snap.manual;
  }
  form.spans = JSON.parse(snap.spans);
  form.current = snapshot(form);
  spansReplaced(form);
}

// The server's newer value (a save refused as stale): it replaces what the form showed.
export function applyNewer(form, result) {
  form.querySelectorAll('input[name="score"]').forEach(function (radio) {
    radio.checked = radio.value === result.dataset.score;
  });
  form.savedScore = result.dataset.score || "";
  const count = form.elements.instance_count;
  if (count) {
    count.value = result.dataset.count;
    if (result.dataset.count !== "") count.dataset.manual = result.dataset.count; else delete count.dataset.manual;
  }
  if (form.classList.contains("has-spans")) {
    form.spans = result.dataset.spans !== undefined ? JSON.parse(result.dataset.spans) : [];
    spansReplaced(form);
  }
  form.current = snapshot(form);
}
