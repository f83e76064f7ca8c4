"""One error shape (api/errors.py): ``fields`` is always {field: [message, …]}, whatever shape the error was raised
in — a message, a list, a dict of either, a list field's or a nested serializer's errors (named by their path) — and
every answer the schema documents carries its headers (401: WWW-Authenticate, 429: Retry-After)."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ValidationError as DjangoValidationError
from django.test import override_settings
from rest_framework import exceptions

from api.errors import exception_handler, field_messages

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("detail", "fields"), [
    ("must be a run id", {"detail": ["must be a run id"]}),
    (["one", "two"], {"detail": ["one", "two"]}),
    ({"run": "must be a run id"}, {"run": ["must be a run id"]}),
    ({"run": ["a", "b"], "page_size": "c"}, {"run": ["a", "b"], "page_size": ["c"]}),
    ({"model_slots": {1: ["must be a JSON string, not int"]}}, {"model_slots[1]": ["must be a JSON string, not int"]}),
    ({"turns": [{}, {"index": ["A valid integer is required."]}]},
     {"turns[1].index": ["A valid integer is required."]}),
    ({"sessions": [{"turns": [{"client": ["This field is required."]}]}]},
     {"sessions[0].turns[0].client": ["This field is required."]}),
])
def test_fields_is_always_a_dict_of_lists_of_messages(detail, fields):
    assert field_messages(exceptions.ValidationError(detail).detail) == fields
    answer = exception_handler(exceptions.ValidationError(detail), {})
    assert answer.status_code == 400
    assert answer.data["fields"] == fields
    assert answer.data["detail"].startswith("Invalid input: ")


def test_a_django_validation_error_has_the_same_shape():
    assert exception_handler(DjangoValidationError("wrong"), {}).data == {"detail": "wrong",
                                                                          "fields": {"detail": ["wrong"]}}
    answer = exception_handler(DjangoValidationError({"slug": ["taken"]}), {})
    assert answer.data == {"detail": "taken", "fields": {"slug": ["taken"]}}


def test_api_answers_give_fields_as_lists(admin_user, as_token, study):
    api = as_token(admin_user)
    assert api.get("/api/v1/studies/cab-demo/exports/report.json?run=x").json()["fields"] == {
        "run": ["must be a run id"]}
    assert api.get("/api/v1/studies/cab-demo/judgments/?round=x&round=y").json()["fields"] == {
        "round": ["give this parameter once"]}
    created = as_token(admin_user, scopes=["setup"]).post(
        "/api/v1/studies/", {"slug": "s", "schema": "cab-v1", "model_slots": ["GPT", 7]}, format="json")
    assert created.status_code == 400
    assert created.json()["fields"] == {"model_slots[1]": ["must be a JSON string, not int"]}
    assert all(isinstance(messages, list) for messages in created.json()["fields"].values())


def test_a_401_names_its_challenge_and_a_429_when_to_come_back(api, admin_user, as_token, study):
    answer = api.get("/api/v1/studies/")
    assert answer.status_code == 401 and answer["WWW-Authenticate"] == 'Bearer realm="api"'
    rates = {"DEFAULT_THROTTLE_RATES": {"anonymous": "60/min", "account": "2/min"}}
    token = as_token(admin_user)
    with override_settings(REST_FRAMEWORK={**settings.REST_FRAMEWORK, **rates}):
        cache.clear()  # the throttles' counts
        answers = [token.get("/api/v1/studies/") for _ in range(3)]
    assert [a.status_code for a in answers] == [200, 200, 429]
    assert int(answers[2]["Retry-After"]) >= 1
    assert set(answers[2].json()) == {"detail"}


def test_an_accept_header_json_cannot_satisfy_is_a_406_in_the_error_shape(admin_user, as_token, study):
    answer = as_token(admin_user).get("/api/v1/studies/", headers={"Accept": "text/csv"})
    assert answer.status_code == 406
    assert set(answer.json()) == {"detail"}
