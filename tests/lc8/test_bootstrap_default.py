"""A metric run of an LC8 study that asks for no bootstrap B uses the kind's 2,000
(docs/lc8-metrics.md#bootstrap-resamples) on every path that starts one with the default: the reports overview's
form, the API, ``metrics_report`` and the service a gold change or a round's close calls; a study of the default
kind keeps 1,000, and a B given is used as given. Before, every path ran 1,000 for an LC8 study too."""

from __future__ import annotations

import io
import json
import re

import pytest
from django.core.management import call_command
from django.urls import reverse

from metrics.models import MetricRun
from metrics.services import metric_run_request
from tests.lc8.test_data import lc8_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def studies(study):
    """(an LC8 study, cab-demo of the default kind)."""
    return lc8_study(), study


def _overview_b(client, study) -> int:
    page = client.get(reverse("reports", args=[study.slug])).content.decode()
    [value] = re.findall(r'<input type="number" name="bootstrap"[^>]* value="(\d+)"', page)
    return int(value)


def test_the_overview_form_starts_at_the_kinds_b_and_the_run_stores_it(client, admin_user, studies):
    client.force_login(admin_user)
    lc8, default = studies
    assert (_overview_b(client, lc8), _overview_b(client, default)) == (2000, 1000)
    client.post(reverse("metric-run-start", args=[lc8.slug]), {"bootstrap": _overview_b(client, lc8), "seed": 0,
                                                                "top_k": 6})
    assert MetricRun.objects.get(study=lc8).parameters["bootstrap"] == 2000
    assert "B = 2000" in client.get(reverse("reports", args=[lc8.slug])).content.decode()


def test_the_api_without_bootstrap_uses_the_kinds_b_and_a_given_b_as_given(admin_user, as_token, studies):
    api = as_token(admin_user, scopes=["read", "metrics"])
    for study, expected in zip(studies, (2000, 1000), strict=True):
        answer = api.post(f"/api/v1/studies/{study.slug}/metric-runs/", {}, format="json")
        assert answer.status_code == 202, answer.content
        assert answer.json()["parameters"]["bootstrap"] == expected, study.slug
    given = api.post(f"/api/v1/studies/{studies[0].slug}/metric-runs/", {"bootstrap": 200}, format="json")
    assert given.json()["parameters"]["bootstrap"] == 200


def test_a_run_started_by_a_gold_change_uses_the_kinds_b(studies):
    lc8, default = studies
    assert metric_run_request(study=lc8, by=None, trigger="gold-changed").parameters["bootstrap"] == 2000
    assert metric_run_request(study=default, by=None, trigger="round-closed").parameters["bootstrap"] == 1000


def test_metrics_report_without_bootstrap_uses_the_kinds_b(studies):
    out = io.StringIO()
    call_command("metrics_report", "--study", studies[0].slug, stdout=out, stderr=io.StringIO())
    assert json.loads(out.getvalue())["parameters"]["bootstrap"] == 2000
