"""The live OpenAPI schema (api/openapi.py): public, OpenAPI 3, bearer auth; and fuzzed with schemathesis: every
operation, the writing ones included, gets generated requests, valid and invalid, sent with an admin's token that may
do everything (a few hundred in all; most valid bodies steered at real material so that the writes are reached); no
answer may be a 5xx or stray from the schema. ``benchmarks/api_fuzz.py`` runs the same for much longer."""

from __future__ import annotations

import pytest
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections

from tests.api.fuzz import fuzz, fuzz_material, steer_to

pytestmark = pytest.mark.django_db

EXAMPLES = 12  # per operation and mode: 26 operations × 2 modes × 12 ≈ 600 requests, POST ones included
# A body of conversations (histories of sessions of turns of responses, each with any extra keys) takes Hypothesis
# about half a second to make: fewer of them.
FEWER = {"POST /api/v1/studies/{slug}/conversations/": 5}


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


@pytest.mark.slow(45)
def test_every_operation_answers_within_its_schema_and_never_with_a_5xx(wsgi_app, admin_user):
    run_id, token = fuzz_material(admin_user)
    report = fuzz(wsgi_app, token=token, examples=EXAMPLES, fewer=FEWER, steer=steer_to(run_id))
    print(f"fuzz: {report.cases} requests to {report.operations} operations in {report.seconds:.0f} s; statuses "
          f"{dict(sorted(report.statuses.items()))}")
    for label, statuses in report.by_operation.items():
        print(f"  {label}: {dict(sorted(statuses.items()))}")
    assert report.operations >= 26
    assert report.cases >= 400, report
    assert report.failures == [], "\n\n".join(report.failures)
    assert not any(status >= 500 for status in report.statuses)
    assert {200, 400, 404} <= set(report.statuses), report.statuses  # it reached real data and rejected bad data
    # Every writing operation wrote something: its valid bodies reached the write, not only its refusals (a cab-v1
    # study has no session attribute, so session labels can only be refused).
    unwritten = [label for label, statuses in report.by_operation.items() if label.startswith("POST ")
                 and "session-labels" not in label and not any(200 <= status < 300 for status in statuses)]
    assert unwritten == [], report.by_operation
