"""The judgments travel packed into int8 words when their values fit the bounds the loader reads (table ids, the
schema's scales), and one column per value otherwise: both give the same columns, the fallback is taken when a
value is outside (a score off every scale), and the response texts come through one row whatever their characters."""

from __future__ import annotations

import json

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import AttributeDefinition, Judgment, Round, Span, Study
from benchmark.models import Conversation, ModelResponse, Turn
from metrics import selectors
from metrics.core.report import ReportParams, build_report
from tests.metrics.test_selectors import analyze_tables_with_rows, orm_judgments

pytestmark = pytest.mark.django_db


@pytest.fixture
def study() -> Study:
    call_command("generate_synthetic", "--conversations", "12", "--reviewers", "4", "--seed", "5",
                 "--calibration-turns", "3", "--slug", "packed")
    call_command("generate_synthetic", "--conversations", "4", "--reviewers", "3", "--seed", "6",
                 "--calibration-turns", "2", "--slug", "beside")
    analyze_tables_with_rows()  # statistics for the fresh tables (see test_selectors)
    return Study.objects.get(slug="packed")


def _tables() -> dict:
    return {model: connection.ops.quote_name(model._meta.db_table)
            for model in (Judgment, Span, Turn, ModelResponse, Conversation, Round, AttributeDefinition,
                          get_user_model())}


def _columns(study: Study, *, pack: bool) -> tuple[np.ndarray, ...]:
    round_ids = np.array(sorted(Round.objects.filter(study=study).values_list("pk", flat=True)), dtype=np.int64)
    return selectors.judgment_columns(study=study, round_ids=round_ids, tables=_tables(), pack=pack)


def _same(left: tuple[np.ndarray, ...], right: tuple[np.ndarray, ...]) -> bool:
    return len(left) == len(right) and all(
        a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(left, right, strict=True))


