"""Bulk ingestion of conversations and model responses: atomic, item-by-item errors, idempotent, 409 on judged
text, 413 on oversize, set-based writes."""

from __future__ import annotations

import json

import pytest
from django.test import override_settings

from benchmark.demo import demo_records
from benchmark.models import Conversation, ModelResponse, Turn
from tests.api.conftest import conversations_without_responses, response_items
from tests.factories import ConversationFactory, JudgmentFactory, RoundFactory, TurnFactory

pytestmark = pytest.mark.django_db

CONVERSATIONS = "/api/v1/studies/cab-demo/conversations/"
RESPONSES = "/api/v1/studies/cab-demo/responses/"


def counts():
    return Conversation.objects.count(), Turn.objects.count(), ModelResponse.objects.count()


def jsonl(items) -> str:
    return "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items)


@pytest.fixture
def ingester(admin_user, as_token, study):
    return as_token(admin_user, scopes=["ingest"], study=study)


# --- conversations -------------------------------------------------------------------------------------------


def test_conversations_are_ingested_from_a_json_array(ingester):
    response = ingester.post(CONVERSATIONS, demo_records(), format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["conversations_created"] == 4
    assert counts() == (4, 6, 20)


def test_conversations_are_ingested_from_json_lines(ingester):
    response = ingester.generic("POST", CONVERSATIONS, jsonl(demo_records()), content_type="application/x-ndjson")
    assert response.status_code == 200, response.json()
    assert counts() == (4, 6, 20)


def test_resending_identical_conversations_changes_nothing_and_says_unchanged(ingester):
    ingester.post(CONVERSATIONS, demo_records(), format="json")
    before = list(ModelResponse.objects.order_by("pk").values_list("pk", "updated_at"))
    response = ingester.post(CONVERSATIONS, demo_records(), format="json")
    assert response.json()["conversations_unchanged"] == 4
    assert response.json()["conversations_created"] == response.json()["conversations_updated"] == 0
    assert list(ModelResponse.objects.order_by("pk").values_list("pk", "updated_at")) == before


def test_one_bad_conversation_rejects_the_whole_request_with_every_error(ingester):
    records = demo_records()
    records[1]["topic"] = "Astrology"
    records[3]["turns"][1]["responses"][0]["text"] = ""
    bad_line = "{not json"
    body = jsonl(records[:2]) + bad_line + "\n" + jsonl(records[2:])
    response = ingester.generic("POST", CONVERSATIONS, body, content_type="application/x-ndjson")
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert {(e["index"], e["field"]) for e in errors} == {
        (1, "topic"), (2, "item"), (4, "turns[1].responses[0].text")}
    assert counts() == (0, 0, 0)


def test_conversation_responses_must_use_the_study_model_slots(ingester, study):
    study.model_slots = ["GPT", "Claude"]
    study.save()
    response = ingester.post(CONVERSATIONS, demo_records()[:1], format="json")
    assert response.status_code == 400
    assert {e["field"] for e in response.json()["errors"]} == {
        "turns[0].responses[2].model", "turns[0].responses[3].model", "turns[0].responses[4].model"}
    assert counts() == (0, 0, 0)


def test_new_text_for_a_judged_response_in_a_conversation_is_a_409(ingester, study):
    ingester.post(CONVERSATIONS, demo_records(), format="json")
    judged = ModelResponse.objects.get(turn__conversation__external_id="appendix-d-1", model_slot="GPT")
    JudgmentFactory(response=judged, round=RoundFactory(study=study))
    records = demo_records()
    records[0]["turns"][0]["responses"][0]["text"] = "A different text."
    response = ingester.post(CONVERSATIONS, records, format="json")
    assert response.status_code == 409
    assert response.json()["errors"] == [{"index": 0, "field": "turns[0].responses[0].text",
                                          "message": "the GPT response of turn 1 already has judgments; its text "
                                                     "cannot change"}]
    judged.refresh_from_db()
    assert judged.text != "A different text."


# --- responses -----------------------------------------------------------------------------------------------


@pytest.fixture
def turns_only(ingester):
    assert ingester.post(CONVERSATIONS, conversations_without_responses(), format="json").status_code == 200


def test_responses_are_ingested_exactly_as_sent(ingester, turns_only):
    items = response_items()
    items[0]["text"] = "  spaces stay, ünïcödé 😊 stays\r\n"
    response = ingester.post(RESPONSES, items, format="json")
    assert response.status_code == 200
    assert response.json() == {"items": 20, "created": 20, "updated": 0, "unchanged": 0}
    stored = ModelResponse.objects.get(turn__conversation__external_id=items[0]["conversation_id"],
                                       model_slot=items[0]["model"])
    assert stored.text == "  spaces stay, ünïcödé 😊 stays\r\n"


def test_resending_identical_responses_writes_nothing_and_reports_unchanged(ingester, turns_only):
    ingester.post(RESPONSES, response_items(), format="json")
    before = list(ModelResponse.objects.order_by("pk").values_list("pk", "text", "updated_at"))
    response = ingester.generic("POST", RESPONSES, jsonl(response_items()), content_type="application/jsonl")
    assert response.json() == {"items": 20, "created": 0, "updated": 0, "unchanged": 20}
    assert list(ModelResponse.objects.order_by("pk").values_list("pk", "text", "updated_at")) == before


def test_changed_text_of_an_unjudged_response_is_updated(ingester, turns_only):
    ingester.post(RESPONSES, response_items(), format="json")
    items = response_items()
    items[3]["text"] = "Revised."
    items[3]["model_version"] = "v2"
    response = ingester.post(RESPONSES, items, format="json")
    assert response.json() == {"items": 20, "created": 0, "updated": 1, "unchanged": 19}
    stored = ModelResponse.objects.get(turn__conversation__external_id=items[3]["conversation_id"],
                                       model_slot=items[3]["model"])
    assert (stored.text, stored.model_version) == ("Revised.", "v2")


@pytest.mark.parametrize(("change", "field", "message"), [
    ({"turn_index": 0}, "turn_index", "must be between 1 and 2147483647"),
    ({"turn_index": 10**12}, "turn_index", "must be between 1 and 2147483647"),
    ({"turn_index": True}, "turn_index", "must be a whole number, not true/false"),
    ({"text": ""}, "text", "may not be blank"),
    ({"text": 5}, "text", "must be a string"),
    ({"text": "nul \x00 byte"}, "text", "may not contain NUL characters"),
    ({"model": "x" * 51}, "model", "at most 50 characters (got 51)"),
    ({"model": "Mistral"}, "model", "'Mistral' is not one of this study's model slots (GPT, Claude, Gemini, Llama, "
                                    "Qwen)"),
    ({"conversation_id": "nope"}, "conversation_id", "CounselChat/nope is not imported; send the conversation first"),
    ({"turn_index": 9}, "turn_index", "CounselChat/appendix-d-1 has no turn 9"),
    ({"colour": "red"}, "colour", "unknown field; fields are dataset, conversation_id, turn_index, model, "
                                  "model_version, text"),
])
def test_a_bad_response_item_rejects_the_request_and_says_which_item_field_and_why(
    ingester, turns_only, change, field, message
):
    items = response_items()
    items[7] = items[0] | change
    response = ingester.post(RESPONSES, items, format="json")
    assert response.status_code == 400
    assert {"index": 7, "field": field, "message": message} in response.json()["errors"]
    assert ModelResponse.objects.count() == 0


def test_a_duplicate_item_in_one_request_is_an_error_on_the_later_one(ingester, turns_only):
    items = response_items()
    items.append(dict(items[2]))
    response = ingester.post(RESPONSES, items, format="json")
    assert response.status_code == 400
    assert [(e["index"], e["field"]) for e in response.json()["errors"]] == [(20, "model")]
    assert "already appears as item 2" in response.json()["errors"][0]["message"]


def test_a_body_that_is_not_an_array_is_a_400(ingester, turns_only):
    response = ingester.post(RESPONSES, {"dataset": "x"}, format="json")
    assert response.status_code == 400
    assert "JSON array" in response.json()["detail"]
    assert ingester.generic("POST", RESPONSES, "[1,", content_type="application/json").status_code == 400


def test_new_text_for_judged_responses_is_a_409_listing_them_and_nothing_is_applied(ingester, turns_only, study):
    ingester.post(RESPONSES, response_items(), format="json")
    round_ = RoundFactory(study=study)
    judged = list(ModelResponse.objects.order_by("pk")[:2])
    for response in judged:
        JudgmentFactory(response=response, round=round_)
    items = response_items()
    for item in items:
        item["text"] += " (revised)"
    response = ingester.post(RESPONSES, items, format="json")
    assert response.status_code == 409
    positions = {(r.turn.conversation.external_id, r.turn.index, r.model_slot) for r in judged}
    listed = {(items[e["index"]]["conversation_id"], items[e["index"]]["turn_index"], items[e["index"]]["model"])
              for e in response.json()["errors"]}
    assert listed == positions
    assert not ModelResponse.objects.filter(text__endswith="(revised)").exists()


def test_idempotency_key_replays_the_first_answer(ingester, turns_only):
    first = ingester.post(RESPONSES, response_items(), format="json", HTTP_IDEMPOTENCY_KEY="batch-0001")
    again = ingester.post(RESPONSES, response_items(), format="json", HTTP_IDEMPOTENCY_KEY="batch-0001")
    assert first.json() == again.json() == {"items": 20, "created": 20, "updated": 0, "unchanged": 0}
    assert again["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first
    without_key = ingester.post(RESPONSES, response_items(), format="json")
    assert without_key.json()["unchanged"] == 20


def test_idempotency_key_reused_for_different_content_is_a_422(ingester, turns_only):
    ingester.post(RESPONSES, response_items()[:5], format="json", HTTP_IDEMPOTENCY_KEY="k1")
    response = ingester.post(RESPONSES, response_items(), format="json", HTTP_IDEMPOTENCY_KEY="k1")
    assert response.status_code == 422
    assert ModelResponse.objects.count() == 5


def test_a_failed_request_is_not_remembered_under_its_idempotency_key(ingester, turns_only):
    items = response_items()
    items[0]["text"] = ""
    assert ingester.post(RESPONSES, items, format="json", HTTP_IDEMPOTENCY_KEY="k2").status_code == 400
    response = ingester.post(RESPONSES, response_items(), format="json", HTTP_IDEMPOTENCY_KEY="k2")
    assert response.status_code == 200 and response.json()["created"] == 20


def test_a_malformed_idempotency_key_is_a_400(ingester, turns_only):
    response = ingester.post(RESPONSES, response_items(), format="json", HTTP_IDEMPOTENCY_KEY="has space")
    assert response.status_code == 400
    assert ModelResponse.objects.count() == 0


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


def test_ten_thousand_responses_in_one_request_with_set_based_writes(
    ingester, study, django_assert_max_num_queries
):
    conversation = ConversationFactory(dataset__name="Bulk", external_id="bulk", kind="multi", complexity=None)
    Turn.objects.bulk_create(Turn(conversation=conversation, index=i, client_text=f"turn {i}")
                             for i in range(1, 2001))
    items = [{"dataset": "Bulk", "conversation_id": "bulk", "turn_index": i, "model": model, "text": f"{model} {i}"}
             for i in range(1, 2001) for model in ("GPT", "Claude", "Gemini", "Llama", "Qwen")]
    # auth (3) + advisory lock + turns + existing responses + 5 INSERTs of 2,000 rows + savepoints: no per-item trip
    with django_assert_max_num_queries(17):  # … and one audit event
        response = ingester.post(RESPONSES, items, format="json")
    assert response.json() == {"items": 10000, "created": 10000, "updated": 0, "unchanged": 0}
    with django_assert_max_num_queries(10):
        again = ingester.post(RESPONSES, items, format="json")
    assert again.json()["unchanged"] == 10000


def test_reviewers_and_researchers_cannot_ingest(reviewer, researcher, as_token, study, turns_only):
    for user in (reviewer, researcher):
        response = as_token(user, scopes=["ingest"]).post(RESPONSES, response_items(), format="json")
        assert response.status_code == 403
    assert ModelResponse.objects.count() == 0


def test_a_read_token_cannot_ingest(admin_user, as_token, study, turns_only):
    response = as_token(admin_user, scopes=["read"]).post(RESPONSES, response_items(), format="json")
    assert response.status_code == 403


def test_the_browser_session_must_send_the_csrf_token(admin_user, study):
    from rest_framework.test import APIClient

    browser = APIClient(enforce_csrf_checks=True)
    browser.force_login(admin_user)
    response = browser.post(CONVERSATIONS, demo_records(), format="json")
    assert response.status_code == 403
    assert "CSRF" in response.json()["detail"]


def test_ingestion_into_an_unknown_study_is_a_404(admin_user, as_token, db):
    response = as_token(admin_user).post("/api/v1/studies/nope/responses/", [], format="json")
    assert response.status_code == 404


def test_one_turn_factory_keeps_the_factory_used(db):
    assert TurnFactory().index == 1


def test_an_idempotency_record_older_than_a_day_is_not_replayed(ingester, turns_only, admin_user):
    from datetime import timedelta

    from django.utils import timezone

    from api.models import IdempotencyRecord
    from tests.factories import IdempotencyRecordFactory

    IdempotencyRecordFactory(user=admin_user, key="old-key", response={"stale": True})
    IdempotencyRecord.objects.update(created_at=timezone.now() - timedelta(hours=25))
    response = ingester.post(RESPONSES, response_items(), format="json", HTTP_IDEMPOTENCY_KEY="old-key")
    assert response.status_code == 200 and response.json()["created"] == 20
    assert "Idempotent-Replayed" not in response
    assert IdempotencyRecord.objects.get(key="old-key").response == response.json()
