"""The LC8 data layer (docs/lc8.md, issue 16): ``lc8-v1`` installed by its migration and its ``lc8`` block validated;
the derived total refused as a judgment; session labels (methods' predictions per seed, reference labels) imported
all or nothing, idempotently and exactly as sent; reference labels blinded to human coders; session labels in the
long-format exports and back; the study settings."""

from __future__ import annotations

import copy
import io
import json

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management import CommandError, call_command

from annotation import automated_coders, judgment_import, long_format, rules, services, session_labels
from annotation.forms import StudySettingsForm
from annotation.models import AttributeDefinition, Schema, SessionLabel, Study, StudyMember
from annotation.schema_document import SchemaDocumentError, builtin_path, load_builtin, parse
from annotation.session_labels import session_labels_import
from audit.models import AuditEvent
from benchmark import conversation_ingest
from benchmark.models import Session
from common.errors import RowErrors
from tests.factories import RoundFactory, StudyFactory, StudyMemberFactory

pytestmark = pytest.mark.django_db

DATASET = "LC8-test"


def trajectory(conversation_id: str, sessions: int = 5) -> dict:
    turns = iter(range(1, 100))
    return {"dataset": DATASET, "conversation_id": conversation_id, "kind": "longitudinal", "topic": "Depression",
            "sessions": [{"index": s, "kind": "counseling", "crisis_type": None,
                          "turns": [{"index": next(turns), "client": f"Session {s}: I feel low.",
                                     "responses": [{"model": "Counselor", "text": "Tell me more."}]}
                                    for _ in range(2)]}
                         for s in range(1, sessions + 1)]}


def lc8_study(slug: str = "lc8-test", trajectories: int = 2, **fields) -> Study:
    """A study on lc8-v1 with ``trajectories`` five-session trajectories t1, t2, …"""
    study = StudyFactory(slug=slug, schema=Schema.objects.get(slug="lc8-v1"), model_slots=["Counselor"], **fields)
    records = [trajectory(f"t{i}") for i in range(1, trajectories + 1)]
    conversation_ingest.conversations_import(rows=list(enumerate(records, start=1)), study=study)
    return study


def row(conversation="t1", session=1, attribute="PHQ_TOTAL", score=7.0, reviewer="m-a", role="method",
        seed=None, **extra) -> dict:
    given = {"dataset": DATASET, "conversation_id": conversation, "session_index": session, "attribute": attribute,
             "score": score, "reviewer": reviewer, "role": role, **extra}
    if seed is not None:
        given["seed"] = seed
    return given


def errors_of(study, rows, **options) -> list[tuple[int, str, str]]:
    with pytest.raises(RowErrors) as caught:
        session_labels_import(study=study, rows=rows, by=None, **options)
    return [(e.row, e.field, e.message) for e in caught.value.errors]


def stored(study) -> dict[tuple, float]:
    return {(coder, seed, conversation, index, code): value for coder, seed, conversation, index, code, value in
            SessionLabel.objects.filter(study=study).values_list(
                "coder__user__username", "seed", "session__conversation__external_id", "session__index",
                "attribute__code", "value")}


@pytest.fixture
def study():
    study = lc8_study()
    automated_coders.method_register(study=study, name="m-a", version="1", by=None)
    automated_coders.method_register(study=study, name="m-b", version="1", by=None)
    automated_coders.reference_register(study=study, name="controlled", description="controlled PHQ-8 state", by=None)
    return study


# --- the schema -------------------------------------------------------------------------------------------------


def test_lc8_v1_is_installed_by_its_migration_with_its_lc8_block():
    schema = Schema.objects.get(slug="lc8-v1")
    lc8 = schema.definition["lc8"]
    assert lc8["items"] == [f"PHQ{i}" for i in range(1, 9)] and lc8["total"] == "PHQ_TOTAL"
    attributes = {a.code: a for a in schema.attributes.all()}
    assert set(lc8["items"]) | {"PHQ_TOTAL"} <= set(attributes)
    assert all(attributes[code].unit == "session" for code in [*lc8["items"], "PHQ_TOTAL"])
    assert [(attributes["PHQ1"].scale_min, attributes["PHQ1"].scale_max)] == [(0, 3)]
    assert (attributes["PHQ_TOTAL"].scale_min, attributes["PHQ_TOTAL"].scale_max) == (0, 24)
    assert len(attributes) == len(load_builtin("lc8-v1").attributes)


