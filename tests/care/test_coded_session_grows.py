"""A CARE session's checklist is coded on the session's whole transcript
(docs/care-data.md#coding-a-history-the-turn-page): once a session has a checklist code, no reply is added to its
turns, none of their replies changes and no turn joins it, on every path through the study; the checklist stays
what its coder gave, on what they read.
A reply to a turn of a session without session codes still sends its coders' completed turn back to their queues
(the rule of every study, annotation migration 0023). A session that took a reply after its checklist code, before
ingestion refused one, is named in the report and said in its warnings."""

from __future__ import annotations

import pytest

from annotation import services
from annotation.models import Assignment, AttributeDefinition, Judgment, Schema, StudyMember
from benchmark import conversation_ingest, response_ingest
from benchmark.material_rules import MaterialConflict
from benchmark.models import Conversation, ModelResponse, Session, Turn
from care import inputs as care_inputs
from care.core.rows import care_rows_read, care_run_block, care_tables
from care.core.section import warning as care_section_warning
from common.cells import csv_stream
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


def test_a_session_that_took_a_reply_after_its_checklist_code_is_named_and_said(coded):
    """Before the freeze, an ingestion added the reply (a new row, now): the report names the session by history and
    index (``care.input.grown_after_rating``) and says so; its checklist stays in the figures
    (docs/care.md#a-session-that-grew-after-it-was-rated). Before, it was counted without a word."""
    study, crisis, _ = coded
    before = care_inputs.care_section(study=study, resamples=0)
    assert "grown_after_rating" not in before["input"]
    # a reply to the chat after the crisis (no session code; not on the crisis's page) is no growth
    ModelResponse.objects.create(turn=Turn.objects.get(index=4), model_slot=SLOT, text="Reply 4.")
    assert "grown_after_rating" not in care_inputs.care_section(study=study, resamples=0)["input"]
    ModelResponse.objects.create(turn=Turn.objects.get(index=2), model_slot=SLOT, text="Reply 2.")
    section = care_inputs.care_section(study=study, resamples=0)
    assert section["input"] == {**before["input"], "grown_after_rating": {"h1": [1]}}
    assert section["quality"] == before["quality"]
    assert ("1 session took a reply after its first CARE checklist code (h1 session 1): the CARE checklist codes "
            "given before it are of a transcript without that reply, which their coder never saw, and are counted in "
            "the figures all the same (docs/care.md#a-session-that-grew-after-it-was-rated).") in care_section_warning(
        section)
    rows = care_inputs.care_rows(study=study)
    assert care_run_block(rows)["grown_after_rating"] == {"h1": [1]}
    assert care_rows_read(care_run_block(rows), *("".join(csv_stream(header, body)) for header, body in
                                                  care_tables(rows).values())).grown == {"h1": (1,)}
