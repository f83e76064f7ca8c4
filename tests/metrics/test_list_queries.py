"""Exact query counts of the metrics exports page, the metric-run list API and the report / index-table downloads,
each pinned at two data sizes: the count does not grow with the number of studies, runs or models."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from access import roles
from access.services import user_ensure
from api import services as api_services
from tests.factories import MetricRunFactory, StudyFactory

pytestmark = pytest.mark.django_db

SLUG = "metrics-study"
SIZES = {
    # studies, succeeded / failed / queued runs per study, models in each report
    "small": {"studies": 1, "succeeded": 1, "failed": 0, "queued": 0, "models": 1},
    "large": {"studies": 4, "succeeded": 3, "failed": 2, "queued": 1, "models": 8},
}
MODELS = ["GPT", "Claude", "-Gemini", "Llama", "Qwen", "Mistral", "@Phi", "Grok"]
START = datetime(2026, 1, 1, tzinfo=UTC)


def report(models: list[str], run: int) -> dict:
    return {
        "version": 1,
        "marker": run,
        "indices": {
            "uiri": {"mean": 0.4},
            "flags": {m: {"F1": 0.1 * i, "F2": 0.05} for i, m in enumerate(models)},
            "ari": {m: {"D": 0.2, "E": 0.1, "R": 0.3, "F": 0.1, "ARI": 0.18, "n_responses": 40} for m in models},
            "attribute_risk": {m: {"AUR": 0.5, "TD": 0.25} for m in models},
            "fingerprint": {m: {"AUR": 1.2} for m in models},
        },
    }


@pytest.fixture
def researcher_user(db):
    return user_ensure(username="metrics-researcher", role=roles.RESEARCHER)


@pytest.fixture(params=list(SIZES))
def data(request, researcher_user, admin_user):
    """Studies with succeeded, failed and queued runs, requested by different people; the newest succeeded run of
    each study is the last one made."""
    size = SIZES[request.param]
    models = MODELS[: size["models"]]
    studies = [StudyFactory(slug=SLUG if n == 0 else f"{SLUG}-{n}") for n in range(size["studies"])]
    people = [researcher_user, admin_user, None]
    newest = {}
    for study in studies:
        clock = START
        for kind in ("failed", "queued", "succeeded"):
            for n in range(size[kind]):
                clock += timedelta(hours=1)
                run = MetricRunFactory(study=study, status=kind, requested_by=people[n % len(people)],
                                       parameters={"seed": n, "bootstrap": 10},
                                       error="boom\nsecond line" if kind == "failed" else "",
                                       result=report(models, n) if kind == "succeeded" else None,
                                       progress=1.0 if kind == "succeeded" else 0.0,
                                       finished_at=clock if kind != "queued" else None)
                if kind == "succeeded":
                    newest[study.slug] = run
    return {"size": request.param, "studies": studies, "newest": newest, "models": models}


def token_client(user) -> APIClient:
    """A client with a fresh read token of ``user``, used once already (no measured request records its use)."""
    _, raw = api_services.api_token_create(user=user, name="metrics", scopes=("read",), study=None,
                                           expires_at=None, by=None)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert client.get(reverse("api-studies")).status_code == 200
    return client


def body(response) -> bytes:
    assert response.status_code == 200, response
    return b"".join(response.streaming_content) if response.streaming else response.content


def test_exports_page_needs_a_fixed_number_of_queries_at_any_size(client, data, researcher_user,
                                                                  django_assert_num_queries):
    client.force_login(researcher_user)
    # user, roles twice, studies, their newest succeeded runs (one query), roles for the page (and the session)
    with django_assert_num_queries(7):
        page = client.get(reverse("exports"))
    html = body(page).decode()
    for study in data["studies"]:
        assert f'href="/exports/{study.slug}/judgments.csv"' in html
        assert f'href="/exports/{study.slug}/report.json"' in html


def test_metric_run_list_api_needs_a_fixed_number_of_queries_at_any_size(data, researcher_user,
                                                                         django_assert_num_queries):
    api = token_client(researcher_user)
    size = SIZES[data["size"]]
    # token, roles (scope and staff checks), study, the runs with who requested them
    with django_assert_num_queries(5):
        response = api.get(reverse("api-metric-runs", args=[SLUG]))
    runs = response.json()["results"]
    assert len(runs) == size["succeeded"] + size["failed"] + size["queued"]
    assert {run["requested_by"] for run in runs} <= {researcher_user.username, "study-admin", None}


def test_report_json_downloads_need_a_fixed_number_of_queries_at_any_size(client, data, researcher_user,
                                                                          django_assert_num_queries):
    newest = data["newest"][SLUG]
    client.force_login(researcher_user)
    # user, roles twice, study, its newest succeeded run (and the session)
    with django_assert_num_queries(6):
        page = body(client.get(reverse("export-report", args=[SLUG])))
    downloaded = json.loads(page)
    assert downloaded.pop("run") == {"id": newest.pk, "trigger": newest.trigger, "parameters": newest.parameters,
                                     "requested_at": newest.created_at.isoformat(),
                                     "started_at": newest.started_at and newest.started_at.isoformat(),
                                     "finished_at": newest.finished_at and newest.finished_at.isoformat()}
    assert downloaded == newest.result
    api = token_client(researcher_user)
    # token, roles twice, study, its newest succeeded run
    with django_assert_num_queries(5):
        api_file = body(api.get(reverse("api-export-report", args=[SLUG])))
    assert api_file == page


@pytest.mark.parametrize("table", ["flags", "ari", "attribute_risk", "fingerprint"])
def test_index_table_downloads_need_a_fixed_number_of_queries_at_any_size(client, data, researcher_user, table,
                                                                          django_assert_num_queries):
    client.force_login(researcher_user)
    # user, roles twice, study, its newest succeeded run (and the session)
    with django_assert_num_queries(6):
        page = body(client.get(reverse("export-index-table", args=[SLUG, table])))
    rows = list(csv.reader(io.StringIO(page.decode(), newline="")))
    assert len(rows) == 1 + len(data["models"])
    api = token_client(researcher_user)
    # token, roles twice, study, its newest succeeded run
    with django_assert_num_queries(5):
        api_file = body(api.get(reverse("api-export-index-table", args=[SLUG, table])))
    assert api_file == page
