// Time on task: seconds with the page visible and someone active in the last minute, reported every 15 s and when
// the page is left (a beacon), kept and sent again when a report fails for the moment (dropped when it is refused).
import { coder, page, token } from "./page.js";

const IDLE_AFTER_MS = 60000;
const TIME_REPORT_EVERY_S = 15;
// Answers that refuse a report for what it is, not for now (404: the item is no longer the coder's, 409: the round
// takes no more time, 422: not a number of seconds): its seconds are dropped, never sent again. Any other failure
// (the session ended, a redirect to sign in, the server unavailable, no answer) keeps them for the next report.
const REFUSED = new Set([404, 409, 422]);

let lastActivity = Date.now();
let activeSeconds = 0;

function reportTime(useBeacon) {
  if (activeSeconds <= 0) return;
  const seconds = activeSeconds;
  activeSeconds = 0;
  const body = new FormData();
  body.append("seconds", String(seconds));
  body.append("csrfmiddlewaretoken", token());
  body.append("coder", coder);
  if (useBeacon && navigator.sendBeacon) {
    navigator.sendBeacon(page.dataset.timeUrl, body);
    return;
  }
  fetch(page.dataset.timeUrl, { method: "POST", body: body, headers: { "X-CSRFToken": token() }, credentials: "same-origin", redirect: "manual" })
    .then(function (response) { if (!response.ok && !REFUSED.has(response.status)) activeSeconds += seconds; })
    .catch(function () { activeSeconds += seconds; });
}

export function startTimer() {
  ["keydown", "mousedown", "mousemove", "wheel", "scroll", "touchstart"].forEach(function (name) {
    window.addEventListener(name, function () { lastActivity = Date.now(); }, { passive: true });
  });
  let tick = 0;
  window.setInterval(function () {
    if (document.visibilityState === "visible" && Date.now() - lastActivity < IDLE_AFTER_MS) activeSeconds++;
    if (++tick % TIME_REPORT_EVERY_S === 0) reportTime(false);
  }, 1000);
  window.addEventListener("pagehide", function () { reportTime(true); });
}
