"""What the dashboards read: the study's rounds with progress and time on task, its metric runs, and the stored
report of the run a page shows. Read-only: a report page never writes (starting a run is ``metrics``')."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q, Sum

from annotation.models import Assignment, Round, Span, Study
from benchmark.models import ModelResponse
from common.rounds import MAIN
from common.segments import text_segments
from metrics import selectors as metrics_selectors
from metrics.models import MetricRun

RUNS_SHOWN = 10


@dataclass(frozen=True)
class RoundProgress:
    name: str
    kind: str
    status: str
    n_items: int
    assigned: int
    completed: int
    seconds: int
    reviewers: list[dict[str, Any]]

    @property
    def share(self) -> float:
        return self.completed / self.assigned if self.assigned else 0.0


def study_progress(*, study: Study) -> list[RoundProgress]:
    """Every round of the study with its items, and per coder: assigned, completed, active seconds (2 queries)."""
    rounds = list(Round.objects.filter(study=study).annotate(n_items=Count("items")).order_by("kind", "number"))
    per_round: dict[int, list[dict[str, Any]]] = {}
    for round_id, username, assigned, completed, seconds in (
        Assignment.objects.filter(round__study=study).values_list("round_id", "coder__username")
        .annotate(assigned=Count("id"), completed=Count("id", filter=Q(completed_at__isnull=False)),
                  seconds=Sum("active_seconds"))
        .order_by("round_id", "coder__username")
    ):
        per_round.setdefault(round_id, []).append({
            "reviewer": username, "assigned": assigned, "completed": completed, "seconds": seconds or 0,
            "share": completed / assigned if assigned else 0.0,
            "seconds_per_item": (seconds or 0) / completed if completed else None,
        })
    return [
        RoundProgress(
            name=r.name, kind=r.kind, status=r.status, n_items=r.n_items,
            assigned=sum(p["assigned"] for p in per_round.get(r.pk, [])),
            completed=sum(p["completed"] for p in per_round.get(r.pk, [])),
            seconds=sum(p["seconds"] for p in per_round.get(r.pk, [])),
            reviewers=per_round.get(r.pk, []),
        )
        for r in rounds
    ]


def recent_runs(*, study: Study) -> list[MetricRun]:
    return list(metrics_selectors.metric_runs_for(study=study).order_by("-created_at", "-pk")[:RUNS_SHOWN])


def runs_active(runs: list[MetricRun]) -> bool:
    return any(run.status in (MetricRun.Status.QUEUED, MetricRun.Status.RUNNING) for run in runs)


def succeeded_runs(*, study: Study) -> list[MetricRun]:
    return list(metrics_selectors.metric_runs_for(study=study).filter(status=MetricRun.Status.SUCCEEDED)
                .order_by("-finished_at", "-pk")[:50])


def report_of(*, study: Study, run_id: int | None) -> tuple[MetricRun | None, dict | None]:
    """The chosen succeeded run of the study (the newest when none is chosen) and its report."""
    run = metrics_selectors.metric_run_latest_succeeded(study=study, run_id=run_id)
    if run is None:
        return None, None
    return run, run.result


EXAMPLES_SHOWN = 10


@dataclass(frozen=True)
class SpanExample:
    response: ModelResponse
    n_coders: int
    # The text cut at every highlight boundary: each piece with how many coders highlighted it as the subcategory.
    segments: list[tuple[str, int]]


def span_examples(*, study: Study, model: str, subcategory: str) -> tuple[int, list[SpanExample]]:
    """Main-round responses of ``model`` in which reviewers highlighted ``subcategory``: how many there are, and
    the first EXAMPLES_SHOWN of them (by response id) with every such highlight overlaid (3 queries)."""
    spans = Span.objects.filter(
        judgment__round__study=study, judgment__round__kind=MAIN, judgment__is_gold=False,
        judgment__response__model_slot=model, subcategory__slug=subcategory,
    )
    total = spans.values("judgment__response_id").distinct().count()
    chosen = list(spans.values_list("judgment__response_id", flat=True).distinct()
                  .order_by("judgment__response_id")[:EXAMPLES_SHOWN])
    marks: dict[int, list[tuple[int, int, int]]] = {}
    for response_id, start, end, coder in spans.filter(judgment__response_id__in=chosen).values_list(
            "judgment__response_id", "start", "end", "judgment__coder_id"):
        marks.setdefault(response_id, []).append((start, end, coder))
    responses = ModelResponse.objects.filter(pk__in=chosen).select_related("turn__conversation__dataset")
    examples = []
    for response in sorted(responses, key=lambda r: r.pk):
        found = marks.get(response.pk, [])
        examples.append(SpanExample(
            response=response, n_coders=len({coder for _, _, coder in found}),
            segments=[(piece, len(set(coders))) for piece, coders in text_segments(response.text, found)]))
    return total, examples
