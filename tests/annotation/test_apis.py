"""The study API (annotation/apis.py): studies, rounds and progress, assignments, judgments — each scoped to what
the role may see, with pinned query counts; bulk ingestion of conversations and model responses (atomic,
item-by-item errors, idempotent, set-based writes; 409 for another study's material and for text reviewers coded
against); the judgments export (streamed, formula cells neutralised) and import."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management import call_command

from access.services import user_ensure
from annotation import automated_coders, judgment_import, services
from annotation.long_format import COLUMNS, judgment_rows
from annotation.models import AttributeDefinition, Judgment, Span, Study, StudyMember
from annotation.services import judgments_purge
from benchmark import conversation_ingest
from benchmark.demo import demo_records
from benchmark.models import Conversation, ModelResponse, Turn
from tests.annotation.test_long_format import file_queries
from tests.factories import (
    AssignmentFactory,
    ConversationFactory,
    JudgmentFactory,
    RoundFactory,
    RoundItemFactory,
    SpanFactory,
    StudyMemberFactory,
    attribute,
    jsonl,
    response_items,
)

pytestmark = pytest.mark.django_db

JUDGMENTS = "/api/v1/studies/cab-demo/judgments/"
CONVERSATIONS = "/api/v1/studies/cab-demo/conversations/"
RESPONSES = "/api/v1/studies/cab-demo/responses/"
EXPORT = "/api/v1/studies/cab-demo/exports/judgments.{fmt}"
IMPORT = "/api/v1/studies/cab-demo/judgments/import/"


# --- reading: studies, rounds, assignments, judgments ----------------------------------------------------------


@pytest.fixture
def coded(study, demo_conversations, reviewer, other_reviewer, expert):
    """A calibration round (open) with judgments by two reviewers and a gold judgment, and a main round."""
    calibration = RoundFactory(study=study, kind="calibration", number=1, status="open")
    main = RoundFactory(study=study, kind="main", number=1, status="draft")
    gpt = ModelResponse.objects.get(turn__conversation__external_id="appendix-d-1", model_slot="GPT")
    claude = ModelResponse.objects.get(turn__conversation__external_id="appendix-d-1", model_slot="Claude")
    mine = JudgmentFactory(round=calibration, coder=reviewer, response=gpt, score=2)
    SpanFactory(judgment=mine, start=0, end=5)
    JudgmentFactory(round=calibration, coder=reviewer, response=claude, score=0)
    JudgmentFactory(round=calibration, coder=reviewer, response=None, turn=gpt.turn, attribute=attribute("U1"),
                    score=1)
    JudgmentFactory(round=calibration, coder=other_reviewer, response=gpt, score=1)
    JudgmentFactory(round=calibration, coder=expert, response=gpt, score=2, is_gold=True)
    JudgmentFactory(round=main, coder=other_reviewer, response=claude, score=1)
    for position, turn in enumerate(Turn.objects.order_by("pk")[:3], start=1):
        AssignmentFactory(round=calibration, coder=reviewer, turn=turn, position=position,
                          is_check_item=position == 3, completed_at="2026-01-01T00:00:00Z" if position == 1 else None)
        AssignmentFactory(round=calibration, coder=other_reviewer, turn=turn, position=position)
    return {"calibration": calibration, "main": main, "mine": mine}


def test_studies_list_is_scoped_to_membership(reviewer, outsider, researcher, as_token, study, other_study):
    assert [s["slug"] for s in as_token(reviewer).get("/api/v1/studies/").json()] == ["cab-demo"]
    assert as_token(outsider, legacy=True).get("/api/v1/studies/").json() == []
    assert [s["slug"] for s in as_token(researcher).get("/api/v1/studies/").json()] == ["cab-demo", "other-study"]
    assert as_token(outsider, legacy=True).get("/api/v1/studies/cab-demo/").status_code == 404


def test_blinded_study_hides_model_names_from_reviewers_but_not_from_researchers(
    reviewer, researcher, as_token, study, coded
):
    assert as_token(reviewer).get("/api/v1/studies/cab-demo/").json()["model_slots"] is None
    assert as_token(researcher).get("/api/v1/studies/cab-demo/").json()["model_slots"][0] == "GPT"
    mine = as_token(reviewer).get(JUDGMENTS).json()["results"]
    assert {j["model"] for j in mine} == {None}
    assert as_token(reviewer).get(JUDGMENTS, {"model": "GPT"}).status_code == 400
    study.show_model_names = True
    study.save()
    assert {j["model"] for j in as_token(reviewer).get(JUDGMENTS).json()["results"]} == {"GPT", "Claude", None}


def test_a_reviewer_sees_only_their_own_judgments_never_gold_or_others(reviewer, as_token, coded):
    response = as_token(reviewer).get(JUDGMENTS)
    results = response.json()["results"]
    assert {j["reviewer"] for j in results} == {"reviewer"}
    assert len(results) == 3
    assert not any(j["is_gold"] for j in results)


def test_researchers_see_every_judgment_in_the_long_format(researcher, as_token, coded):
    results = as_token(researcher).get(JUDGMENTS).json()["results"]
    assert len(results) == 6
    mine = next(j for j in results if j["id"] == coded["mine"].pk)
    assert {k: mine[k] for k in ("study", "round", "reviewer", "is_gold", "dataset", "conversation_id", "turn_index",
                                 "model", "attribute", "score", "instance_count")} == {
        "study": "cab-demo", "round": "calibration-1", "reviewer": "reviewer", "is_gold": False,
        "dataset": "CounselChat", "conversation_id": "appendix-d-1", "turn_index": 1, "model": "GPT",
        "attribute": "AUR", "score": 2, "instance_count": None}
    assert mine["spans"] == [{"start": 0, "end": 5, "subcategory": coded["mine"].spans.get().subcategory.slug}]


@pytest.mark.parametrize(("params", "expected"), [
    ({"round": "main"}, 1),
    ({"round": "calibration-1"}, 5),
    ({"reviewer": "other-reviewer"}, 2),
    ({"model": "Claude"}, 2),
    ({"attribute": "U1"}, 1),
    ({"round": "calibration-1", "model": "GPT", "reviewer": "expert"}, 1),
])
def test_judgments_filter_by_round_reviewer_model_and_attribute(researcher, as_token, coded, params, expected):
    response = as_token(researcher).get(JUDGMENTS, params)
    assert response.status_code == 200
    assert len(response.json()["results"]) == expected


def test_name_filters_match_ignoring_case(researcher, reviewer, as_token, study, coded):
    """A study's model slots are typed by people (``GPT``, ``gpt``): a filter naming one in another case finds it."""
    api = as_token(researcher)
    exact = api.get(JUDGMENTS, {"model": "GPT", "attribute": "U1"}).json()["results"]
    assert api.get(JUDGMENTS, {"model": "gpt", "attribute": "u1"}).json()["results"] == exact
    assert len(api.get(JUDGMENTS, {"model": "gpt"}).json()["results"]) == 3
    assert len(api.get(JUDGMENTS, {"reviewer": "Other-Reviewer"}).json()["results"]) == 2
    assert len(as_token(reviewer).get(JUDGMENTS, {"reviewer": "REVIEWER"}).json()["results"]) == 3


