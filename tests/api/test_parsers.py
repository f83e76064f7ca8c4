"""Parsers (api/parsers.py): a bulk body must be a JSON array (or JSON Lines), of bounded size and item count."""

from __future__ import annotations

import pytest
from django.test import override_settings

from benchmark.models import ModelResponse
from tests.factories import jsonl, response_items

pytestmark = pytest.mark.django_db

RESPONSES = "/api/v1/studies/cab-demo/responses/"


def test_a_body_that_is_not_an_array_is_a_400(ingester, turns_only):
    response = ingester.post(RESPONSES, {"dataset": "x"}, format="json")
    assert response.status_code == 400
    assert "JSON array" in response.json()["detail"]
    assert ingester.generic("POST", RESPONSES, "[1,", content_type="application/json").status_code == 400


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=2000)
def test_an_oversize_body_is_a_413_and_writes_nothing(ingester, turns_only):
    response = ingester.post(RESPONSES, response_items(), format="json")
    assert response.status_code == 413
    assert "at most 2,000 bytes" in response.json()["detail"]
    response = ingester.generic("POST", RESPONSES, jsonl(response_items()), content_type="application/x-ndjson")
    assert response.status_code == 413
    assert ModelResponse.objects.count() == 0


def test_too_many_items_is_a_413(ingester, turns_only, monkeypatch):
    monkeypatch.setattr("api.parsers.MAX_ITEMS", 10)
    response = ingester.post(RESPONSES, response_items(), format="json")
    assert response.status_code == 413
    assert "at most 10 are accepted" in response.json()["detail"]



def test_a_number_of_more_digits_than_python_reads_is_a_400(study, admin_user, as_token):
    """json reads an integer of at most 4,300 digits (sys.get_int_max_str_digits) and raises a plain ValueError
    beyond: a JSON object body (``BoundedJSONParser``) that has one is a 400 saying so, as any JSON it cannot
    read."""
    api = as_token(admin_user, scopes=["metrics", "setup"])
    for url in ("/api/v1/studies/cab-demo/metric-runs/", "/api/v1/studies/"):
        answer = api.generic("POST", url, '{"seed": ' + "9" * 5000 + "}", content_type="application/json")
        assert answer.status_code == 400, url
        assert answer.json()["detail"].startswith("Not valid JSON: Exceeds the limit (4300 digits)")
