"""LongCounsel-8 trajectories in the conversations JSON Lines (benchmark/sessions.py): a conversation of kind
``longitudinal`` in the ``sessions`` form with counseling sessions is stored as its sessions; the ``turns`` form of
a longitudinal conversation, other session kinds in a trajectory and counseling sessions in a CARE history are
refused by row and field, nothing written."""

from __future__ import annotations

import pytest

from benchmark import conversation_ingest
from benchmark.models import Conversation, Session
from common.errors import RowErrors

pytestmark = pytest.mark.django_db


def turn(index, client="I have been sleeping badly.", reply="Tell me more."):
    return {"index": index, "client": client, "responses": [{"model": "Counselor", "text": reply}]}


def trajectory(conversation_id="t1", sessions=5, turns_per_session=2, **overrides):
    base = {
        "dataset": "LC8-test",
        "conversation_id": conversation_id,
        "kind": "longitudinal",
        "topic": "Depression",
        "sessions": [{"index": s, "kind": "counseling", "crisis_type": None,
                      "turns": [turn((s - 1) * turns_per_session + t) for t in range(1, turns_per_session + 1)]}
                     for s in range(1, sessions + 1)],
    }
    base.update(overrides)
    return base


def load(*records):
    return conversation_ingest.conversations_import(rows=list(enumerate(records, start=1)))


def errors_of(*records) -> list[tuple[int, str, str]]:
    with pytest.raises(RowErrors) as caught:
        load(*records)
    return [(e.row, e.field, e.message) for e in caught.value.errors]


def test_a_longitudinal_trajectory_in_the_sessions_form_is_stored_as_five_counseling_sessions():
    summary = load(trajectory())
    conversation = Conversation.objects.get(external_id="t1")
    assert conversation.kind == "longitudinal"
    assert list(conversation.sessions.values_list("index", "kind", "crisis_type")) == [
        (i, "counseling", None) for i in range(1, 6)]
    assert list(conversation.turns.order_by("index").values_list("index", "session__index")) == [
        (t, (t + 1) // 2) for t in range(1, 11)]
    assert summary.sessions_created == 5
    again = load(trajectory())
    assert (again.sessions_created, again.sessions_updated) == (0, 0)


def test_a_longitudinal_conversation_in_the_turns_form_is_refused():
    record = {"dataset": "LC8-test", "conversation_id": "t2", "kind": "longitudinal", "topic": "Depression",
              "turns": [turn(1), turn(2)]}
    assert errors_of(record) == [(1, "kind", "a longitudinal trajectory is made of sessions: send it in the "
                                             "sessions form (sessions of kind counseling), not turns")]
    assert not Conversation.objects.exists()


def test_a_trajectory_holds_counseling_sessions_only_without_a_crisis_type():
    crisis = trajectory()
    crisis["sessions"][2]["kind"] = "crisis"
    crisis["sessions"][2]["crisis_type"] = "SI"
    assert errors_of(crisis) == [(1, "sessions[2].kind", "a longitudinal trajectory is made of counseling "
                                                         "sessions, not crisis")]
    typed = trajectory()
    typed["sessions"][1]["crisis_type"] = "anxiety"
    assert errors_of(typed) == [(1, "sessions[1].crisis_type", "must be null for a counseling session")]
    assert errors_of(trajectory(complexity="low")) == [(1, "complexity", "must be null for a longitudinal "
                                                                          "trajectory")]
    assert not Session.objects.exists() and not Conversation.objects.exists()


def test_a_care_history_cannot_hold_a_counseling_session_and_stays_as_it_was():
    care = trajectory(kind="multi")
    assert errors_of(care) == [(1, "sessions[0].kind", "a counseling session belongs to a trajectory: the "
                                                       "conversation's kind must be longitudinal")]
    history = trajectory(kind="multi")
    for session in history["sessions"]:
        session["kind"] = "chat"
    load(history)
    assert set(Session.objects.values_list("kind", flat=True)) == {"chat"}


def test_a_stored_trajectory_cannot_be_resent_in_the_turns_form():
    load(trajectory())
    record = {"dataset": "LC8-test", "conversation_id": "t1", "kind": "multi", "topic": "Depression",
              "turns": [turn(t) for t in range(1, 11)]}
    assert (1, "turns", "this conversation is a history of sessions: send it in the sessions form") in errors_of(
        record)