def test_the_round_filter_matches_ignoring_case_as_the_other_names(researcher, as_token, coded):
    """``round=Main`` was a 400 "does not match the required pattern", where every other name filter (and the
    round's own refusal, "matched ignoring case") takes any case."""
    api = as_token(researcher)
    for exact, typed in (("main", "Main"), ("calibration-1", "CALIBRATION-1")):
        expected = api.get(JUDGMENTS, {"round": exact}).json()["results"]
        answer = api.get(JUDGMENTS, {"round": typed})
        assert answer.status_code == 200, answer.json()
        assert answer.json()["results"] == expected != []


@pytest.mark.parametrize(("params", "message"), [
    ({"model": "gpt-4o"}, "'gpt-4o' names none of this study's models (Claude, GPT, Gemini, Llama, Qwen; matched "
                          "ignoring case)"),
    ({"round": "calibration-2"}, "'calibration-2' names none of this study's rounds (calibration-1, main; matched "
                                 "ignoring case)"),
    ({"reviewer": "ghost"}, "'ghost' names none of this study's coders (expert, other-reviewer, reviewer; matched "
                            "ignoring case)"),
])
def test_a_filter_naming_nothing_of_the_study_is_a_400_naming_what_it_has(researcher, as_token, coded, params,
                                                                          message):
    """An empty list would read as "none there": a value that cannot name anything of the study is refused."""
    answer = as_token(researcher).get(JUDGMENTS, {"round": "calibration-1", **params})
    assert answer.status_code == 400
    assert answer.json()["fields"] == {next(iter(params)): [message]}


def test_an_unknown_attribute_filter_lists_the_schemas_codes(researcher, as_token, coded):
    answer = as_token(researcher).get(JUDGMENTS, {"attribute": "XYZ"})
    assert answer.status_code == 400
    assert answer.json()["fields"]["attribute"][0].startswith("'XYZ' names none of this study's attributes (")
    assert "AUR" in answer.json()["fields"]["attribute"][0]


def test_a_model_filter_never_names_the_models_to_a_reviewer_who_may_not_see_them(reviewer, as_token, study,
                                                                                    coded):
    for value in ("GPT", "gpt-4o"):
        answer = as_token(reviewer).get(JUDGMENTS, {"model": value})
        assert answer.status_code == 400
        assert answer.json()["fields"] == {"model": ["model names are hidden from reviewers in this study"]}
    study.show_model_names = True
    study.save()
    assert len(as_token(reviewer).get(JUDGMENTS, {"model": "gpt"}).json()["results"]) == 1
    answer = as_token(reviewer).get(JUDGMENTS, {"model": "gpt-4o"})
    assert answer.status_code == 400 and "Claude, GPT, Gemini, Llama, Qwen" in answer.json()["fields"]["model"][0]


