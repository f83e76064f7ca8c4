"""An LC8 study (five-session trajectories, reference labels, two methods x two seeds, a human rater's session
judgments) through the study archive (study_archive/): exported, imported under another slug, the same
rows with the same values bit for bit, and exported again byte for byte; a bad session label is refused by line, and
so is a trajectory the import would reuse that the kind cannot place as stored (more sessions than the lc8 block's)
but can as archived; one it cannot place as archived is restored as archived, and said."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Judgment, SessionLabel, Study, StudyMember
from benchmark import conversation_ingest
from benchmark.models import ModelResponse, Session
from study_archive.records import dumps
from tests.lc8.test_data import trajectory
from tests.lc8.test_round_trip import judgment_rows, label_rows, lc8_full_study
from tests.study_archive.test_archive import (
    checksummed,
    edited,
    export,
    records,
    table_counts,
    truncate_everything_archived,
    without_the_import_event,
    write,
)

pytestmark = pytest.mark.django_db


def test_an_lc8_study_round_trips_with_its_session_labels_exactly(tmp_path):
    study = lc8_full_study()
    study.reference_labels, study.session_history, study.session_order = "shown", "hidden", "blinded"
    study.save(update_fields=["reference_labels", "session_history", "session_order"])
    first = export(study.slug)
    archived = records(first)
    labels = [r for r in archived if r["type"] == "session_label"]
    assert len(labels) == 60
    assert labels[0] == {"type": "session_label", "coder": "controlled", "session": ["LC8-test", "t1", 1],
                         "attribute": "PHQ1", "seed": None, "value": 1.0,
                         "created_at": labels[0]["created_at"], "updated_at": labels[0]["updated_at"]}
    assert any(r["value"] == 7.123456789 and r["seed"] == 0 and r["coder"] == "m-a" for r in labels)
    assert any(r["value"] == -0.3 and r["seed"] == 1 for r in labels)
    assert [r["type"] for r in archived].index("session_label") > max(
        n for n, r in enumerate(archived) if r["type"] == "judgment")
    study_record = next(r for r in archived if r["type"] == "study")
    assert (study_record["reference_labels"], study_record["session_history"], study_record["session_order"]) == (
        "shown", "hidden", "blinded")
    assert {(r["user"], r["role"], r["method_version"]) for r in archived if r["type"] == "member"} == {
        ("controlled", "reference", "controlled PHQ-8 state"), ("m-a", "method", "2026-11"),
        ("m-b", "method", "2026-11"), ("rater-1", "reviewer", "")}
    end = archived[-1]
    assert end["records"]["session_label"] == 60 and list(end["records"]).index("session_label") == list(
        end["records"]).index("judgment") + 1

    call_command("import_study", str(write(tmp_path, first)), "--as", "lc8-copy", stdout=io.StringIO())
    copy = Study.objects.get(slug="lc8-copy")
    assert label_rows(copy) == label_rows(study), "every value bit for bit"
    assert SessionLabel.objects.get(study=copy, coder__user__username="m-a", seed=0, attribute__code="PHQ_TOTAL",
                                    session__conversation__external_id="t1", session__index=1).value == 7.123456789
    assert {r[:5] + r[6:] for r in judgment_rows(copy)} == {r[:5] + r[6:] for r in judgment_rows(study)}
    assert Judgment.objects.filter(round__study=copy, session__isnull=False).count() == 20
    assert StudyMember.objects.get(study=copy, user__username="controlled").role == "reference"
    assert (copy.reference_labels, copy.session_history, copy.session_order) == ("shown", "hidden", "blinded")

    # In a fresh installation (the material is no longer owned by the first study), the same bytes again.
    truncate_everything_archived()
    call_command("import_study", str(write(tmp_path, first)), "--as", "lc8-copy", stdout=io.StringIO())
    assert SessionLabel.objects.count() == 60
    second = [json.loads(line) for line in without_the_import_event(export("lc8-copy"))]
    study_copy = next(r for r in second if r["type"] == "study")
    assert second[0]["study"] == study_copy["slug"] == "lc8-copy"
    second[0]["study"] = study_copy["slug"] = study.slug
    assert checksummed([dumps(r) for r in second]) == first.splitlines()


def off_scale_reference(record: dict, *, dry: bool) -> bool:
    if dry:
        return record["coder"] == "controlled"
    record["value"] = 2.5
    return True


def reference_seed(record: dict, *, dry: bool) -> bool:
    if dry:
        return record["coder"] == "controlled"
    record["seed"] = 3
    return True


def unknown_session(record: dict, *, dry: bool) -> bool:
    if not dry:
        record["session"] = [*record["session"][:2], 9]
    return True


def a_reviewers_label(record: dict, *, dry: bool) -> bool:
    if not dry:
        record["coder"] = "rater-1"
    return True


def not_finite(record: dict, *, dry: bool) -> bool:
    if not dry:
        record["value"] = "NaN"
    return True


@pytest.mark.parametrize(("change", "message"), [
    (off_scale_reference, "a reference label of PHQ_TOTAL is a whole number from 0 to 24, not 2.5"),
    (reference_seed, "a reference label has no seed, not seed 3"),
    (unknown_session, "session ['LC8-test', 't1', 9] is not among the archive's conversations' sessions"),
    (a_reviewers_label, "rater-1 is a reviewer of the study: session labels are a method's or the reference's"),
    (not_finite, "value must be a number, not 'NaN'"),
])
def test_a_bad_session_label_is_refused_by_line_and_nothing_is_written(tmp_path, change, message):
    study = lc8_full_study()
    lines, number = edited(export(study.slug), "session_label", change, which=1)
    before = table_counts()
    with pytest.raises(CommandError) as refused:
        call_command("import_study", str(write(tmp_path, lines)), "--as", "copy", stdout=io.StringIO())
    assert f"line {number} (session_label): {message}" in str(refused.value)
    assert table_counts() == before


def test_a_second_label_for_the_same_key_is_refused_by_the_database_naming_the_lines(tmp_path):
    study = lc8_full_study()
    lines = export(study.slug).splitlines()
    at = next(n for n, line in enumerate(lines) if json.loads(line)["type"] == "session_label")
    lines.insert(at, lines[at])
    end = json.loads(lines[-1])
    end["records"]["session_label"] += 1
    lines[-1] = dumps(end)
    with pytest.raises(CommandError, match=rf"lines {at + 1}–\d+ \(session_label\): refused by the database"):
        call_command("import_study", str(write(tmp_path, lines)), "--as", "copy", stdout=io.StringIO())
    assert not Study.objects.filter(slug="copy").exists()


BECOME = "; the study's report could not place it, so it cannot become the study's"
SIX = ("LC8-test/t2 sessions[5]: a LongCounsel-8 trajectory has at most 5 sessions (the sessions of the schema's lc8 "
       "block); this one has 6" + BECOME)


def sixth_session(record: dict, *, dry: bool) -> bool:
    if dry:
        return record["external_id"] == "t2"
    record["sessions"].append({"index": 6, "kind": "counseling", "crisis_type": None})
    return True


def test_a_new_trajectory_the_kind_cannot_place_as_archived_is_restored_as_archived_and_said_by_line(tmp_path):
    """t2 archived with a sixth session (one without turns yet) comes into an installation without it: the archived
    study held it so (stored before the kind checked it), so it is restored as archived and the import says so by
    line (tests/study_archive/test_archive_unplaceable.py restores a study 0.2.0 stored so)."""
    study = lc8_full_study()
    lines, number = edited(export(study.slug), "conversation", sixth_session)
    truncate_everything_archived()
    out = io.StringIO()
    call_command("import_study", str(write(tmp_path, checksummed(lines))), stdout=out)
    assert out.getvalue().splitlines()[-1] == f"  line {number} (conversation): {SIX.removesuffix(BECOME)}"
    assert Session.objects.filter(conversation__external_id="t2").count() == 6


def test_a_reused_trajectory_the_kind_cannot_place_as_stored_is_refused_by_line_and_nothing_is_written(tmp_path):
    """The archive's t2 has its five sessions, but the installation's t2, which the import would reuse, has a sixth
    (stored by an import without a study, which has no kind to ask): the study would take it as stored."""
    study = lc8_full_study()
    text = export(study.slug)
    number = next(n for n, r in enumerate(records(text), start=1)
                  if r["type"] == "conversation" and r["external_id"] == "t2")
    truncate_everything_archived()
    conversation_ingest.conversations_import(rows=[(1, trajectory("t1")), (2, trajectory("t2", sessions=6))])
    before = table_counts()
    with pytest.raises(CommandError) as refused:
        call_command("import_study", str(write(tmp_path, text)), stdout=io.StringIO())
    assert f": line {number} (conversation): {SIX}; nothing was imported" in str(refused.value)
    assert table_counts() == before


def test_trajectories_of_five_stored_without_a_study_are_reused(tmp_path):
    study = lc8_full_study()
    text = export(study.slug)
    truncate_everything_archived()
    conversation_ingest.conversations_import(rows=[(1, trajectory("t1")), (2, trajectory("t2"))])
    out = io.StringIO()
    call_command("import_study", str(write(tmp_path, text)), stdout=out)
    assert SessionLabel.objects.count() == 60



def _late_turn(record: dict) -> None:
    record["sessions"][4]["turns"].append({"index": 11, "client": "Late.", "responses": []})


def _archive(study: Study, *, reply_6: bool = True, rated_through: int = 5) -> str:
    """The study's archive (turn 6 of t1, in session 3, without its reply unless ``reply_6``; t1's ratings of the
    sessions after ``rated_through`` left out), in a fresh installation."""
    if not reply_6:
        ModelResponse.objects.filter(turn__conversation__external_id="t1", turn__index=6).delete()
    lines = export(study.slug).splitlines()
    kept = [line for line in lines[:-1] if not (
        (record := json.loads(line))["type"] == "judgment" and record["conversation"][1] == "t1"
        and record["session"] > rated_through)]
    end = json.loads(lines[-1])
    end["records"]["judgment"] -= len(lines) - 1 - len(kept)
    truncate_everything_archived()
    return "\n".join(checksummed([*kept, dumps(end)])) + "\n"


def _stored_here() -> None:
    """This installation's copy of the trajectories: t1 with every reply and a turn 11 in its fifth session."""
    here = trajectory("t1")
    _late_turn(here)
    conversation_ingest.conversations_import(rows=[(1, here), (2, trajectory("t2"))])


