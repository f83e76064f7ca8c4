"""A rated LongCounsel-8 session is rated on its whole transcript (docs/lc8-rating.md#rating-sessions): once it has a
rating, or while it is in an open round, no path adds a turn to it, adds a reply to one of its turns or changes a
reply's text. Each is refused by item (line) and field, nothing written, and the rating stays what it was, on the
transcript the rater saw. Before, every path through the study took the change and the session stayed completed,
so the report counted a rating of a transcript its rater never saw. New sessions still arrive (a trajectory of
four is one whose fifth is not there yet)."""

from __future__ import annotations

import html
import io
import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation import services
from annotation.models import Assignment, AttributeDefinition, Judgment, Round
from benchmark import conversation_ingest, response_ingest
from benchmark.material_rules import MaterialConflict
from benchmark.models import Conversation, ModelResponse, Session, Turn
from tests.factories import UserFactory
from tests.lc8.test_rating_pages import SLOT, lc8_study, rater_round, trajectory_sessions

pytestmark = pytest.mark.django_db

LABEL = "LongCounsel-8 test/lc8-study-traj-1"
WHY = "(a session is coded on its whole transcript, with the earlier sessions its page shows)"


def _rate(study, session: Session) -> Assignment:
    """``session`` rated and completed by a rater in the study's open main round."""
    rater = UserFactory(username="rater-a")
    round_ = rater_round(study, rater, sessions=[session])
    for code in study.schema.definition["lc8"]["items"]:
        services.judgment_save(round=round_, by=rater, session=session, score=1,
                               attribute=AttributeDefinition.objects.get(schema=study.schema, code=code))
    assignment = Assignment.objects.get(round=round_, coder=rater)
    services.assignment_complete(assignment=assignment, by=rater)
    assignment.refresh_from_db()
    assert assignment.completed_at is not None
    return assignment


def _record(conversation: Conversation) -> dict:
    """The stored trajectory as a conversations JSON Lines record."""
    sessions = [{"index": s.index, "kind": s.kind, "crisis_type": s.crisis_type,
                 "turns": [{"index": t.index, "client": t.client_text,
                            "responses": [{"model": r.model_slot, "text": r.text} for r in t.responses.all()]}
                           for t in s.turns.order_by("index")]}
                for s in conversation.sessions.order_by("index")]
    return {"dataset": conversation.dataset.name, "conversation_id": conversation.external_id,
            "kind": conversation.kind, "topic": conversation.topic, "title": conversation.title, "sessions": sessions}


@pytest.fixture
def rated(db):
    """An LC8 study whose trajectory's last session (turns 9 and 10) is rated and completed; turn 10 has no reply
    yet (a reply to come)."""
    study = lc8_study(trajectories=1)
    last = trajectory_sessions(study)[4]
    ModelResponse.objects.filter(turn__session=last, turn__index=10).delete()
    return study, last, _rate(study, last)


def _unchanged(study, last: Session, assignment: Assignment) -> None:
    assert list(last.turns.order_by("index").values_list("index", flat=True)) == [9, 10]
    assert not ModelResponse.objects.filter(turn__session=last, turn__index=10).exists()
    assert ModelResponse.objects.get(turn__session=last, turn__index=9).text.startswith("Counselor reply t1s5r1")
    assert Assignment.objects.get(pk=assignment.pk).completed_at is not None
    assert Judgment.objects.filter(session=last).count() == 8


@pytest.fixture
def paths(client, admin_user, as_token, rated):
    """Each path that sends a trajectory or replies into the study: its (row, field, message) errors, or None when it
    took the change."""
    study = rated[0]
    client.force_login(admin_user)
    api = as_token(admin_user, scopes=["ingest"], study=study)
    base = f"/api/v1/studies/{study.slug}"

    def api_answer(answer):
        if answer.status_code == 200:
            return None
        assert answer.status_code == 409, answer.content
        return [(e["index"] + 1, e["field"], e["message"]) for e in answer.json()["errors"]]

    def page(record):
        answer = client.post(reverse("conversations-upload", args=[study.slug]), {"file": SimpleUploadedFile(
            "t.jsonl", json.dumps(record).encode())})
        if answer.status_code == 302:
            return None
        return [(int(row), where, message) for row, where, message in re.findall(
            r"line (\d+): ([\w.\[\]]+): ([^<\n]*)", html.unescape(answer.content.decode()))]

    def upload(url, lines):
        return api_answer(api.post(url, {"file": SimpleUploadedFile("f.jsonl", "\n".join(
            json.dumps(line) for line in lines).encode())}, format="multipart"))

    conversations = {
        "the API": lambda record: api_answer(api.post(f"{base}/conversations/", [record], format="json")),
        "the API, a file (cab ingest conversations)": lambda record: upload(f"{base}/conversations/upload/",
                                                                            [record]),
        "the upload page": page,
    }
    responses = {
        "the API": lambda items: api_answer(api.post(f"{base}/responses/", items, format="json")),
        "the API, a file (cab ingest responses)": lambda items: upload(f"{base}/responses/upload/", items),
    }
    return conversations, responses


def _reply(turn_index: int, text: str) -> dict:
    return {"dataset": "LongCounsel-8 test", "conversation_id": "lc8-study-traj-1", "turn_index": turn_index,
            "model": SLOT, "text": text}


def test_a_turn_added_to_a_rated_session_is_refused_by_every_path(rated, paths):
    study, last, assignment = rated
    record = _record(last.conversation)
    record["sessions"][4]["turns"].append({"index": 11, "client": "One more thing.",
                                           "responses": [{"model": SLOT, "text": "Go on."}]})
    for path, send in paths[0].items():
        assert send(record) == [(1, "sessions[4].turns", f"{LABEL} has judgments; its sessions[4].turns cannot "
                                                         "change")], path
        _unchanged(study, last, assignment)
    assert not Turn.objects.filter(index=11).exists()