def test_a_reviewer_filter_of_a_reviewer_names_only_themselves_and_tells_nothing_of_others(reviewer, as_token,
                                                                                          coded):
    """Reviewers are blinded to each other: another member's name and a name nobody has are refused alike."""
    answers = [as_token(reviewer).get(JUDGMENTS, {"reviewer": name}) for name in ("other-reviewer", "ghost")]
    assert {answer.status_code for answer in answers} == {400}
    assert {json.dumps(answer.json()) for answer in answers} == {json.dumps({
        "detail": "Invalid input: reviewer: you see only your own judgments: give 'reviewer' or leave it out",
        "fields": {"reviewer": ["you see only your own judgments: give 'reviewer' or leave it out"]}})}


def test_a_model_slot_two_slots_share_ignoring_case_must_be_given_exactly(researcher, as_token, study, coded):
    Study.objects.filter(pk=study.pk).update(model_slots=["GPT", "gpt", "Claude"])
    api = as_token(researcher)
    assert len(api.get(JUDGMENTS, {"model": "GPT"}).json()["results"]) == 3
    answer = api.get(JUDGMENTS, {"model": "Gpt"})
    assert answer.json()["fields"] == {"model": ["'Gpt' matches GPT, gpt ignoring case: give one of them exactly"]}


def test_assignments_of_a_round_the_study_lacks_are_a_404_and_an_unknown_reviewer_a_400(researcher, reviewer,
                                                                                      as_token, coded):
    missing = as_token(researcher).get("/api/v1/studies/cab-demo/rounds/calibration-2/assignments/")
    assert missing.status_code == 404
    assert missing.json()["detail"] == ("Study 'cab-demo' has no round 'calibration-2' (its rounds: calibration-1, "
                                        "main).")
    url = "/api/v1/studies/cab-demo/rounds/calibration-1/assignments/"
    assert as_token(researcher).get(url, {"reviewer": "ghost"}).json()["fields"] == {"reviewer": [
        "'ghost' names none of this study's coders (other-reviewer, reviewer; matched ignoring case)"]}
    assert as_token(reviewer).get(url, {"reviewer": "other-reviewer"}).json()["fields"] == {"reviewer": [
        "you see only your own assignments: give 'reviewer' or leave it out"]}


def test_material_filters_match_ignoring_case_and_refuse_what_the_study_lacks(researcher, as_token, coded):
    api = as_token(researcher)
    gpt = api.get(RESPONSES, {"model": "GPT", "conversation_id": "appendix-d-1"}).json()["results"]
    assert api.get(RESPONSES, {"model": "gpt", "conversation_id": "appendix-d-1"}).json()["results"] == gpt != []
    assert api.get(RESPONSES, {"model": "gpt-4o"}).json()["fields"] == {"model": [
        "'gpt-4o' names none of this study's models (Claude, GPT, Gemini, Llama, Qwen; matched ignoring case)"]}
    named = api.get(CONVERSATIONS, {"dataset": "CounselChat"}).json()["results"]
    assert api.get(CONVERSATIONS, {"dataset": "counselchat"}).json()["results"] == named != []
    for path in (CONVERSATIONS, RESPONSES):
        refused = api.get(path, {"dataset": "CounselChatt"}).json()["fields"]["dataset"][0]
        assert refused == ("'CounselChatt' names none of this study's datasets (CARE-Bench, CounselChat, PAIR; "
                           "matched ignoring case)")


def test_a_malformed_round_filter_is_a_400(researcher, as_token, coded):
    response = as_token(researcher).get(JUDGMENTS, {"round": "calibration-x"})
    assert response.status_code == 400
    assert "round" in response.json()["fields"]


def test_judgments_are_cursor_paginated_without_gaps_or_repeats(researcher, as_token, coded):
    api = as_token(researcher)
    seen, url, pages = [], JUDGMENTS + "?page_size=2", 0
    while url:
        page = api.get(url).json()
        seen += [j["id"] for j in page["results"]]
        url, pages = page["next"], pages + 1
    assert pages == 3
    assert seen == sorted(seen) and len(set(seen)) == 6


def test_judgment_list_query_count_does_not_grow_with_the_page(researcher, as_token, coded,
                                                               django_assert_max_num_queries):
    api = as_token(researcher)
    # token + its last use + role checks (3, constant) + study + its coders' roles + judgments + spans (with their
    # subcategories)
    with django_assert_max_num_queries(9):
        small = api.get(JUDGMENTS, {"page_size": 1})
    with django_assert_max_num_queries(9):
        full = api.get(JUDGMENTS)
    assert len(small.json()["results"]) == 1 and len(full.json()["results"]) == 6


