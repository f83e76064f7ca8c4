"""Study archives (study_archive/, commands export_study / import_study): a rich study exported, its
rows removed, imported and exported again gives the same bytes (and under ``--as`` in the same installation);
every bad archive is refused with a CommandError naming the line, and leaves the database as it was."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.apps import apps
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db import connection, transaction

from access import roles
from access.services import user_ensure
from annotation import services as annotation_services
from annotation.models import (
    Assignment,
    FormerStudyMember,
    Judgment,
    JudgmentRevision,
    ReviewerAlert,
    Round,
    Schema,
    Span,
    SpanSubcategory,
    Study,
    WorkshopNote,
)
from audit.models import AuditEvent
from benchmark.models import Conversation, ModelResponse, Turn
from calibration import services as calibration_services
from metrics.models import MetricRun
from study_archive.records import DERIVED, ORDER, RELATIONS, dumps
from tests import form_fuzz, scenarios

pytestmark = pytest.mark.django_db

ARCHIVED_APPS = ("benchmark", "annotation", "metrics", "audit")
LONG_AGO = datetime(2025, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)


def export(slug: str) -> str:
    out = io.StringIO()
    call_command("export_study", slug, stdout=out)
    return out.getvalue()


def records(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def write(tmp_path: Path, lines: list[str] | str, name: str = "study.jsonl") -> Path:
    path = tmp_path / name
    path.write_text(lines if isinstance(lines, str) else "".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def table_counts() -> dict[str, int]:
    models = [m for m in apps.get_models() if m._meta.app_label in ARCHIVED_APPS]
    counts = {m._meta.label: m.objects.count() for m in models}
    counts["agreed_by"] = Judgment.agreed_by.through.objects.count()
    counts["users"] = User.objects.count()
    return counts


@pytest.fixture(scope="module")
def rich_study_id(shared_state):
    with shared_state():
        yield rich_study_build().pk


@pytest.fixture
def rich_study(db, rich_study_id) -> Study:
    return Study.objects.get(pk=rich_study_id)


def rich_study_build() -> Study:
    """The demo study walked through (calibration closed with gold and a metric run, main round open and coded),
    plus what the walk-through leaves out: a workshop note, an item comment and flags, spans, judgment revisions,
    a reviewer alert, a queued metric run, a judgment last changed long ago, and an expert taken off the study."""
    study = scenarios.demo_walked_through()
    admin = User.objects.get(username="demo-admin")
    calibration = Round.objects.get(study=study, kind=Round.Kind.CALIBRATION, number=1)
    gold = Judgment.objects.filter(round=calibration, is_gold=True, response__isnull=False).first()
    assert gold is not None and gold.agreed_by.exists()
    calibration_services.workshop_note_save(round=calibration, by=admin, attribute=gold.attribute, turn=gold.turn,
                                            response=gold.response, text="Agreed: a — b, see « the anchor »")
    assert WorkshopNote.objects.filter(round=calibration).exists()
    Assignment.objects.filter(pk=Assignment.objects.filter(round__study=study).first().pk).update(
        comment="Is this truncated?\nline two", flags=["unsure", "truncated"])
    spanned = Judgment.objects.filter(round__study=study, response__isnull=False,
                                      attribute__subcategories__isnull=False).distinct()[:3]
    for n, judgment in enumerate(spanned):
        subcategory = SpanSubcategory.objects.filter(attribute=judgment.attribute).first()
        Span.objects.create(judgment=judgment, subcategory=subcategory, start=n, end=n + 4)
        JudgmentRevision.objects.create(
            judgment=judgment, version=1, changed_by=judgment.coder, source="autosave", at="2026-01-03T10:00:00.5Z",
            before=None, after={"score": None, "instance_count": None, "note": "", "spans": [[n, n + 4, "x"]]})
        JudgmentRevision.objects.create(
            judgment=judgment, version=2, changed_by=None, source="import", at="2026-01-03T10:00:01Z",
            before={"score": None}, after={"score": judgment.score, "spans": []})
    ReviewerAlert.objects.create(study=study, reviewer=User.objects.get(username="demo-reviewer"), agreement=0.61,
                                 threshold=0.7, n_items=20)
    MetricRun.objects.create(study=study, trigger="manual", requested_by=admin, parameters={"seed": 1})
    assert Span.objects.filter(judgment__round__study=study).exists()
    Judgment.objects.filter(pk=gold.pk).update(created_at=LONG_AGO, updated_at=LONG_AGO)
    leaver = user_ensure(username="leaver", role=roles.EXPERT)
    annotation_services.study_member_remove(
        member=annotation_services.study_member_add(study=study, user=leaver, role="expert", by=admin), by=admin)
    assert FormerStudyMember.objects.filter(study=study, user=leaver, role="expert").exists()
    return study


def truncate_everything_archived() -> None:
    """A fresh installation but for its schema and role groups (the schema is reused on import). TRUNCATE, as the
    triggers refuse to delete judgments and audit events; pending deferred foreign-key checks run first."""
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("TRUNCATE benchmark_dataset, annotation_study, audit_auditevent, auth_user CASCADE")


def without_the_import_event(text: str) -> list[str]:
    """The archive's lines without the audit event of the import itself, with the end record's count of audit
    events taken back by one and its checksum made again over the lines that are left."""
    lines = text.splitlines()
    imported = json.loads(lines[-2])
    assert imported["type"] == "audit_event" and imported["action"] == "study.import" and imported["actor"] is None
    end = json.loads(lines[-1])
    end["records"]["audit_event"] -= 1
    return checksummed([*lines[:-2], dumps(end)])


def checksummed(lines: list[str]) -> list[str]:
    """The lines with the end record's checksum made again over the lines before it (after a test changed them)."""
    end = json.loads(lines[-1])
    end["sha256"] = hashlib.sha256("".join(line + "\n" for line in lines[:-1]).encode()).hexdigest()
    return [*lines[:-1], dumps(end)]


