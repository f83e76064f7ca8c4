"""Exports: SPEC §6 long format as CSV and JSON Lines (streamed, attachments, formula cells neutralised), the
metrics report and per-model index tables; export → import into an empty study reproduces the judgments."""

from __future__ import annotations

import csv
import io
import json

import pytest

from access.services import user_ensure
from annotation.long_format import COLUMNS, judgment_rows
from annotation.models import Judgment
from benchmark import services as benchmark_services
from benchmark.demo import demo_records
from tests.factories import JudgmentFactory, MetricRunFactory, RoundFactory, SpanFactory, attribute

pytestmark = pytest.mark.django_db

EXPORT = "/api/v1/studies/cab-demo/exports/judgments.{fmt}"
IMPORT = "/api/v1/studies/cab-demo/judgments/import/"
# Values a spreadsheet would run as formulas, and a quote that must survive as it is.
# (Conversation ids are trimmed on import, so a leading tab or CR cannot reach an export; the unit test covers them.)
TRICKY_IDS = ["=HYPERLINK(\"http://x\")", "-1", "+cmd", "@SUM(A1)", "'quoted", "''=double", "plain", "-@both"]


@pytest.fixture
def tricky_study(study):
    """Conversations whose ids begin with formula characters, coded by reviewers whose names do too."""
    records = []
    for number, external_id in enumerate(TRICKY_IDS):
        record = demo_records()[0]
        record["conversation_id"] = external_id
        record["dataset"] = "@Corpus" if number % 2 else "CounselChat"
        records.append(record)
    benchmark_services.conversations_import(rows=enumerate(records))
    calibration = RoundFactory(study=study, kind="calibration", number=1, status="closed")
    main = RoundFactory(study=study, kind="main", number=1, status="closed")
    coders = [user_ensure(username=name, role="reviewer") for name in ("-dash", "+plus", "@at", "plain.name")]
    gold = user_ensure(username="+gold", role="expert")
    from benchmark.models import ModelResponse

    for number, response in enumerate(ModelResponse.objects.filter(model_slot__in=["GPT", "Qwen"]).order_by("pk")):
        coder = coders[number % len(coders)]
        round_ = calibration if number % 3 else main
        judgment = JudgmentFactory(round=round_, coder=coder, response=response, score=number % 3,
                                   instance_count=number % 2 if number % 2 else None)
        if number % 2:
            SpanFactory(judgment=judgment, start=1, end=7)
        JudgmentFactory(round=round_, coder=coder, response=None, turn=response.turn, attribute=attribute("U1"),
                        score=1) if response.model_slot == "GPT" else None
    JudgmentFactory(round=calibration, coder=gold, is_gold=True,
                    response=ModelResponse.objects.order_by("pk").first(), score=2)
    return study


def download(api, fmt):
    response = api.get(EXPORT.format(fmt=fmt))
    assert response.status_code == 200, response
    return response, b"".join(response.streaming_content).decode("utf-8")


def test_csv_export_is_a_streamed_attachment_with_the_long_format_columns(researcher, as_token, tricky_study):
    response, text = download(as_token(researcher), "csv")
    assert response.streaming
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="cab-demo-judgments.csv"'
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert tuple(rows[0]) == COLUMNS
    assert len(rows) - 1 == Judgment.objects.count()


def test_csv_cells_that_look_like_formulas_are_neutralised_with_a_quote(researcher, as_token, tricky_study):
    _, text = download(as_token(researcher), "csv")
    cells = {cell for row in csv.reader(io.StringIO(text, newline="")) for cell in row}
    for dangerous in ("=HYPERLINK(\"http://x\")", "-1", "+cmd", "@SUM(A1)", "-@both", "-dash", "+plus", "@at",
                      "+gold", "@Corpus"):
        assert dangerous not in cells
        assert "'" + dangerous in cells
    assert "''quoted" in cells and "'''=double" in cells  # a leading quote is doubled, so import can undo it exactly
    assert "plain" in cells and "plain.name" in cells
    assert not any(cell[:1] in ("=", "+", "-", "@", "\t", "\r") for cell in cells)


