"""What the dashboards read: the study's rounds with progress and time on task, its metric runs, and the stored
report of the run a page shows. Read-only: a report page never writes (starting a run is ``metrics``')."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.postgres.fields import ArrayField
from django.db.models import Count, F, Func, JSONField, OuterRef, Q, QuerySet, Subquery, Sum, TextField, Value
from django.db.models.fields.json import KeyTransform
from django.db.models.functions import Cast, Coalesce, JSONObject

from annotation.models import Assignment, AttributeDefinition, Round, Span, Study, StudyMember
from annotation.selectors import study_coders
from benchmark.models import Conversation, ModelResponse
from common.rounds import MAIN
from common.segments import text_segments
from metrics import selectors as metrics_selectors
from metrics.kind_sections import report_sections
from metrics.models import MetricRun
from metrics.report_warnings import section_warnings

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
    """The study's ``RUNS_SHOWN`` newest runs, whatever their status: the overview's runs table (its warnings are
    ``shown_run``'s, which may be older)."""
    return list(metrics_selectors.metric_runs_for(study=study).order_by("-created_at", "-pk")[:RUNS_SHOWN])


def sections_unread() -> tuple[tuple[str, ...], ...]:
    """The report's sections, all a page that shows only the run line leaves in the database (the kinds' too)."""
    return (("calibration",), ("indices",), ("attributes",), *((s.slug,) for s in report_sections()),
            ("parameters",))


def runs_active(runs: list[MetricRun]) -> bool:
    return any(run.status in (MetricRun.Status.QUEUED, MetricRun.Status.RUNNING) for run in runs)


def _succeeded_newest_first(*, study: Study) -> QuerySet[MetricRun]:
    """The study's succeeded runs, the newest (by when it finished, then by id) first, their reports deferred: the
    report pages show the first when no run is chosen (``report_of``), and the overview its warnings
    (``shown_run``); the run picker lists them in this order (``metrics.selectors.NEWEST_FIRST``)."""
    return metrics_selectors.runs_succeeded_newest_first(study=study).defer("result")


def shown_run(*, study: Study) -> tuple[MetricRun | None, list[str]]:
    """The run the report pages show when none is chosen (the study's newest succeeded run, however many runs
    failed, wait or compute after it) with what its run line reads and its report's warnings: the sections empty
    although the study has judgments or labels for them, the figures resting on few clusters. The run's
    ``failed_after`` counts the study's runs requested after it that failed. One query, whatever the number of
    runs. (The overview looked for it among the ``RUNS_SHOWN`` newest runs alone: after ten failed runs it showed
    no warning, while the report pages showed an older run's figures.)"""
    failed_after = (MetricRun.objects.filter(study=OuterRef("study"), status=MetricRun.Status.FAILED,
                                             created_at__gt=OuterRef("created_at"))
                    .order_by().values("study").annotate(n=Count("pk")).values("n"))
    run = _succeeded_newest_first(study=study).annotate(
        warnings=KeyTransform("warnings", "result"),
        # What the run line reads (its input and software), as ``report_of``'s ``report`` without the rest.
        report=JSONObject(input=KeyTransform("input", "result"), software=KeyTransform("software", "result")),
        failed_after=Coalesce(Subquery(failed_after), 0),
    ).first()
    if run is None:
        return None, []
    return run, section_warnings({"warnings": run.warnings})


RUN_CHOICES = 50  # the newest succeeded runs a page's run picker lists; an older one is reached by its number


def run_choices(*, study: Study, asked: str | None) -> list[tuple[int, str]]:
    """A report page's run picker: the study's ``RUN_CHOICES`` newest succeeded runs, and the run ``asked`` (the
    page's ``?run=``) when it is an older succeeded run of the study, so that a link to it (the run line's "link to
    this view", one kept in a paper's notes) shows it chosen once newer runs have been made. Before, the picker did
    not hold it, and the browser showed the newest run as chosen above the older run's figures."""
    succeeded = _succeeded_newest_first(study=study)
    runs = list(succeeded[:RUN_CHOICES])
    if (asked and asked.isascii() and asked.isdigit() and int(asked) < 2**63
            and all(run.pk != int(asked) for run in runs)):
        runs.extend(succeeded.filter(pk=int(asked)))
    return [(run.pk, f"run {run.pk} · {run.finished_at:%Y-%m-%d %H:%M} · B = {run.parameters.get('bootstrap')}")
            for run in runs]


class _Without(Func):
    """A jsonb value without the given paths (PostgreSQL's ``#-`` operator, once per path)."""

    arg_joiner = " #- "
    template = "(%(expressions)s)"
    output_field = JSONField()


def report_of(*, study: Study, run_id: int | None,
              without: Sequence[tuple[str, ...]] = ()) -> tuple[MetricRun | None, dict | None]:
    """The chosen succeeded run of the study (the newest when none is chosen) and its report, less the ``without``
    paths (parts of the report a page never reads, such as ``("indices", "coupling")``): PostgreSQL drops them, so
    a page neither fetches nor parses megabytes it does not show. One query either way."""
    runs = _succeeded_newest_first(study=study)
    if run_id is not None:
        runs = runs.filter(pk=run_id)
    paths = [Cast(Value(list(path)), ArrayField(TextField())) for path in without]
    run = runs.annotate(report=_Without(F("result"), *paths)).first()
    if run is None:
        return None, None
    return run, run.report


EXAMPLES_SHOWN = 10


@dataclass(frozen=True)
class SpanExample:
    response: ModelResponse
    n_coders: int
    # The text cut at every highlight boundary: each piece with how many coders highlighted it as the subcategory.
    segments: list[tuple[str, int]]


def span_examples(*, study: Study, model: str, subcategory: str, dataset: str = "",
                  kind: str = "") -> tuple[int, list[SpanExample]]:
    """Main-round responses of ``model`` in which reviewers highlighted ``subcategory``: how many there are, and
    the first EXAMPLES_SHOWN of them (by response id) with every such highlight overlaid (4 queries). ``dataset``
    (a name) and ``kind`` ("single" or "multi") narrow them as the span-evidence page's filters do: multi-turn
    is a conversation of kind multi, single-turn any other (as the report splits them).

    The highlights are those the span-evidence figure reads: of scored judgments (an unscored draft is not a
    judgment yet), of the retained panel when the study has one, never of an automated coder (docs/metrics.md,
    choices 15 and 16)."""
    spans = Span.objects.filter(
        judgment__round__study=study, judgment__round__kind=MAIN, judgment__is_gold=False,
        judgment__score__isnull=False, judgment__response__model_slot=model, subcategory__slug=subcategory,
    )
    # Roles and the panel as the report reads them (former members' included: annotation.selectors.study_coders).
    coders = study_coders(study=study)
    spans = spans.exclude(judgment__coder_id__in=[c.user_id for c in coders if c.role == StudyMember.Role.METHOD])
    panel = [coder.user_id for coder in coders if coder.retained]
    if panel:
        spans = spans.filter(judgment__coder_id__in=panel)
    if dataset:
        spans = spans.filter(judgment__response__turn__conversation__dataset__name=dataset)
    if kind == "multi":
        spans = spans.filter(judgment__response__turn__conversation__kind=Conversation.Kind.MULTI)
    elif kind == "single":
        spans = spans.exclude(judgment__response__turn__conversation__kind=Conversation.Kind.MULTI)
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


@dataclass(frozen=True)
class CodeNames:
    """The names of a study's own codes, for the dashboards' headers, code cells and legends (reports.labels)."""

    clusters: dict[str, str]
    attributes: dict[str, str]
    values: dict[str, str]  # the values of the attribute ``value_codes`` (a kind's legend): their meaning

    @property
    def all(self) -> dict[str, str]:
        return {**self.values, **self.attributes, **self.clusters}


def code_names(*, study: Study, value_codes: str | None = None) -> CodeNames:
    """The study's schema's cluster names (from its definition, loaded with the study), attribute names and, for
    the attribute ``value_codes`` (the one a kind's legend explains), the meaning of each of its values (its
    anchors), in schema order: one query."""
    definition = study.schema.definition or {}
    clusters = {str(c["code"]): str(c.get("name") or c["code"]) for c in definition.get("clusters") or []
                if isinstance(c, dict) and c.get("code")}
    attributes, values = {}, {}
    for code, name, anchors, labels in (AttributeDefinition.objects.filter(schema_id=study.schema_id)
                                        .order_by("position").values_list("code", "name", "anchors", "scale_labels")):
        attributes[code] = name
        if code == value_codes and isinstance(anchors, dict):
            labels = labels if isinstance(labels, dict) else {}
            for value, meaning in anchors.items():
                label = str(labels.get(str(value), value))
                if label != "none" and meaning:
                    values[label] = str(meaning).rstrip(".")
    return CodeNames(clusters=clusters, attributes=attributes, values=values)
