"""LongCounsel-8 trajectories in the conversations JSON Lines (benchmark/sessions.py): a conversation of kind
``longitudinal`` in the ``sessions`` form with counseling sessions is stored as its sessions; the ``turns`` form of
a longitudinal conversation, other session kinds in a trajectory and counseling sessions in a CARE history are
refused by row and field, nothing written; a trajectory ingested into an LC8 study has at most its five sessions,
on every path, and fewer are taken."""

from __future__ import annotations

import html
import io
import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse

from annotation.kinds import conversation_check
from annotation.models import AttributeDefinition, Schema, SessionLabel
from benchmark import conversation_ingest
from benchmark.models import Conversation, Session
from common.errors import RowErrors
from lc8.inputs import lc8_section
from tests.factories import StudyFactory, StudyMemberFactory, UserFactory

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


# --- a trajectory ingested into an LC8 study: at most the sessions of its schema's lc8 block (five) -------------------

SIX = (1, "sessions[5]", "a LongCounsel-8 trajectory has at most 5 sessions (the sessions of the schema's lc8 "
                         "block); this one has 6")


@pytest.fixture
def lc8_paths(client, admin_user, as_token):
    """Each path that ingests into an LC8 study: (row, field, message) of its errors, or None when it imported."""
    study = StudyFactory(slug="lc8-six", schema=Schema.objects.get(slug="lc8-v1"), model_slots=["Counselor"])
    client.force_login(admin_user)
    api = as_token(admin_user, scopes=["ingest"], study=study)
    url = f"/api/v1/studies/{study.slug}/conversations/"

    def service(record):
        try:
            conversation_ingest.conversations_import(rows=[(1, record)], study=study,
                                                     problems=conversation_check(study))
        except RowErrors as error:
            return [(e.row, e.field, e.message) for e in error.errors]
        return None

    def page(record):
        answer = client.post(reverse("conversations-upload", args=[study.slug]), {"file": SimpleUploadedFile(
            "trajectories.jsonl", json.dumps(record).encode())})
        if answer.status_code == 302:
            return None
        text = html.unescape(answer.content.decode())
        return [(int(row), where, message) for row, where, message in re.findall(
            r"line (\d+): ([\w.\[\]]+): ([^<\n]*)", text)]

    def api_answer(answer):
        if answer.status_code == 200:
            return None
        assert answer.status_code == 400, answer.content
        return [(e["index"] + 1, e["field"], e["message"]) for e in answer.json()["errors"]]

    return study, {
        "conversations_import through the study": service,
        "the upload page": page,
        "the API": lambda record: api_answer(api.post(url, [record], format="json")),
        "the API, a file": lambda record: api_answer(api.post(url + "upload/", {"file": SimpleUploadedFile(
            "trajectories.jsonl", json.dumps(record).encode())}, format="multipart")),
    }


def test_a_trajectory_of_six_sessions_is_refused_by_every_path_into_an_lc8_study(lc8_paths):
    """Before, each path stored it, and the study's report section became unavailable: session 6 has no column."""
    study, paths = lc8_paths
    for path, send in paths.items():
        assert send(trajectory(f"six-{path}", sessions=6)) == [SIX], path
    assert not Conversation.objects.filter(study=study).exists() and not Session.objects.exists()
    assert lc8_section(study=study)["unavailable"].startswith("the study has no reference coder")


def test_a_stored_trajectory_resent_with_a_sixth_session_is_refused_and_unchanged(lc8_paths):
    study, paths = lc8_paths
    assert paths["the API"](trajectory("t1")) is None
    for path, send in paths.items():
        assert send(trajectory("t1", sessions=6)) == [SIX], path
    assert list(Session.objects.filter(conversation__study=study).values_list("index", flat=True).order_by(
        "index")) == [1, 2, 3, 4, 5]


def test_a_trajectory_of_fewer_sessions_is_taken_and_its_missing_sessions_are_missing_values(lc8_paths):
    """Sessions arrive in order, 1, 2, …: a trajectory of four is one whose fifth is not there (yet)."""
    study, paths = lc8_paths
    for number, send in enumerate(paths.values()):
        assert send(trajectory(f"four-{number}", sessions=4)) is None
    assert Session.objects.filter(conversation__study=study).count() == 16
    reference = StudyMemberFactory(study=study, user=UserFactory(username="ref", is_active=False), role="reference")
    total = AttributeDefinition.objects.get(schema=study.schema, code="PHQ_TOTAL")
    for session in Session.objects.filter(conversation__study=study):
        SessionLabel.objects.create(study=study, coder=reference, session=session, attribute=total, value=9.0)
    section = lc8_section(study=study, resamples=0)
    assert section["input"]["trajectories"] == 4 and section["reference_types"] == dict.fromkeys(
        ("improving", "worsening", "fluctuating", "stable"), 0)  # no complete series: no type


def test_an_import_without_a_study_takes_six_sessions(tmp_path):
    """No study, no kind to ask: ``import_conversations`` stores any number of sessions (docs/lc8.md)."""
    path = tmp_path / "six.jsonl"
    path.write_text(json.dumps(trajectory("six", sessions=6)), encoding="utf-8")
    call_command("import_conversations", str(path), stdout=io.StringIO())
    assert Session.objects.filter(conversation__external_id="six").count() == 6