def test_rounds_report_progress_per_reviewer_and_reviewers_see_their_own(
    reviewer, researcher, as_token, coded, django_assert_max_num_queries
):
    api = as_token(researcher)
    with django_assert_max_num_queries(8):
        staff = api.get("/api/v1/studies/cab-demo/rounds/").json()
    calibration = next(r for r in staff if r["name"] == "calibration-1")
    assert calibration["assigned"] == 6 and calibration["completed"] == 1
    assert calibration["progress"] == [{"reviewer": "other-reviewer", "assigned": 3, "completed": 0},
                                       {"reviewer": "reviewer", "assigned": 3, "completed": 1}]
    own = as_token(reviewer).get("/api/v1/studies/cab-demo/rounds/").json()
    assert next(r for r in own if r["name"] == "calibration-1")["progress"] == [
        {"reviewer": "reviewer", "assigned": 3, "completed": 1}]


def test_assignments_are_scoped_and_check_items_stay_hidden_from_reviewers(
    reviewer, researcher, as_token, coded, django_assert_max_num_queries
):
    url = "/api/v1/studies/cab-demo/rounds/calibration-1/assignments/"
    api = as_token(researcher)
    # token + its last use + role checks (3, constant) + study + its rounds (the one in the path must be one) +
    # assignments (one query with their turns)
    with django_assert_max_num_queries(8):
        staff = api.get(url).json()["results"]
    assert len(staff) == 6 and sum(a["is_check_item"] for a in staff) == 1
    own = as_token(reviewer).get(url).json()["results"]
    assert [a["reviewer"] for a in own] == ["reviewer"] * 3
    assert {a["is_check_item"] for a in own} == {None}
    assert as_token(researcher).get(url, {"reviewer": "reviewer"}).json()["results"][0]["position"] == 1


def test_an_expert_member_sees_the_study_but_only_their_own_judgments(expert, as_token, study, coded):
    StudyMemberFactory(study=study, user=expert, role="expert")
    results = as_token(expert).get(JUDGMENTS).json()["results"]
    assert results == []  # the expert's only coding is the gold consensus, which is not shown through this list


# --- ingestion: conversations ----------------------------------------------------------------------------------


def counts():
    return Conversation.objects.count(), Turn.objects.count(), ModelResponse.objects.count()


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
                                          "message": "the GPT response of turn 1 of CounselChat/appendix-d-1 already "
                                                     "has judgments; its text cannot change (spans are character "
                                                     "offsets into it)"}]
    judged.refresh_from_db()
    assert judged.text != "A different text."


# --- ingestion: responses --------------------------------------------------------------------------------------


def test_responses_are_ingested_exactly_as_sent(ingester, turns_only):
    items = response_items()
    items[0]["text"] = "  spaces stay, ünïcödé 😊 stays\r\n"
    response = ingester.post(RESPONSES, items, format="json")
    assert response.status_code == 200
    assert response.json() == {"items": 20, "created": 20, "updated": 0, "unchanged": 0, "turns_back_in_queues": 0}
    stored = ModelResponse.objects.get(turn__conversation__external_id=items[0]["conversation_id"],
                                       model_slot=items[0]["model"])
    assert stored.text == "  spaces stay, ünïcödé 😊 stays\r\n"


def test_resending_identical_responses_writes_nothing_and_reports_unchanged(ingester, turns_only):
    ingester.post(RESPONSES, response_items(), format="json")
    before = list(ModelResponse.objects.order_by("pk").values_list("pk", "text", "updated_at"))
    response = ingester.generic("POST", RESPONSES, jsonl(response_items()), content_type="application/jsonl")
    assert response.json() == {"items": 20, "created": 0, "updated": 0, "unchanged": 20, "turns_back_in_queues": 0}
    assert list(ModelResponse.objects.order_by("pk").values_list("pk", "text", "updated_at")) == before


def test_changed_text_of_an_unjudged_response_is_updated(ingester, turns_only):
    ingester.post(RESPONSES, response_items(), format="json")
    items = response_items()
    items[3]["text"] = "Revised."
    items[3]["model_version"] = "v2"
    response = ingester.post(RESPONSES, items, format="json")
    assert response.json() == {"items": 20, "created": 0, "updated": 1, "unchanged": 19, "turns_back_in_queues": 0}
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


def test_ten_thousand_responses_in_one_request_with_set_based_writes(
    ingester, study, django_assert_max_num_queries
):
    conversation = ConversationFactory(dataset__name="Bulk", external_id="bulk", kind="multi", complexity=None)
    Turn.objects.bulk_create(Turn(conversation=conversation, index=i, client_text=f"turn {i}")
                             for i in range(1, 2001))
    items = [{"dataset": "Bulk", "conversation_id": "bulk", "turn_index": i, "model": model, "text": f"{model} {i}"}
             for i in range(1, 2001) for model in ("GPT", "Claude", "Gemini", "Llama", "Qwen")]
    # auth (3) + advisory lock + turns + existing responses + lock of the conversation + 3 reads of how studies use
    # it + 5 INSERTs of 2,000 rows + its claim by the study + savepoints: no per-item trip
    with django_assert_max_num_queries(22):  # … and one audit event
        response = ingester.post(RESPONSES, items, format="json")
    assert response.json() == {"items": 10000, "created": 10000, "updated": 0, "unchanged": 0,
                               "turns_back_in_queues": 0}
    with django_assert_max_num_queries(10):
        again = ingester.post(RESPONSES, items, format="json")
    assert again.json()["unchanged"] == 10000


