"""Histories of sessions (benchmark/sessions.py): the ``sessions`` form of the conversations JSON Lines through the
command, the study upload and the ingestion API — shape errors named by row and field, all or nothing, idempotent
re-imports, frozen once coded — while conversations in the ``turns`` form stay exactly what they were."""

from __future__ import annotations

import copy
import io
import json

import pytest
from django.core.management import CommandError, call_command

from audit.models import AuditEvent
from benchmark import conversation_ingest, material_rules, response_ingest
from benchmark.models import Conversation, ModelResponse, Session, Turn
from common.errors import RowErrors
from tests.factories import JudgmentFactory, RoundFactory, StudyFactory, attribute

pytestmark = pytest.mark.django_db


def turn(index, client="How are you?", reply="I'm here."):
    return {"index": index, "client": client, "responses": [{"model": "Assistant", "text": reply}]}


def history(conversation_id="h1", **overrides):
    base = {
        "dataset": "CARE-test",
        "conversation_id": conversation_id,
        "kind": "multi",
        "topic": "Anxiety",
        "sessions": [
            {"index": 1, "kind": "chat", "crisis_type": None, "turns": [turn(1), turn(2)]},
            {"index": 2, "kind": "crisis", "crisis_type": "anxiety", "turns": [turn(3, "I can't breathe.")]},
            {"index": 3, "kind": "callback", "crisis_type": "anxiety", "turns": [turn(4), turn(5)]},
        ],
    }
    base.update(overrides)
    return base


def load(*records):
    return conversation_ingest.conversations_import(rows=list(enumerate(records, start=1)))


def errors_of(*records) -> list[tuple[int, str, str]]:
    with pytest.raises(RowErrors) as caught:
        load(*records)
    return [(e.row, e.field, e.message) for e in caught.value.errors]


def test_a_history_is_stored_as_sessions_of_its_turns():
    summary = load(history())
    conversation = Conversation.objects.get(external_id="h1")
    sessions = list(conversation.sessions.values_list("index", "kind", "crisis_type"))
    assert sessions == [(1, "chat", None), (2, "crisis", "anxiety"), (3, "callback", "anxiety")]
    assert list(conversation.turns.order_by("index").values_list("index", "session__index")) == [
        (1, 1), (2, 1), (3, 2), (4, 3), (5, 3)]
    assert conversation.turns.get(index=3).client_text == "I can't breathe."
    assert conversation.turns.get(index=3).responses.get().model_slot == "Assistant"
    assert (summary.conversations_created, summary.turns_created, summary.responses_created,
            summary.sessions_created) == (1, 5, 5, 3)
    # New sessions are created, not updated: the count once said 5 "updated", one for each new turn put in one.
    assert summary.sessions_updated == 0


def test_reimporting_a_history_changes_nothing():
    load(history())
    summary = load(history())
    assert (summary.conversations_unchanged, summary.sessions_created, summary.sessions_updated) == (1, 0, 0)
    assert Session.objects.count() == 3 and Turn.objects.count() == 5


def test_a_history_grows_by_new_sessions_and_moves_nothing_else():
    load(history())
    longer = history()
    longer["sessions"].append({"index": 4, "kind": "chat", "turns": [turn(6)]})
    summary = load(longer)
    assert (summary.conversations_updated, summary.turns_created, summary.sessions_created) == (1, 1, 1)
    assert Turn.objects.get(index=6).session.index == 4


def test_a_turn_moved_to_another_session_updates_those_two_sessions():
    load(history())
    moved = history()
    moved["sessions"][1]["turns"].insert(0, moved["sessions"][0]["turns"].pop())  # turn 2 into session 2
    summary = load(moved)
    assert (summary.sessions_created, summary.sessions_updated) == (0, 2)
    assert Turn.objects.get(index=2).session.index == 2


def test_a_session_kind_changes_while_nothing_is_coded():
    load(history())
    changed = history()
    changed["sessions"][0]["kind"] = "callback"
    changed["sessions"][0]["crisis_type"] = "SI"
    summary = load(changed)
    assert summary.sessions_updated == 1
    assert Session.objects.get(index=1).crisis_type == "SI"


def test_turns_form_conversations_have_no_sessions():
    load({"dataset": "CounselChat", "conversation_id": "c1", "kind": "single", "topic": "Sleep",
          "complexity": "low", "turns": [turn(1)]})
    assert Session.objects.count() == 0 and Turn.objects.get().session is None