@pytest.mark.parametrize(("reply_6", "held", "session"), [(True, "turn 11", 5), (False, "a reply of turn 6", 3)])
def test_ratings_are_not_restored_onto_a_transcript_that_holds_more_here_than_the_archive(tmp_path, reply_6, held,
                                                                                          session):
    """A reused trajectory whose copy in this installation holds a turn or a reply the archive lacks, in a session
    the archive's ratings rate (or an earlier one, which a session's page shows): before, the ratings were restored
    onto it and the report counted them, of a transcript their rater never saw. Refused by the first such rating's
    line, nothing written (docs/sessions.md)."""
    study = lc8_full_study()
    text = _archive(study, reply_6=reply_6)
    _stored_here()
    before = table_counts()
    with pytest.raises(CommandError, match=(
            rf"line \d+ \(judgment\): session {session} of LC8-test/t1 is coded in the archive on its transcript as "
            rf"archived, but this installation's copy of it holds {held}, which the archive lacks: the code would be "
            "of a transcript its coder never saw")):
        call_command("import_study", str(write(tmp_path, text)), stdout=io.StringIO())
    assert table_counts() == before and not Study.objects.filter(slug=study.slug).exists()


def test_a_trajectory_that_holds_more_only_after_its_rated_sessions_is_reused(tmp_path):
    study = lc8_full_study()
    text = _archive(study, reply_6=False, rated_through=2)
    _stored_here()
    call_command("import_study", str(write(tmp_path, text)), stdout=io.StringIO())
    copy = Study.objects.get(slug=study.slug)
    assert Judgment.objects.filter(round__study=copy, session__conversation__external_id="t1").count() == 4
    assert Session.objects.get(conversation__external_id="t1", index=5).turns.count() == 3