def test_reviewers_and_researchers_cannot_ingest(reviewer, researcher, as_token, study, turns_only):
    for user in (reviewer, researcher):
        with pytest.raises(ValidationError, match="role allows only"):
            as_token(user, scopes=["ingest"])
        # A token with the scope made by hand (before the rule) is still refused by the role.
        response = as_token(user, legacy=True, scopes=["ingest"]).post(RESPONSES, response_items(), format="json")
        assert response.status_code == 403
    assert ModelResponse.objects.count() == 0


def test_ingestion_into_an_unknown_study_is_a_404(admin_user, as_token, db):
    response = as_token(admin_user).post("/api/v1/studies/nope/responses/", [], format="json")
    assert response.status_code == 404


# --- ingestion: study isolation and frozen text ----------------------------------------------------------------
# Datasets are shared: any study may send identical content or new conversations. A conversation belongs to the
# study whose ingestion first wrote it, and to every study that has it in a round or judged it: no other study's
# token or endpoint changes it. What reviewers coded against is frozen, whoever sends it.

OTHER_CONVERSATIONS = "/api/v1/studies/other-study/conversations/"
OTHER_RESPONSES = "/api/v1/studies/other-study/responses/"
FOREIGN = "CounselChat/appendix-d-1 belongs to another study: it cannot be changed through this one"


def material():
    """Every stored conversation, turn and response, column by column."""
    return [list(model.objects.order_by("pk").values_list()) for model in (Conversation, Turn, ModelResponse)]


@pytest.fixture
def intruder(admin_user, as_token, other_study):
    """An admin's ingestion token limited to ``other-study``."""
    return as_token(admin_user, scopes=["ingest"], study=other_study)


@pytest.fixture
def judged_in_demo(study, demo_conversations):
    """The demo conversations, imported without a study; CounselChat/appendix-d-1's turn (U1) and its GPT response
    (AUR) judged in ``cab-demo``'s open calibration round. Returns that turn."""
    round_ = RoundFactory(study=study, status="open")
    gpt = ModelResponse.objects.get(turn__conversation__external_id="appendix-d-1", model_slot="GPT")
    JudgmentFactory(round=round_, response=gpt)
    JudgmentFactory(round=round_, response=None, turn=gpt.turn, attribute=attribute("U1"))
    return gpt.turn


def test_another_studys_token_cannot_rewrite_a_turn_judged_in_a_study_and_nothing_changes(intruder, judged_in_demo):
    records = demo_records()
    records[0]["title"] = "Replaced"
    records[0]["turns"][0]["client"] = "Replaced client text."
    records.append(demo_records()[1] | {"conversation_id": "new-in-other-study"})  # valid alone: all or nothing
    before = material()
    response = intruder.post(OTHER_CONVERSATIONS, records, format="json")
    assert response.status_code == 409
    assert response.json()["errors"] == [{"index": 0, "field": "conversation_id", "message": FOREIGN}]
    assert "another study" in response.json()["detail"]
    assert material() == before


def test_another_studys_token_cannot_change_responses_of_a_conversation_judged_in_a_study(intruder, judged_in_demo):
    items = response_items()
    items[1]["text"] = "A rewritten Claude response, never judged itself."
    before = material()
    response = intruder.post(OTHER_RESPONSES, items, format="json")
    assert response.status_code == 409
    assert response.json()["errors"] == [{"index": 1, "field": "conversation_id", "message": FOREIGN}]
    assert material() == before


def test_material_ingested_through_a_study_is_its_own_before_anyone_codes_it(ingester, intruder, study):
    ingester.post(CONVERSATIONS, demo_records()[:1], format="json")
    assert Conversation.objects.get().study == study
    changed = demo_records()[:1]
    changed[0]["topic"] = "Grief and Loss"
    before = material()
    response = intruder.post(OTHER_CONVERSATIONS, changed, format="json")
    assert (response.status_code, response.json()["errors"]) == (
        409, [{"index": 0, "field": "conversation_id", "message": FOREIGN}])
    assert material() == before


def test_another_study_cannot_add_responses_to_a_studys_turns(intruder, turns_only):
    before = material()
    response = intruder.post(OTHER_RESPONSES, response_items(), format="json")
    assert response.status_code == 409
    assert {e["field"] for e in response.json()["errors"]} == {"conversation_id"}
    assert {e["index"] for e in response.json()["errors"]} == set(range(20))
    assert material() == before


