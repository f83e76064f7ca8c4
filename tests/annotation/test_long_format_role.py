"""The long format's ``role`` column (docs/reference.md#long-format-of-judgments): written by every export from the
coder's membership of the study, read by the importer (optional, ``reviewer`` by default; gold rows are the experts'),
and round-tripped."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from access import roles
from access.services import user_ensure
from annotation import long_format
from annotation.long_format import COLUMNS, judgment_rows
from annotation.models import Judgment, Study, StudyMember
from benchmark import conversation_ingest
from benchmark.demo import demo_records
from tests.annotation.test_long_format import slice_queries
from tests.factories import StudyFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def conversations():
    conversation_ingest.conversations_import(rows=enumerate(demo_records(), start=1))


@pytest.fixture
def origin():
    call_command("generate_synthetic", "--conversations", "8", "--reviewers", "3", "--seed", "4",
                 "--calibration-turns", "1", "--slug", "origin", "--span-rate", "1")
    return Study.objects.get(slug="origin")


def row(**overrides):
    base = {
        "study": "imported", "round": "calibration-1", "reviewer": "alice", "is_gold": False,
        "dataset": "CounselChat", "conversation_id": "appendix-d-1", "turn_index": 1, "model": None,
        "attribute": "U1", "score": 1, "instance_count": None, "spans": [],
    }
    return base | overrides


def import_jsonl(tmp_path, rows, slug="imported"):
    path = tmp_path / "judgments.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    call_command("import_judgments", str(path), "--study", slug, "--create-study")


def membership(slug):
    return dict(StudyMember.objects.filter(study__slug=slug).values_list("user__username", "role"))


def test_role_is_a_long_format_column_that_a_file_may_leave_out():
    assert COLUMNS[-1] == "role"
    assert "role" in long_format.OMITTABLE_COLUMNS and "role" in long_format.OPTIONAL_COLUMNS
    assert long_format.ROLES == ("reviewer", "expert")


def test_export_says_expert_for_expert_members_and_gold_rows_reviewer_for_everyone_else(origin):
    rows = list(judgment_rows(study=origin))
    roles_by_coder = {(r["reviewer"], r["is_gold"], r["role"]) for r in rows}
    assert roles_by_coder == {
        ("origin-e1", True, "expert"), ("origin-e1", False, "expert"), ("origin-e2", False, "expert"),
        *(((f"origin-r0{i}", False, "reviewer")) for i in (1, 2, 3)),
    }
    out = io.StringIO()
    call_command("export_judgments", "--study", "origin", "--format", "csv", stdout=out)
    records = list(csv.DictReader(io.StringIO(out.getvalue(), newline="")))
    assert tuple(records[0]) == COLUMNS
    assert [r["role"] for r in records] == [r["role"] for r in rows]


def test_a_coder_who_is_no_member_of_the_study_is_a_reviewer(conversations, tmp_path):
    import_jsonl(tmp_path, [row()])
    StudyMember.objects.filter(study__slug="imported").delete()
    assert [r["role"] for r in judgment_rows(study=Study.objects.get(slug="imported"))] == ["reviewer"]


def test_the_role_costs_the_export_no_query(origin, monkeypatch):
    monkeypatch.setattr(long_format, "JUDGMENT_ROWS_BATCH", 7)
    with CaptureQueriesContext(connection) as captured:
        rows = list(judgment_rows(study=origin))
    batches = -(-len(rows) // 7)
    # the slices (the members' roles read once, per round its coders and a cursor per coder) and the spans of each
    # batch: nothing per row, nothing per row for the role
    assert len(captured) == slice_queries(origin) + batches, [q["sql"][:80] for q in captured]


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_the_role_round_trips_through_export_and_import(origin, tmp_path, fmt):
    out = io.StringIO()
    call_command("export_judgments", "--study", "origin", "--format", fmt, stdout=out)
    if fmt == "csv":
        text = out.getvalue().replace("\norigin,", "\ncopy,")
    else:
        text = "".join(json.dumps(json.loads(line) | {"study": "copy"}) + "\n" for line in out.getvalue().splitlines())
    assert "expert" in text
    path = tmp_path / f"export.{fmt}"
    path.write_text(text, encoding="utf-8")
    call_command("import_judgments", str(path), "--study", "copy", "--create-study")

    def normalised(slug):
        return [r | {"study": None} for r in judgment_rows(study=Study.objects.get(slug=slug))]

    assert normalised("copy") == normalised("origin")
    assert membership("copy") == membership("origin")
    assert membership("copy")["origin-e2"] == "expert" and membership("copy")["origin-r01"] == "reviewer"


def test_a_new_account_and_membership_take_the_files_role(conversations, tmp_path):
    import_jsonl(tmp_path, [
        row(reviewer="erin", role="expert"),
        row(reviewer="rita", role="reviewer"),
        row(reviewer="nora"),  # left out: reviewer
        row(reviewer="gold", is_gold=True, role=""),  # a gold row's recorder: an expert's account, no member
    ])
    assert membership("imported") == {"erin": "expert", "rita": "reviewer", "nora": "reviewer"}
    groups = {u.username: u.groups.get().name for u in get_user_model().objects.filter(
        username__in=["erin", "rita", "nora", "gold"])}
    assert groups == {"erin": "expert", "rita": "reviewer", "nora": "reviewer", "gold": "expert"}
    rows = {r["reviewer"]: r["role"] for r in judgment_rows(study=Study.objects.get(slug="imported"))}
    assert rows == {"erin": "expert", "rita": "reviewer", "nora": "reviewer", "gold": "expert"}


def test_an_existing_account_keeps_its_groups_but_joins_in_the_files_role(conversations, tmp_path):
    user_ensure(username="erin", role=roles.REVIEWER)
    import_jsonl(tmp_path, [row(reviewer="erin", role="expert")])
    assert membership("imported") == {"erin": "expert"}
    assert list(get_user_model().objects.get(username="erin").groups.values_list("name", flat=True)) == ["reviewer"]


def test_a_member_whose_rows_leave_the_role_out_keeps_their_role(conversations, tmp_path):
    study = StudyFactory(slug="imported")
    StudyMember.objects.create(study=study, user=user_ensure(username="erin", role=roles.EXPERT), role="expert")
    import_jsonl(tmp_path, [row(reviewer="erin")])
    assert membership("imported") == {"erin": "expert"}
    assert Judgment.objects.get().coder.username == "erin"


def refused(tmp_path, rows, slug="imported") -> str:
    with pytest.raises(CommandError) as caught:
        import_jsonl(tmp_path, rows, slug)
    return str(caught.value)


@pytest.mark.parametrize(("bad", "message"), [
    ({"role": "boss"}, "line 2: role: must be reviewer or expert, got 'boss'"),
    ({"role": "Expert"}, "line 2: role: must be reviewer or expert"),
    ({"role": 1}, "line 2: role: must be reviewer or expert"),
    ({"role": "method"}, "line 2: role: must be reviewer or expert"),
    ({"role": "reviewer", "is_gold": True, "reviewer": "gold"},
     "line 2: role: a gold row is the expert panel's consensus: role must be expert or empty"),
])
def test_a_bad_role_is_a_row_error_and_nothing_is_written(conversations, tmp_path, bad, message):
    text = refused(tmp_path, [row(reviewer="carol"), row() | bad])
    assert message in text, text
    assert not Study.objects.filter(slug="imported").exists()
    assert not Judgment.objects.exists()
    assert not get_user_model().objects.filter(username__in=["carol", "alice", "gold"]).exists()


def test_one_coder_with_two_roles_in_a_file_is_refused(conversations, tmp_path):
    text = refused(tmp_path, [row(role="reviewer"), row(attribute="U2", role="expert")])
    assert "line 2: role: alice is reviewer on line 1: a coder has one role in a study" in text, text
    assert not Judgment.objects.exists() and not Study.objects.filter(slug="imported").exists()


def test_a_row_never_changes_a_members_role(conversations, tmp_path):
    study = StudyFactory(slug="imported")
    StudyMember.objects.create(study=study, user=user_ensure(username="alice", role=roles.REVIEWER), role="reviewer")
    text = refused(tmp_path, [row(reviewer="bob"), row(role="expert")])
    assert "line 2: role: alice is a member of the study as reviewer; an import never changes a member's role" in text
    assert membership("imported") == {"alice": "reviewer"}
    assert not Judgment.objects.exists()
    assert not get_user_model().objects.filter(username="bob").exists()


def test_a_csv_without_the_role_column_still_imports(conversations, tmp_path):
    path = tmp_path / "judgments.csv"
    columns = [c for c in COLUMNS if c != "role"]
    with path.open("w", newline="", encoding="utf-8") as stream:
        writer = csv.DictWriter(stream, fieldnames=columns)
        writer.writeheader()
        writer.writerow(row() | {"is_gold": "false", "model": "", "spans": "", "instance_count": ""})
    call_command("import_judgments", str(path), "--study", "imported", "--create-study")
    assert membership("imported") == {"alice": "reviewer"}