def _write_unguarded(sql: str, params: list) -> None:
    """A write the database's guards would refuse (a score off its scale, the text of a judged response), with the
    per-row triggers skipped as the synthetic generator's bulk path does on a superuser database
    (``annotation.bulk``)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('session_replication_role', 'replica', true)")
        cursor.execute(sql, params)
        assert cursor.rowcount == 1
        cursor.execute("SELECT set_config('session_replication_role', 'origin', true)")


def _packed_statements(queries: CaptureQueriesContext) -> int:
    return sum("int8send(((((" in q["sql"] for q in queries.captured_queries)


def _fallback_statements(queries: CaptureQueriesContext) -> int:
    return sum("int4send((j.score)::int4)" in q["sql"] for q in queries.captured_queries)


def test_packed_and_one_column_per_value_loads_give_the_same_columns(study):
    with CaptureQueriesContext(connection) as queries:
        packed = _columns(study, pack=True)
    assert _packed_statements(queries) == 1 and _fallback_statements(queries) == 0
    with CaptureQueriesContext(connection) as queries:
        plain = _columns(study, pack=False)
    assert _packed_statements(queries) == 0 and _fallback_statements(queries) == 1
    assert _same(packed, plain)
    judgment_id, _, _, is_gold, _, turn_id, response_id, *_ = packed
    assert len(judgment_id) > 500 and is_gold.dtype == bool and is_gold.any() and not is_gold.all()
    assert (turn_id == 0).any() or (response_id == 0).any()  # a unit without a response rides on its null marker
    assert (response_id > 0).any()


def test_a_score_off_every_scale_falls_back_to_one_column_per_value_with_the_same_report(study):
    # a score the schema's scales cannot hold (dropped and counted as off-scale by the report)
    scales = AttributeDefinition.objects.filter(schema_id=study.schema_id)
    top = max(scales.values_list("scale_max", flat=True))
    off = Judgment.objects.filter(round__study=study, score__isnull=False).order_by("pk").values_list(
        "pk", flat=True)[5]
    _write_unguarded("UPDATE annotation_judgment SET score = %s WHERE id = %s", [top + 1000, off])
    with CaptureQueriesContext(connection) as queries:
        inputs = selectors.report_inputs(study=study)
    assert _packed_statements(queries) == 1 and _fallback_statements(queries) == 1  # tried, then fell back
    judgments, spans = orm_judgments(study)
    for table, expected in ((inputs.judgments, judgments), (inputs.spans, spans)):
        for name in expected.__dataclass_fields__:
            assert np.asarray(getattr(table, name)).tolist() == np.asarray(getattr(expected, name)).tolist(), name
    assert top + 1000 in np.asarray(inputs.judgments.score).tolist()
    params = ReportParams(bootstrap=20, panel=inputs.panel, experts=inputs.experts)
    common = {"attributes": inputs.attributes, "response_texts": inputs.response_texts,
              "conversation_kinds": inputs.conversation_kinds,
              "subcategory_attribute": inputs.subcategory_attribute, "params": params}
    fast = build_report(judgments=inputs.judgments, spans=inputs.spans, **common)
    plain = build_report(judgments=judgments, spans=spans, **common)
    assert json.dumps(fast, sort_keys=True) == json.dumps(plain, sort_keys=True)
    assert fast["input"]["dropped"]["off_scale"] >= 1


def test_a_score_below_every_scale_also_falls_back(study):
    low = min(AttributeDefinition.objects.filter(schema_id=study.schema_id).values_list("scale_min", flat=True))
    last = Judgment.objects.filter(round__study=study, score__isnull=False).order_by("-pk").values_list(
        "pk", flat=True)[0]
    _write_unguarded("UPDATE annotation_judgment SET score = %s WHERE id = %s", [low - 1, last])
    with CaptureQueriesContext(connection) as queries:
        packed = _columns(study, pack=True)
    assert _fallback_statements(queries) == 1
    assert _same(packed, _columns(study, pack=False))
    assert low - 1 in packed[-1].tolist()


def test_packed_columns_decode_every_field_at_its_bounds_and_refuse_what_does_not_fit():
    # 3 words: 62 + 40 + ... bits, negative lows, a one-value field (no bits), a null marker below a table's ids
    rows = "(VALUES (-5, 0, 7, NULL::int8, 4611686018427387903), (3, 1099511627775, 7, 11, 0), (0, 17, 7, 12, 1))"
    source = f"FROM {rows} AS v(a, b, c, d, e)"
    fields = [("v.a", -5, 3), ("v.b", 0, (1 << 40) - 1), ("v.c", 7, 7), ("COALESCE(v.d, 10)", 10, 12),
              ("v.e", 0, (1 << 62) - 1)]
    got = selectors.packed_int_columns(fields, source, fits="true")
    assert got is not None
    assert [c.tolist() for c in got] == [[-5, 3, 0], [0, (1 << 40) - 1, 17], [7, 7, 7], [10, 11, 12],
                                         [(1 << 62) - 1, 0, 1]]
    expected = selectors.int_columns([(e, "int8") for e, _, _ in fields], source)
    assert all(np.array_equal(a, b) for a, b in zip(got, expected, strict=True))
    # a bound too narrow for a value: the statement's own check says so, and nothing is returned
    narrow = [*fields[:-1], ("v.e", 0, 1)]
    assert selectors.packed_int_columns(narrow, source, fits="max(v.e) <= 1") is None
    # a field too wide for one word is never packed
    assert selectors.packed_int_columns([("v.e", -(1 << 62), (1 << 62))], source, fits="true") is None


def test_response_texts_come_whole_whatever_their_characters(study):
    # multi-byte characters (2, 3 and 4 bytes in UTF-8), an empty text and control characters: the texts are cut
    # apart by their character counts
    span_responses = list(Span.objects.filter(judgment__round__study=study, judgment__response__isnull=False)
                          .values_list("judgment__response_id", flat=True).distinct().order_by("judgment__response_id"))
    assert len(span_responses) >= 4
    odd = ["é à ü — naïve", "长文本 🙂🙃 emoji", "", "tab\there\nnewline\x01"]
    for pk, text in zip(span_responses, odd, strict=False):
        _write_unguarded("UPDATE benchmark_modelresponse SET text = %s WHERE id = %s", [text, pk])
    ids = np.array(span_responses, dtype=np.int64)
    got = dict(selectors._response_texts(ids, _tables()))
    assert got == dict(ModelResponse.objects.filter(pk__in=span_responses).values_list("pk", "text"))
    assert set(odd) <= set(got.values())
    assert selectors._response_texts(np.zeros(0, dtype=np.int64), _tables()) == []
    inputs = selectors.report_inputs(study=study)
    assert set(odd) <= set(inputs.response_texts.values())