@pytest.mark.parametrize(("change", "message"), [
    (lambda lc8: lc8.update(items="PHQ1"), "lc8.items: a non-empty list of distinct attribute codes"),
    (lambda lc8: lc8["items"].append("PHQ9"), "lc8.items[8]: must name an attribute of this schema"),
    (lambda lc8: lc8.update(total="NOPE"), "lc8.total: must name an attribute of this schema"),
    (lambda lc8: lc8.update(derived=["PHQ1"]), "lc8.derived: an item cannot be derived (raters score the items)"),
    (lambda lc8: lc8.update(optional_groups=["nope"]), "lc8.optional_groups: a list of groups of this schema"),
    (lambda lc8: lc8.update(sessions=1), "lc8.sessions: a whole number of sessions per trajectory, at least 2"),
    (lambda lc8: lc8.update(large_change="5"), "lc8.large_change: must be a finite number"),
])
def test_a_wrong_lc8_block_is_refused_with_its_path(change, message):
    document = json.loads(builtin_path("lc8-v1").read_text(encoding="utf-8"))
    change(document["lc8"])
    with pytest.raises(SchemaDocumentError) as caught:
        parse(document)
    assert message in caught.value.errors


def test_an_lc8_attribute_must_be_coded_per_session():
    document = json.loads(builtin_path("lc8-v1").read_text(encoding="utf-8"))
    document["groups"].append({"code": "turnish", "name": "x", "unit": "turn"})
    next(a for a in document["attributes"] if a["code"] == "PHQ3")["group"] = "turnish"
    with pytest.raises(SchemaDocumentError) as caught:
        parse(document)
    assert "lc8.items[2]: PHQ3 must be coded once per session" in caught.value.errors


# --- the derived total is never a judgment -------------------------------------------------------------------------


def test_a_judgment_on_the_derived_total_is_refused_and_an_item_is_not(study, reviewer):
    total = AttributeDefinition.objects.get(schema__slug="lc8-v1", code="PHQ_TOTAL")
    item = AttributeDefinition.objects.get(schema__slug="lc8-v1", code="PHQ1")
    assert rules.derived_problem(total) == "PHQ_TOTAL is derived from PHQ1–PHQ8: send the items"
    assert rules.derived_problem(item) is None
    StudyMemberFactory(study=study, user=reviewer, role="reviewer")
    round_ = RoundFactory(study=study, kind="main", status="open")
    session = Session.objects.get(conversation__external_id="t1", index=1)
    with pytest.raises(ValidationError) as caught:
        services.judgment_save(round=round_, by=reviewer, attribute=total, score=7, session=session,
                               conversation=session.conversation)
    assert "PHQ_TOTAL is derived from PHQ1–PHQ8: send the items" in str(caught.value)


def test_the_judgments_import_refuses_the_derived_total_by_line_and_column(study, reviewer):
    RoundFactory(study=study, kind="main", status="open")
    StudyMemberFactory(study=study, user=reviewer, role="reviewer")
    line = {"study": study.slug, "round": "main", "reviewer": "reviewer", "is_gold": False, "dataset": DATASET,
            "conversation_id": "t1", "turn_index": None, "model": None, "attribute": "PHQ_TOTAL", "score": 7,
            "instance_count": None, "spans": [], "role": "reviewer", "session_index": 1}
    text = json.dumps(line) + "\n" + json.dumps(line | {"attribute": "PHQ1", "score": 2}) + "\n"
    with pytest.raises(RowErrors) as caught:
        judgment_import.judgments_import(rows=long_format.read_rows(io.StringIO(text), fmt="jsonl"),
                                         study_slug=study.slug, by=None)
    assert [(e.row, e.field, e.message) for e in caught.value.errors] == [
        (1, "attribute", "PHQ_TOTAL is derived from PHQ1–PHQ8: send the items")]


# --- session labels: the import ------------------------------------------------------------------------------------


