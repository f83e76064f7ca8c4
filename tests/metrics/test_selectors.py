"""The report inputs loaded through one integer COPY are the inputs the plain ORM rows give: the same report,
including re-coded rows, spans, conversation-level rows and a study next to it that must not leak in."""

from __future__ import annotations

import json

import numpy as np
import pytest
from django.core.management import call_command
from django.db import connection

from annotation.models import Judgment, Span, Study
from benchmark.models import Conversation, ModelResponse
from common.rounds import round_name
from metrics import selectors
from metrics.core.report import JudgmentTable, ReportParams, SpanTable, build_report

pytestmark = pytest.mark.django_db


def orm_judgments(study: Study) -> tuple[JudgmentTable, SpanTable]:
    """The loader before the COPY one: one ORM row (a tuple of names) per judgment and span."""
    rows = list(
        Judgment.objects.filter(round__study=study, score__isnull=False).order_by("id").values_list(
            "round__kind", "round__number", "coder__username", "is_gold", "conversation__dataset__name",
            "conversation__external_id", "turn__index", "response__model_slot", "attribute__code", "score"))
    c = list(zip(*rows, strict=True))
    judgments = JudgmentTable(
        round=np.array([round_name(k, n) for k, n in zip(c[0], c[1], strict=True)], dtype=object),
        coder=np.array(c[2], dtype=object), is_gold=np.array(c[3], dtype=bool), dataset=np.array(c[4], dtype=object),
        conversation=np.array(c[5], dtype=object), turn=np.array([t or 0 for t in c[6]], dtype=np.int64),
        model=np.array([m or "" for m in c[7]], dtype=object), attribute=np.array(c[8], dtype=object),
        score=np.array(c[9], dtype=np.int64))
    span_rows = list(
        Span.objects.filter(judgment__round__study=study, judgment__score__isnull=False).order_by("id").values_list(
            "judgment__round__kind", "judgment__round__number", "judgment__coder__username", "judgment__is_gold",
            "judgment__conversation__dataset__name", "judgment__conversation__external_id", "judgment__turn__index",
            "judgment__response__model_slot", "judgment__attribute__code", "start", "end", "subcategory__slug"))
    s = list(zip(*span_rows, strict=True))
    spans = SpanTable(
        round=np.array([round_name(k, n) for k, n in zip(s[0], s[1], strict=True)], dtype=object),
        coder=np.array(s[2], dtype=object), is_gold=np.array(s[3], dtype=bool), dataset=np.array(s[4], dtype=object),
        conversation=np.array(s[5], dtype=object), turn=np.array([t or 0 for t in s[6]], dtype=np.int64),
        model=np.array([m or "" for m in s[7]], dtype=object), attribute=np.array(s[8], dtype=object),
        start=np.array(s[9], dtype=np.int64), end=np.array(s[10], dtype=np.int64),
        subcategory=np.array(s[11], dtype=object))
    return judgments, spans


@pytest.fixture
def study() -> Study:
    call_command("generate_synthetic", "--conversations", "14", "--reviewers", "4", "--seed", "7",
                 "--calibration-turns", "3", "--slug", "loaded")
    call_command("generate_synthetic", "--conversations", "5", "--reviewers", "3", "--seed", "8",
                 "--calibration-turns", "2", "--slug", "neighbour")
    # Statistics for the fresh tables: without them the planner once chose nested loops over sequential scans for
    # the comparison queries below and one clean-clone CI run spent 298 s in this module's last test (< 6 s usual).
    analyze_tables_with_rows()
    return Study.objects.get(slug="loaded")


def analyze_tables_with_rows() -> None:
    """ANALYZE the tables that hold rows now, and only those. Statistics outlive the test's transaction, and a
    table analysed empty tells the planner to expect no row in it in every later test of the same database (an LC8
    test that ran after a whole-database ANALYZE here spent 325 s in one query planned for an empty table)."""
    from django.apps import apps

    with connection.cursor() as cursor:
        for model in apps.get_models(include_auto_created=True):
            table = connection.ops.quote_name(model._meta.db_table)
            cursor.execute(f"SELECT EXISTS (SELECT FROM {table})")  # noqa: S608 - a model's own table name
            if cursor.fetchone()[0]:
                cursor.execute(f"ANALYZE {table}")


def test_the_copy_loader_gives_the_orm_rows_columns(study):
    inputs = selectors.report_inputs(study=study)
    judgments, spans = orm_judgments(study)
    for table, expected in ((inputs.judgments, judgments), (inputs.spans, spans)):
        for name in expected.__dataclass_fields__:
            assert np.asarray(getattr(table, name)).tolist() == np.asarray(getattr(expected, name)).tolist(), name
    assert len(inputs.spans) > 0 and len(inputs.judgments) > 1000
    gold = np.asarray(inputs.judgments.is_gold)  # the gold flag rides on the coder's sign: both kinds are here
    assert gold.any() and not gold.all()


def test_the_report_from_the_copy_loader_is_the_report_from_orm_rows(study):
    # a re-coded row (a null score is left out) and a text for every span's response
    first = list(Judgment.objects.filter(round__study=study).order_by("pk").values_list("pk", flat=True)[:3])
    assert Judgment.objects.filter(pk__in=first).update(score=None) == 3
    inputs = selectors.report_inputs(study=study)
    judgments, spans = orm_judgments(study)
    texts = {(r.turn.conversation.dataset.name, r.turn.conversation.external_id, r.turn.index, r.model_slot): r.text
             for r in ModelResponse.objects.filter(judgments__spans__in=Span.objects.filter(
                 judgment__round__study=study, judgment__score__isnull=False)).distinct()
             .select_related("turn__conversation__dataset")}
    assert inputs.response_texts == texts
    kinds = {(c.dataset.name, c.external_id): c.kind for c in Conversation.objects.filter(
        judgments__round__study=study).distinct().select_related("dataset")}
    assert inputs.conversation_kinds == kinds
    params = ReportParams(bootstrap=30, panel=inputs.panel, experts=inputs.experts)
    common = {"attributes": inputs.attributes, "response_texts": texts, "conversation_kinds": kinds,
              "subcategory_attribute": inputs.subcategory_attribute, "params": params}
    fast = build_report(judgments=inputs.judgments, spans=inputs.spans, **common)
    plain = build_report(judgments=judgments, spans=spans, **common)
    assert json.dumps(fast, sort_keys=True) == json.dumps(plain, sort_keys=True)
    assert fast["input"]["judgments"] == Judgment.objects.filter(round__study=study, score__isnull=False).count()
