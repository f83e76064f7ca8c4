"""Schema ``care-v1`` and what it needs (docs/care-data.md#the-codings-of-care-v1): nominal scales and 0/1 flags in the
schema document, the ``session`` unit, checklist items edited by admins before a study opens, the judgment rules for
nominal values and session units, CARE labels in the long format (session_index, value labels, methods), blinding of
human coders to a method's labels, the CARE demo and the synthetic CARE generator."""

from __future__ import annotations

import copy
import io
import json

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management import CommandError, call_command
from django.db import IntegrityError, transaction

from annotation import automated_coders, checklists, judgment_import, long_format, rules, schema_document, services
from annotation.models import AttributeDefinition, Judgment, Schema, Study, StudyMember
from audit.models import AuditEvent
from benchmark import conversation_ingest
from benchmark.models import Session, Turn
from common.errors import RowErrors, jsonl_rows
from tests import form_fuzz
from tests.factories import RoundFactory, StudyFactory, StudyMemberFactory

pytestmark = pytest.mark.django_db

CARE = "care-v1"


def care_attribute(code: str) -> AttributeDefinition:
    return AttributeDefinition.objects.get(schema__slug=CARE, code=code)


def document() -> dict:
    return json.loads(schema_document.builtin_path("care-v1").read_text(encoding="utf-8"))


# --- the schema document --------------------------------------------------------------------------------------


def test_care_v1_is_installed_with_its_units_scales_and_checklist():
    schema = Schema.objects.get(slug=CARE)
    units = dict(schema.attributes.values_list("code", "unit"))
    assert units["marker"] == units["crisis"] == units["hold"] == "turn"
    assert units["strategy"] == units["horizon"] == units["safety_critical"] == "response"
    assert units["ask_safety"] == "session"
    marker = care_attribute("marker")
    assert (marker.level, marker.scale_min, marker.scale_max) == ("nominal", 0, 4)
    assert marker.scale_labels == {"0": "none", "1": "Acute", "2": "Settling", "3": "Open", "4": "Rebuilding"}
    assert marker.bucket == {str(v): v for v in range(5)}, "a nominal scale's categories are not merged"
    assert care_attribute("strategy").scale_labels["5"] == "providing suggestions"
    assert (care_attribute("hold").scale_min, care_attribute("hold").scale_max) == (0, 1)
    item = care_attribute("crisis_resources")
    assert (item.item_type, item.crisis_types) == ("required", ["SI", "self-harm"])
    assert schema.definition["care"]["states"] == ["Acute", "Settling", "Open", "Rebuilding"]
    assert schema_document.load_builtin(CARE).slug == CARE


def test_cab_v1_is_unchanged_by_the_new_document_features():
    doc = schema_document.load_builtin("cab-v1")
    assert [a.item_type for a in doc.attributes] == [""] * 20
    assert {a.unit for a in doc.attributes} == {"turn", "response"}


@pytest.mark.parametrize(("change", "error"), [
    (lambda d: d["attributes"][1]["scale"].update(values=["none"]),
     "attributes[marker].scale.values: must be a list of at least two non-empty strings"),
    (lambda d: d["attributes"][1]["scale"].update(values=["a", "a"]),
     "attributes[marker].scale.values: each value may appear once"),
    (lambda d: d["attributes"][1]["scale"].update(min=0, max=4),
     "attributes[marker].scale: give either values or min and max, not both"),
    (lambda d: d["attributes"][-1]["checklist"].update(type="nice"),
     "attributes[moralise].checklist.type: must be one of productive, unproductive, required"),
    (lambda d: d["attributes"][-1]["checklist"].update(crisis_types=["flu"]),
     "attributes[moralise].checklist.crisis_types: a list of distinct crisis types from SI, self-harm, anxiety "
     "(empty: every crisis type)"),
    (lambda d: d["attributes"][2].update(checklist={"type": "productive", "crisis_types": ["SI"]}),
     "attributes[ambiguous].checklist: checklist items are coded once per session (a group with unit session)"),
    (lambda d: d["care"].update(marker="strategy"), "care.marker: strategy must be coded once per turn"),
    (lambda d: d["care"].update(horizon="nope"), "care.horizon: must name an attribute of this schema"),
    (lambda d: d["care"].update(states=["Acute", "Calm"]),
     "care.states: the recovery states in order, each a value of the marker"),
    (lambda d: d.update(lc8={}), "care, lc8: a schema is of one study kind; give one of these blocks, not 2"),
    (lambda d: d["groups"][2].update(unit="episode"),
     "groups[2].unit: 'episode' is not one of turn, response, conversation, session"),
])
def test_a_wrong_care_document_names_the_path_and_why(change, error):
    doc = document()
    change(doc)
    with pytest.raises(schema_document.SchemaDocumentError) as caught:
        schema_document.parse(doc)
    assert error in caught.value.errors, caught.value.errors