def test_two_methods_three_seeds_are_stored_exactly_then_a_resend_is_unchanged_and_a_change_updated(study):
    values = {"m-a": [7.123456789, 25.5, -0.3], "m-b": [0.1 + 0.2, 1e-9, 24.000000000000004]}
    rows = [row(conversation=c, session=s, reviewer=name, seed=seed, score=values[name][seed] + s)
            for name in values for seed in range(3) for c in ("t1", "t2") for s in range(1, 6)]
    rows += [row(conversation="t1", session=2, attribute="PHQ3", score=2.75, reviewer="m-a", seed=0)]
    summary = session_labels_import(study=study, rows=rows, by=None)
    assert (summary.created, summary.updated, summary.unchanged) == (61, 0, 0)
    assert summary.coders == {"m-a": {"created": 31, "updated": 0, "unchanged": 0},
                              "m-b": {"created": 30, "updated": 0, "unchanged": 0}}
    labels = stored(study)
    assert labels[("m-a", 0, "t1", 1, "PHQ_TOTAL")] == 7.123456789 + 1  # the float as sent, bit for bit
    assert labels[("m-a", 1, "t2", 3, "PHQ_TOTAL")] == 25.5 + 3  # above the scale: not clipped
    assert labels[("m-a", 2, "t1", 1, "PHQ_TOTAL")] == -0.3 + 1
    assert labels[("m-b", 0, "t1", 1, "PHQ_TOTAL")] == 0.1 + 0.2 + 1
    assert labels[("m-b", 2, "t2", 5, "PHQ_TOTAL")] == 24.000000000000004 + 5
    assert labels[("m-a", 0, "t1", 2, "PHQ3")] == 2.75

    again = session_labels_import(study=study, rows=copy.deepcopy(rows), by=None)
    assert (again.created, again.updated, again.unchanged) == (0, 0, 61)
    changed = copy.deepcopy(rows)
    changed[0]["score"] = -0.3
    third = session_labels_import(study=study, rows=changed, by=None)
    assert (third.created, third.updated, third.unchanged) == (0, 1, 60)
    assert third.coders["m-a"] == {"created": 0, "updated": 1, "unchanged": 30}
    assert stored(study)[("m-a", 0, "t1", 1, "PHQ_TOTAL")] == -0.3
    events = AuditEvent.objects.filter(action="session_labels.import").order_by("id")
    assert [(e.data["created"], e.data["updated"], e.data["unchanged"]) for e in events] == [
        (61, 0, 0), (0, 0, 61), (0, 1, 60)]
    assert "7.123" not in json.dumps(events[0].data) and "t1" not in json.dumps(events[0].data)


def test_reference_labels_are_whole_numbers_on_the_scale_without_a_seed(study):
    summary = session_labels_import(study=study, rows=[
        row(reviewer="controlled", role="reference", score=12),
        row(reviewer="controlled", role="reference", score=3.0, attribute="PHQ2"),
    ], by=None)
    assert summary.created == 2
    assert stored(study)[("controlled", None, "t1", 1, "PHQ_TOTAL")] == 12.0


