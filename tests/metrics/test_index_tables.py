"""The per-model index tables (metrics.selectors.index_tables; docs/api.md#exports): every table of the report's
``indices`` is a CSV download or is named as left out, never dropped silently. A table whose cells are intervals
(``ari_ci``: ``{low, high}``) is written with a column per end; one whose cells are whole tables (``by_kind``,
``by_dataset``) is named on the exports page and by the API download's 404. Before, both were left out without a
word."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import call_command

from annotation.models import Study
from metrics import selectors
from tests.factories import MetricRunFactory
from tests.metrics.conftest import REPORT

pytestmark = pytest.mark.django_db

ARI_CI = {"GPT": {"D": {"low": 0.1, "high": 0.3}, "ARI": {"low": 0.15, "high": None}},
          "Claude": {"D": {"low": 0.2, "high": 0.4}, "ARI": {"low": 0.25, "high": 0.35}}}
SPLITS = {"single": {"ari": REPORT["indices"]["ari"], "ari_ci": ARI_CI}}
NESTED = {**REPORT, "indices": {**REPORT["indices"], "ari_ci": ARI_CI, "by_kind": SPLITS, "by_dataset": {
    "CounselChat": SPLITS}}}


def _csv(response) -> list[list[str]]:
    return list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode(), newline="")))


def test_interval_cells_are_written_a_column_per_end(researcher, as_token, client, study):
    MetricRunFactory(study=study, status="succeeded", result=NESTED, finished_at="2026-01-02T00:00:00Z")
    expected = [["model", "D_low", "D_high", "ARI_low", "ARI_high"], ["GPT", "0.1", "0.3", "0.15", ""],
                ["Claude", "0.2", "0.4", "0.25", "0.35"]]
    client.force_login(researcher)
    for response in (as_token(researcher).get("/api/v1/studies/cab-demo/exports/indices/ari_ci.csv"),
                     client.get("/exports/cab-demo/indices/ari_ci.csv")):
        assert response.status_code == 200
        assert _csv(response) == expected


def test_tables_of_tables_are_named_as_left_out_on_the_page_and_by_the_download(researcher, as_token, client, study):
    MetricRunFactory(study=study, status="succeeded", result=NESTED, finished_at="2026-01-02T00:00:00Z")
    assert selectors.index_tables_left_out(result=NESTED) == ["by_kind", "by_dataset"]
    client.force_login(researcher)
    html = client.get("/exports/").content.decode()
    assert 'href="/exports/cab-demo/indices/ari_ci.csv"' in html
    assert "/indices/by_kind.csv" not in html and "/indices/by_dataset.csv" not in html
    assert "Not as CSV (tables of tables, in report.json): by_kind, by_dataset" in html
    missing = as_token(researcher).get("/api/v1/studies/cab-demo/exports/indices/by_kind.csv")
    assert missing.status_code == 404
    assert "by_kind holds a table in each cell" in missing.json()["detail"]
    assert client.get("/exports/cab-demo/indices/by_dataset.csv").status_code == 404


def test_every_table_of_a_computed_report_is_written_or_named():
    """On a real report: every entry of ``indices`` shaped as a table (a mapping of rows, each a mapping) is a
    download or is named as left out."""
    call_command("generate_synthetic", "--conversations", "8", "--reviewers", "3", "--seed", "2",
                 "--calibration-turns", "2", "--slug", "syn")
    out = io.StringIO()
    call_command("metrics_report", "--study", "syn", "--bootstrap", "20", "--seed", "7", stdout=out)
    report = json.loads(out.getvalue())
    shaped = [name for name, table in report["indices"].items() if isinstance(table, dict) and table
              and all(isinstance(row, dict) for row in table.values())]
    tables, left_out = selectors.index_tables(result=report), selectors.index_tables_left_out(result=report)
    assert sorted([*tables, *left_out]) == sorted(shaped)
    assert "ari_ci" in tables and {"by_kind", "by_dataset"} <= set(left_out)
    header, rows = tables["ari_ci"]
    assert header[:3] == ["model", "D_low", "D_high"] and len(rows) == len(report["indices"]["ari"])
    assert rows[0][1:3] == [report["indices"]["ari_ci"][rows[0][0]]["D"][end] for end in ("low", "high")]


def test_a_report_without_main_round_judgments_offers_no_table_of_kinds_as_models(researcher, as_token, client):
    """The demo's first report (calibration-1 only): every per-model table is empty, and ``by_kind`` holds an empty
    table per kind with ``n_clusters`` 0. It was offered as a per-model table, its "models" ``single`` and
    ``multi``, and its CSV served (``model,n_clusters``), where the exports page and docs/api.md say a table of
    tables is in report.json only."""
    call_command("load_demo", "--quiet")
    out = io.StringIO()
    call_command("metrics_report", "--study", "demo", "--bootstrap", "20", "--seed", "1", stdout=out)
    report = json.loads(out.getvalue())
    assert report["indices"]["by_kind"] and not report["indices"]["ari"]
    assert "by_kind" not in selectors.index_tables(result=report)
    assert "by_kind" in selectors.index_tables_left_out(result=report)
    MetricRunFactory(study=Study.objects.get(slug="demo"), status="succeeded", result=report,
                     finished_at="2026-01-02T00:00:00Z")
    missing = as_token(researcher).get("/api/v1/studies/demo/exports/indices/by_kind.csv")
    assert missing.status_code == 404
    assert "by_kind holds a table in each cell" in missing.json()["detail"]
    client.force_login(researcher)
    assert "/indices/by_kind.csv" not in client.get("/exports/").content.decode()