def test_anchors_of_a_values_scale_may_be_keyed_by_value():
    marker = care_attribute("marker")
    assert marker.anchors["3"].startswith("Able to reflect")


# --- the judgment rules -------------------------------------------------------------------------------------------


def test_nominal_values_by_label_and_their_messages():
    marker = care_attribute("marker")
    assert rules.nominal_score(marker, "Open") == 3
    assert rules.nominal_score(marker, " Rebuilding ") == 4
    assert rules.nominal_score(marker, "open") == "open", "labels are exact"
    assert rules.score_problem(marker, 3, required=True) is None
    values = "0 none, 1 Acute, 2 Settling, 3 Open, 4 Rebuilding"
    assert rules.score_problem(marker, 7, required=True) == f"marker: score 7 is not one of its values ({values})"
    assert rules.score_problem(marker, "open", required=True) == f"marker: 'open' is not one of its values ({values})"
    au = AttributeDefinition.objects.get(schema__slug="cab-v1", code="U1")
    assert rules.nominal_score(au, "1") == "1", "ordinal scales take numbers only"


def test_session_units_in_the_rules():
    item, marker = care_attribute("ask_safety"), care_attribute("marker")
    ok = {"has_turn": False, "has_response": False, "has_session": True}
    assert rules.unit_problem(item, **ok) is None
    assert rules.unit_problem(item, has_turn=True, has_response=False, has_session=True) == (
        "ask_safety is coded once per session: give the session and neither a turn nor a model response")
    assert rules.unit_problem(item, has_turn=False, has_response=False) == (
        "ask_safety is coded once per session: give the session and neither a turn nor a model response")
    assert rules.unit_problem(marker, has_turn=True, has_response=False, has_session=True) == (
        "marker is not coded per session: give no session")
    assert rules.units_of(item, ["r1"]) == []
    assert rules.judgment_problems(attribute=item, score=1, score_required=True, **ok) == {}


# --- checklist items ------------------------------------------------------------------------------------------


@pytest.fixture
def draft_schema(admin_user):
    """A copy of care-v1 that no study uses yet."""
    doc = document() | {"slug": "care-draft"}
    return services.schema_install(document=doc, by=admin_user)


def test_an_admin_adds_edits_and_removes_a_checklist_item(draft_schema, admin_user):
    item = checklists.checklist_item_save(schema=draft_schema, item_id="names_feelings",
                                          text="Names the user's feelings", item_type="productive",
                                          crisis_types=["anxiety"], by=admin_user)
    assert (item.unit, item.group, item.scale_min, item.scale_max, item.level) == ("session", "checklist", 0, 1,
                                                                                   "nominal")
    assert item.position == draft_schema.attributes.count() - 1
    edited = checklists.checklist_item_save(schema=draft_schema, item_id="names_feelings", text="Names feelings",
                                            item_type="required", crisis_types=["anxiety", "SI"], by=admin_user)
    assert (edited.pk, edited.name, edited.item_type, edited.crisis_types) == (item.pk, "Names feelings", "required",
                                                                               ["anxiety", "SI"])
    assert "names_feelings" in [i.code for i in checklists.checklist_items(schema=draft_schema)]
    checklists.checklist_item_remove(schema=draft_schema, item_id="names_feelings", by=admin_user)
    assert not draft_schema.attributes.filter(code="names_feelings").exists()
    actions = list(AuditEvent.objects.filter(target="schema:care-draft").values_list("action", flat=True))
    assert actions.count("checklist.item_save") == 2 and "checklist.item_remove" in actions