def test_every_wrong_row_is_reported_with_row_field_and_why_and_nothing_is_written(study):
    rows = [
        row(),  # right
        row(session=6),
        row(attribute="PHQ9"),
        row(score="7.5"),
        row(score=True),
        row(score=float("nan")),
        row(score=float("inf")),
        row(reviewer="controlled", role="reference", score=12, seed=1),
        row(reviewer="m-unknown"),
        row(reviewer="controlled", role="reference", attribute="PHQ1", score=1.5),
        row(reviewer="controlled", role="reference", attribute="PHQ1", score=4),
        row(conversation="t9"),
        row(attribute="COH"),
        row(role="reviewer"),
        row(seed="1"),
        row(session="2"),
        row(reviewer="m-a", role="reference"),
        row(round="main"),
        row(),  # a second label of the same session, attribute, coder and seed
        row(reviewer="controlled", role="reference", score=25),
        row(seed=2**31),
    ]
    assert errors_of(study, rows) == [
        (1, "session_index", "LC8-test/t1 has no session 6"),
        (2, "attribute", "'PHQ9' is not an attribute of this study's schema"),
        (3, "score", "must be a JSON number, not a string"),
        (4, "score", "must be a number, not true/false"),
        (5, "score", "must be a finite number, got nan"),
        (6, "score", "must be a finite number, got inf"),
        (7, "seed", "reference labels have no seed: leave it empty"),
        (8, "reviewer", "m-unknown is not a registered method coder of this study (register it first: POST "
                        "/api/v1/studies/lc8-test/methods/)"),
        (9, "score", "PHQ1: a reference label is a whole number from 0 to 3, got 1.5"),
        (10, "score", "PHQ1: a reference label is a whole number from 0 to 3, got 4.0"),
        (11, "conversation_id", "LC8-test/t9 is not imported as a history of sessions"),
        (12, "attribute", "COH is rated by people (a judgment), not a session label: labels are of the items and "
                          "total (PHQ1, PHQ2, PHQ3, PHQ4, PHQ5, PHQ6, PHQ7, PHQ8, PHQ_TOTAL)"),
        (13, "role", "'reviewer': session labels are a method's or the reference's (method or reference); "
                     "people's codes are judgments (the judgments import)"),
        (14, "seed", "must be a JSON number, not a string"),
        (15, "session_index", "must be a JSON number, not a string"),
        (16, "reviewer", "m-a is a method coder of this study, not a reference"),
        (17, "round", "a judgment (it names a round), not a session label: judgments are imported by the judgments "
                      "import (manage.py import_judgments, POST …/judgments/import/)"),
        (18, "attribute", "a second label of PHQ_TOTAL by m-a on this session (first on row 0)"),
        (19, "score", "PHQ_TOTAL: a reference label is a whole number from 0 to 24, got 25.0"),
        (20, "seed", "must be between -2147483648 and 2147483647"),
    ]
    assert not SessionLabel.objects.exists()
    assert not AuditEvent.objects.filter(action="session_labels.import").exists()


def test_an_archived_study_takes_no_labels(study):
    session_labels_import(study=study, rows=[row()], by=None)
    before = stored(study)
    Study.objects.filter(pk=study.pk).update(status=Study.Status.ARCHIVED)
    assert errors_of(study, [row(score=9.0), row(session=2)]) == [
        (0, "study", "study 'lc8-test' is archived: its judgments and labels no longer change")]
    assert stored(study) == before


def test_only_study_admins_import(study, reviewer):
    with pytest.raises(PermissionDenied):
        session_labels_import(study=study, rows=[row()], by=reviewer)
    assert not SessionLabel.objects.exists()


def test_an_empty_import_is_an_error(study):
    assert errors_of(study, []) == [(0, "rows", "no session label rows")]


def test_many_rows_take_a_few_queries(study, django_assert_max_num_queries):
    trajectories = [trajectory(f"big{i}") for i in range(200)]
    conversation_ingest.conversations_import(rows=list(enumerate(trajectories, start=1)), study=study)
    rows = [row(conversation=f"big{i}", session=s, reviewer=name, seed=seed, score=i + s / 7)
            for name in ("m-a", "m-b") for seed in range(3) for i in range(200) for s in range(1, 6)]
    with django_assert_max_num_queries(20):
        summary = session_labels_import(study=study, rows=rows, by=None)
    assert summary.created == 6000
    with django_assert_max_num_queries(20):
        assert session_labels_import(study=study, rows=rows, by=None).unchanged == 6000


# --- blinding -------------------------------------------------------------------------------------------------------


def test_reference_labels_are_blinded_to_human_coders_unless_the_study_shows_them(study, reviewer, admin_user,
                                                                                  researcher, outsider):
    StudyMemberFactory(study=study, user=reviewer, role="reviewer")
    session_labels_import(study=study, rows=[row(reviewer="controlled", role="reference", score=12), row()],
                          by=None)
    session_ids = list(Session.objects.filter(conversation__external_id="t1").values_list("pk", flat=True))
    assert study.reference_labels == "blinded"
    hidden = automated_coders.reference_labels_visible_to(user=reviewer, study=study, session_ids=session_ids)
    assert not hidden.exists()
    for staff in (admin_user, researcher):
        seen = automated_coders.reference_labels_visible_to(user=staff, study=study, session_ids=session_ids)
        assert [(label.coder.user.username, label.value) for label in seen] == [("controlled", 12.0)]
    services.study_settings_update(study=study, by=admin_user, reference_labels="shown")
    study.refresh_from_db()
    seen = automated_coders.reference_labels_visible_to(user=reviewer, study=study, session_ids=session_ids)
    assert [label.value for label in seen] == [12.0], "a method's prediction is never a reference label"
    assert not automated_coders.reference_labels_visible_to(user=outsider, study=study).exists()
    reference = StudyMember.objects.get(study=study, role="reference").user
    assert not automated_coders.reference_labels_visible_to(user=reference, study=study).exists()


