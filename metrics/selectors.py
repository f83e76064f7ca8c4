"""Load a study's judgments into the plain arrays the computation core takes: one query per table, no model
instance per row."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.db.models import QuerySet

from annotation.models import AttributeDefinition, Judgment, Span, Study, StudyMember
from benchmark.models import Conversation, ModelResponse
from common.rounds import round_name
from metrics.core.report import AttributeSpec, JudgmentTable, SpanTable
from metrics.models import MetricRun


@dataclass(frozen=True)
class ReportInputs:
    attributes: list[AttributeSpec]
    judgments: JudgmentTable
    spans: SpanTable
    response_texts: dict[tuple[str, str, int, str], str]
    conversation_kinds: dict[tuple[str, str], str]
    subcategory_attribute: dict[str, str]
    panel: tuple[str, ...] | None
    experts: tuple[str, ...]  # the study's gold-panel members: their own codings are never a reviewer's


def attribute_specs(*, study: Study) -> list[AttributeSpec]:
    specs = []
    for a in AttributeDefinition.objects.filter(schema_id=study.schema_id).order_by("position"):
        specs.append(
            AttributeSpec(
                code=a.code,
                group=a.group,
                cluster=a.cluster or None,
                scale=tuple(range(a.scale_min, a.scale_max + 1)),
                level=a.level,
                bucket={int(k): int(v) for k, v in a.bucket.items()},
                risk={int(k): float(v) for k, v in a.risk.items()} if a.risk is not None else None,
                uiri=a.counts_toward_uiri,
                unit=a.unit,
            )
        )
    return specs


def report_inputs(*, study: Study) -> ReportInputs:
    rows = list(
        Judgment.objects.filter(round__study=study, score__isnull=False)
        .order_by("id")
        .values_list(
            "round__kind", "round__number", "coder__username", "is_gold", "conversation__dataset__name",
            "conversation__external_id", "turn__index", "response__model_slot", "attribute__code", "score",
        )
    )
    columns = list(zip(*rows, strict=True)) if rows else [()] * 10
    judgments = JudgmentTable(
        round=np.array([round_name(k, n) for k, n in zip(columns[0], columns[1], strict=True)], dtype=object),
        coder=np.array(columns[2], dtype=object),
        is_gold=np.array(columns[3], dtype=bool),
        dataset=np.array(columns[4], dtype=object),
        conversation=np.array(columns[5], dtype=object),
        turn=np.array([t or 0 for t in columns[6]], dtype=np.int64),
        model=np.array([m or "" for m in columns[7]], dtype=object),
        attribute=np.array(columns[8], dtype=object),
        score=np.array(columns[9], dtype=np.int64),
    )
    span_rows = list(
        Span.objects.filter(judgment__round__study=study, judgment__score__isnull=False)
        .order_by("id")
        .values_list(
            "judgment__round__kind", "judgment__round__number", "judgment__coder__username", "judgment__is_gold",
            "judgment__conversation__dataset__name", "judgment__conversation__external_id", "judgment__turn__index",
            "judgment__response__model_slot", "judgment__attribute__code", "start", "end", "subcategory__slug",
        )
    )
    s = list(zip(*span_rows, strict=True)) if span_rows else [()] * 12
    spans = SpanTable(
        round=np.array([round_name(k, n) for k, n in zip(s[0], s[1], strict=True)], dtype=object),
        coder=np.array(s[2], dtype=object),
        is_gold=np.array(s[3], dtype=bool),
        dataset=np.array(s[4], dtype=object),
        conversation=np.array(s[5], dtype=object),
        turn=np.array(s[6], dtype=np.int64),
        model=np.array(s[7], dtype=object),
        attribute=np.array(s[8], dtype=object),
        start=np.array(s[9], dtype=np.int64),
        end=np.array(s[10], dtype=np.int64),
        subcategory=np.array(s[11], dtype=object),
    )
    judged_conversations = Conversation.objects.filter(judgments__round__study=study).distinct()
    texts = {
        (d, c, t, m): text
        for d, c, t, m, text in ModelResponse.objects.filter(
            judgments__round__study=study, judgments__spans__isnull=False
        )
        .distinct()
        .values_list("turn__conversation__dataset__name", "turn__conversation__external_id", "turn__index",
                     "model_slot", "text")
    }
    kinds = {(d, c): k for d, c, k in judged_conversations.values_list("dataset__name", "external_id", "kind")}
    # Schema order matters: span ratios read "second : first" of each attribute's pair.
    subcategory_attribute = dict(
        study.schema.subcategories.order_by("attribute__position", "position").values_list("slug", "attribute__code")
    )
    retained = tuple(
        sorted(
            StudyMember.objects.filter(study=study, retained=True).values_list("user__username", flat=True)
        )
    )
    experts = tuple(
        StudyMember.objects.filter(study=study, role=StudyMember.Role.EXPERT)
        .order_by("user__username").values_list("user__username", flat=True)
    )
    return ReportInputs(
        attributes=attribute_specs(study=study),
        judgments=judgments,
        spans=spans,
        response_texts=texts,
        conversation_kinds=kinds,
        subcategory_attribute=subcategory_attribute,
        panel=retained or None,
        experts=experts,
    )


# --- API reads (metric runs, index tables) -------------------------------------------------------------------


def metric_runs_for(*, study: Study) -> QuerySet[MetricRun]:
    return MetricRun.objects.filter(study=study).select_related("study", "requested_by").defer("result")


def metric_run_get(*, run_id: int) -> MetricRun | None:
    """A run without its result (which can be megabytes); None when there is no such run."""
    return MetricRun.objects.select_related("study", "requested_by").defer("result").filter(pk=run_id).first()


def metric_run_result(*, run_id: int) -> dict | None:
    return MetricRun.objects.filter(pk=run_id).values_list("result", flat=True).first()


def metric_run_latest_succeeded(*, study: Study, run_id: int | None = None) -> MetricRun | None:
    """The newest succeeded run of the study (or the given one, when it is the study's and succeeded), with its
    result; None when there is none."""
    runs = MetricRun.objects.filter(study=study, status=MetricRun.Status.SUCCEEDED)
    if run_id is not None:
        runs = runs.filter(pk=run_id)
    return runs.order_by("-finished_at", "-pk").first()


def index_tables(*, result: dict) -> dict[str, tuple[list[str], list[list]]]:
    """The per-model tables of a report's ``indices`` (flags, ari, attribute_risk, fingerprint, … whatever the
    report holds in the shape {MODEL: {COLUMN: number}}) as (header, rows), one row per model."""
    tables: dict[str, tuple[list[str], list[list]]] = {}
    indices = result.get("indices") if isinstance(result, dict) else None
    for name, table in (indices or {}).items():
        if not isinstance(table, dict) or not table or not all(isinstance(row, dict) for row in table.values()):
            continue
        if any(isinstance(cell, dict | list) for row in table.values() for cell in row.values()):
            continue
        columns: list[str] = []
        for row in table.values():
            columns += [column for column in row if column not in columns]
        tables[name] = (["model", *columns], [[model, *(row.get(c) for c in columns)] for model, row in table.items()])
    return tables


def latest_succeeded_run_ids(*, study_ids: list[int]) -> dict[int, int]:
    """study id -> id of its newest succeeded run, for the studies that have one (one query)."""
    latest: dict[int, int] = {}
    for study_id, run_id in (
        MetricRun.objects.filter(study_id__in=study_ids, status=MetricRun.Status.SUCCEEDED)
        .order_by("study_id", "-finished_at", "-pk")
        .values_list("study_id", "pk")
    ):
        latest.setdefault(study_id, run_id)
    return latest


def metric_run_latest(*, study: Study, trigger: str) -> MetricRun | None:
    return MetricRun.objects.filter(study=study, trigger=trigger).order_by("-pk").first()


def metric_run_said(*, run: MetricRun) -> str:
    """What happened to a just-requested run, in words for the page that requested it (read afresh: the broker may
    have refused it, or an in-process run may already be done)."""
    run.refresh_from_db(fields=["status", "enqueued_at", "progress_message", "error"])
    if run.status == MetricRun.Status.SUCCEEDED:
        return f"metrics run {run.pk} computed the report"
    if run.status == MetricRun.Status.FAILED:
        return f"metrics run {run.pk} failed: {run.error.splitlines()[0] if run.error else 'no reason recorded'}"
    if run.enqueued_at is not None:
        return f"metrics run {run.pk} was queued for a worker"
    if run.progress_message.startswith("waiting for the task broker"):
        return (f"metrics run {run.pk} is waiting: the task broker cannot be reached; it starts by itself when the "
                "broker is back")
    return f"metrics run {run.pk} was requested"