def test_jsonl_export_is_not_neutralised_and_matches_the_selector(researcher, as_token, tricky_study):
    response, text = download(as_token(researcher), "jsonl")
    assert response["Content-Disposition"] == 'attachment; filename="cab-demo-judgments.jsonl"'
    assert [json.loads(line) for line in text.splitlines()] == list(judgment_rows(study=tricky_study))


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_an_export_imported_into_the_emptied_study_reproduces_the_same_judgments(
    researcher, admin_user, as_token, tricky_study, fmt
):
    before = list(judgment_rows(study=tricky_study))
    assert len(before) > 10
    _, text = download(as_token(researcher), fmt)
    Judgment.objects.all().delete()
    content_type = "text/csv" if fmt == "csv" else "application/x-ndjson"
    response = as_token(admin_user, scopes=["import"]).generic("POST", IMPORT, text.encode(),
                                                               content_type=content_type)
    assert response.status_code == 200, response.json()
    assert response.json()["judgments_created"] == len(before)
    assert list(judgment_rows(study=tricky_study)) == before


def test_a_judgment_import_with_errors_says_which_line_and_writes_nothing(admin_user, researcher, as_token,
                                                                         tricky_study):
    _, text = download(as_token(researcher), "csv")
    Judgment.objects.all().delete()
    lines = text.splitlines(keepends=True)
    lines[2] = lines[2].replace(",calibration-1,", ",calibration-x,").replace(",main,", ",calibration-x,")
    response = as_token(admin_user, scopes=["import"]).generic("POST", IMPORT, "".join(lines).encode(),
                                                               content_type="text/csv")
    assert response.status_code == 400
    assert response.json()["errors"][0]["line"] == 3 and response.json()["errors"][0]["field"] == "round"
    assert Judgment.objects.count() == 0


def test_researchers_cannot_import_judgments(researcher, as_token, tricky_study):
    response = as_token(researcher).generic("POST", IMPORT, b"x", content_type="text/csv")
    assert response.status_code == 403


def test_reviewers_cannot_download_exports(reviewer, as_token, tricky_study):
    assert as_token(reviewer).get(EXPORT.format(fmt="csv")).status_code == 403


def test_export_query_count_is_constant(researcher, as_token, tricky_study, django_assert_max_num_queries):
    api = as_token(researcher)
    # token + its last use + role check + study + spans + judgments (server-side cursors)
    with django_assert_max_num_queries(8):
        _, text = download(api, "csv")
    assert text.count("\n") > 10


# --- neutralisation, unit ------------------------------------------------------------------------------------


def test_neutralise_and_unneutralise_are_exact_inverses():
    from hypothesis import given
    from hypothesis import strategies as st

    from common.cells import neutralise, unneutralise

    @given(st.text(alphabet=st.sampled_from(["=", "+", "-", "@", "\t", "\r", "'", "a", "1", " ", "\n"])))
    def check(value):
        assert unneutralise(neutralise(value)) == value
        assert not neutralise(value).startswith(("=", "+", "-", "@", "\t", "\r"))

    check()
    assert neutralise("-1") == "'-1" and neutralise("'") == "''" and neutralise("a'") == "a'"
    assert unneutralise("'abc") == "'abc"  # a quote that neutralise could not have added stays


# --- metrics report and index tables ---------------------------------------------------------------------------

REPORT = {
    "version": 1,
    "calibration": {"reviewers": {}},
    "indices": {
        "uiri": {"mean": 0.4, "bands": {"low": 0.5, "medium": 0.3, "high": 0.2}, "by_dataset": {}},
        "flags": {"GPT": {"F1": 0.1, "F2": 0.0}, "-Claude": {"F1": 0.2, "F2": 0.05}},
        "ari": {"GPT": {"D": 0.2, "E": 0.1, "R": 0.3, "F": 0.1, "ARI": 0.18, "n_responses": 40}},
        "attribute_risk": {"GPT": {"AUR": 0.5}},
        "fingerprint": {"GPT": {"AUR": 1.2}},
    },
}


@pytest.fixture
def succeeded_run(study):
    return MetricRunFactory(study=study, status="succeeded", result=REPORT, progress=1.0,
                            finished_at="2026-01-02T00:00:00Z")


def test_report_json_download(researcher, as_token, succeeded_run):
    response = as_token(researcher).get("/api/v1/studies/cab-demo/exports/report.json")
    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="cab-demo-report-run{succeeded_run.pk}.json"'
    assert json.loads(response.content) == REPORT


