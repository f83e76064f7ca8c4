"""A CARE study (histories of sessions, session-level judgments, a method coder) through the study archive
(study_archive/): exported, imported into a fresh installation and exported again, byte for byte."""

from __future__ import annotations

import io
import json
import re

import pytest
from django.core.management import CommandError, call_command

from access import roles
from access.services import user_ensure
from annotation.models import Judgment, Study, StudyMember
from annotation.services import study_member_remove, study_settings_shown, study_settings_update
from benchmark.models import Session, Turn
from care.demo import care_demo_load
from study_archive.records import dumps
from tests.study_archive.test_archive import (
    checksummed,
    records,
    table_counts,
    truncate_everything_archived,
    without_the_import_event,
    write,
)

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def export(slug: str) -> str:
    out = io.StringIO()
    call_command("export_study", slug, stdout=out)
    return out.getvalue()


def test_a_care_study_round_trips_with_its_sessions_and_method(tmp_path):
    care_demo_load(admin=user_ensure(username="demo-admin", role=roles.ADMIN),
                   reviewer=user_ensure(username="demo-reviewer", role=roles.REVIEWER),
                   expert=user_ensure(username="demo-expert", role=roles.EXPERT))
    first = export("care-demo")
    conversation = next(r for r in records(first) if r["type"] == "conversation")
    assert [s["kind"] for s in conversation["sessions"]] == ["chat", "chat", "crisis", "chat", "callback"]
    assert conversation["turns"][4]["session"] == 3
    assert any(r.get("session") == 5 for r in records(first) if r["type"] == "judgment")

    truncate_everything_archived()
    path = tmp_path / "care.jsonl"
    path.write_text(first, encoding="utf-8")
    call_command("import_study", str(path), stdout=io.StringIO())
    assert without_the_import_event(export("care-demo")) == first.splitlines()
    assert list(Session.objects.values_list("index", "kind")) == [(1, "chat"), (2, "chat"), (3, "crisis"),
                                                                   (4, "chat"), (5, "callback")]
    assert Turn.objects.get(index=13).session.index == 5
    assert Judgment.objects.filter(session__index=5).count() == 9
    assert StudyMember.objects.get(user__username="demo-care-judge").role == "method"


def test_a_history_whose_turns_are_in_other_sessions_here_is_not_reused(tmp_path):
    """The installation holds the history with the same texts but a turn in another session: the archive's turn 5
    is in session 2, the stored one in session 3. Before, the history was reused as it is here, and the imported
    study read turn 5 in session 3 without a word."""
    care_demo_load(admin=user_ensure(username="demo-admin", role=roles.ADMIN),
                   reviewer=user_ensure(username="demo-reviewer", role=roles.REVIEWER),
                   expert=user_ensure(username="demo-expert", role=roles.EXPERT))
    lines = export("care-demo").splitlines()
    number, record = next((n, r) for n, r in enumerate(map(json.loads, lines)) if r["type"] == "conversation")
    assert record["turns"][4]["session"] == 3
    record["turns"][4]["session"] = 2
    lines[number] = dumps(record)
    before = table_counts()
    with pytest.raises(CommandError, match=rf"line {number + 1} \(conversation\): .* exists in this installation "
                                           r"with another turn 5 \(its session\)"):
        call_command("import_study", str(write(tmp_path, checksummed(lines))), "--as", "copy", stdout=io.StringIO())
    assert table_counts() == before


# --- the study's quality scope (a setting of CARE's own: Study.kind_settings) --------------------------------------


def _care_demo_with_scope(scope: str | None):
    """The CARE demo, its quality scope set to ``scope`` by the settings service (None: never set)."""
    admin = user_ensure(username="demo-admin", role=roles.ADMIN)
    care_demo_load(admin=admin, reviewer=user_ensure(username="demo-reviewer", role=roles.REVIEWER),
                   expert=user_ensure(username="demo-expert", role=roles.EXPERT))
    study = Study.objects.get(slug="care-demo")
    if scope is not None:
        study_settings_update(study=study, by=admin, quality_scope=scope)
    return study


