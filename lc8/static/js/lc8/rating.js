// The session page of a session-rated study (docs/lc8-rating.md): the derived total, the sum of the items, kept
// current as the items change ("–" until every item has a value). It is never sent: the page's modules (turn/,
// which run first, being this module's dependency, so the item forms exist by now) save the items alone.
import "../turn/main.js";

const output = document.getElementById("lc8-total");
if (output) {
  const items = Array.from(document.querySelectorAll(".lc8-items > .attrs form.attr"));

  function total() {
    let sum = 0;
    for (const form of items) {
      const checked = form.querySelector('input[name="score"]:checked');
      if (!checked) return null;
      sum += Number(checked.value);
    }
    return items.length ? sum : null;
  }

  function show() {
    const value = total();
    const text = value === null ? "–" : String(value);
    if (output.textContent !== text) output.textContent = text;
    output.dataset.complete = String(value !== null);
  }

  // A change by mouse or key, a clear, an undo or a newer value from another tab: each one ends in a new save state
  // in the form, which the observer sees.
  items.forEach(function (form) { form.addEventListener("change", show); });
  const observer = new MutationObserver(show);
  items.forEach(function (form) { observer.observe(form, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-state"] }); });
  show();
}
