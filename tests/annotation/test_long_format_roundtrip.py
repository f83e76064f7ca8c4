"""``manage.py export_judgments`` writes the same file as the download, and it re-imports exactly with
``import_judgments`` — including formula-like usernames, datasets and conversation ids, whose CSV cells are
neutralised on the way out and restored on the way in."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse

from access import roles
from access.services import user_ensure
from annotation.long_format import COLUMNS, judgment_rows
from annotation.models import Judgment, Study, StudyMember
from annotation.services import judgments_purge
from benchmark import conversation_ingest
from benchmark.demo import demo_records
from benchmark.models import ModelResponse
from tests.factories import JudgmentFactory, RoundFactory, SpanFactory, StudyFactory, attribute

pytestmark = pytest.mark.django_db

ORIGIN, COPY = "origin", "copy"
# Conversation ids and datasets a spreadsheet would run as formulas, a leading quote, and plain ones.
CONVERSATIONS = [("=Sheet", "=HYPERLINK(\"http://x\")"), ("+Corpus", "+cmd"), ("-Corpus", "-1"),
                 ("@Corpus", "@SUM(A1)"), ("CounselChat", "'quoted"), ("CounselChat", "''=double"),
                 ("CounselChat", "plain")]
CODERS = ["-dash", "+plus", "@at", "plain.name"]  # "=" is not allowed in a username



@pytest.fixture
def origin(db):
    """Two rounds of judgments (turn- and response-level, gold, instance counts, spans) by formula-like coders
    on formula-like conversations."""
    records = []
    for dataset, external_id in CONVERSATIONS:
        record = demo_records()[0]
        record["dataset"], record["conversation_id"] = dataset, external_id
        records.append(record)
    conversation_ingest.conversations_import(rows=enumerate(records, start=1))
    study = StudyFactory(slug=ORIGIN)
    calibration = RoundFactory(study=study, kind="calibration", number=1, status="closed")
    main = RoundFactory(study=study, kind="main", number=1, status="closed")
    coders = [user_ensure(username=name, role=roles.REVIEWER) for name in CODERS]
    gold = user_ensure(username="+gold", role=roles.EXPERT)
    responses = ModelResponse.objects.filter(model_slot__in=["GPT", "Qwen"]).select_related("turn").order_by("pk")
    for number, response in enumerate(responses):
        coder = coders[number % len(coders)]
        round_ = calibration if number % 3 else main
        judgment = JudgmentFactory(round=round_, coder=coder, response=response, score=number % 3,
                                   instance_count=number % 2 if number % 2 else None)
        if number % 2:
            SpanFactory(judgment=judgment, start=1, end=7)
            SpanFactory(judgment=judgment, start=3, end=9, subcategory=judgment.attribute.subcategories.last())
        if response.model_slot == "GPT":
            JudgmentFactory(round=round_, coder=coder, response=None, turn=response.turn, attribute=attribute("U1"),
                            score=2)
            JudgmentFactory(round=calibration, coder=gold, is_gold=True, response=response, attribute=attribute("TD"),
                            score=1)
    assert Judgment.objects.filter(round__study=study).count() > 20
    return study


def command_export(slug: str, fmt: str) -> str:
    out = io.StringIO()
    call_command("export_judgments", "--study", slug, "--format", fmt, stdout=out)
    return out.getvalue()


def download(client, slug: str, fmt: str) -> bytes:
    response = client.get(reverse("export-judgments", args=[slug, fmt]))
    assert response.status_code == 200
    return b"".join(response.streaming_content)


def other_study(text: str, fmt: str) -> str:
    """The export as if it were the copy's: only the study column changes."""
    if fmt == "csv":
        rows = list(csv.reader(io.StringIO(text, newline="")))
        assert tuple(rows[0]) == COLUMNS and {row[0] for row in rows[1:]} == {ORIGIN}
        return text.replace(f"\r\n{ORIGIN},", f"\r\n{COPY},")
    rows = [json.loads(line) for line in text.splitlines()]
    assert {row["study"] for row in rows} == {ORIGIN}
    return "".join(json.dumps(row | {"study": COPY}, ensure_ascii=False) + "\n" for row in rows)