# --- the round trip ------------------------------------------------------------------------------------------------


def test_every_table_and_column_of_a_study_is_archived():
    """A model or relation added to an archived app must be placed in the archive (or this fails)."""
    archived = set(RELATIONS)
    for model in apps.get_models():
        if model._meta.app_label in ARCHIVED_APPS and model not in DERIVED:
            assert model in archived, f"{model._meta.label} is not in the study archive"
    for model, relations in RELATIONS.items():
        forward = {field.name for field in model._meta.get_fields()
                   if field.is_relation and not field.auto_created and (field.concrete or field.many_to_many)}
        assert forward == relations, model._meta.label


def test_an_exported_study_imports_into_a_fresh_installation_losslessly(rich_study, tmp_path):
    first = export("demo")
    kinds = {record["type"] for record in records(first)}
    assert kinds == set(ORDER) - {"session_label"}  # an LC8 study's: test_archive_lc8.py
    before = table_counts()
    truncate_everything_archived()
    assert not Judgment.objects.exists() and not User.objects.exists()

    path = tmp_path / "demo.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as stream:
        stream.write(first)
    call_command("import_study", str(path), stdout=io.StringIO())

    second = export("demo")
    assert without_the_import_event(second) == first.splitlines()
    # Every row came back; the accounts and audit events are the study's (and the import's), not the installation's.
    after = table_counts()
    installation_wide = ("audit.AuditEvent", "users")
    assert {k: v for k, v in after.items() if k not in installation_wide} == {
        k: v for k, v in before.items() if k not in installation_wide}
    assert after["users"] == sum(1 for record in records(first) if record["type"] == "user")
    assert after["audit.AuditEvent"] == AuditEvent.objects.filter(study_slug="demo").count()
    # Accounts come back with their roles and no usable password; timestamps as they were.
    reviewer = User.objects.get(username="demo-reviewer")
    assert not reviewer.has_usable_password() and list(reviewer.groups.values_list("name", flat=True)) == ["reviewer"]
    assert Judgment.objects.filter(is_gold=True, created_at=LONG_AGO, updated_at=LONG_AGO).count() == 1


def test_a_study_imports_beside_itself_under_another_slug(rich_study, tmp_path):
    first = export("demo")
    before = table_counts()
    call_command("import_study", str(write(tmp_path, first)), "--as", "demo-copy", stdout=io.StringIO())

    second = without_the_import_event(export("demo-copy"))
    renamed = [json.loads(line) for line in second]
    assert renamed[0]["study"] == "demo-copy"
    study_record = next(r for r in renamed if r["type"] == "study")
    assert study_record["slug"] == "demo-copy"
    renamed[0]["study"] = study_record["slug"] = "demo"
    assert checksummed([dumps(r) for r in renamed]) == first.splitlines()
    # The material is shared, not copied; the people are the same accounts.
    after = table_counts()
    for model in (Conversation, Turn, ModelResponse):
        assert after[model._meta.label] == before[model._meta.label]
    assert after["users"] == before["users"]
    assert after["annotation.Judgment"] == 2 * before["annotation.Judgment"]