@pytest.mark.parametrize(("change", "field", "message"), [
    (lambda r: r.update(kind="single", complexity="low"), "kind",
     "a history of sessions is a multi-turn conversation: kind must be multi"),
    (lambda r: r.update(turns=[turn(1)]), "turns", "give either turns or sessions, not both"),
    (lambda r: r["sessions"][1].update(crisis_type=None), "sessions[1].crisis_type",
     "required for a crisis session (SI, self-harm or anxiety)"),
    (lambda r: r["sessions"][0].update(crisis_type="SI"), "sessions[0].crisis_type",
     "must be null for a chat session"),
    (lambda r: r["sessions"][0].update(kind="party"), "sessions[0].kind",
     '"party" is not a valid choice; allowed: "chat", "crisis", "callback", "counseling".'),
    (lambda r: r["sessions"][2].update(index=4), "sessions", "session indices must be 1, 2, … in order; got [1, 2, 4]"),
    (lambda r: r["sessions"][1]["turns"][0].update(index=7), "sessions",
     "turn indices run through the whole history: 1, 2, … in order across the sessions; got [1, 2, 7, 4, 5]"),
    (lambda r: r["sessions"][1].update(turns=[]), "sessions[1].turns", "This list may not be empty."),
    (lambda r: r.update(sessions=[]), "sessions", "This list may not be empty."),
    (lambda r: r["sessions"][2]["turns"][1].update(client=5), "sessions[2].turns[1].client", "Not a valid string."),
    (lambda r: r["sessions"][1]["turns"][0]["responses"].append({"model": "Other", "text": "Breathe."}),
     "sessions[1].turns[0].responses[1].model",
     "'Other': a history's replies are one assistant's, under one model slot, and this history's are under "
     "'Assistant'"),
    (lambda r: r["sessions"][2]["turns"][1]["responses"][0].update(model="Other"),
     "sessions[2].turns[1].responses[0].model",
     "'Other': a history's replies are one assistant's, under one model slot, and this history's are under "
     "'Assistant'"),
])
def test_a_wrong_history_is_named_by_row_and_field_and_nothing_is_written(change, field, message):
    bad = history("bad")
    change(bad)
    assert errors_of(history("good"), bad) == [(2, field, message)]
    assert Conversation.objects.count() == Session.objects.count() == 0


def test_sessions_are_never_deleted_by_an_import():
    load(history())
    shorter = history()
    shorter["sessions"] = shorter["sessions"][:2]
    shorter["sessions"][1]["turns"].extend([turn(4), turn(5)])
    errors = errors_of(shorter)
    assert (1, "sessions", "the stored conversation has sessions [3] that this row lacks; sessions are never "
                           "deleted by an import") in errors


def test_a_stored_history_takes_no_reply_under_a_second_model_slot():
    """A history's turns have one response each, the assistant under study's (docs/sessions.md): a resend that
    adds another slot's replies is refused, else the CARE section would read both slots' codes as one assistant's."""
    load(history())
    other = history()
    for session in other["sessions"]:
        for t in session["turns"]:
            t["responses"] = [{"model": "Other", "text": "Breathe."}]
    assert errors_of(other) == [(1, "sessions", "a history's replies are one assistant's, under one model slot: "
                                                "the stored history's are under 'Assistant', this row's under "
                                                "'Other'")]
    assert set(Turn.objects.values_list("responses__model_slot", flat=True)) == {"Assistant"}


def reply(turn_index, model="Assistant", text="Breathe with me.", conversation_id="h1"):
    return {"dataset": "CARE-test", "conversation_id": conversation_id, "turn_index": turn_index, "model": model,
            "text": text}


def test_the_responses_api_adds_no_reply_under_a_second_model_slot_to_a_history():
    """The responses ingestion keeps the rule of the sessions form: a reply under another slot than a stored
    history's is refused by item and field, and nothing is written; a conversation in the turns form takes
    several slots, and the history's own slot still takes new text."""
    study = StudyFactory(slug="care", model_slots=["Assistant", "Other"])
    single = history("h2", turns=[turn(1)])
    del single["sessions"]
    load(history(), single)
    with pytest.raises(RowErrors) as caught:
        response_ingest.responses_ingest(
            items=[reply(3, text="New words."), reply(3, model="Other"), reply(1, model="Other", conversation_id="h2")],
            study=study, model_slots=study.model_slots)
    assert [(e.row, e.field, e.message) for e in caught.value.errors] == [
        (1, "model", "'Other': a history's replies are one assistant's, under one model slot, and CARE-test/h1's "
                     "are under 'Assistant'")]
    assert set(ModelResponse.objects.values_list("model_slot", flat=True)) == {"Assistant"}
    assert not ModelResponse.objects.filter(text="New words.").exists()
    summary = response_ingest.responses_ingest(
        items=[reply(3, text="New words."), reply(1, model="Other", conversation_id="h2")], study=study,
        model_slots=study.model_slots)
    assert (summary.created, summary.updated) == (1, 1)


