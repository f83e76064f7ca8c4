"""The live OpenAPI schema (api/openapi.py): public, OpenAPI 3, bearer auth; and fuzzed with schemathesis: every
operation, the writing ones included, gets generated requests, valid and invalid, sent with an admin's token that may
do everything (a few hundred in all; most valid bodies steered at real material so that the writes are reached); no
answer may be a 5xx or stray from the schema. ``perf/api_fuzz.py`` runs the same for much longer."""

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


def _schema(client) -> dict:
    return client.get("/api/schema/", HTTP_ACCEPT="application/json").json()


def test_every_operation_says_its_scope_and_its_errors_with_their_headers(client):
    schema = _schema(client)
    error = {"$ref": "#/components/schemas/ErrorOut"}
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            where = f"{method.upper()} {path}"
            scope = operation["x-required-scope"]
            assert scope in {"read", "ingest", "import", "metrics", "setup"}, where
            assert (scope == "read") == (method == "get"), where
            assert f"**Needs** a token with the `{scope}` scope" in operation["description"], where
            answers = operation["responses"]
            expected = {"401", "403", "429"} | ({"400", "413", "415"} if method == "post" else set())
            assert expected <= set(answers), where
            download = "/exports/" in path or path.endswith("/bundle.zip")
            assert ("406" in answers) != download, where  # a download answers any Accept
            assert ("404" in answers) == ("{" in path), where
            for code, answer in answers.items():
                if code >= "400":
                    assert answer["content"]["application/json"]["schema"] == error, (where, code)
            assert "Retry-After" in answers["429"]["headers"], where
            assert answers["401"]["headers"]["WWW-Authenticate"]["required"] is True, where
    fields = schema["components"]["schemas"]["ErrorOut"]["properties"]["fields"]
    assert fields["additionalProperties"] == {"type": "array", "items": {"type": "string"}}


def test_a_conversation_is_its_turns_or_its_sessions_and_says_when_complexity_is_required(client):
    components = _schema(client)["components"]["schemas"]
    forms = [{"$ref": f"#/components/schemas/Conversation{form}Request"} for form in ("Turns", "Sessions")]
    assert components["ConversationRequest"] == {"oneOf": forms}
    turns, sessions = components["ConversationTurnsRequest"], components["ConversationSessionsRequest"]
    assert "turns" in turns["required"] and "sessions" not in turns["properties"]
    assert "sessions" in sessions["required"] and "turns" not in sessions["properties"]
    assert "required for a single-turn conversation" in turns["properties"]["complexity"]["description"]
    assert sessions["properties"]["sessions"]["minItems"] == 1
    assert "required for a crisis session" in components["SessionInRequest"]["properties"]["crisis_type"][
        "description"]


def test_files_are_form_uploads_and_the_report_is_typed(client):
    schema = _schema(client)
    for path in ("/api/v1/studies/{slug}/judgments/import/", "/api/v1/studies/{slug}/conversations/upload/",
                 "/api/v1/studies/{slug}/responses/upload/"):
        body = schema["paths"][path]["post"]["requestBody"]["content"]
        assert list(body) == ["multipart/form-data"], path
        component = body["multipart/form-data"]["schema"]["$ref"].rsplit("/", 1)[1]
        file = schema["components"]["schemas"][component]["properties"]["file"]
        assert (file["type"], file["format"]) == ("string", "binary"), path
    for path in ("/api/v1/studies/{slug}/conversations/", "/api/v1/studies/{slug}/responses/"):
        assert list(schema["paths"][path]["post"]["requestBody"]["content"]) == ["application/json"]
        assert "application/x-ndjson" in schema["paths"][path]["post"]["description"]  # read, said in words
    report = schema["components"]["schemas"]["MetricReportOut"]
    assert set(report["required"]) == {"version", "parameters", "attributes", "input", "calibration", "indices"}
    assert {"study", "warnings", "care", "lc8"} <= set(report["properties"])
    result = schema["paths"]["/api/v1/metric-runs/{run_id}/result/"]["get"]["responses"]["200"]
    assert result["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/MetricReportOut"}


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
