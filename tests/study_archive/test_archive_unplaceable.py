"""A study whose kind cannot place one of its conversations, as 0.2.0 could store it (its study ingestion asked no
kind's ``conversation_problems``; README "Upgrading"): an LC8 study whose trajectory t2 has a sixth session. Its
backup must restore it: ``export_study`` writes the archive whole and warns, by line, which conversations its kind
cannot place and what that means for the restore; ``import_study`` restores the study as stored, beside the original
(t2 reused as stored) and in a fresh installation (t2 new), with a warning in its output and in its audit event, and
the restored study's report says what the source's said. The study's conversation ingestion still refuses such a
trajectory, the restored study's too (docs/lc8.md#trajectories-conversations-json-lines)."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from annotation.models import AttributeDefinition, SessionLabel, Study, StudyMember
from audit.models import AuditEvent
from benchmark.models import Conversation, ModelResponse, Session, Turn
from lc8.inputs import lc8_section
from tests.factories import StudyFactory
from tests.lc8.test_data import DATASET, trajectory
from tests.lc8.test_round_trip import judgment_rows, label_rows, lc8_full_study
from tests.study_archive.test_archive import (
    checksummed,
    records,
    table_counts,
    truncate_everything_archived,
    without_the_import_event,
    write,
)

pytestmark = pytest.mark.django_db

PROBLEM = ("sessions[5]: a LongCounsel-8 trajectory has at most 5 sessions (the sessions of the schema's lc8 block); "
           "this one has 6")
UNAVAILABLE = "trajectory t2: session 6 is outside 1..5 (the lc8 block's sessions)"


def stored_under_020(slug: str = "lc8-020") -> Study:
    """``lc8_full_study`` whose t2 has a sixth session, written as rows the way 0.2.0's study ingestion stored a
    trajectory resent with one (it asked no kind's check), with a reference label and a method's prediction on
    it. The study's LC8 section is unavailable, naming the session it cannot place."""
    study = lc8_full_study(slug)
    t2 = Conversation.objects.get(study=study, external_id="t2")
    sixth = Session.objects.create(conversation=t2, index=6, kind="counseling", crisis_type=None)
    for index in (11, 12):
        turn = Turn.objects.create(conversation=t2, session=sixth, index=index, client_text="Session 6: I feel low.")
        ModelResponse.objects.create(turn=turn, model_slot="Counselor", text="Tell me more.")
    total = AttributeDefinition.objects.get(schema=study.schema, code="PHQ_TOTAL")
    SessionLabel.objects.create(study=study, coder=StudyMember.objects.get(study=study, user__username="controlled"),
                                session=sixth, attribute=total, value=13.0)
    SessionLabel.objects.create(study=study, coder=StudyMember.objects.get(study=study, user__username="m-a"),
                                seed=0, session=sixth, attribute=total, value=12.5)
    assert lc8_section(study=study, resamples=0)["unavailable"] == UNAVAILABLE
    return study


def exported(slug: str, tmp_path=None) -> tuple[str, str]:
    """(the archive, what the command wrote on standard error): to standard output, or to a file in ``tmp_path``."""
    err = io.StringIO()
    if tmp_path is None:
        out = io.StringIO()
        call_command("export_study", slug, stdout=out, stderr=err)
        return out.getvalue(), err.getvalue()
    path = tmp_path / f"{slug}.jsonl"
    call_command("export_study", slug, "--output", str(path), stdout=io.StringIO(), stderr=err)
    return path.read_text(encoding="utf-8"), err.getvalue()


def t2_line(text: str) -> int:
    return next(n for n, r in enumerate(records(text), start=1)
                if r["type"] == "conversation" and r["external_id"] == "t2")


def imported(tmp_path, text: str, *args: str) -> str:
    out = io.StringIO()
    call_command("import_study", str(write(tmp_path, text)), *args, stdout=out)
    return out.getvalue()


def report(study: Study) -> dict:
    """The study's LC8 section, with no resampling."""
    section = lc8_section(study=study, resamples=0)
    assert section is not None
    return section


def test_the_export_writes_the_whole_archive_and_warns_by_line_which_conversations_its_kind_cannot_place(tmp_path):
    placed = lc8_full_study("lc8-placed")  # a study its kind places whole: no warning
    assert exported(placed.slug)[1] == ""
    assert len(exported(placed.slug, tmp_path)[1].splitlines()) == 1, "the summary alone"
    truncate_everything_archived()
    study = stored_under_020()
    text, err = exported(study.slug)
    assert records(text)[-1]["type"] == "end", "the archive is written whole: a backup can always be made"
    t2 = next(r for r in records(text) if r["type"] == "conversation" and r["external_id"] == "t2")
    assert [s["index"] for s in t2["sessions"]] == [1, 2, 3, 4, 5, 6]
    number = t2_line(text)
    assert err.splitlines() == [
        f"warning: study {study.slug!r} holds 1 conversation its kind cannot place (stored before the kind checked "
        "it, e.g. under 0.2.0); the study's report cannot place it either. The archive holds it as stored and "
        "import_study restores it as stored, with this warning, so the restored study's report says what this "
        "one's does; every other path into a study refuses it:",
        f"  line {number} (conversation): {DATASET}/t2 {PROBLEM}"]
    # Written to a file: the same archive, the same warning after the command's summary.
    in_file, err_file = exported(study.slug, tmp_path)
    assert in_file == text
    summary, *warning = err_file.splitlines()
    assert summary.startswith(f"{tmp_path / study.slug}.jsonl: study {study.slug!r} exported in ")
    assert warning == err.splitlines()


def test_the_archive_restores_the_study_as_stored_beside_it_and_in_a_fresh_installation(tmp_path):
    study = stored_under_020()
    source_report, source_labels, source_judgments = report(study), label_rows(study), judgment_rows(study)
    text, _ = exported(study.slug)
    number = t2_line(text)
    said = (f"warning: 1 conversation of the archive is one the study's kind cannot place (stored before the kind "
            "checked it, e.g. under 0.2.0), imported as stored, as the archived study held it: the study's report "
            "cannot place it, as the archived study's could not; every other path into a study refuses it:\n"
            f"  line {number} (conversation): {DATASET}/t2 {PROBLEM}\n")
    event_data = [{"line": number, "conversation": f"{DATASET}/t2", "problem": PROBLEM}]

    # Beside the original: t2 is reused as stored (its six sessions, as archived).
    out = imported(tmp_path, text, "--as", "lc8-copy")
    assert out.endswith(said)
    copy = Study.objects.get(slug="lc8-copy")
    event = AuditEvent.objects.get(study_id=copy.pk, action="study.import")
    assert event.data["unplaceable"] == event_data
    assert event.data["conversations_reused"] == 2
    assert label_rows(copy) == source_labels
    assert {r[:5] + r[6:] for r in judgment_rows(copy)} == {r[:5] + r[6:] for r in source_judgments}
    assert report(copy) == source_report
    assert report(copy)["unavailable"] == UNAVAILABLE

    # In a fresh installation: t2 comes new, with its six sessions, turns, responses and labels.
    truncate_everything_archived()
    out = imported(tmp_path, text)
    assert out.endswith(said)
    restored = Study.objects.get(slug=study.slug)
    assert AuditEvent.objects.get(study_id=restored.pk, action="study.import").data["unplaceable"] == event_data
    t2 = Conversation.objects.get(external_id="t2")
    assert t2.study == restored
    assert list(t2.sessions.order_by("index").values_list("index", flat=True)) == [1, 2, 3, 4, 5, 6]
    assert list(Turn.objects.filter(session__conversation=t2, session__index=6).values_list("index", flat=True)
                .order_by("index")) == [11, 12]
    assert label_rows(restored) == source_labels
    assert report(restored) == source_report
    # The restored study exported again: the same bytes but for the import's own audit event, and the same warning.
    again, warned = exported(restored.slug)
    assert checksummed(without_the_import_event(again)) == text.splitlines()
    assert f"  line {number} (conversation): {DATASET}/t2 {PROBLEM}" in warned.splitlines()


def test_the_restored_study_and_any_other_still_refuse_such_a_trajectory_through_their_conversation_ingestion(
        tmp_path, request):
    """What the archive restores as stored, a conversations import through a study
    (``POST /api/v1/studies/{slug}/conversations/``) refuses, by row and field, nothing written: t2 resent as archived
    (six sessions) or with a seventh, and a new trajectory of six, to the restored study; the archive's t2 (as t4)
    and a new one of six to another LC8 study."""
    study = stored_under_020()
    source_report = report(study)
    text, _ = exported(study.slug)
    t2 = next(r for r in records(text) if r["type"] == "conversation" and r["external_id"] == "t2")
    truncate_everything_archived()
    imported(tmp_path, text)
    restored = Study.objects.get(slug=study.slug)
    as_archived = {"dataset": DATASET, "conversation_id": "t2", "kind": "longitudinal", "topic": t2["topic"],
                   "sessions": [{"index": s["index"], "kind": s["kind"], "crisis_type": s["crisis_type"],
                                 "turns": [{"index": t["index"], "client": t["client_text"],
                                            "responses": [{"model": r["model_slot"], "text": r["text"]}
                                                          for r in t["responses"]]}
                                           for t in t2["turns"] if t["session"] == s["index"]]}
                                for s in t2["sessions"]]}
    seventh = trajectory("t2", sessions=7) | {"topic": t2["topic"]}
    other = StudyFactory(slug="lc8-other", schema=restored.schema, model_slots=["Counselor"])
    admin = request.getfixturevalue("admin_user")
    clients = {target.slug: request.getfixturevalue("as_token")(admin, scopes=["ingest"], study=target)
               for target in (restored, other)}
    before = table_counts()
    for target, record, sessions in ((restored, as_archived, 6), (restored, seventh, 7),
                                     (restored, trajectory("t3", sessions=6), 6),
                                     (other, as_archived | {"conversation_id": "t4"}, 6),
                                     (other, trajectory("t3", sessions=6), 6)):
        answer = clients[target.slug].post(f"/api/v1/studies/{target.slug}/conversations/", [record], format="json")
        assert answer.status_code == 400, (target.slug, record["conversation_id"], answer.content)
        assert [(e["index"], e["field"], e["message"]) for e in answer.json()["errors"]] == [
            (0, "sessions[5]", PROBLEM.split(": ", 1)[1].replace("has 6", f"has {sessions}"))]
    assert table_counts() == before
    assert report(restored) == source_report
