"""The live OpenAPI schema (api/openapi.py): public, OpenAPI 3, bearer auth; and fuzzed with schemathesis: every
operation gets generated requests, valid and invalid, sent as an admin (a few hundred in all); no answer may be a
5xx or stray from the schema. ``benchmarks/api_fuzz.py`` runs the same for much longer."""

from __future__ import annotations

import pytest
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections

from api import services as api_services
from benchmark import services as benchmark_services
from benchmark.demo import demo_records
from tests.api.fuzz import fuzz, steer_to
from tests.factories import MetricRunFactory, RoundFactory, StudyFactory

pytestmark = pytest.mark.django_db

EXAMPLES = 12  # per operation and mode: 16 operations × 2 modes × 12 ≈ 380 requests


def test_schema_is_public_openapi_3_with_bearer_auth(client):
    response = client.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    assert schema["components"]["securitySchemes"]["ApiToken"] == {
        "type": "http", "scheme": "bearer",
        "description": "An API token from `manage.py create_api_token` (shown once, stored hashed)."}
    assert "/api/v1/studies/{slug}/responses/" in schema["paths"]


@pytest.fixture
def wsgi_app():
    # The app runs in-process on the test's connection; like Django's test client, keep the start and end of each
    # request from closing that connection (which would end the test's transaction).
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    yield get_wsgi_application()
    for signal in (request_started, request_finished):
        signal.connect(close_old_connections)


def test_every_operation_answers_within_its_schema_and_never_with_a_5xx(wsgi_app, admin_user):
    study = StudyFactory(slug="cab-demo")
    benchmark_services.conversations_import(rows=enumerate(demo_records()))
    RoundFactory(study=study, kind="calibration", number=1)
    run = MetricRunFactory(study=study, status="succeeded", result={"indices": {"ari": {"GPT": {"ARI": 0.1}}}})
    _, token = api_services.api_token_create(user=admin_user, name="fuzz", by=None,
                                             scopes=["ingest", "import", "read", "metrics", "setup"])
    report = fuzz(wsgi_app, token=token, examples=EXAMPLES, steer=steer_to(run.pk))
    assert report.operations >= 15
    assert report.cases >= 200, report
    print(f"fuzz: {report.cases} requests to {report.operations} operations in {report.seconds:.0f} s; statuses "
          f"{dict(sorted(report.statuses.items()))}")
    for label, statuses in report.by_operation.items():
        print(f"  {label}: {dict(sorted(statuses.items()))}")
    assert report.failures == [], "\n\n".join(report.failures)
    assert not any(status >= 500 for status in report.statuses)
    assert {200, 400, 404} <= set(report.statuses), report.statuses  # it reached real data and rejected bad data