def test_saving_the_same_item_twice_records_nothing(draft_schema, admin_user):
    kwargs = {"schema": draft_schema, "item_id": "x1", "text": "X", "item_type": "productive",
              "crisis_types": ["SI"], "by": admin_user}
    checklists.checklist_item_save(**kwargs)
    before = AuditEvent.objects.count()
    checklists.checklist_item_save(**kwargs)
    assert AuditEvent.objects.count() == before


def test_a_wrong_checklist_item_is_refused_by_field(draft_schema, admin_user):
    with pytest.raises(ValidationError) as caught:
        checklists.checklist_item_save(schema=draft_schema, item_id="9 bad", text=" ", item_type="good",
                                       crisis_types=["SI", "SI"], by=admin_user)
    assert set(caught.value.message_dict) == {"item_id", "text", "item_type", "crisis_types"}
    with pytest.raises(ValidationError, match="marker is an attribute of the schema that is no checklist item"):
        checklists.checklist_item_save(schema=draft_schema, item_id="marker", text="M", item_type="productive",
                                       crisis_types=["SI"], by=admin_user)


def test_checklist_items_are_frozen_once_a_study_opens(draft_schema, admin_user):
    StudyFactory(schema=draft_schema, status=Study.Status.OPEN)
    with pytest.raises(ValidationError, match="schema care-draft is frozen: a study using it is open"):
        checklists.checklist_item_save(schema=draft_schema, item_id="ask_safety", text="Asks", item_type="required",
                                       crisis_types=["SI"], by=admin_user)
    with pytest.raises(ValidationError, match="frozen"):
        checklists.checklist_item_remove(schema=draft_schema, item_id="ask_safety", by=admin_user)


def test_only_admins_edit_checklists(draft_schema, reviewer):
    with pytest.raises(PermissionDenied):
        checklists.checklist_item_save(schema=draft_schema, item_id="x", text="X", item_type="productive",
                                       crisis_types=["SI"], by=reviewer)


def test_the_django_admin_checks_checklist_items(client, draft_schema, db):
    superuser = get_user_model().objects.create_superuser("root", password="pw-for-tests")  # noqa: S106
    client.force_login(superuser)
    item = draft_schema.attributes.get(code="moralise")
    page = client.get(f"/admin/annotation/attributedefinition/{item.pk}/change/")
    assert page.status_code == 200 and 'name="item_type"' in page.content.decode()


# --- CARE labels in the long format, methods and blinding -------------------------------------------------------


