"""A CARE study's quality scope (docs/care.md, Q1): a study setting (``care.kind.QUALITY_SCOPE``, stored in
``Study.kind_settings``) that the settings page changes, with its audit record; the next metric run computes session
quality over it and says so (``care.parameters.quality_scope``), its study bundle carries it and recomputes byte
for byte, and a bad value is refused by name, nothing written.

The study is the CARE demo with one more checklist coded by its judge: session 4, a chat after the crisis, which the
scope ``after_crisis`` counts and ``episode_sessions`` does not, so the two give other ProdR, UnprodR and OmitR."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError
from django.test import Client, override_settings
from django.urls import reverse

from access import roles
from access.services import user_ensure
from annotation import judgment_import, services
from annotation.kinds import kind_of
from annotation.models import Study
from audit.models import AuditEvent
from care.core.metrics import QUALITY_SCOPES
from care.demo import CARE_DEMO_JUDGE, CARE_DEMO_STUDY, care_demo_load
from care.kind import QUALITY_SCOPE
from reports import bundle
from tests import form_fuzz
from tests.care.settings_page import settings_page
from tests.factories import StudyFactory
from tests.reports.test_bundle_kinds import _bundled, _recompute_without_django

pytestmark = pytest.mark.django_db

# Session 4 of the demo history (a chat after the crisis, crisis type SI by Q2) as the judge codes it: no productive
# item, an unproductive one, both required items present.
SESSION_4 = {"ask_safety": 1, "crisis_resources": 1, "validate_feelings": 0, "stay_present": 0, "follow_up": 0,
             "minimise": 1, "premature_fix": 0, "moralise": 0, "grounding": 0}
# Worked out by hand from the demo's figures in docs/care.md: sessions 3 and 5 (ProdR 1, UnprodR 1/2 for session 3's
# premature_fix, OmitR 1/2 for session 5's missing crisis_resources); after the crisis session 4 counts too.
QUALITY = {
    "episode_sessions": {"ProdR": 1.0, "UnprodR": 0.5, "OmitR": 0.5, "n_sessions": 2},
    "after_crisis": {"ProdR": 2 / 3, "UnprodR": 2 / 3, "OmitR": 1 / 3, "n_sessions": 3},
}


@pytest.fixture(autouse=True)
def bundle_dir(tmp_path):
    with override_settings(BUNDLE_DIR=str(tmp_path / "bundles")):
        yield


@pytest.fixture
def study() -> Study:
    care_demo_load(admin=user_ensure(username="demo-admin", role=roles.ADMIN),
                   reviewer=user_ensure(username="demo-reviewer", role=roles.REVIEWER),
                   expert=user_ensure(username="demo-expert", role=roles.EXPERT))
    rows = [{"study": CARE_DEMO_STUDY, "round": "main", "reviewer": CARE_DEMO_JUDGE, "is_gold": False,
             "role": "method", "dataset": "CARE-demo", "conversation_id": "care-demo-1", "instance_count": None,
             "spans": [], "session_index": 4, "turn_index": None, "model": None, "attribute": code, "score": score}
            for code, score in SESSION_4.items()]
    judgment_import.judgments_import(rows=enumerate(rows, start=1), study_slug=CARE_DEMO_STUDY, by=None)
    return Study.objects.select_related("schema").get(slug=CARE_DEMO_STUDY)


def test_the_setting_is_the_cores_scopes_and_defaults_to_episode_sessions(study):
    assert set(QUALITY_SCOPE.values) == QUALITY_SCOPES
    assert QUALITY_SCOPE in kind_of(study).settings
    assert study.kind_settings == {}
    assert services.study_settings_shown(study=study)["quality_scope"] == "episode_sessions"


def test_the_settings_page_changes_the_scope_and_the_next_run_says_it_with_its_figures(study, admin_user, tmp_path):
    first = _bundled(study)
    report = json.loads(first["report.json"])
    assert report["care"]["parameters"] == {"quality_scope": "episode_sessions"}
    assert report["care"]["quality"]["Assistant"] == pytest.approx(QUALITY["episode_sessions"])
    assert "quality_scope" not in json.loads(first["run.json"])["care"]  # the default: as before it was a setting

    client, url, posted = settings_page(admin_user)
    assert posted["quality_scope"] == "episode_sessions"
    answer = client.post(url, posted | {"quality_scope": "after_crisis"})
    assert answer.status_code == 302
    study.refresh_from_db()
    assert study.kind_settings == {"quality_scope": "after_crisis"}
    event = AuditEvent.objects.filter(action="study.settings").latest("pk")
    assert (event.actor, event.target, event.data) == (admin_user, f"study:{CARE_DEMO_STUDY}",
                                                       {"changed": {"quality_scope": "after_crisis"}})

    second = _bundled(study)
    changed = json.loads(second["report.json"])
    assert changed["care"]["parameters"] == {"quality_scope": "after_crisis"}
    assert changed["care"]["quality"]["Assistant"] == pytest.approx(QUALITY["after_crisis"])
    assert changed["care"]["quality_by"]["SI"]["Assistant"] == pytest.approx(QUALITY["after_crisis"])
    assert changed["care"]["alignment"] == report["care"]["alignment"]  # the scope moves session quality alone
    assert json.loads(second["run.json"])["care"]["quality_scope"] == "after_crisis"
    assert changed["input"]["fingerprint"] != report["input"]["fingerprint"]

    for files in (first, second):  # each bundle recomputes from its own files
        done, recomputed = _recompute_without_django(files, tmp_path)
        assert done.returncode == 0, done.stderr
        assert recomputed == files["report.json"]


def test_a_run_from_before_the_change_gives_no_bundle_of_figures_its_scope_no_longer_gives(study, admin_user):
    from metrics import runs
    from metrics import services as metric_services

    run = metric_services.metric_run_request(study=study, by=None, bootstrap=20)
    runs.metric_run_execute(run_id=run.pk)
    services.study_settings_update(study=study, by=admin_user, quality_scope="after_crisis")
    run.refresh_from_db()
    with pytest.raises(bundle.BundleRefusedError, match="changed since run"):
        bundle.bundle_file(run=run)


def test_a_bundle_whose_run_json_names_no_known_scope_is_refused_by_name(study, admin_user, tmp_path):
    services.study_settings_update(study=study, by=admin_user, quality_scope="after_crisis")
    files = _bundled(study)
    run_file = json.loads(files["run.json"])
    run_file["care"]["quality_scope"] = "everything"
    done, _ = _recompute_without_django({**files, "run.json": json.dumps(run_file).encode()}, tmp_path)
    assert done.returncode != 0
    assert "care.quality_scope is 'everything', none of after_crisis, episode_sessions" in done.stderr


def test_a_bad_value_is_refused_by_name_and_writes_nothing(study, admin_user):
    client, url, posted = settings_page(admin_user)
    before = form_fuzz.fingerprint()
    answer = client.post(url, posted | {"quality_scope": "everything"})
    assert answer.status_code == 200
    assert answer.context["form"].errors == {
        "quality_scope": ["Select a valid choice. everything is not one of the available choices."]}
    with pytest.raises(ValidationError) as refused:
        services.study_settings_update(study=study, by=admin_user, quality_scope="everything")
    assert refused.value.message_dict == {
        "quality_scope": ["must be one of episode_sessions, after_crisis (not 'everything')"]}
    assert form_fuzz.fingerprint() == before


def test_the_setting_is_a_care_studys_alone(admin_user):
    other = StudyFactory(slug="plain")
    client = Client()
    client.force_login(admin_user)
    page = client.get(reverse("study-settings", args=["plain"]))
    assert "quality_scope" not in page.context["form"].fields
    assert "quality_scope" not in services.study_settings_shown(study=other)
    before = form_fuzz.fingerprint()
    with pytest.raises(ValidationError) as refused:
        services.study_settings_update(study=other, by=admin_user, quality_scope="after_crisis")
    assert refused.value.message_dict == {
        "quality_scope": [f"a setting of CARE studies only; schema {other.schema.slug} is not a CARE schema"]}
    assert form_fuzz.fingerprint() == before


def test_a_post_without_the_setting_keeps_the_stored_scope(study, admin_user):
    services.study_settings_update(study=study, by=admin_user, quality_scope="after_crisis")
    client, url, posted = settings_page(admin_user)
    posted.pop("quality_scope")
    assert client.post(url, posted | {"description": "changed"}).status_code == 302
    study.refresh_from_db()
    assert (study.description, study.kind_settings) == ("changed", {"quality_scope": "after_crisis"})
