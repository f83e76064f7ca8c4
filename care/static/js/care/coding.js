// Longitudinal histories (docs/care-data.md) on the turn page: when the study shows the judge's labels to its
// coders, each labelled attribute gets the judge's value beside it and a "Confirm" button that chooses the same
// value, saved through the page's own save queue (turn/save.js). The page's entry module runs first (it is this
// module's dependency), so the forms are built by then.
import "../turn/main.js";
import { editable, page } from "../turn/page.js";

const source = document.getElementById("judge-labels");
if (page && source) {
  const labels = JSON.parse(source.textContent);

  function chosen(form) {
    const checked = form.querySelector('input[name="score"]:checked');
    return checked ? checked.value : "";
  }

  function showAgreement(form, row, label) {
    const agrees = chosen(form) === String(label.score);
    row.dataset.agrees = String(agrees);
    row.querySelector(".verdict").textContent = chosen(form) === "" ? "" : agrees ? "your value agrees" : "you corrected it";
  }

  Object.keys(labels).forEach(function (formId) {
    const form = document.getElementById(formId);
    if (!form || !form.classList.contains("attr")) return;
    labels[formId].forEach(function (label) {
      const value = String(label.score) + (label.label ? " " + label.label : "");
      const row = document.createElement("span");
      row.className = "judge-label";
      row.dataset.judge = label.judge;
      row.dataset.score = String(label.score);
      const text = document.createElement("span");
      text.textContent = "Judge " + label.judge + ": " + value;
      row.appendChild(text);
      if (label.note) {
        const note = document.createElement("span");
        note.className = "note";
        note.textContent = "(" + label.note + ")";
        row.appendChild(note);
      }
      if (editable) {
        const confirm = document.createElement("button");
        confirm.type = "button";
        confirm.className = "confirm-judge";
        confirm.textContent = "Confirm";
        confirm.setAttribute("aria-label", "Confirm the judge's " + form.dataset.code + ": " + value);
        confirm.addEventListener("click", function () {
          const radio = form.querySelector('input[name="score"][value="' + String(label.score) + '"]');
          if (radio && !radio.checked) radio.click(); // a change like any other: saved as any other
        });
        row.appendChild(confirm);
      }
      const verdict = document.createElement("span");
      verdict.className = "verdict";
      verdict.setAttribute("aria-live", "polite");
      row.appendChild(verdict);
      form.appendChild(row);
      showAgreement(form, row, label);
      form.addEventListener("change", function () { showAgreement(form, row, label); });
    });
  });
}