def without_study(rows) -> list[dict]:
    return [{k: v for k, v in row.items() if k != "study"} for row in rows]


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_the_command_export_reimports_into_a_new_study_exactly(origin, tmp_path, fmt):
    exported = command_export(ORIGIN, fmt)
    path = tmp_path / f"judgments.{fmt}"
    path.write_text(other_study(exported, fmt), encoding="utf-8", newline="")
    call_command("import_judgments", str(path), "--study", COPY, "--create-study", stdout=io.StringIO())
    copy = Study.objects.get(slug=COPY)
    before = without_study(judgment_rows(study=origin))
    assert without_study(judgment_rows(study=copy)) == before
    assert {row["reviewer"] for row in before} == {*CODERS, "+gold"}
    assert {row["conversation_id"] for row in before} == {c for _, c in CONVERSATIONS}
    assert any(row["spans"] for row in before) and any(row["model"] is None for row in before)
    # And the copy exports to the same file, byte for byte, but for its study column.
    assert command_export(COPY, fmt) == other_study(exported, fmt)


def test_the_command_csv_has_formula_cells_neutralised_like_the_download(origin):
    cells = {cell for row in csv.reader(io.StringIO(command_export(ORIGIN, "csv"), newline="")) for cell in row}
    for dangerous in ("-dash", "+plus", "@at", "+gold", "=Sheet", "+Corpus", "-Corpus", "@Corpus",
                      "=HYPERLINK(\"http://x\")", "+cmd", "-1", "@SUM(A1)"):
        assert dangerous not in cells and "'" + dangerous in cells
    assert "''quoted" in cells and "'''=double" in cells
    assert not any(cell[:1] in ("=", "+", "-", "@", "\t", "\r") for cell in cells)


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_the_command_output_is_byte_identical_to_the_admins_download(client, origin, fmt):
    client.force_login(user_ensure(username="export-admin", role=roles.ADMIN))
    assert command_export(ORIGIN, fmt).encode("utf-8") == download(client, ORIGIN, fmt)


def test_reimporting_the_export_into_its_own_study_changes_nothing(origin, tmp_path):
    before = list(Judgment.objects.values_list("id", "score", "version", "updated_at").order_by("id"))
    path = tmp_path / "judgments.csv"
    path.write_text(command_export(ORIGIN, "csv"), encoding="utf-8", newline="")
    out = io.StringIO()
    call_command("import_judgments", str(path), "--study", ORIGIN, "--create-study", stdout=out)
    assert f"0 judgments and 0 spans imported into existing study '{ORIGIN}'; {len(before)} unchanged" in out.getvalue()
    assert list(Judgment.objects.values_list("id", "score", "version", "updated_at").order_by("id")) == before


def test_reimporting_the_export_into_its_own_study_makes_nobody_a_member(origin, tmp_path):
    """An import that writes no judgment of a coder does not add them to the study: the gold rows' coder (whoever
    recorded the consensus, on the demo the admin) and coders who are not members stay out of it; before, each was
    added, the recorder as an expert, whose metric runs then listed them on the gold panel."""
    StudyMember.objects.create(study=origin, user=get_user_model().objects.get(username=CODERS[0]), role="reviewer")
    before = (list(StudyMember.objects.filter(study=origin).values_list("user__username", "role", "alias")),
              get_user_model().objects.count())
    path = tmp_path / "judgments.csv"
    path.write_text(command_export(ORIGIN, "csv"), encoding="utf-8", newline="")
    call_command("import_judgments", str(path), "--study", ORIGIN, "--create-study", stdout=io.StringIO())
    assert (list(StudyMember.objects.filter(study=origin).values_list("user__username", "role", "alias")),
            get_user_model().objects.count()) == before


def test_the_export_imported_into_its_emptied_study_gives_the_same_judgments_and_members(origin, tmp_path):
    """The documented way back (an export imported into the study emptied of its judgments) writes the gold rows
    again; their coder, whoever recorded the consensus ('+gold', no member), stays no member, and the reviewers, who
    were no members either, come in as reviewers. Before, a coder of gold rows only was added as an expert, whose
    metric runs then listed them among the experts."""
    before = list(judgment_rows(study=origin))
    path = tmp_path / "judgments.csv"
    path.write_text(command_export(ORIGIN, "csv"), encoding="utf-8", newline="")
    judgments_purge(judgments=Judgment.objects.filter(round__study=origin), by=None, reason="test: empty the study")
    call_command("import_judgments", str(path), "--study", ORIGIN, "--create-study", stdout=io.StringIO())
    assert list(judgment_rows(study=origin)) == before
    assert set(StudyMember.objects.filter(study=origin).values_list("user__username", "role")) == {
        (name, "reviewer") for name in CODERS}