def test_a_reference_coder_is_registered_idempotently_and_never_signs_in(study, admin_user):
    again = automated_coders.reference_register(study=study, name="controlled", description="controlled PHQ-8 state",
                                                by=admin_user)
    assert again.role == "reference" and not again.user.is_active and not again.user.has_usable_password()
    assert AuditEvent.objects.filter(action="reference.register").count() == 1
    with pytest.raises(ValidationError, match="m-a is a member of the study as method, not a reference coder"):
        automated_coders.reference_register(study=study, name="m-a", by=admin_user)
    with pytest.raises(ValidationError, match="is a person's account"):
        automated_coders.reference_register(study=study, name=admin_user.username, by=admin_user)


# --- exports ----------------------------------------------------------------------------------------------------


def test_the_export_carries_session_labels_with_their_seed_and_reads_back(study, tmp_path):
    rows = [row(conversation=c, session=s, reviewer=name, seed=seed, score=7.123456789 * seed - s / 3)
            for name in ("m-a", "m-b") for seed in (0, 1, 2) for c in ("t1", "t2") for s in range(1, 6)]
    rows += [row(conversation=c, session=s, reviewer="controlled", role="reference", score=s + 4)
             for c in ("t1", "t2") for s in range(1, 6)]
    session_labels_import(study=study, rows=rows, by=None)
    before = stored(study)
    jsonl = "".join(long_format.judgments_jsonl(study=study))
    lines = [json.loads(line) for line in jsonl.splitlines()]
    assert len(lines) == 70
    first = next(line for line in lines if line["reviewer"] == "m-a" and line["seed"] == 1)
    assert first == {"study": study.slug, "round": "", "reviewer": "m-a", "is_gold": False, "dataset": DATASET,
                     "conversation_id": "t1", "turn_index": None, "model": None, "attribute": "PHQ_TOTAL",
                     "score": 7.123456789 - 1 / 3, "instance_count": None, "spans": [], "role": "method",
                     "session_index": 1, "seed": 1}
    assert {line["seed"] for line in lines if line["role"] == "reference"} == {None}
    csv_text = "".join(long_format.judgments_csv(study=study))
    assert csv_text.splitlines()[0].endswith(",role,session_index,seed")

    SessionLabel.objects.all().delete()
    (tmp_path / "labels.jsonl").write_text(jsonl, encoding="utf-8")
    call_command("import_session_labels", str(tmp_path / "labels.jsonl"), study=study.slug, stdout=io.StringIO())
    assert stored(study) == before
    SessionLabel.objects.all().delete()
    (tmp_path / "labels.csv").write_text(csv_text, encoding="utf-8")
    out = io.StringIO()
    call_command("import_session_labels", str(tmp_path / "labels.csv"), study=study.slug, stdout=out)
    assert stored(study) == before, "CSV: the floats read back exactly"
    assert "70 session labels created" in out.getvalue()


def test_an_export_with_judgments_reads_back_skipping_them(study, reviewer, tmp_path):
    StudyMemberFactory(study=study, user=reviewer, role="reviewer")
    round_ = RoundFactory(study=study, kind="main", status="open")
    session = Session.objects.get(conversation__external_id="t1", index=1)
    item = AttributeDefinition.objects.get(schema__slug="lc8-v1", code="PHQ1")
    services.judgment_save(round=round_, by=reviewer, attribute=item, score=2, session=session,
                           conversation=session.conversation)
    session_labels_import(study=study, rows=[row(seed=4, score=9.5)], by=None)
    path = tmp_path / "all.jsonl"
    path.write_text("".join(long_format.judgments_jsonl(study=study)), encoding="utf-8")
    before = stored(study)
    with pytest.raises(CommandError) as refused:
        call_command("import_session_labels", str(path), study=study.slug, stdout=io.StringIO())
    assert str(refused.value).splitlines()[1:] == [
        f"line 1: round: {session_labels.JUDGMENT_ROW}",
        "1 of its rows are judgments (they name a round): a whole export? Import it whole with manage.py "
        "import_judgments (its judgments and session labels in one step), or run this again with --skip-judgments "
        "to import its session labels alone and count those rows as skipped.",
    ]
    assert stored(study) == before
    out = io.StringIO()
    call_command("import_session_labels", str(path), study=study.slug, skip_judgments=True, stdout=out)
    assert "0 session labels created, 0 updated, 1 unchanged" in out.getvalue()
    assert "1 judgment rows skipped" in out.getvalue()