def test_datasets_are_shared_identical_content_is_unchanged_and_new_conversations_are_the_senders(
    intruder, judged_in_demo, other_study
):
    records = demo_records() + [demo_records()[0] | {"conversation_id": "other-1"}]
    response = intruder.post(OTHER_CONVERSATIONS, records, format="json")
    assert response.status_code == 200, response.json()
    assert (response.json()["conversations_unchanged"], response.json()["conversations_created"]) == (4, 1)
    assert Conversation.objects.get(external_id="other-1").study == other_study
    assert Conversation.objects.get(external_id="appendix-d-1").study is None  # unchanged: nobody claimed it


def test_the_first_study_to_change_material_imported_without_a_study_owns_it(ingester, intruder, study,
                                                                            demo_conversations):
    items = response_items()
    items[0]["text"] = "Corrected before anyone coded it."
    assert ingester.post(RESPONSES, items, format="json").json()["updated"] == 1
    assert Conversation.objects.get(external_id="appendix-d-1").study == study
    items[0]["text"] = "Corrected again, by another study."
    assert intruder.post(OTHER_RESPONSES, items, format="json").status_code == 409


def test_new_text_for_a_judged_turn_is_a_409_saying_which_and_nothing_changes(ingester, judged_in_demo):
    records = demo_records()
    records[0]["title"] = "Replaced"
    records[0]["turns"][0]["client"] = "Replaced client text."
    records[0]["turns"][0]["therapist_reference"] = "Replaced reference."
    before = material()
    response = ingester.post(CONVERSATIONS, records, format="json")
    assert response.status_code == 409
    turn = "turn 1 of CounselChat/appendix-d-1 has judgments (on it, or on a later turn that shows it as context)"
    assert response.json()["errors"] == [
        {"index": 0, "field": "title", "message": "CounselChat/appendix-d-1 has judgments; its title cannot change"},
        {"index": 0, "field": "turns[0].client", "message": f"{turn}; its client text cannot change"},
        {"index": 0, "field": "turns[0].therapist_reference",
         "message": f"{turn}; its therapist reference cannot change"},
    ]
    assert material() == before