def _refused_on_every_path(rated, paths, *, record: dict, reply: dict, where: tuple[str, str], refused: str) -> None:
    """The trajectory ``record`` sent by each conversations path, and the reply ``reply`` by each responses path, are
    each refused on its field (``where``: the record's, the reply's) with ``refused``, nothing written."""
    for path, send in paths[0].items():
        assert send(record) == [(1, where[0], refused)], path
        _unchanged(*rated)
    for path, send in paths[1].items():
        assert send([reply]) == [(1, where[1], refused)], path
        _unchanged(*rated)


def test_a_reply_added_to_a_rated_session_is_refused_by_every_path(rated, paths):
    record = _record(rated[1].conversation)
    record["sessions"][4]["turns"][1]["responses"] = [{"model": SLOT, "text": "A late reply."}]
    _refused_on_every_path(rated, paths, record=record, reply=_reply(10, "A late reply."),
                           where=("sessions[4].turns[1].responses[0]", "model"),
                           refused=f"turn 10 of {LABEL} is in the transcript session 5 was judged on {WHY}; no reply "
                                   "can be added to it")


def test_a_reply_of_a_rated_session_keeps_its_text_on_every_path(rated, paths):
    """The reply of the session's second turn: before, only the first turn's (the item's own) was frozen, and only
    while the round was open."""
    Round.objects.filter(pk=rated[2].round_id).update(status=Round.Status.CLOSED)
    record = _record(rated[1].conversation)
    record["sessions"][4]["turns"][0]["responses"][0]["text"] = "Other words."
    _refused_on_every_path(rated, paths, record=record, reply=_reply(9, "Other words."),
                           where=("sessions[4].turns[0].responses[0].text", "text"),
                           refused=f"turn 9 of {LABEL} is in the transcript session 5 was judged on {WHY}; its {SLOT} "
                                   "reply's text cannot change")


def test_an_import_without_a_study_changes_no_rated_session(rated, tmp_path):
    """``import_conversations`` names no study: it may change no study's material at all (study isolation)."""
    study, last, assignment = rated
    record = _record(last.conversation)
    record["sessions"][4]["turns"].append({"index": 11, "client": "One more thing.", "responses": []})
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(record), encoding="utf-8")
    with pytest.raises(CommandError, match="belongs to a study"):
        call_command("import_conversations", str(path), stdout=io.StringIO())
    _unchanged(study, last, assignment)


def test_a_session_in_an_open_round_keeps_its_whole_transcript_before_it_is_rated():
    """The item is keyed by the session's first turn, but its page shows every turn: the second turn's client text
    and reply are frozen too while the round is open, before any rating (before, only the first turn's were)."""
    study = lc8_study(slug="lc8-open", trajectories=1)
    session = trajectory_sessions(study)[1]  # turns 3 and 4
    rater_round(study, UserFactory(username="rater-b"), sessions=[session])
    label = "LongCounsel-8 test/lc8-open-traj-1"
    record = _record(session.conversation)
    record["sessions"][1]["turns"][1]["client"] = "Changed words."
    with pytest.raises(MaterialConflict) as caught:
        conversation_ingest.conversations_ingest(items=[record], study=study, model_slots=[SLOT])
    assert [(e.row, e.field, e.message) for e in caught.value.errors] == [
        (0, "sessions[1].turns[1].client", f"turn 4 of {label} is in the transcript session 2 is coded on in an "
                                           f"open round {WHY}; its client text cannot change")]
    with pytest.raises(MaterialConflict) as caught:
        response_ingest.responses_ingest(items=[{**_reply(4, "Changed reply."), "conversation_id": "lc8-open-traj-1"}],
                                         study=study, model_slots=[SLOT])
    assert [(e.row, e.field, e.message) for e in caught.value.errors] == [
        (0, "text", f"turn 4 of {label} is in the transcript session 2 is coded on in an open round {WHY}; its "
                    f"{SLOT} reply's text cannot change")]
    assert Turn.objects.get(session=session, index=4).client_text != "Changed words."
    assert not ModelResponse.objects.filter(text="Changed reply.").exists()
    # The sessions no open round holds take the change (their page is no one's yet).
    record = _record(session.conversation)
    record["sessions"][3]["turns"][1]["client"] = "Changed words."
    assert conversation_ingest.conversations_ingest(items=[record], study=study,
                                                    model_slots=[SLOT]).conversations_updated == 1


def test_a_new_session_still_joins_a_rated_trajectory():
    """Sessions arrive in order (docs/lc8.md): a trajectory of four, its fourth rated, takes its fifth."""
    study = lc8_study(slug="lc8-four", trajectories=1, sessions=4)
    fourth = trajectory_sessions(study)[3]
    assignment = _rate(study, fourth)
    record = _record(fourth.conversation)
    record["sessions"].append({"index": 5, "kind": "counseling", "crisis_type": None, "turns": [
        {"index": 9, "client": "Back again.", "responses": [{"model": SLOT, "text": "Welcome back."}]}]})
    summary = conversation_ingest.conversations_ingest(items=[record], study=study, model_slots=[SLOT])
    assert (summary.sessions_created, summary.turns_created) == (1, 1)
    assert Assignment.objects.get(pk=assignment.pk).completed_at is not None
    assert list(fourth.turns.values_list("index", flat=True).order_by("index")) == [7, 8]