def care_demo_rows() -> list[dict]:
    from care.demo import CARE_DEMO_JUDGE_FILE

    return [json.loads(line) for line in CARE_DEMO_JUDGE_FILE.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def care_study(admin_user):
    from care.demo import CARE_DEMO_FILE

    study = StudyFactory(slug="care-demo", schema=Schema.objects.get(slug=CARE), model_slots=["Assistant"])
    with CARE_DEMO_FILE.open(encoding="utf-8") as stream:
        conversation_ingest.conversations_import(rows=list(jsonl_rows(stream)), study=study)
    return study


def import_rows(study: Study, rows: list[dict], by=None):
    return judgment_import.judgments_import(rows=list(enumerate(rows, start=1)), study_slug=study.slug, by=by)


def errors(study: Study, rows: list[dict]) -> list[tuple[int, str, str]]:
    with pytest.raises(RowErrors) as caught:
        import_rows(study, rows)
    return [(e.row, e.field, e.message) for e in caught.value.errors]


def test_a_registered_methods_labels_import_with_session_units_and_value_labels(care_study, admin_user):
    automated_coders.method_register(study=care_study, name="demo-care-judge", version="v1", prompt_id="p1",
                                     by=admin_user)
    summary = import_rows(care_study, care_demo_rows(), by=admin_user)
    assert summary.judgments_created == 108
    judge = StudyMember.objects.get(study=care_study, user__username="demo-care-judge")
    assert (judge.role, judge.method_version, judge.method_prompt_id) == ("method", "v1", "p1")
    assert not judge.user.is_active and not judge.user.has_usable_password()
    marker = Judgment.objects.get(attribute__code="marker", turn__index=8)
    assert marker.score == 3 and marker.session_id is None and marker.response_id is None
    item = Judgment.objects.get(attribute__code="crisis_resources", session__index=5)
    assert item.score == 0 and item.turn_id is None and item.session.kind == "callback"
    strategy = Judgment.objects.get(attribute__code="strategy", turn__index=13)
    assert strategy.response.model_slot == "Assistant" and strategy.score == 5
    again = import_rows(care_study, care_demo_rows(), by=admin_user)
    assert (again.judgments_created, again.judgments_unchanged) == (0, 108)


def test_the_export_carries_session_index_and_the_method_role_and_reads_back(care_study, admin_user):
    automated_coders.method_register(study=care_study, name="demo-care-judge", by=admin_user)
    import_rows(care_study, care_demo_rows(), by=admin_user)
    study = Study.objects.select_related("schema").get(pk=care_study.pk)
    rows = list(long_format.judgment_rows(study=study))
    assert {r["role"] for r in rows} == {"method"}
    session_rows = [r for r in rows if r["attribute"] == "ask_safety"]
    assert [(r["session_index"], r["turn_index"], r["model"]) for r in session_rows] == [(3, None, None),
                                                                                         (5, None, None)]
    assert {r["session_index"] for r in rows if r["turn_index"] == 12} == {5}
    text = "".join(long_format.judgments_csv(study=study))
    header = next(iter(text.splitlines()))
    assert header.split(",") == [*long_format.COLUMNS, "session_index"]
    copy_study = StudyFactory(slug="care-copy", schema=study.schema, model_slots=["Assistant"])
    automated_coders.method_register(study=copy_study, name="demo-care-judge", by=admin_user)
    reread = list(long_format.read_rows(io.StringIO(text.replace("\ncare-demo,", "\ncare-copy,"), newline=""),
                                        fmt="csv"))
    assert judgment_import.judgments_import(rows=reread, study_slug="care-copy", by=admin_user).judgments_created == 108


def test_cab_exports_keep_their_columns(care_study):
    cab = Study.objects.select_related("schema").get(pk=StudyFactory().pk)
    assert long_format.columns_for(cab) == long_format.COLUMNS


def row(**overrides) -> dict:
    base = {"study": "care-demo", "round": "main", "reviewer": "judge", "is_gold": False, "role": "method",
            "dataset": "CARE-demo", "conversation_id": "care-demo-1", "session_index": 3, "turn_index": 5,
            "model": None, "attribute": "marker", "score": "Acute", "instance_count": None, "spans": []}
    return base | overrides


@pytest.mark.parametrize(("bad", "field", "message"), [
    ({"score": "acute"}, "score", "marker: 'acute' is not one of its values (0 none, 1 Acute, 2 Settling, 3 Open, "
                                  "4 Rebuilding)"),
    ({"score": 9}, "score", "marker: score 9 is not one of its values (0 none, 1 Acute, 2 Settling, 3 Open, "
                            "4 Rebuilding)"),
    ({"session_index": 2}, "session_index", "turn 5 of CARE-demo/care-demo-1 is in session 3, not 2"),
    ({"session_index": 9}, "session_index", "CARE-demo/care-demo-1 has no session 9"),
    ({"session_index": 0}, "session_index", "must be 1 or more"),
    ({"attribute": "ask_safety", "turn_index": None, "session_index": None, "score": 1}, "session_index", "required"),
    ({"attribute": "ask_safety", "turn_index": 9, "score": 1}, "session_index",
     "turn 9 of CARE-demo/care-demo-1 is in session 4, not 3"),
    ({"attribute": "strategy", "score": "question"}, "model",
     "strategy is coded once per model response: a model response is required"),
    ({"reviewer": "unregistered"}, "role", "must be reviewer or expert: method is only for a method registered in "
                                           "the study, with its version and prompt id, and unregistered is not one"),
])
def test_a_wrong_care_label_is_named_by_line_and_field_and_nothing_is_written(care_study, admin_user, bad, field,
                                                                              message):
    automated_coders.method_register(study=care_study, name="judge", by=admin_user)
    assert errors(care_study, [row(attribute="crisis", score="SI"), row() | bad]) == [(2, field, message)]
    assert not Judgment.objects.exists()


def test_a_second_label_of_one_session_item_is_refused(care_study, admin_user):
    automated_coders.method_register(study=care_study, name="judge", by=admin_user)
    item = {"attribute": "ask_safety", "turn_index": None, "score": 1}
    assert [e[1] for e in errors(care_study, [row() | item, row() | item])] == ["attribute"]


def test_the_database_refuses_a_session_judgment_with_a_turn(care_study, admin_user):
    automated_coders.method_register(study=care_study, name="judge", by=admin_user)
    import_rows(care_study, [row(attribute="ask_safety", turn_index=None, score=1)])
    judgment = Judgment.objects.get()
    with pytest.raises(IntegrityError), transaction.atomic():
        Judgment.objects.filter(pk=judgment.pk).update(turn=Turn.objects.get(index=5))


def test_a_method_needs_a_name_of_its_own(care_study, admin_user, reviewer):
    with pytest.raises(ValidationError, match="is a person's account"):
        automated_coders.method_register(study=care_study, name=reviewer.username, by=admin_user)
    automated_coders.method_register(study=care_study, name="judge", version="1", by=admin_user)
    # no labels yet: updated
    automated_coders.method_register(study=care_study, name="judge", version="2", by=admin_user)
    import_rows(care_study, [row()])
    with pytest.raises(ValidationError, match="register the new version under a new name"):
        automated_coders.method_register(study=care_study, name="judge", version="3", by=admin_user)


@pytest.fixture
def judged(care_study, admin_user, reviewer, other_reviewer):
    StudyMemberFactory(study=care_study, user=reviewer, role="reviewer")
    automated_coders.method_register(study=care_study, name="demo-care-judge", by=admin_user)
    import_rows(care_study, care_demo_rows(), by=admin_user)
    return care_study


def test_a_blinded_human_never_sees_a_methods_labels(judged, reviewer, other_reviewer, admin_user, researcher):
    assert judged.method_labels == Study.MethodLabels.BLINDED, "blinded unless the study says otherwise"
    assert not automated_coders.method_labels_visible_to(user=reviewer, study=judged).exists()
    assert automated_coders.method_labels_visible_to(user=admin_user, study=judged).count() == 108
    assert automated_coders.method_labels_visible_to(user=researcher, study=judged).count() == 108


def test_shown_method_labels_reach_the_studys_human_coders_only(judged, reviewer, other_reviewer, admin_user):
    assert services.study_method_labels_set(study=judged, value="shown", by=admin_user) is True
    turn = Turn.objects.get(index=8)
    shown = automated_coders.method_labels_visible_to(user=reviewer, study=judged, turn_ids=[turn.pk])
    assert {j.attribute.code for j in shown} == {"crisis", "marker", "request", "ambiguous", "sudden", "hold",
                                                 "reactance", "strategy", "horizon", "safety_critical"}
    callback = Session.objects.filter(index=5).values_list("pk", flat=True)
    sessions = automated_coders.method_labels_visible_to(user=reviewer, study=judged, session_ids=callback)
    assert sessions.count() == 9
    assert not automated_coders.method_labels_visible_to(user=other_reviewer, study=judged).exists(), "not a member"
    assert services.study_method_labels_set(study=judged, value="shown", by=admin_user) is False
    with pytest.raises(ValidationError):
        services.study_method_labels_set(study=judged, value="sometimes", by=admin_user)
    with pytest.raises(PermissionDenied):
        services.study_method_labels_set(study=judged, value="blinded", by=reviewer)


def test_the_judgments_api_never_lists_a_methods_labels_to_a_human(judged, reviewer, as_token):
    api = as_token(reviewer, scopes=["read"])
    response = api.get("/api/v1/studies/care-demo/judgments/")
    assert response.status_code == 200 and response.json()["results"] == []


# --- demo and generator -----------------------------------------------------------------------------------------


def test_load_demo_care_loads_the_synthetic_history_and_the_judge_idempotently(capsys):
    call_command("load_demo", "--care")
    assert "care-demo" in capsys.readouterr().out
    study = Study.objects.get(slug="care-demo")
    assert study.schema.slug == CARE and study.is_synthetic and "SYNTHETIC" in study.description
    sessions = list(Session.objects.filter(conversation__study=study).values_list("index", "kind", "crisis_type"))
    assert sessions == [(1, "chat", None), (2, "chat", None), (3, "crisis", "SI"), (4, "chat", None),
                        (5, "callback", "SI")]
    assert Judgment.objects.filter(round__study=study).count() == 108
    assert StudyMember.objects.get(study=study, user__username="demo-care-judge").role == "method"
    snapshot = (Judgment.objects.count(), Session.objects.count(), Turn.objects.count(), AuditEvent.objects.count())
    call_command("load_demo", "--care", "--quiet")
    assert (Judgment.objects.count(), Session.objects.count(), Turn.objects.count(),
            AuditEvent.objects.count()) == snapshot


def test_load_demo_without_care_loads_no_care_study():
    call_command("load_demo", "--quiet")
    assert not Study.objects.filter(slug="care-demo").exists() and not Session.objects.exists()


def test_generate_care_synthetic_builds_a_labelled_study_through_the_importers():
    out = io.StringIO()
    call_command("generate_care_synthetic", "--histories", "6", "--seed", "3", "--slug", "care-gen", stdout=out)
    assert "[SYNTHETIC] CARE study 'care-gen': 6 histories" in out.getvalue()
    study = Study.objects.get(slug="care-gen")
    assert study.is_synthetic and study.schema.slug == CARE and study.model_slots == ["Model-A", "Model-B"]
    roles = dict(StudyMember.objects.filter(study=study).values_list("user__username", "role"))
    assert roles == {"care-gen-judge": "method", "care-gen-h1": "reviewer", "care-gen-h2": "reviewer"}
    coded = Judgment.objects.filter(round__study=study)
    assert coded.filter(session__isnull=False).exists() and coded.filter(response__isnull=False).exists()
    assert set(Session.objects.filter(conversation__study=study).values_list("kind", flat=True)) <= {
        "chat", "crisis", "callback"}
    with pytest.raises(CommandError, match="exists already"):
        call_command("generate_care_synthetic", "--histories", "2", "--slug", "care-gen")



@pytest.mark.parametrize(("slug", "message"), form_fuzz.REFUSED_SLUGS)
def test_generate_care_synthetic_refuses_a_slug_no_study_may_have_without_writing(slug, message):
    assert form_fuzz.command_refusal("generate_care_synthetic", "--histories", "2", "--slug", slug) == \
        f"--slug: {message}"

def test_a_history_record_round_trips_through_a_copy():
    """The demo file is a valid sessions-form record (and stays one when copied)."""
    from care.demo import CARE_DEMO_FILE

    record = json.loads(CARE_DEMO_FILE.read_text(encoding="utf-8"))
    summary = conversation_ingest.conversations_import(rows=[(1, copy.deepcopy(record))])
    assert (summary.sessions_created, summary.turns_created) == (5, 13)
    assert RoundFactory  # factories stay importable for the shared fixtures
