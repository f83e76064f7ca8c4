"""The exports page (metrics/views.py): every study the researcher may export, with download links; the reports
overview's Start button refusing hostile parameters."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.form_fuzz import fingerprint, sweep

pytestmark = pytest.mark.django_db


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


def test_exports_page_links_only_the_per_model_tables_the_report_holds(researcher, client, study, other_study):
    from tests.factories import MetricRunFactory
    from tests.metrics.conftest import REPORT

    MetricRunFactory(study=study, status="succeeded", result=REPORT, finished_at="2026-01-01T00:00:00Z")
    MetricRunFactory(study=study, status="succeeded", result={**REPORT, "indices": {"ari": REPORT["indices"]["ari"]}},
                     finished_at="2026-01-02T00:00:00Z")  # the newest: only ari
    MetricRunFactory(study=other_study, status="succeeded", result={k: v for k, v in REPORT.items() if k != "indices"},
                     finished_at="2026-01-02T00:00:00Z")  # a report with no per-model table (calibration only)
    client.force_login(researcher)
    html = client.get("/exports/").content.decode()
    assert 'href="/exports/cab-demo/indices/ari.csv"' in html and "/exports/cab-demo/indices/flags.csv" not in html
    assert "/exports/other-study/indices/" not in html and "none in this report" in html
    for link in ("/exports/cab-demo/indices/ari.csv", "/exports/other-study/report.json"):
        assert client.get(link).status_code == 200


def test_exports_page_is_for_researchers_and_admins_only(reviewer, client, study):
    assert client.get("/exports/").status_code == 302  # to the login page
    client.force_login(reviewer)
    assert client.get("/exports/").status_code == 403
    assert client.get("/exports/cab-demo/judgments.csv").status_code == 403


# A value no field of the run's form takes (metrics/parameters.py's ranges): each post is refused.
REFUSED_PARAMETERS = ["", "abc", "1.5", "-1", "0x10", "NaN", "Infinity", "\x00", "1\x00", str(10**30), "9" * 5000,
                      "x" * 100_000]


def test_a_metric_run_started_with_hostile_parameters_is_refused_and_starts_nothing(researcher, reviewer, client,
                                                                                   study):
    """The reports overview's Start button (metrics.views.metric_run_start), fuzzed one field at a time: a 302 back
    to the overview with "Not started: field …", no run; a reviewer's post is a 403 and another slug a 404."""
    valid = {"bootstrap": "200", "seed": "1", "top_k": "3"}
    client.force_login(researcher)
    statuses = sweep(lambda body: client.post(reverse("metric-run-start", args=[study.slug]), body), valid,
                     list(valid), accepted=lambda response: False, values=REFUSED_PARAMETERS)
    assert statuses == {302: len(valid) * len(REFUSED_PARAMETERS)}
    before = fingerprint()
    assert client.post(reverse("metric-run-start", args=["no-such-study"]), valid).status_code == 404
    client.force_login(reviewer)
    assert client.post(reverse("metric-run-start", args=[study.slug]), valid).status_code == 403
    assert fingerprint() == before