def test_the_quality_scope_goes_out_and_back_in(tmp_path):
    _care_demo_with_scope("after_crisis")
    first = export("care-demo")
    assert next(r for r in records(first) if r["type"] == "study")["kind_settings"] == {
        "quality_scope": "after_crisis"}
    truncate_everything_archived()
    call_command("import_study", str(write(tmp_path, first)), stdout=io.StringIO())
    study = Study.objects.select_related("schema").get(slug="care-demo")
    assert study_settings_shown(study=study)["quality_scope"] == "after_crisis"
    assert without_the_import_event(export("care-demo")) == first.splitlines()


def test_an_archive_from_before_the_setting_reads_as_episode_sessions(tmp_path):
    _care_demo_with_scope(None)
    lines = export("care-demo").splitlines()
    older = []
    for line in lines:  # the study record as an archive written before the setting existed has it
        record = json.loads(line)
        if record["type"] == "study":
            del record["kind_settings"]
            line = dumps(record)
        older.append(line)
    truncate_everything_archived()
    call_command("import_study", str(write(tmp_path, checksummed(older))), stdout=io.StringIO())
    study = Study.objects.select_related("schema").get(slug="care-demo")
    assert study.kind_settings == {}
    assert study_settings_shown(study=study)["quality_scope"] == "episode_sessions"


@pytest.mark.parametrize(("settings", "message"), [
    ({"quality_scope": "everything"}, "quality_scope: must be one of episode_sessions, after_crisis"),
    ({"colour": "red"}, "colour: not a study setting of any study kind"),
    (["quality_scope"], "study kind_settings: not an object"),
])
def test_an_archive_with_a_bad_quality_scope_is_refused_and_writes_nothing(tmp_path, settings, message):
    _care_demo_with_scope(None)
    lines = export("care-demo").splitlines()
    bad = []
    for line in lines:
        record = json.loads(line)
        if record["type"] == "study":
            record["kind_settings"] = settings
            line = dumps(record)
        bad.append(line)
    truncate_everything_archived()
    before = table_counts()
    with pytest.raises(CommandError, match=message):
        call_command("import_study", str(write(tmp_path, checksummed(bad))), stdout=io.StringIO())
    assert table_counts() == before


# --- the study's reference coding (a setting of CARE's own whose value is one of the study's coders) ---------------


def test_the_reference_coding_goes_out_and_back_in_with_its_coder_taken_off(tmp_path):
    """The chosen coder is checked once the members and former members are in: one taken off the study is still
    its coder (with the role they had), so the setting is kept."""
    study = _care_demo_with_scope(None)
    admin = user_ensure(username="demo-admin", role=roles.ADMIN)
    study_settings_update(study=study, by=admin, reference_coding="demo-expert")
    study_member_remove(member=StudyMember.objects.get(study=study, user__username="demo-expert"), by=admin)
    first = export("care-demo")
    assert next(r for r in records(first) if r["type"] == "study")["kind_settings"] == {
        "reference_coding": "demo-expert"}
    truncate_everything_archived()
    call_command("import_study", str(write(tmp_path, first)), stdout=io.StringIO())
    study = Study.objects.select_related("schema").get(slug="care-demo")
    assert study_settings_shown(study=study)["reference_coding"] == "demo-expert"
    assert without_the_import_event(export("care-demo")) == first.splitlines()


@pytest.mark.parametrize(("coder", "message"), [
    ("nobody", "reference_coding: 'nobody' is no coder of this study; choose one of its coders (expert or reviewer "
               "or method), or none"),
    (7, "reference_coding: must be a username"),
])
def test_an_archive_whose_reference_coding_is_no_coder_of_the_study_is_refused_and_writes_nothing(tmp_path, coder,
                                                                                                  message):
    _care_demo_with_scope(None)
    lines = []
    for line in export("care-demo").splitlines():
        record = json.loads(line)
        if record["type"] == "study":
            record["kind_settings"] = {"reference_coding": coder}
            line = dumps(record)
            study_line = len(lines) + 1
        lines.append(line)
    truncate_everything_archived()
    before = table_counts()
    with pytest.raises(CommandError, match=re.escape(f"line {study_line} (study): study kind_settings: {message}")):
        call_command("import_study", str(write(tmp_path, checksummed(lines))), stdout=io.StringIO())
    assert table_counts() == before