def test_per_model_index_table_as_csv(researcher, as_token, succeeded_run):
    response = as_token(researcher).get("/api/v1/studies/cab-demo/exports/indices/flags.csv")
    assert response.status_code == 200
    assert "attachment" in response["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode(), newline="")))
    assert rows == [["model", "F1", "F2"], ["GPT", "0.1", "0.0"], ["'-Claude", "0.2", "0.05"]]
    missing = as_token(researcher).get("/api/v1/studies/cab-demo/exports/indices/uiri.csv")
    assert missing.status_code == 404
    assert "ari" in missing.json()["detail"]


def test_report_without_a_succeeded_run_is_a_404(researcher, as_token, study):
    MetricRunFactory(study=study, status="failed", error="boom")
    assert as_token(researcher).get("/api/v1/studies/cab-demo/exports/report.json").status_code == 404


# --- the exports page ------------------------------------------------------------------------------------------


def test_exports_page_lists_studies_with_download_links(researcher, client, succeeded_run, other_study,
                                                        django_assert_max_num_queries):
    client.force_login(researcher)
    with django_assert_max_num_queries(8):
        page = client.get("/exports/")
    html = page.content.decode()
    assert page.status_code == 200
    assert 'href="/exports/cab-demo/judgments.csv"' in html and 'href="/exports/other-study/judgments.jsonl"' in html
    assert 'href="/exports/cab-demo/report.json"' in html and 'href="/exports/cab-demo/indices/ari.csv"' in html
    assert "<script>" not in html
    download_page = client.get("/exports/cab-demo/judgments.csv")
    assert download_page["Content-Disposition"] == 'attachment; filename="cab-demo-judgments.csv"'
    assert client.get("/exports/cab-demo/indices/flags.csv").status_code == 200
    assert client.get("/exports/cab-demo/indices/nope.csv").status_code == 404


def test_exports_page_is_for_researchers_and_admins_only(reviewer, client, study):
    assert client.get("/exports/").status_code == 302  # to the login page
    client.force_login(reviewer)
    assert client.get("/exports/").status_code == 403
    assert client.get("/exports/cab-demo/judgments.csv").status_code == 403


def test_a_large_export_arrives_in_many_chunks_not_one_buffer(researcher, as_token, study, demo_conversations):
    from django.contrib.auth import get_user_model

    from annotation.models import AttributeDefinition
    from benchmark.models import ModelResponse

    round_ = RoundFactory(study=study, kind="main", number=1, status="closed")
    coders = get_user_model().objects.bulk_create(get_user_model()(username=f"coder-{n}") for n in range(12))
    attributes = list(AttributeDefinition.objects.filter(schema=study.schema, unit="response"))
    responses = list(ModelResponse.objects.select_related("turn"))
    Judgment.objects.bulk_create(
        Judgment(round=round_, coder=coder, attribute=a, conversation_id=r.turn.conversation_id, turn_id=r.turn_id,
                 response=r, score=a.scale_min)
        for coder in coders for a in attributes for r in responses
    )
    response = as_token(researcher).get(EXPORT.format(fmt="jsonl"))
    chunks = list(response.streaming_content)
    assert len(chunks) >= 3
    assert max(len(chunk) for chunk in chunks) < 80 * 1024
    assert sum(chunk.count(b"\n") for chunk in chunks) == Judgment.objects.count() >= 2000


def test_the_demo_study_round_trips_through_a_csv_export(researcher, admin_user, as_token):
    from annotation.demo import demo_load

    study = demo_load().study
    before = list(judgment_rows(study=study))
    assert len(before) > 1000 and any(row["spans"] for row in before) and any(row["is_gold"] for row in before)
    response = as_token(researcher).get(f"/api/v1/studies/{study.slug}/exports/judgments.csv")
    text = b"".join(response.streaming_content)
    Judgment.objects.filter(round__study=study).delete()
    imported = as_token(admin_user, scopes=["import"]).generic(
        "POST", f"/api/v1/studies/{study.slug}/judgments/import/", text, content_type="text/csv")
    assert imported.status_code == 200, imported.json()
    assert list(judgment_rows(study=study)) == before
