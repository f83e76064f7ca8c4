"""A CARE study's reference coding (docs/care.md#the-reference-coding): a study setting (``care.kind.REFERENCE_CODING``,
an ``annotation.kinds.CoderSetting`` stored in ``Study.kind_settings``) whose value is one of the study's experts,
reviewers or methods, chosen on the settings page alone (a new study has no coders), audited, checked by the settings
service against the study's coders; the next run takes that coder's codings as the reference and says so
(``care.parameters.reference_coding``), the bundle carries it and recomputes byte for byte, a chosen coder with no
codings gives an empty reference and a warning, and gold codings still win.

The study is the CARE demo (the judge's labels, a method) with the demo reviewer's codes of the turns
(``tests/care/test_inputs.py``): by default the reviewer's codings are the reference (no expert has coded)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from django.core.exceptions import ValidationError
from django.test import Client, override_settings
from django.urls import reverse
from rest_framework.test import APIClient

from access import roles
from access.services import user_ensure
from annotation import automated_coders, judgment_import, services
from annotation.forms import StudyForm
from annotation.kinds import kind_of
from annotation.models import Schema, Study, StudyMember
from audit.models import AuditEvent
from care import inputs as loader
from care.core.rows import GOLD, REFERENCE_ROLES, CareJudgmentRow, care_inputs_from_rows
from care.demo import CARE_DEMO_JUDGE, CARE_DEMO_STUDY, care_demo_load
from care.kind import QUALITY_SCOPE, REFERENCE_CODING
from tests import form_fuzz
from tests.care.settings_page import settings_page
from tests.care.test_inputs import CONVERSATION, HUMAN, JUDGE_AND_HUMAN, _human_rows, few_histories_said
from tests.reports.test_bundle_kinds import _bundled, _recompute_without_django

pytestmark = pytest.mark.django_db
EXPERT = "demo-expert"  # a member of the demo who has coded nothing


@pytest.fixture(autouse=True)
def bundle_dir(tmp_path):
    with override_settings(BUNDLE_DIR=str(tmp_path / "bundles")):
        yield


@pytest.fixture
def admin():
    return user_ensure(username="demo-admin", role=roles.ADMIN)


@pytest.fixture
def study(admin) -> Study:
    care_demo_load(admin=admin, reviewer=user_ensure(username=HUMAN, role=roles.REVIEWER),
                   expert=user_ensure(username=EXPERT, role=roles.EXPERT))
    judgment_import.judgments_import(rows=enumerate(_human_rows(), start=1), study_slug=CARE_DEMO_STUDY, by=None)
    return Study.objects.select_related("schema").get(slug=CARE_DEMO_STUDY)


def test_the_setting_is_cares_and_its_roles_are_the_cores(study):
    assert REFERENCE_CODING.roles == REFERENCE_ROLES
    assert kind_of(study).settings == (QUALITY_SCOPE, REFERENCE_CODING)
    assert services.study_settings_shown(study=study)["reference_coding"] == ""


def test_the_chosen_coder_is_the_reference_of_the_next_run_and_its_bundle_recomputes(study, admin, tmp_path):
    first = _bundled(study)
    default = json.loads(first["report.json"])["care"]
    assert default["reference"] == HUMAN
    assert default["parameters"] == {"quality_scope": "episode_sessions"}
    assert "reference_judgments" not in default["input"]
    assert "reference_coding" not in json.loads(first["run.json"])["care"]  # as before it was a setting

    client, url, posted = settings_page(admin)
    choices = dict(client.get(url).context["form"].fields["reference_coding"].choices)
    assert set(choices) == {"", CARE_DEMO_JUDGE, EXPERT, HUMAN}
    assert choices[HUMAN] == f"{HUMAN} (reviewer)"
    assert posted["reference_coding"] == ""
    assert client.post(url, posted | {"reference_coding": CARE_DEMO_JUDGE}).status_code == 302
    study.refresh_from_db()
    assert study.kind_settings == {"reference_coding": CARE_DEMO_JUDGE}
    event = AuditEvent.objects.filter(action="study.settings").latest("pk")
    assert (event.actor, event.data) == (admin, {"changed": {"reference_coding": CARE_DEMO_JUDGE}})

    second = _bundled(study)
    report = json.loads(second["report.json"])
    care = report["care"]
    assert care["reference"] == CARE_DEMO_JUDGE
    assert care["parameters"] == {"quality_scope": "episode_sessions", "reference_coding": CARE_DEMO_JUDGE}
    # the judge's 108 codes are the reference coding's (tests/care/test_inputs.py counts them)
    assert care["input"]["reference_judgments"] == 108
    # the judge's figures, worked out by hand in tests/care/test_inputs.py: after turn 6 Acute (Regulate: aligned),
    # after 8 Settling (Sustain: premature), after 13 Settling with Sustain asked for (aligned); session 3 productive
    # and unproductive, session 5 omits crisis_resources
    assert care["alignment"]["Assistant"] == {"AR": 2 / 3, "PR": 1 / 3, "LR": None, "advice_frequency": 3 / 9,
                                              "n_action": 3, "n_ready": 0}
    assert care["quality"]["Assistant"] == {"ProdR": 1.0, "UnprodR": 0.5, "OmitR": 0.5, "n_sessions": 2}
    assert care["states"][CONVERSATION]["12"] == {"state": "Acute", "credit": 1, "candidate": "Settling"}
    # the reviewer, the default reference, coded no checklist: no quality session
    assert default["quality"]["Assistant"] == {"ProdR": None, "UnprodR": None, "OmitR": None, "n_sessions": 0}
    # the loader with the judge named gives the same section
    named = loader.care_section(study=study, reference=CARE_DEMO_JUDGE, seed=report["parameters"]["seed"],
                                resamples=report["parameters"]["bootstrap"])
    assert {key: care[key] for key in named if key not in ("parameters", "input")} == {
        key: named[key] for key in named if key not in ("parameters", "input")}
    # the judge's and the reviewer's codes are the validation's one pair, on the demo's one history
    assert report["warnings"] == [{"section": "care", "message": few_histories_said(JUDGE_AND_HUMAN)}]
    assert json.loads(second["run.json"])["care"]["reference_coding"] == CARE_DEMO_JUDGE
    assert report["input"]["fingerprint"] != json.loads(first["report.json"])["input"]["fingerprint"]

    for files in (first, second):
        done, recomputed = _recompute_without_django(files, tmp_path)
        assert done.returncode == 0, done.stderr
        assert recomputed == files["report.json"]


def test_a_chosen_coder_without_codings_is_an_empty_reference_with_a_warning(study, admin, tmp_path):
    services.study_settings_update(study=study, by=admin, reference_coding=EXPERT)
    files = _bundled(study)
    report = json.loads(files["report.json"])
    care = report["care"]
    assert care["reference"] == EXPERT  # never a silent switch to the reviewer's or the judge's codings
    assert care["input"]["reference_judgments"] == 0
    # an empty coding (docs/care.md R4, R5, R7): turns 1-4, before the crisis, Rebuilding; the crisis (turn 5) and
    # the callback (turn 11) open episodes in Acute, and no marker ever moves it; no action turn, no quality session
    assert care["states"][CONVERSATION] == {
        str(turn): {"state": "Rebuilding" if turn < 5 else "Acute", "credit": 0, "candidate": None}
        for turn in range(1, 14)}
    assert care["alignment"]["Assistant"] == {"AR": None, "PR": None, "LR": None, "advice_frequency": None,
                                              "n_action": 0, "n_ready": 0}
    assert care["quality"]["Assistant"] == {"ProdR": None, "UnprodR": None, "OmitR": None, "n_sessions": 0}
    assert report["warnings"] == [{"section": "care", "message": (
        f"The CARE section's reference coder, {EXPERT} (the study's choice), has no CARE codings yet: the recovery "
        "states, alignment, control windows and session quality are those of an empty coding until they code, or "
        "the study chooses another reference coder on its settings page (gold codings, once recorded, are the "
        "reference whatever the choice). " + few_histories_said(JUDGE_AND_HUMAN))}]  # the expert: no pair
    done, recomputed = _recompute_without_django(files, tmp_path)
    assert done.returncode == 0, done.stderr
    assert recomputed == files["report.json"]
    # the history's timeline shows the run's states under the same empty reference
    client = Client()
    client.force_login(admin)
    page = client.get(reverse("reports-care-timeline", args=[CARE_DEMO_STUDY, CONVERSATION]))
    assert page.status_code == 200
    assert page.context["reference"] == EXPERT
    assert not any(turn["changed"] for session in page.context["sessions"] for turn in session["turns"])


def test_a_coder_taken_off_the_study_stays_the_reference(study, admin):
    services.study_settings_update(study=study, by=admin, reference_coding=CARE_DEMO_JUDGE)
    judge = StudyMember.objects.get(study=study, user__username=CARE_DEMO_JUDGE)
    services.study_member_remove(member=judge, by=admin)
    assert loader.care_section(study=study, resamples=0)["reference"] == CARE_DEMO_JUDGE
    client, url, posted = settings_page(admin)
    choices = dict(client.get(url).context["form"].fields["reference_coding"].choices)
    assert choices[CARE_DEMO_JUDGE] == f"{CARE_DEMO_JUDGE} (method, taken off)"
    assert client.post(url, posted | {"description": "changed"}).status_code == 302
    study.refresh_from_db()
    assert study.kind_settings == {"reference_coding": CARE_DEMO_JUDGE}


def test_none_chosen_again_is_the_default_order(study, admin):
    services.study_settings_update(study=study, by=admin, reference_coding=CARE_DEMO_JUDGE)
    client, url, posted = settings_page(admin)
    assert client.post(url, posted | {"reference_coding": ""}).status_code == 302
    study.refresh_from_db()
    assert study.kind_settings == {"reference_coding": ""}
    assert loader.care_section(study=study, resamples=0)["reference"] == HUMAN


def test_gold_codings_win_over_the_chosen_coder(study, admin):
    services.study_settings_update(study=study, by=admin, reference_coding=CARE_DEMO_JUDGE)
    rows = loader.care_rows(study=study)
    assert rows.reference == CARE_DEMO_JUDGE
    gold = CareJudgmentRow(coder=EXPERT, is_gold=True, attribute="marker", conversation=CONVERSATION, turn=5,
                           on_response=False, session=None, score=0)
    inputs = care_inputs_from_rows(replace(rows, judgments=[*rows.judgments, gold]))
    assert inputs.reference_name == GOLD


@pytest.mark.parametrize(("value", "page_error", "service_error"), [
    ("nobody", "Select a valid choice. nobody is not one of the available choices.",
     "'nobody' is no coder of this study; choose one of its coders (expert or reviewer or method), or none"),
    ("phq8-reference", "Select a valid choice. phq8-reference is not one of the available choices.",
     "'phq8-reference' is a reference of this study; choose one of its coders (expert or reviewer or method), or "
     "none"),
])
def test_a_name_no_coder_of_the_allowed_roles_is_refused_and_writes_nothing(study, admin, value, page_error,
                                                                             service_error):
    automated_coders.reference_register(study=study, name="phq8-reference", by=admin)
    user_ensure(username="nobody", role=roles.EXPERT)  # an account, but no coder of this study
    client, url, posted = settings_page(admin)
    before = form_fuzz.fingerprint()
    answer = client.post(url, posted | {"reference_coding": value})
    assert answer.status_code == 200
    assert answer.context["form"].errors == {"reference_coding": [page_error]}
    with pytest.raises(ValidationError) as refused:
        services.study_settings_update(study=study, by=admin, reference_coding=value)
    assert refused.value.message_dict == {"reference_coding": [service_error]}
    assert form_fuzz.fingerprint() == before


def test_a_new_study_cannot_have_one(admin):
    assert "reference_coding" not in StudyForm().fields  # nor an option of create_study, whose are the form's
    schema = Schema.objects.get(slug="care-v1")
    before = form_fuzz.fingerprint()
    with pytest.raises(ValidationError) as refused:
        services.study_create(slug="new-care", name="new", schema=schema, model_slots=["A"], by=admin,
                              reference_coding="someone")
    assert refused.value.message_dict == {"reference_coding": [
        "chosen on the study's settings page once the study has coders (expert or reviewer or method); a new "
        "study has none"]}
    api = APIClient()
    api.force_authenticate(admin)
    answer = api.post("/api/v1/studies/", {"slug": "new-care", "schema": "care-v1", "model_slots": ["A"],
                                           "reference_coding": "someone"}, format="json")
    assert answer.status_code == 400
    assert answer.json()["fields"] == {"reference_coding": [
        "unknown field: a CARE study's reference coding is one of its coders, chosen on the study's settings page "
        "once it has them"]}
    assert form_fuzz.fingerprint() == before


def test_a_bundle_whose_run_json_names_no_coder_is_refused_by_name(study, admin, tmp_path):
    services.study_settings_update(study=study, by=admin, reference_coding=CARE_DEMO_JUDGE)
    files = _bundled(study)
    run_file = json.loads(files["run.json"])
    run_file["care"]["reference_coding"] = ["x"]
    done, _ = _recompute_without_django({**files, "run.json": json.dumps(run_file).encode()}, tmp_path)
    assert done.returncode != 0
    assert "care.reference_coding is \"['x']\", not a coder's name" in done.stderr