# --- bad archives --------------------------------------------------------------------------------------------------


def edited(text: str, kind: str, change, *, which: int = 0) -> tuple[list[str], int]:
    """The archive's lines with the ``which``-th record of ``kind`` (satisfying nothing else) changed in place;
    returns the lines and the changed line's number."""
    lines = text.splitlines()
    seen = 0
    for index, line in enumerate(lines):
        record = json.loads(line)
        if record["type"] == kind and change(record, dry=True):
            if seen == which:
                change(record, dry=False)
                lines[index] = dumps(record)
                return lines, index + 1
            seen += 1
    raise AssertionError(f"no {kind} record to change")


def spanned(record: dict, *, dry: bool) -> bool:
    if dry:
        return bool(record["spans"])
    record["spans"][0][1] = 100_000
    return True


def missing_response(record: dict, *, dry: bool) -> bool:
    if dry:
        return record["response"] is not None
    record["response"] = "NoSuchModel"
    return True


def score_off_scale(record: dict, *, dry: bool) -> bool:
    if dry:
        return record["score"] is not None
    record["score"] = 99
    return True


def unknown_coder(record: dict, *, dry: bool) -> bool:
    if not dry:
        record["coder"] = "nobody-at-all"
    return True


def bad_timestamp(record: dict, *, dry: bool) -> bool:
    if not dry:
        record["completed_at"] = "yesterday"
    return True


@pytest.mark.parametrize(("kind", "change", "message"), [
    ("judgment", spanned, "is outside the response text"),
    ("judgment", missing_response, "has no response of model 'NoSuchModel'"),
    ("judgment", score_off_scale, "outside the scale"),
    ("judgment", unknown_coder, "user 'nobody-at-all' is not among the archive's users"),
    ("assignment", bad_timestamp, "completed_at"),
])
def test_a_bad_record_is_refused_by_line_and_nothing_is_written(rich_study, tmp_path, kind, change, message):
    lines, number = edited(export("demo"), kind, change, which=5)
    before = table_counts()
    with pytest.raises(CommandError) as refused:
        call_command("import_study", str(write(tmp_path, lines)), "--as", "copy", stdout=io.StringIO())
    assert f"line {number} ({kind})" in str(refused.value) and message in str(refused.value)
    assert "nothing was imported" in str(refused.value)
    assert table_counts() == before
    assert not Study.objects.filter(slug="copy").exists()


def a_newer_column(record: dict, *, dry: bool) -> bool:
    if not dry:
        record["confidence"] = 0.9
    return True


def a_newer_nested_column(record: dict, *, dry: bool) -> bool:
    if dry:
        return bool(record["turns"][0]["responses"])
    record["turns"][0]["responses"][0]["tokens"] = 412
    return True


@pytest.mark.parametrize(("kind", "change", "message"), [
    ("judgment", a_newer_column, "judgment: 'confidence' is not a column of this installation's"),
    ("conversation", a_newer_nested_column, "modelresponse: 'tokens' is not a column of this installation's"),
    ("member", a_newer_column, "studymember: 'confidence' is not a column of this installation's"),
    ("user", a_newer_column, "user: 'confidence' is not a column of this installation's"),
])
def test_a_column_this_installation_lacks_is_refused_not_dropped(rich_study, tmp_path, kind, change, message):
    """An archive written by a newer version whose model has a column this one lacks (its format version is the
    same: a column is archived under its field's name), into a fresh installation: before, the column was left out
    silently."""
    lines, number = edited(export("demo"), kind, change, which=1)
    truncate_everything_archived()
    before = table_counts()
    with pytest.raises(CommandError) as refused:
        call_command("import_study", str(write(tmp_path, checksummed(lines))), stdout=io.StringIO())
    assert f"line {number} ({kind})" in str(refused.value) and message in str(refused.value)
    assert "nothing was imported" in str(refused.value)
    assert table_counts() == before


