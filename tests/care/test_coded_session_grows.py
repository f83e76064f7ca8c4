"""A CARE session's checklist is coded on the session's whole transcript
(docs/care-data.md#coding-a-history-the-turn-page): once a session has a checklist code, no reply is added to its
turns, none of their replies changes and no turn joins it, on every path through the study; the checklist stays
what its coder gave, on what they read.
A reply to a turn of a session without session codes still sends its coders' completed turn back to their queues
(the rule of every study, annotation migration 0023)."""

from __future__ import annotations

import pytest

from annotation import services
from annotation.models import Assignment, AttributeDefinition, Judgment, Schema, StudyMember
from benchmark import conversation_ingest, response_ingest
from benchmark.material_rules import MaterialConflict
from benchmark.models import Conversation, ModelResponse, Session, Turn
from tests.factories import AssignmentFactory, RoundFactory, StudyFactory, UserFactory

pytestmark = pytest.mark.django_db

SLOT = "Assistant"
LABEL = "CARE-grow/h1"
WHY = "(a session is coded on its whole transcript, with the earlier sessions its page shows)"


def _turn(index: int, reply: bool = True) -> dict:
    return {"index": index, "client": f"Client message {index}.",
            "responses": [{"model": SLOT, "text": f"Reply {index}."}] if reply else []}


def _history() -> dict:
    """An SI crisis session (turns 1-2), then a chat (turns 3-4); turns 2 and 4 have no reply yet."""
    return {"dataset": "CARE-grow", "conversation_id": "h1", "kind": "multi", "topic": "Anxiety", "sessions": [
        {"index": 1, "kind": "crisis", "crisis_type": "SI", "turns": [_turn(1), _turn(2, reply=False)]},
        {"index": 2, "kind": "chat", "crisis_type": None, "turns": [_turn(3), _turn(4, reply=False)]}]}


@pytest.fixture
def coded():
    """A CARE study with the history, its coder's turns 2 and 4 completed in the open main round and the crisis
    session's checklist item ``ask_safety`` coded (the chat after it has no checklist)."""
    study = StudyFactory(slug="care-grow", schema=Schema.objects.get(slug="care-v1"), model_slots=[SLOT])
    conversation_ingest.conversations_ingest(items=[_history()], study=study, model_slots=[SLOT])
    coder = UserFactory(username="care-coder")
    StudyMember.objects.create(study=study, user=coder, role=StudyMember.Role.REVIEWER)
    round_ = RoundFactory(study=study, kind="main", status="open")
    items = {index: AssignmentFactory(round=round_, coder=coder, turn=Turn.objects.get(index=index), position=index,
                                      completed_at="2026-12-01T00:00:00Z") for index in (2, 4)}
    crisis = Session.objects.get(index=1)
    services.judgment_save(round=round_, by=coder, session=crisis, score=1,
                           attribute=AttributeDefinition.objects.get(schema=study.schema, code="ask_safety"))
    return study, crisis, items


def _refused(call) -> list[tuple[int, str, str]]:
    with pytest.raises(MaterialConflict) as caught:
        call()
    return [(e.row, e.field, e.message) for e in caught.value.errors]


def test_a_reply_added_to_a_session_with_a_checklist_code_is_refused(coded):
    study, crisis, items = coded
    refused = f"turn 2 of {LABEL} is in the transcript session 1 was judged on {WHY}; no reply can be added to it"
    record = _history()
    record["sessions"][0]["turns"][1] = _turn(2)
    assert _refused(lambda: conversation_ingest.conversations_ingest(items=[record], study=study,
                                                                     model_slots=[SLOT])) == [
        (0, "sessions[0].turns[1].responses[0]", refused)]
    item = {"dataset": "CARE-grow", "conversation_id": "h1", "turn_index": 2, "model": SLOT, "text": "Reply 2."}
    assert _refused(lambda: response_ingest.responses_ingest(items=[item], study=study, model_slots=[SLOT])) == [
        (0, "model", refused)]
    assert not ModelResponse.objects.filter(turn__index=2).exists()
    assert Assignment.objects.get(pk=items[2].pk).completed_at is not None
    assert Judgment.objects.filter(session=crisis).count() == 1


def test_a_turn_added_to_a_session_with_a_checklist_code_is_refused(coded):
    study, crisis, _ = coded
    record = _history()
    record["sessions"][1]["turns"].append(_turn(5))
    assert _refused(lambda: conversation_ingest.conversations_ingest(items=[record], study=study,
                                                                     model_slots=[SLOT])) == [
        (0, "sessions[1].turns", f"{LABEL} has judgments; its sessions[1].turns cannot change")]
    assert Turn.objects.filter(session__index=2).count() == 2 and not Turn.objects.filter(index=5).exists()


def test_a_reply_to_a_turn_of_a_session_without_session_codes_sends_its_completed_turn_back(coded):
    study, _, items = coded
    item = {"dataset": "CARE-grow", "conversation_id": "h1", "turn_index": 4, "model": SLOT, "text": "Reply 4."}
    summary = response_ingest.responses_ingest(items=[item], study=study, model_slots=[SLOT])
    assert (summary.created, summary.turns_back_in_queues) == (1, 1)
    assert Assignment.objects.get(pk=items[4].pk).completed_at is None
    assert Conversation.objects.get().turns.get(index=4).responses.get().text == "Reply 4."
