"""A reserved gold pool (a calibration round only the experts code) on the Reliability page: the report keeps its
experts' figures (``calibration.experts[ROUND]``, the round under ``expert_only_rounds``), and the page's round
filter reaches them (docs/metrics.md, choice 17)."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from metrics.models import MetricRun
from reports import charts
from reports.charts import Filters
from tests import scenarios

pytestmark = pytest.mark.django_db

POOL = "calibration-2"


def test_the_round_filter_offers_every_calibration_round_of_the_report_in_number_order():
    """Rounds with reviewers' figures and rounds with the experts' alone, by number (calibration-10 after -2)."""
    report = {"calibration": {
        "reviewers": {"ann": {"calibration-2": {}, "calibration-10": {}, "delta_pp": None}},
        "experts": {name: {"experts": {"eve": {}}} for name in ("calibration-2", "calibration-3", "calibration-10")},
        "expert_only_rounds": ["calibration-3"],
    }}
    assert charts.choices(report).rounds == ["calibration-2", "calibration-3", "calibration-10"]
    rows = charts.experts_table(report, Filters(round="calibration-3")).rows
    assert [row[:2] for row in rows] == [["eve", "calibration-3"]]


def test_a_gold_pools_expert_figures_are_on_the_reliability_page_and_in_its_csv(client, researcher):
    protocol = scenarios.protocol_study()
    scenarios.calibration_round_done(protocol, 1)
    scenarios.gold_pool_done(protocol, 2)
    run = MetricRun.objects.filter(study=protocol.study, status="succeeded").latest("pk")
    calibration = run.result["calibration"]
    assert calibration["expert_only_rounds"] == [POOL]
    pool = calibration["experts"][POOL]["experts"]
    assert sorted(pool) == ["expert", "expert-2"] and all(entry["n_items"] > 0 for entry in pool.values())

    client.force_login(researcher)
    page = client.get(reverse("reports-page", args=["protocol", "reliability"]), {"round": POOL}).content.decode()
    assert "is not in this report" not in page
    assert f'<option value="{POOL}" selected>' in page
    download = client.get(reverse("reports-file", args=["protocol", "reliability", "experts", "csv"]), {"round": POOL})
    rows = list(csv.DictReader(io.StringIO(b"".join(download.streaming_content).decode())))
    assert {(row["expert"], row["round"], row["n_items"]) for row in rows} == {
        (name, POOL, str(entry["n_items"])) for name, entry in pool.items()}