def test_a_history_without_replies_takes_the_slot_of_its_first_reply():
    bare = history()
    for session in bare["sessions"]:
        for t in session["turns"]:
            t["responses"] = []
    load(bare)
    with pytest.raises(RowErrors) as caught:
        response_ingest.responses_ingest(items=[reply(1, model="Other"), reply(2), reply(3, model="Other")],
                                         study=None)
    assert [(e.row, e.field) for e in caught.value.errors] == [(1, "model")]
    assert "CARE-test/h1's are under 'Other'" in caught.value.errors[0].message
    assert not ModelResponse.objects.exists()


def test_the_responses_endpoint_refuses_a_second_assistant(admin_user, as_token):
    study = StudyFactory(slug="care", model_slots=["Assistant", "Other"])
    api = as_token(admin_user, scopes=["ingest"], study=study)
    assert api.post("/api/v1/studies/care/conversations/", [history()], format="json").status_code == 200
    refused = api.post("/api/v1/studies/care/responses/", [reply(2, model="Other")], format="json")
    assert refused.status_code == 400
    assert "one model slot" in json.dumps(refused.json())
    assert not ModelResponse.objects.filter(model_slot="Other").exists()


def test_a_history_cannot_be_resent_in_the_turns_form():
    load(history())
    flat = history()
    flat["turns"] = [t for s in flat.pop("sessions") for t in s["turns"]]
    assert errors_of(flat) == [(1, "turns", "this conversation is a history of sessions: send it in the sessions "
                                            "form")]


def test_a_coded_history_keeps_its_sessions(db):
    study = StudyFactory()
    conversation_ingest.conversations_import(rows=[(1, history())], study=study)
    conversation = Conversation.objects.get()
    third = conversation.turns.get(index=3)
    JudgmentFactory(round=RoundFactory(study=study), attribute=attribute("U1"), response=None, turn=third,
                    conversation=conversation, score=1)
    changed = history()
    changed["sessions"][1]["crisis_type"] = "SI"
    with pytest.raises(material_rules.MaterialConflict) as caught:
        conversation_ingest.conversations_import(rows=[(1, changed)], study=study)
    assert [(e.row, e.field) for e in caught.value.errors] == [(1, "sessions[1].crisis_type")]
    assert "has judgments" in caught.value.errors[0].message
    assert Session.objects.get(index=2).crisis_type == "anxiety"


def test_a_history_of_another_study_is_not_changed_through_this_one(db):
    mine, other = StudyFactory(), StudyFactory()
    conversation_ingest.conversations_import(rows=[(1, history())], study=other)
    changed = history()
    changed["sessions"][0]["kind"] = "callback"
    with pytest.raises(material_rules.MaterialConflict):
        conversation_ingest.conversations_import(rows=[(1, changed)], study=mine)


def test_the_command_imports_histories(tmp_path):
    path = tmp_path / "histories.jsonl"
    path.write_text(json.dumps(history()) + "\n", encoding="utf-8")
    call_command("import_conversations", str(path), stdout=(out := io.StringIO()))
    assert Session.objects.count() == 3 and "3 sessions created" in out.getvalue()
    bad = history()
    bad["sessions"][0]["kind"] = "party"
    path.write_text(json.dumps(history("h2")) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    with pytest.raises(CommandError, match=r"line 2: sessions\[0\]\.kind: \"party\" is not a valid choice"):
        call_command("import_conversations", str(path))
    assert not Conversation.objects.filter(external_id="h2").exists()


def test_the_api_ingests_histories_idempotently_and_limits_model_slots(admin_user, as_token):
    study = StudyFactory(slug="care", model_slots=["Assistant"])
    api = as_token(admin_user, scopes=["ingest"], study=study)
    response = api.post("/api/v1/studies/care/conversations/", [history()], format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["sessions_created"] == 3
    again = api.post("/api/v1/studies/care/conversations/", [history()], format="json")
    assert again.json()["conversations_unchanged"] == 1 and again.json()["sessions_created"] == 0
    wrong = copy.deepcopy(history("h2"))
    wrong["sessions"][2]["turns"][0]["responses"][0]["model"] = "GPT"
    refused = api.post("/api/v1/studies/care/conversations/", [wrong], format="json")
    assert refused.status_code == 400
    body = json.dumps(refused.json())
    assert "sessions[2].turns[0].responses[0].model" in body and "not one of this study's model slots" in body
    assert not Conversation.objects.filter(external_id="h2").exists()


def test_a_stored_conversation_becomes_a_history_while_nothing_is_coded():
    flat = history()
    flat["turns"] = [t for s in flat.pop("sessions") for t in s["turns"]]
    load(flat)
    assert Session.objects.count() == 0
    summary = load(history())
    # Three sessions made for the five stored turns: created, none of them updated (once counted 5, the turns).
    assert (summary.sessions_created, summary.sessions_updated, summary.turns_created) == (3, 0, 0)
    assert AuditEvent.objects.filter(action="conversations.import").count() == 2
    assert list(Turn.objects.order_by("index").values_list("session__index", flat=True)) == [1, 1, 2, 3, 3]
