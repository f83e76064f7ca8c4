"""Importing judgments (annotation/judgment_import.py, ``import_judgments``): CSV and JSON Lines alike, every bad row
named by line and field with nothing written, re-imports idempotent, export → import reproduces every judgment."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from annotation import judgment_import, services
from annotation.long_format import judgment_rows
from annotation.models import Judgment, Round, Span, Study
from annotation.services import judgments_purge, study_archive
from audit.models import AuditEvent
from benchmark import conversation_ingest
from benchmark.demo import demo_records
from tests.races import meet_at, together

pytestmark = pytest.mark.django_db


@pytest.fixture
def conversations():
    conversation_ingest.conversations_import(rows=enumerate(demo_records(), start=1))


def row(**overrides):
    base = {
        "study": "imported", "round": "calibration-1", "reviewer": "alice", "is_gold": False,
        "dataset": "CounselChat", "conversation_id": "appendix-d-1", "turn_index": 1, "model": "GPT",
        "attribute": "AUR", "score": 1, "instance_count": 1,
        "spans": [{"start": 0, "end": 3, "subcategory": "assumes"}],
    }
    return base | overrides


def write_jsonl(tmp_path, rows):
    path = tmp_path / "judgments.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    return path


def write_csv(tmp_path, rows):
    path = tmp_path / "judgments.csv"
    with path.open("w", newline="", encoding="utf-8") as stream:
        writer = csv.DictWriter(stream, fieldnames=list(row()))
        writer.writeheader()
        for r in rows:
            writer.writerow(r | {"spans": json.dumps(r["spans"]) if r["spans"] else "",
                                 "model": r["model"] or "", "is_gold": str(r["is_gold"]).lower(),
                                 "instance_count": "" if r["instance_count"] is None else r["instance_count"]})
    return path


def test_import_creates_study_rounds_accounts_and_judgments(conversations, tmp_path, capsys):
    rows = [
        row(),
        row(reviewer="gold", is_gold=True, score=2, spans=[]),
        row(attribute="U1", model=None, instance_count=None, spans=[], score=0),
        row(round="main", reviewer="bob", attribute="F1", instance_count=None, spans=[], score=1),
    ]
    call_command("import_judgments", str(write_jsonl(tmp_path, rows)), "--study", "imported", "--create-study")
    study = Study.objects.get(slug="imported")
    assert study.schema.slug == "cab-v1"
    assert sorted(r.name for r in study.rounds.all()) == ["calibration-1", "main"]
    assert Judgment.objects.filter(round__study=study).count() == 4
    assert Judgment.objects.get(is_gold=True).coder.groups.get().name == "expert"
    assert get_user_model().objects.get(username="bob").groups.get().name == "reviewer"
    span = Span.objects.get()
    assert (span.start, span.end, span.subcategory.slug) == (0, 3, "assumes")
    assert "4 judgments and 1 spans imported into created study 'imported'" in capsys.readouterr().out


def test_csv_and_jsonl_import_the_same_judgments(conversations, tmp_path):
    rows = [row(), row(attribute="U2", model="", instance_count=None, spans=[], score=2)]
    call_command("import_judgments", str(write_csv(tmp_path, rows)), "--study", "imported", "--create-study")
    from_csv = list(judgment_rows(study=Study.objects.get(slug="imported")))
    judgments_purge(judgments=Judgment.objects.all(), by=None, reason="test: empty the study to re-import it")
    call_command("import_judgments", str(write_jsonl(tmp_path, rows)), "--study", "imported", "--create-study")
    assert list(judgment_rows(study=Study.objects.get(slug="imported"))) == from_csv


@pytest.mark.parametrize(("bad", "field", "message"), [
    ({"score": 3}, "score", "AUR: score 3 is outside the scale 0–2"),
    ({"score": "high"}, "score", "must be a whole number"),
    ({"attribute": "XYZ"}, "attribute", "'XYZ' is not an attribute of schema cab-v1"),
    ({"round": "pilot"}, "round", "'pilot' is not calibration-N or main"),
    ({"model": None}, "model", "AUR is coded once per model response: a model response is required"),
    ({"attribute": "U1"}, "model", "U1 is coded once per turn: give the turn and no model response"),
    ({"model": "Mistral"}, "model", "has no 'Mistral' response"),
    ({"conversation_id": "nope"}, "conversation_id", "CounselChat/nope is not imported"),
    ({"turn_index": 7}, "turn_index", "turn 7 of CounselChat/appendix-d-1 is not imported"),
    ({"spans": [{"start": 0, "end": 9999, "subcategory": "assumes"}]}, "spans[0]", "is outside the response text"),
    ({"spans": [{"start": 0, "end": 3, "subcategory": "directive"}]}, "spans[0]", "'directive' is not one of"),
    ({"is_gold": "maybe"}, "is_gold", "must be true or false"),
    ({"study": "other"}, "study", "row is for study 'other'"),
    ({"instance_count": -1}, "instance_count", "instance count must be a whole number from 0 to 2147483647"),
])
def test_a_bad_row_names_line_and_field_and_nothing_is_written(conversations, tmp_path, bad, field, message):
    path = write_jsonl(tmp_path, [row(reviewer="carol"), row() | bad])
    with pytest.raises(CommandError) as caught:
        call_command("import_judgments", str(path), "--study", "imported", "--create-study")
    text = str(caught.value)
    assert f"line 2: {field}: " in text and message in text, text
    assert not Study.objects.filter(slug="imported").exists()
    assert not Judgment.objects.exists()
    assert not get_user_model().objects.filter(username="carol").exists()


def test_duplicate_rows_in_a_file_are_refused(conversations, tmp_path):
    path = write_jsonl(tmp_path, [row(), row(score=2)])
    with pytest.raises(CommandError, match=r"line 2: attribute: a second judgment by alice of AUR on this unit "
                                           r"in calibration-1 \(first on line 1\)"):
        call_command("import_judgments", str(path), "--study", "imported", "--create-study")


def test_reimport_changes_nothing_and_a_conflicting_value_is_refused(conversations, tmp_path, capsys):
    path = write_jsonl(tmp_path, [row(), row(reviewer="gold", is_gold=True)])
    call_command("import_judgments", str(path), "--study", "imported", "--create-study")
    before = list(Judgment.objects.values_list("id", "score", "version", "updated_at").order_by("id"))
    call_command("import_judgments", str(path), "--study", "imported", "--create-study")
    assert "2 unchanged" in capsys.readouterr().out
    assert list(Judgment.objects.values_list("id", "score", "version", "updated_at").order_by("id")) == before
    with pytest.raises(CommandError, match="already has a different AUR judgment for this unit \\(score 1\\)"):
        call_command("import_judgments", str(write_jsonl(tmp_path, [row(score=2)])), "--study", "imported",
                     "--create-study")
    assert Judgment.objects.get(coder__username="alice").score == 1


@pytest.mark.parametrize("name", ["judgments.txt", "judgments"])
def test_a_file_whose_name_says_no_format_is_refused_unless_format_says_it(conversations, tmp_path, name):
    """As the API's upload and `cab import` refuse it (common.file_formats): before, any name but .csv was read as
    JSON Lines, and a CSV named .txt was refused by "line 1: not JSON"."""
    path = tmp_path / name
    path.write_bytes(write_csv(tmp_path, [row()]).read_bytes())
    with pytest.raises(CommandError) as refused:
        call_command("import_judgments", str(path), "--study", "imported", "--create-study")
    assert str(refused.value) == (f"{path}: its name does not say its format (.csv, .jsonl or .ndjson): say it with "
                                  "--format csv|jsonl")
    assert not Study.objects.filter(slug="imported").exists() and Judgment.objects.count() == 0
    call_command("import_judgments", str(path), "--study", "imported", "--create-study", "--format", "csv",
                 stdout=io.StringIO())
    assert Judgment.objects.count() == 1
    path.write_bytes(write_jsonl(tmp_path, [row()]).read_bytes())
    out = io.StringIO()
    call_command("import_judgments", str(path), "--study", "imported", "--create-study", "--format", "jsonl",
                 stdout=out)
    assert "1 unchanged" in out.getvalue()


@pytest.mark.parametrize("name", ["judgments.ndjson", "judgments.JSONL", "judgments.CSV"])
def test_a_file_whose_name_says_its_format_is_read_in_it(conversations, tmp_path, name):
    """.ndjson is JSON Lines on every path (the API's upload read it so; the command read it as JSON Lines only as
    any name not .csv)."""
    source = write_csv(tmp_path, [row()]) if name.lower().endswith(".csv") else write_jsonl(tmp_path, [row()])
    path = tmp_path / name
    path.write_bytes(source.read_bytes())
    call_command("import_judgments", str(path), "--study", "imported", "--create-study", stdout=io.StringIO())
    assert Judgment.objects.count() == 1


def test_a_study_no_study_has_is_refused_without_create_study_and_nothing_is_written(conversations, tmp_path):
    """A slug mistyped (``pilot-2`` for ``pilot2``, in the file's rows and --study alike) is refused in the words
    of every command (common.commands.study_missing), before the file is read: before, the import made a new study
    of that slug and filed the judgments there, with its rounds and accounts, and said it had imported them."""
    before = (list(Study.objects.values_list("slug", flat=True)), Judgment.objects.count(), Round.objects.count(),
              get_user_model().objects.count(), AuditEvent.objects.count())
    path = write_jsonl(tmp_path, [row(study="pilot-2", reviewer="carol"),
                                  row(study="pilot-2", round="main", reviewer="dave", attribute="F1",
                                      instance_count=None, spans=[])])
    with pytest.raises(CommandError) as refused:
        call_command("import_judgments", str(path), "--study", "pilot-2", stdout=io.StringIO())
    assert (str(refused.value), refused.value.returncode) == ("no study with slug 'pilot-2'", 1)
    assert (list(Study.objects.values_list("slug", flat=True)), Judgment.objects.count(), Round.objects.count(),
            get_user_model().objects.count(), AuditEvent.objects.count()) == before
    out = io.StringIO()
    call_command("import_judgments", str(path), "--study", "pilot-2", "--create-study", stdout=out)
    assert "2 judgments and 1 spans imported into created study 'pilot-2'" in out.getvalue(), out.getvalue()
    assert Judgment.objects.filter(round__study__slug="pilot-2").count() == 2


def test_the_importer_refuses_a_missing_study_unless_asked_to_create_it(conversations):
    """The one importer every path calls (judgment_import.judgments_import): a missing study is StudyMissing, nothing
    written, unless create_study; the API reaches it with a study it found, and a command says it in words."""
    with pytest.raises(judgment_import.StudyMissing):
        judgment_import.judgments_import(rows=[(1, row())], study_slug="imported", by=None)
    assert not Study.objects.filter(slug="imported").exists()
    summary = judgment_import.judgments_import(rows=[(1, row())], study_slug="imported", by=None, create_study=True)
    assert summary.study_created and Judgment.objects.filter(round__study__slug="imported").count() == 1


def test_missing_csv_columns_are_named(tmp_path):
    path = tmp_path / "j.csv"
    path.write_text("study,round,reviewer\nx,main,alice\n", encoding="utf-8")
    with pytest.raises(CommandError, match="line 1: header: missing column\\(s\\) is_gold, dataset"):
        call_command("import_judgments", str(path), "--study", "x", "--create-study")


def test_export_then_import_into_an_empty_study_reproduces_every_judgment(tmp_path):
    call_command("generate_synthetic", "--conversations", "12", "--reviewers", "3", "--seed", "5",
                 "--calibration-turns", "2", "--slug", "origin")
    out = io.StringIO()
    call_command("export_judgments", "--study", "origin", "--format", "csv", stdout=out)
    exported = out.getvalue().replace("\norigin,", "\ncopy,")
    (tmp_path / "export.csv").write_text(exported, encoding="utf-8")
    call_command("import_judgments", str(tmp_path / "export.csv"), "--study", "copy", "--create-study")

    def normalised(slug):
        return [r | {"study": None} for r in judgment_rows(study=Study.objects.get(slug=slug))]

    original, copy = normalised("origin"), normalised("copy")
    assert len(original) == Judgment.objects.filter(round__study__slug="origin").count() > 100
    assert copy == original
    assert Round.objects.filter(study__slug="copy").count() == 3


def test_an_archived_study_takes_no_import(conversations, tmp_path, admin_user):
    """An archived study's judgments no longer change: the import is refused by line 1 and the study column before
    anything is written (rounds, accounts, judgments)."""
    call_command("import_judgments", str(write_jsonl(tmp_path, [row()])), "--study", "imported", "--create-study")
    study_archive(study=Study.objects.get(slug="imported"), by=admin_user)
    before = (Judgment.objects.count(), Round.objects.count(), get_user_model().objects.count(),
              AuditEvent.objects.count())
    rows = [row(reviewer="carol"), row(round="main", reviewer="dave", attribute="F1", instance_count=None, spans=[])]
    path = write_jsonl(tmp_path, rows)
    with pytest.raises(CommandError) as refused:
        call_command("import_judgments", str(path), "--study", "imported", "--create-study")
    assert str(refused.value) == (f"{path}: 1 error(s), nothing was changed:\nline 1: study: study 'imported' is "
                                  "archived: its judgments and labels no longer change")
    assert (Judgment.objects.count(), Round.objects.count(), get_user_model().objects.count(),
            AuditEvent.objects.count()) == before


def test_a_judgment_on_a_model_the_study_does_not_code_is_refused_on_its_model(conversations, tmp_path):
    """When the study names its model slots, a row on another model's response is a row error on ``model``, as the
    autosave never shows that response; its other rows are not written either."""
    call_command("import_judgments", str(write_jsonl(tmp_path, [row()])), "--study", "imported", "--create-study")
    Study.objects.filter(slug="imported").update(model_slots=["GPT", "Gemini"])
    before = list(Judgment.objects.order_by("pk").values_list("pk", "score"))
    rows = [row(reviewer="carol"), row(reviewer="carol", model="Claude"),
            row(reviewer="carol", attribute="U1", model=None, instance_count=None, spans=[], score=0)]
    path = write_jsonl(tmp_path, rows)
    with pytest.raises(CommandError) as refused:
        call_command("import_judgments", str(path), "--study", "imported", "--create-study")
    assert str(refused.value) == (f"{path}: 1 error(s), nothing was changed:\nline 2: model: the study does not code "
                                  "model 'Claude'")
    assert list(Judgment.objects.order_by("pk").values_list("pk", "score")) == before
    Study.objects.filter(slug="imported").update(model_slots=[])  # none named: every model's responses are coded
    call_command("import_judgments", str(path), "--study", "imported", "--create-study")
    assert Judgment.objects.filter(coder__username="carol").count() == 3


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_file_for_a_new_study_imported_twice_at_once_creates_it_once_and_counts_the_other_unchanged(tmp_path):
    """Two ``import_judgments`` of one file naming a study that does not exist yet, at once (real connections): both
    would create the study; the second waits for the first and finds its rows there, as a resend after it does."""
    conversation_ingest.conversations_import(rows=enumerate(demo_records(), start=1))
    path = write_jsonl(tmp_path, [row(), row(reviewer="bob", spans=[])])

    def run():
        out = io.StringIO()
        call_command("import_judgments", str(path), "--study", "imported", "--create-study", stdout=out)
        return out.getvalue()

    with meet_at(services, "study_create"):
        said = together(run, run)
    assert not [answer for answer in said if isinstance(answer, Exception)], said
    assert sorted("created study 'imported'" in answer for answer in said) == [False, True], said
    assert any("2 unchanged" in answer for answer in said), said
    assert Study.objects.filter(slug="imported").count() == 1
    assert Judgment.objects.count() == 2
    assert AuditEvent.objects.filter(action="study.create").count() == 1
