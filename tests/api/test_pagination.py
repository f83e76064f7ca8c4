"""Pagination (api/pagination.py): a cursor that does not decode to an id position is a 404, never a 500."""

from __future__ import annotations

import base64

import pytest

pytestmark = pytest.mark.django_db

JUDGMENTS = "/api/v1/studies/cab-demo/judgments/"


def test_a_forged_cursor_is_a_404_not_a_500(researcher, as_token, study):
    forged = base64.b64encode(b"p=not-a-number").decode()
    assert as_token(researcher).get(JUDGMENTS, {"cursor": forged}).status_code == 404
    assert as_token(researcher).get(JUDGMENTS, {"cursor": "garbage"}).status_code == 404


@pytest.mark.parametrize(("path", "limit"), [
    (JUDGMENTS, 5000),
    ("/api/v1/studies/cab-demo/conversations/", 1000),
    ("/api/v1/studies/cab-demo/metric-runs/", 1000),
])
def test_a_page_size_over_the_limit_is_a_400_naming_it_never_a_smaller_page(researcher, as_token, study, path, limit):
    """A client asking for more than a page holds and reading the page it got may take it for everything there is
    if it does not follow ``next``: it is told the limit instead."""
    api = as_token(researcher)
    assert api.get(path, {"page_size": limit}).status_code == 200
    answer = api.get(path, {"page_size": limit + 1})
    assert answer.status_code == 400
    assert answer.json()["fields"] == {"page_size": [
        f"at most {limit} a page here (asked {limit + 1}): ask for {limit} or fewer and follow next to the last page"]}


def test_the_schema_states_each_page_size_limit(client):
    """The schema's page_size has the bounds the server keeps (schemathesis, tests/api/test_openapi.py, sends the
    values outside them and expects them refused)."""
    paths = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()["paths"]
    limits = {path: parameter["schema"] for path, item in paths.items()
              for parameter in item.get("get", {}).get("parameters", []) if parameter["name"] == "page_size"}
    assert limits == {
        "/api/v1/studies/{slug}/rounds/{round_name}/assignments/": {"type": "integer", "minimum": 1, "maximum": 5000},
        "/api/v1/studies/{slug}/judgments/": {"type": "integer", "minimum": 1, "maximum": 5000},
        "/api/v1/studies/{slug}/session-labels/": {"type": "integer", "minimum": 1, "maximum": 5000},
        "/api/v1/studies/{slug}/conversations/": {"type": "integer", "minimum": 1, "maximum": 1000},
        "/api/v1/studies/{slug}/responses/": {"type": "integer", "minimum": 1, "maximum": 5000},
        "/api/v1/studies/{slug}/metric-runs/": {"type": "integer", "minimum": 1, "maximum": 1000},
    }