def test_a_file_whose_name_says_no_format_is_refused_unless_format_says_it(study, tmp_path):
    """As `import_judgments` refuses it (common.file_formats): before, any name but .csv was read as JSON Lines."""
    session_labels_import(study=study, rows=[row()], by=None)
    path = tmp_path / "labels.txt"
    path.write_text("".join(long_format.judgments_csv(study=study)), encoding="utf-8")
    SessionLabel.objects.all().delete()
    with pytest.raises(CommandError) as refused:
        call_command("import_session_labels", str(path), study=study.slug, stdout=io.StringIO())
    assert str(refused.value) == (f"{path}: its name does not say its format (.csv, .jsonl or .ndjson): say it with "
                                  "--format csv|jsonl")
    assert not SessionLabel.objects.exists()
    call_command("import_session_labels", str(path), study=study.slug, format="csv", stdout=io.StringIO())
    assert SessionLabel.objects.count() == 1


def test_other_studies_exports_have_no_seed_column(db):
    other = StudyFactory(slug="plain")
    assert long_format.columns_for(other) == long_format.COLUMNS
    assert not session_labels.is_session_label_row({"round": "main", "role": "method"})


# --- settings -------------------------------------------------------------------------------------------------------


def test_the_lc8_settings_are_study_settings_and_optional_on_the_form(study, admin_user):
    changed = services.study_settings_update(study=study, by=admin_user, reference_labels="shown",
                                             session_history="hidden", session_order="blinded")
    assert changed == ["reference_labels", "session_history", "session_order"]
    assert AuditEvent.objects.filter(action="study.settings").latest("id").data["changed"] == {
        "reference_labels": "shown", "session_history": "hidden", "session_order": "blinded"}
    study.refresh_from_db()
    shown = services.study_settings_shown(study=study)
    data = {name: value for name, value in shown.items()
            if name not in ("reference_labels", "session_history", "session_order", "method_labels")}
    form = StudySettingsForm({**data, "shown": json.dumps(shown, default=str)}, instance=study)
    assert form.is_valid(), form.errors
    assert (form.cleaned_data["reference_labels"], form.cleaned_data["session_history"],
            form.cleaned_data["session_order"]) == ("shown", "hidden", "blinded")
    wrong = StudySettingsForm({**data, "session_order": "random"}, instance=study)
    assert not wrong.is_valid() and "session_order" in wrong.errors


def test_a_method_with_session_labels_keeps_its_version(study, admin_user):
    session_labels_import(study=study, rows=[row(seed=1)], by=None)
    with pytest.raises(ValidationError, match="method m-a already has labels"):
        automated_coders.method_register(study=study, name="m-a", version="2", by=admin_user)
    # no labels yet: a new version
    automated_coders.method_register(study=study, name="m-b", version="2", by=admin_user)
    assert StudyMember.objects.get(study=study, user__username="m-b").method_version == "2"


def test_text_cells_of_a_csv_file_are_read_as_numbers_and_a_row_names_its_study(study):
    summary = session_labels_import(study=study, rows=[row(score="7.25", seed="3", session="2")], by=None, typed=False)
    assert summary.created == 1 and stored(study)[("m-a", 3, "t1", 2, "PHQ_TOTAL")] == 7.25
    assert errors_of(study, [row(score="abc", seed="1.5")], typed=False) == [
        (0, "score", "must be a number, got 'abc'"), (0, "seed", "must be a whole number, got '1.5'")]
    assert errors_of(study, [row(study="other")]) == [
        (0, "study", "row is for study 'other', the import is into 'lc8-test'")]
