"""CARE pages for admins and researchers: the CARE page's own template and context (which studies show the page:
``reports.kind_pages``), and the timeline of one history: each user turn's recovery state, credit, candidate and
reached set, each assistant turn's alignment label, sessions as groups (kind, crisis type).

The timeline's state, credit and candidate are the stored run's (``care.states``) when the chosen run (the newest
by default) has the history; the reached set and the labels, which the report does not store, are computed for this
one history from the core (``score_history``) under the run's reference coding. With no run, everything comes from
the core. Where the live codes give a different state from the run's, the page says so on that turn.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from annotation.forms import error_text
from annotation.models import Study
from care import charts as care_charts
from care import inputs as care_inputs
from care.forms import TimelineForm
from metrics.views import staff_study_or_404
from reports import kind_pages, selectors


def _reached(states: Iterable[str]) -> list[str]:
    from care.core.recovery import STATES

    return [s for s in STATES if s in set(states)]


def _timeline(study: Study, conversation: str, stored: dict[str, Any],
              reference: str | None) -> tuple[list[dict], str]:
    from care.core.metrics import score_history

    try:
        inputs = care_inputs.care_inputs(study=study, conversation=conversation, reference=reference, resamples=0)
    except ValueError:  # the run's reference coder has no codes here any more: the default choice
        inputs = care_inputs.care_inputs(study=study, conversation=conversation, resamples=0)
    if not inputs.histories:
        raise Http404(f"no history {conversation!r} in this study")
    history = inputs.histories[0]
    texts = care_inputs.history_texts(study=study, conversation=conversation)
    scored = {t.turn_index: t for t in score_history(history, inputs.reference, inputs.params.action_strategies)}
    sessions = []
    for session in history.sessions:
        turns = []
        for index in session.turns:
            live = scored[index]
            kept = stored.get(str(index))
            shown = kept or {"state": live.state.state, "credit": live.state.credit,
                             "candidate": live.state.candidate}
            turns.append({
                "index": index, "text": texts.get(index, ""), "user": live.user, "assistant": live.assistant,
                "state": shown["state"], "credit": shown["credit"], "candidate": shown["candidate"],
                "reached": _reached(live.state.reached), "episode": live.state.episode, "action": live.action,
                "label": live.label, "from_run": kept is not None,
                "changed": kept is not None and (kept["state"], kept["credit"], kept["candidate"]) != (
                    live.state.state, live.state.credit, live.state.candidate),
            })
        sessions.append({"index": session.index, "kind": session.kind, "crisis_type": session.crisis_type,
                         "opens_episode": session.kind in ("crisis", "callback"), "turns": turns})
    return sessions, inputs.reference_name


@login_required
@require_safe
def history_timeline(request: HttpRequest, slug: str, conversation: str) -> HttpResponse:
    study = staff_study_or_404(request, slug)
    if care_charts.CARE_PAGE not in kind_pages.pages_of(study):  # CARE studies only (a schema with a care block)
        raise Http404("timelines are for CARE studies (a schema with a care block)")
    form = TimelineForm({"conversation": conversation, "run": request.GET.get("run")})
    if not form.is_valid():
        raise Http404(error_text(form))
    run_id = form.cleaned_data["run"]
    run, report = selectors.report_of(study=study, run_id=run_id)
    if run_id is not None and run is None:
        raise Http404(f"run {run_id} is not a succeeded metric run of this study")
    care = (report or {}).get("care") or {}
    stored = (care.get("states") or {}).get(conversation) or {}
    reference = care.get("reference") if stored else None
    sessions, reference_name = _timeline(study, conversation, stored, reference)
    return render(request, "care/timeline.html", {
        "study": study, "pages": kind_pages.pages_of(study), "conversation": conversation, "sessions": sessions,
        "run": run if stored else None, "reference": reference_name, "line_run": run,
        "query": request.GET.urlencode(),
    })