def test_an_archive_of_another_format_version_is_refused(rich_study, tmp_path):
    lines = export("demo").splitlines()
    header = json.loads(lines[0])
    header["version"] = 2
    lines[0] = json.dumps(header)
    with pytest.raises(CommandError, match="line 1: archive format version 2; this installation reads version 1"):
        call_command("import_study", str(write(tmp_path, lines)), "--as", "copy")


def test_a_truncated_archive_is_refused_and_nothing_is_written(rich_study, tmp_path):
    text = export("demo")
    lines = text.splitlines()
    before = table_counts()
    cut = write(tmp_path, lines[: len(lines) * 2 // 3])
    with pytest.raises(CommandError, match="ends without its end record: it is truncated"):
        call_command("import_study", str(cut), "--as", "copy")
    half_a_line = write(tmp_path, text[: len(text) - 40], name="half.jsonl")
    with pytest.raises(CommandError, match=rf"line {len(lines)}: not a JSON record"):
        call_command("import_study", str(half_a_line), "--as", "copy")
    compressed = gzip.compress(text.encode())
    cut_gzip = tmp_path / "cut.jsonl.gz"
    cut_gzip.write_bytes(compressed[: len(compressed) // 2])
    with pytest.raises(CommandError, match="the file cannot be read .*; is it truncated"):
        call_command("import_study", str(cut_gzip), "--as", "copy")
    assert table_counts() == before


def test_a_line_nested_too_deeply_is_refused_by_its_line_and_nothing_is_written(rich_study, tmp_path):
    """json.loads raises RecursionError (not ValueError) on a line of 100,000 "[": the archive's own error, naming
    the line, not a traceback."""
    lines = export("demo").splitlines()
    before = table_counts()
    deep = write(tmp_path, [lines[0], "[" * 100_000, *lines[1:]])
    with pytest.raises(CommandError, match=r"line 2: not a JSON record \(nested too deeply\); nothing was imported"):
        call_command("import_study", str(deep), "--as", "copy")
    assert table_counts() == before


def test_an_archive_that_begins_with_a_utf8_bom_imports_as_without_it(rich_study, tmp_path):
    """As every other file path reads a file (utf-8-sig): the mark is not part of the lines the end record's
    SHA-256 covers. Before, "line 1: not a JSON record"."""
    text = export("demo")
    path = tmp_path / "study.jsonl"
    path.write_bytes("\ufeff".encode() + text.encode())
    call_command("import_study", str(path), "--as", "copy", stdout=io.StringIO())
    assert Study.objects.filter(slug="copy").exists()


def test_a_taken_slug_and_a_different_schema_are_refused(rich_study, tmp_path):
    text = export("demo")
    with pytest.raises(CommandError, match=r"line \d+ \(study\): a study 'demo' exists in this installation; import "
                                           r"under another slug \(--as NEW_SLUG\)"):
        call_command("import_study", str(write(tmp_path, text)))

    def renamed_attribute(record: dict, *, dry: bool) -> bool:
        if not dry:
            record["attributes"][0]["name"] += " (edited)"
        return True

    lines, number = edited(text, "schema", renamed_attribute)
    with pytest.raises(CommandError, match=rf"line {number} \(schema\): schema 'cab-v1' exists in this installation "
                                           "with another definition"):
        call_command("import_study", str(write(tmp_path, lines)), "--as", "copy")


@pytest.mark.parametrize("field", ["text", "model_version"])
def test_a_changed_conversation_is_not_reused(rich_study, tmp_path, field):
    """A response's text or model version differs from the one stored: before, a model version that differed was
    taken from the installation silently, and the study's bundle then named another version than its archive."""
    def changed(record: dict, *, dry: bool) -> bool:
        if dry:
            return bool(record["turns"] and record["turns"][0]["responses"])
        record["turns"][0]["responses"][0][field] += " (edited)"
        return True

    lines, number = edited(export("demo"), "conversation", changed)
    before = table_counts()
    with pytest.raises(CommandError, match=rf"line {number} \(conversation\): .* exists in this installation with "
                                           rf"another response of model .* \(its {field}\)"):
        call_command("import_study", str(write(tmp_path, checksummed(lines))), "--as", "copy")
    assert table_counts() == before


def test_an_export_to_a_file_is_whole_or_absent(rich_study, tmp_path):
    path = tmp_path / "demo.jsonl.gz"
    err = io.StringIO()
    call_command("export_study", "demo", "--output", str(path), stderr=err)
    assert gzip.decompress(path.read_bytes()).decode() == export("demo")
    assert not (tmp_path / "demo.jsonl.gz.partial").exists()
    assert "study 'demo' exported" in err.getvalue()
    with pytest.raises(CommandError, match="no study with slug 'nope'"):
        call_command("export_study", "nope", "--output", str(tmp_path / "nope.jsonl"))
    assert not (tmp_path / "nope.jsonl").exists()


def test_an_export_takes_a_fixed_number_of_queries(rich_study, django_assert_num_queries):
    """Independent of the study's size (up to 2,000 conversations): judgments, spans, agreements and revisions are
    four streams, and assignments, session labels, alerts, runs and audit events one each, sessions one more; former
    members (taken off the study) two: their records and their accounts among the archive's users."""
    with django_assert_num_queries(44):
        export("demo")


def test_an_archive_changed_after_it_was_written_is_refused_by_its_checksum(tmp_path):
    """The end record states the SHA-256 of the lines before it; one changed character (here a score, which every
    other check would accept) is refused, naming the end line, and nothing is imported. Without the checksum (an
    archive written before it was added) the same file imports."""
    call_command("generate_synthetic", "--conversations", "3", "--reviewers", "2", "--calibration-turns", "1",
                 "--slug", "sum", stdout=io.StringIO())
    lines = export("sum").splitlines()
    header = json.loads(lines[0])
    assert header["software"] == {"version": settings.CAB_VERSION, "commit": settings.CAB_COMMIT}
    number = next(n for n, line in enumerate(lines) if '"type":"judgment"' in line and '"score":1' in line)
    changed = [*lines[:number], lines[number].replace('"score":1', '"score":2', 1), *lines[number + 1:]]
    path = tmp_path / "changed.jsonl"
    path.write_text("\n".join(changed) + "\n", encoding="utf-8")
    before = Study.objects.count()
    with pytest.raises(CommandError, match=rf"line {len(lines)}: the lines before the end record do not have the "
                                           "SHA-256 it states"):
        call_command("import_study", str(path), "--as", "sum-changed", stdout=io.StringIO())
    assert Study.objects.count() == before
    end = json.loads(changed[-1])
    del end["sha256"]
    path.write_text("\n".join([*changed[:-1], dumps(end)]) + "\n", encoding="utf-8")
    call_command("import_study", str(path), "--as", "sum-changed", stdout=io.StringIO())
    assert Study.objects.filter(slug="sum-changed").exists()


@pytest.mark.parametrize(("slug", "message"), form_fuzz.REFUSED_SLUGS)
def test_a_slug_no_study_may_have_is_refused_under_as_and_in_the_archive(rich_study, tmp_path, slug, message):
    """The New study form's slug rules (annotation.services.study_slug_check) for --as and for the archive's own
    slug: never a study nobody can open (/studies/new/ is the create page), never a DataError."""
    text = export("demo")
    before = table_counts()
    with pytest.raises(CommandError) as refused:
        call_command("import_study", str(write(tmp_path, text)), "--as", slug, stdout=io.StringIO())
    assert str(refused.value) == f"{tmp_path / 'study.jsonl'}: --as {slug!r}: {message}; nothing was imported"

    def renamed(record: dict, *, dry: bool) -> bool:
        if not dry:
            record["slug"] = slug
        return True

    lines, number = edited(text, "study", renamed)
    with pytest.raises(CommandError) as refused:
        call_command("import_study", str(write(tmp_path, lines)), stdout=io.StringIO())
    assert f"line {number} (study): {message}; nothing was imported" in str(refused.value)
    assert table_counts() == before
    assert not Study.objects.filter(slug=slug).exists()


@pytest.mark.parametrize(("indices", "message"), [
    ({"ari": {"clusters": ["D", "E", "R"]}}, "schema 'cab-copy': indices.ari.clusters: leaves out F; ARI is the mean "
                                             "of the clusters of the response-level attributes with a risk encoding"),
    ({"coupling": {"max_q": 2}}, "indices.coupling.max_q: must be a number above 0 and at most 1"),
])
def test_a_new_schema_whose_indices_an_install_would_refuse_is_refused(rich_study, tmp_path, indices, message):
    """An archive's schema that the installation lacks is checked as an install and the Django admin check its
    ``indices`` block (docs/schema.md): before, it was copied as it was, and its ARI list could name other clusters
    than the report's. Refused on the schema's line, nothing imported."""
    def another_schema(record: dict, *, dry: bool) -> bool:
        if not dry:
            record["slug"] = record["definition"]["slug"] = "cab-copy"
            record["definition"]["indices"] |= indices
        return True

    lines, number = edited(export("demo"), "schema", another_schema)
    lines, _ = edited("\n".join(lines), "study", lambda record, *, dry: dry or record.update(schema="cab-copy"))
    before = table_counts()
    with pytest.raises(CommandError) as refused:
        call_command("import_study", str(write(tmp_path, checksummed(lines))), "--as", "copy", stdout=io.StringIO())
    assert f"line {number} (schema)" in str(refused.value) and message in str(refused.value)
    assert table_counts() == before
    assert not Schema.objects.filter(slug="cab-copy").exists()



def _slot_added(record: dict, *, dry: bool) -> bool:
    """An archive's study record edited: the study codes a model slot ``Extra`` too."""
    if not dry:
        record["model_slots"] = [*record["model_slots"], "Extra"]
    return True


def test_a_reused_conversation_with_a_response_the_archive_lacks_sends_its_completed_items_back(rich_study, tmp_path):
    """This installation's copy of a conversation the import reuses may hold more responses than the archive (one
    added by another study's ingestion into a shared conversation): a completed item of the imported study whose turn
    holds one of the study's model slots that its coder never coded goes back to their queue, as on every path that
    adds a response to a completed turn (migration 0023), and the import says so in its output and audit event.
    Before, it stayed completed with the response coded by nobody."""
    completed = Assignment.objects.filter(round__study=rich_study, round__kind=Round.Kind.MAIN,
                                          round__status=Round.Status.OPEN, completed_at__isnull=False).first()
    assert completed is not None

    lines, _ = edited(export("demo"), "study", _slot_added)
    ModelResponse.objects.create(turn_id=completed.turn_id, model_slot="Extra", model_version="v1", text="Breathe.")
    assert Assignment.objects.get(pk=completed.pk).completed_at is not None  # not a slot of the demo study
    out = io.StringIO()
    call_command("import_study", str(write(tmp_path, checksummed(lines))), "--as", "copy", stdout=out)
    copy = Study.objects.get(slug="copy")
    back = Assignment.objects.filter(round__study=copy, turn_id=completed.turn_id, completed_at__isnull=True)
    was_completed = Assignment.objects.filter(round__study=rich_study, round__kind=Round.Kind.MAIN,
                                              turn_id=completed.turn_id, completed_at__isnull=False).count()
    assert back.count() == was_completed >= 1
    assert not Assignment.objects.filter(round__study=copy, turn_id=completed.turn_id,
                                         completed_at__isnull=False).exists()
    assert (Assignment.objects.filter(round__study=copy, completed_at__isnull=False).count()
            == Assignment.objects.filter(round__study=rich_study, completed_at__isnull=False).count() - was_completed)
    assert f"warning: {was_completed} completed item" in out.getvalue()
    assert "holds a response of the study's model slots that the archive does not (added by another study's " \
           "ingestion)" in out.getvalue()
    assert "the archive itself" not in out.getvalue()
    event = AuditEvent.objects.get(action="study.import", study_slug="copy")
    assert event.data["turns_back_in_queues"] == was_completed


def test_an_item_short_in_the_archive_itself_goes_back_said_so(rich_study, tmp_path):
    """An archive made under 0.2.0 may hold a completed item whose turn holds a response its coder never coded
    (0.2.0 kept an item completed when a response was added to its turn). The import sends it back to its coder's
    queue, and says why: the archive itself is short of it; before, the warning said the response had been added by
    another study's ingestion, which nobody had done."""
    completed = Assignment.objects.filter(round__study=rich_study, round__kind=Round.Kind.MAIN,
                                          round__status=Round.Status.OPEN, completed_at__isnull=False).first()
    assert completed is not None
    Study.objects.filter(pk=rich_study.pk).update(model_slots=[*rich_study.model_slots, "Extra"])
    with transaction.atomic(), connection.cursor() as cursor:  # added as under 0.2.0: no trigger sent it back
        cursor.execute("SET LOCAL session_replication_role = replica")
        ModelResponse.objects.create(turn_id=completed.turn_id, model_slot="Extra", model_version="v1",
                                     text="Breathe.")
    assert Assignment.objects.get(pk=completed.pk).completed_at is not None
    was_completed = Assignment.objects.filter(round__study=rich_study, round__status=Round.Status.OPEN,
                                              turn_id=completed.turn_id, completed_at__isnull=False).count()
    out = io.StringIO()
    call_command("import_study", str(write(tmp_path, export("demo"))), "--as", "copy", stdout=out)
    copy = Study.objects.get(slug="copy")
    assert not Assignment.objects.filter(round__study=copy, turn_id=completed.turn_id,
                                         completed_at__isnull=False).exists()
    assert (f"warning: {was_completed} completed item" in out.getvalue()
            and "the archive itself holds a response of the study's model slots in" in out.getvalue()), out.getvalue()
    assert "another study's ingestion" not in out.getvalue()
    assert (AuditEvent.objects.get(action="study.import", study_slug="copy").data["turns_back_in_queues"]
            == was_completed >= 1)


def _open_alert(study: Study, reviewer: User) -> tuple[float, int] | None:
    alert = ReviewerAlert.objects.filter(study=study, reviewer=reviewer, resolved_at__isnull=True).first()
    return None if alert is None else (round(alert.agreement, 9), alert.n_items)


def test_a_check_item_the_import_sends_back_leaves_its_reviewers_alert(rich_study, tmp_path):
    """A completed check item that the import sends back to its coder's queue (its reused turn holds a response the
    archive lacks, as above) no longer counts in the reviewer's check-item agreement: the alert the archive carries,
    raised by that item's coding out of gold's bucket, is updated by the import as ``check_alert_update`` decides
    (``items_short_of_responses_reopened`` in the import's transaction), here withdrawn, never kept as archived."""
    completed = Assignment.objects.filter(round__study=rich_study, round__kind=Round.Kind.MAIN,
                                          round__status=Round.Status.OPEN, completed_at__isnull=False).first()
    assert completed is not None
    coder = completed.coder
    # The item a check item, and the only one of its coder's: its codings against gold, one out of gold's bucket.
    Assignment.objects.filter(round__study=rich_study, coder=coder).update(is_check_item=False)
    Assignment.objects.filter(pk=completed.pk).update(is_check_item=True)
    calibration = Round.objects.get(study=rich_study, kind=Round.Kind.CALIBRATION, number=1)
    codings = list(Judgment.objects.filter(round=completed.round, coder=coder, turn=completed.turn, is_gold=False,
                                           score__isnull=False).select_related("attribute").order_by("pk"))
    off = next(j for j in codings if any(j.attribute.bucket[str(s)] != j.attribute.bucket[str(j.score)]
                                         for s in j.attribute.scale))
    for coding in codings:
        score = coding.score if coding.pk != off.pk else next(
            s for s in coding.attribute.scale if coding.attribute.bucket[str(s)] != coding.attribute.bucket[
                str(coding.score)])
        unit = {"turn_id": coding.turn_id, "response_id": coding.response_id, "attribute_id": coding.attribute_id}
        if not Judgment.objects.filter(round__study=rich_study, is_gold=True, **unit).update(score=score):
            Judgment.objects.create(round=calibration, coder=User.objects.get(username="demo-admin"), is_gold=True,
                                    conversation_id=coding.conversation_id, score=score, **unit)
    Study.objects.filter(pk=rich_study.pk).update(check_threshold=0.99, check_min_items=1)
    annotation_services.check_alert_update(study=Study.objects.get(pk=rich_study.pk), user=coder)
    archived = _open_alert(rich_study, coder)
    assert archived == (round((len(codings) - 1) / len(codings), 9), len(codings))

    lines, _ = edited(export("demo"), "study", _slot_added)
    ModelResponse.objects.create(turn_id=completed.turn_id, model_slot="Extra", model_version="v1", text="Breathe.")
    call_command("import_study", str(write(tmp_path, checksummed(lines))), "--as", "copy", stdout=io.StringIO())
    copy = Study.objects.get(slug="copy")
    assert not Assignment.objects.filter(round__study=copy, coder=coder, is_check_item=True,
                                         completed_at__isnull=False).exists()
    assert ReviewerAlert.objects.filter(study=copy, reviewer=coder).exists()  # the archive's, imported
    assert _open_alert(copy, coder) is None
    assert AuditEvent.objects.filter(action="check.alert_withdraw", study_slug="copy",
                                     target=f"user:{coder.username}").exists()
    assert _open_alert(rich_study, coder) == archived  # the original study's stays: its item is still completed