def test_an_earlier_turn_is_frozen_once_a_later_turn_that_shows_it_is_judged(ingester, study):
    ingester.post(CONVERSATIONS, demo_records(), format="json")
    second = Turn.objects.get(conversation__external_id="appendix-d-3", index=2)
    JudgmentFactory(round=RoundFactory(study=study, status="closed"), response=None, turn=second,
                    attribute=attribute("U1"))
    records = demo_records()
    records[2]["turns"][0]["client"] = "Context the reviewer never saw."
    response = ingester.post(CONVERSATIONS, records, format="json")
    assert response.status_code == 409
    assert [e["field"] for e in response.json()["errors"]] == ["turns[0].client"]
    records[2]["turns"].append({"index": 3, "client": "A new turn changes nothing that was coded."})
    records[2]["turns"][0]["client"] = demo_records()[2]["turns"][0]["client"]
    response = ingester.post(CONVERSATIONS, records, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["turns_created"] == 1


@pytest.mark.parametrize("placed_by", [RoundItemFactory, AssignmentFactory])
def test_response_text_in_an_open_round_cannot_change_until_the_round_closes(ingester, turns_only, study,
                                                                              placed_by):
    ingester.post(RESPONSES, response_items(), format="json")
    round_ = RoundFactory(study=study, status="open")
    placed_by(round=round_, turn=Turn.objects.get(conversation__external_id="appendix-d-1"))
    items = response_items()
    items[0]["text"] = "Revised while reviewers are reading it."
    before = material()
    response = ingester.post(RESPONSES, items, format="json")
    assert response.status_code == 409
    assert response.json()["errors"] == [{
        "index": 0, "field": "text",
        "message": "the GPT response of turn 1 of CounselChat/appendix-d-1 is in an open round; its text cannot "
                   "change until the round closes"}]
    assert material() == before
    round_.status = "closed"
    round_.save()
    assert ingester.post(RESPONSES, items, format="json").json()["updated"] == 1


# --- the judgments export and import ---------------------------------------------------------------------------

# Values a spreadsheet would run as formulas, and a quote that must survive as it is.
# (Conversation ids are trimmed on import, so a leading tab or CR cannot reach an export; the unit test covers them.)
TRICKY_IDS = ["=HYPERLINK(\"http://x\")", "-1", "+cmd", "@SUM(A1)", "'quoted", "''=double", "plain", "-@both"]


@pytest.fixture
def tricky_study(study):
    """Conversations whose ids begin with formula characters, coded by reviewers whose names do too."""
    records = []
    for number, external_id in enumerate(TRICKY_IDS):
        record = demo_records()[0]
        record["conversation_id"] = external_id
        record["dataset"] = "@Corpus" if number % 2 else "CounselChat"
        records.append(record)
    conversation_ingest.conversations_import(rows=enumerate(records))
    calibration = RoundFactory(study=study, kind="calibration", number=1, status="closed")
    main = RoundFactory(study=study, kind="main", number=1, status="closed")
    coders = [user_ensure(username=name, role="reviewer") for name in ("-dash", "+plus", "@at", "plain.name")]
    gold = user_ensure(username="+gold", role="expert")
    for number, response in enumerate(ModelResponse.objects.filter(model_slot__in=["GPT", "Qwen"]).order_by("pk")):
        coder = coders[number % len(coders)]
        round_ = calibration if number % 3 else main
        judgment = JudgmentFactory(round=round_, coder=coder, response=response, score=number % 3,
                                   instance_count=number % 2 if number % 2 else None)
        if number % 2:
            SpanFactory(judgment=judgment, start=1, end=7)
        JudgmentFactory(round=round_, coder=coder, response=None, turn=response.turn, attribute=attribute("U1"),
                        score=1) if response.model_slot == "GPT" else None
    JudgmentFactory(round=calibration, coder=gold, is_gold=True,
                    response=ModelResponse.objects.order_by("pk").first(), score=2)
    return study


def download(api, fmt):
    response = api.get(EXPORT.format(fmt=fmt))
    assert response.status_code == 200, response
    return response, b"".join(response.streaming_content).decode("utf-8")


def test_csv_export_is_a_streamed_attachment_with_the_long_format_columns(researcher, as_token, tricky_study):
    response, text = download(as_token(researcher), "csv")
    assert response.streaming
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="cab-demo-judgments.csv"'
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert tuple(rows[0]) == COLUMNS
    assert len(rows) - 1 == Judgment.objects.count()


def test_csv_cells_that_look_like_formulas_are_neutralised_with_a_quote(researcher, as_token, tricky_study):
    _, text = download(as_token(researcher), "csv")
    cells = {cell for row in csv.reader(io.StringIO(text, newline="")) for cell in row}
    for dangerous in ("=HYPERLINK(\"http://x\")", "-1", "+cmd", "@SUM(A1)", "-@both", "-dash", "+plus", "@at",
                      "+gold", "@Corpus"):
        assert dangerous not in cells
        assert "'" + dangerous in cells
    assert "''quoted" in cells and "'''=double" in cells  # a leading quote is doubled, so import can undo it exactly
    assert "plain" in cells and "plain.name" in cells
    assert not any(cell[:1] in ("=", "+", "-", "@", "\t", "\r") for cell in cells)


def test_jsonl_export_is_not_neutralised_and_matches_the_selector(researcher, as_token, tricky_study):
    response, text = download(as_token(researcher), "jsonl")
    assert response["Content-Disposition"] == 'attachment; filename="cab-demo-judgments.jsonl"'
    assert [json.loads(line) for line in text.splitlines()] == list(judgment_rows(study=tricky_study))


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_an_export_imported_into_the_emptied_study_reproduces_the_same_judgments(
    researcher, admin_user, as_token, tricky_study, fmt
):
    before = list(judgment_rows(study=tricky_study))
    assert len(before) > 10
    _, text = download(as_token(researcher), fmt)
    judgments_purge(judgments=Judgment.objects.all(), by=None, reason="test: empty the study to re-import it")
    content_type = "text/csv" if fmt == "csv" else "application/x-ndjson"
    response = as_token(admin_user, scopes=["import"]).generic("POST", IMPORT, text.encode(),
                                                               content_type=content_type)
    assert response.status_code == 200, response.json()
    assert response.json()["judgments_created"] == len(before)
    assert list(judgment_rows(study=tricky_study)) == before


def test_a_judgment_import_with_errors_says_which_line_and_writes_nothing(admin_user, researcher, as_token,
                                                                         tricky_study):
    _, text = download(as_token(researcher), "csv")
    judgments_purge(judgments=Judgment.objects.all(), by=None, reason="test: empty the study to re-import it")
    lines = text.splitlines(keepends=True)
    lines[2] = lines[2].replace(",calibration-1,", ",calibration-x,").replace(",main,", ",calibration-x,")
    response = as_token(admin_user, scopes=["import"]).generic("POST", IMPORT, "".join(lines).encode(),
                                                               content_type="text/csv")
    assert response.status_code == 400
    assert response.json()["errors"][0]["line"] == 3 and response.json()["errors"][0]["field"] == "round"
    assert Judgment.objects.count() == 0


def test_researchers_cannot_import_judgments(researcher, as_token, tricky_study):
    response = as_token(researcher).generic("POST", IMPORT, b"x", content_type="text/csv")
    assert response.status_code == 403


def test_reviewers_cannot_download_exports(reviewer, as_token, tricky_study):
    assert as_token(reviewer).get(EXPORT.format(fmt="csv")).status_code == 403


def test_export_query_count_is_constant(researcher, as_token, tricky_study, django_assert_max_num_queries):
    api = as_token(researcher)
    # token + its last use + roles twice + study + the export's own (per round and coder, not per row)
    with django_assert_max_num_queries(5 + file_queries(tricky_study)):
        _, text = download(api, "csv")
    assert text.count("\n") > 10


def test_a_large_export_arrives_in_many_chunks_not_one_buffer(researcher, as_token, study, demo_conversations):
    round_ = RoundFactory(study=study, kind="main", number=1, status="closed")
    coders = get_user_model().objects.bulk_create(get_user_model()(username=f"coder-{n}") for n in range(12))
    attributes = list(AttributeDefinition.objects.filter(schema=study.schema, unit="response"))
    responses = list(ModelResponse.objects.select_related("turn"))
    Judgment.objects.bulk_create(
        Judgment(round=round_, coder=coder, attribute=a, conversation_id=r.turn.conversation_id, turn_id=r.turn_id,
                 response=r, score=a.scale_min)
        for coder in coders for a in attributes for r in responses
    )
    response = as_token(researcher).get(EXPORT.format(fmt="jsonl"))
    chunks = list(response.streaming_content)
    assert len(chunks) >= 3
    assert max(len(chunk) for chunk in chunks) < 80 * 1024
    assert sum(chunk.count(b"\n") for chunk in chunks) == Judgment.objects.count() >= 2000


def test_the_demo_study_round_trips_through_a_csv_export(researcher, admin_user, as_token):
    from tests.scenarios import demo_walked_through

    study = demo_walked_through()
    before = list(judgment_rows(study=study))
    assert len(before) > 1000 and any(row["spans"] for row in before) and any(row["is_gold"] for row in before)
    response = as_token(researcher).get(f"/api/v1/studies/{study.slug}/exports/judgments.csv")
    text = b"".join(response.streaming_content)
    judgments_purge(judgments=Judgment.objects.filter(round__study=study), by=None,
                    reason="test: empty the study to re-import it")
    imported = as_token(admin_user, scopes=["import"]).generic(
        "POST", f"/api/v1/studies/{study.slug}/judgments/import/", text, content_type="text/csv")
    assert imported.status_code == 200, imported.json()
    assert list(judgment_rows(study=study)) == before


def test_the_judgments_list_gives_each_judgment_as_the_export_writes_it(researcher, admin_user, as_token):
    """Every column of the long format, the role and the session index too, for a reviewer's, an expert's own, a
    method's, a removed expert's and a gold judgment; a judgment's spans in the export's order."""
    call_command("generate_synthetic", "--conversations", "4", "--reviewers", "2", "--seed", "5",
                 "--calibration-turns", "2", "--slug", "listed")
    study = Study.objects.get(slug="listed")
    automated_coders.method_register(study=study, name="llm-judge", version="v1", by=None)
    judgment_import.judgments_import(rows=enumerate(
        [row | {"reviewer": "llm-judge", "role": "method"} for row in judgment_rows(study=study)
         if row["reviewer"] == "listed-r01" and not row["is_gold"]][:5], 1), study_slug="listed", by=None)
    spanned = Judgment.objects.filter(round__study=study, spans__isnull=False).order_by("pk").first()
    first = spanned.spans.order_by("start").first()
    Span.objects.create(judgment=spanned, start=first.start, end=first.end,  # a second highlight of the same text
                        subcategory=spanned.attribute.subcategories.exclude(pk=first.subcategory_id).first())
    services.study_member_remove(member=StudyMember.objects.get(study=study, user__username="listed-e1"),
                                 by=admin_user)
    exported = [json.loads(line) for line in download_of(as_token(researcher), "listed").splitlines()]
    listed, url = [], "/api/v1/studies/listed/judgments/?page_size=5000"
    while url:
        page = as_token(researcher).get(url).json()
        listed += page["results"]
        url = page["next"]
    columns = (*COLUMNS, "session_index")
    key = [(row["round"], row["reviewer"], row["is_gold"], row["conversation_id"], row["turn_index"], row["model"],
            row["attribute"]) for row in exported]
    by_key = {k: {column: row.get(column) for column in columns} for k, row in zip(key, exported, strict=True)}
    assert len(listed) == len(exported) == len(by_key)
    assert {row["role"] for row in exported} == {"reviewer", "expert", "method"}
    assert any(len(row["spans"]) > 1 and row["spans"][0]["start"] == row["spans"][1]["start"] for row in exported)
    for row in listed:
        k = (row["round"], row["reviewer"], row["is_gold"], row["conversation_id"], row["turn_index"], row["model"],
             row["attribute"])
        assert {column: row.get(column, "(missing)") for column in columns} == by_key[k]


def download_of(api, slug: str) -> str:
    response = api.get(f"/api/v1/studies/{slug}/exports/judgments.jsonl")
    assert response.status_code == 200, response
    return b"".join(response.streaming_content).decode("utf-8")
