"""An LLM judge's labels over the REST API (docs/sessions.md#automated-coders-methods): the method is registered (name,
version, prompt id), its labels arrive in the long format (role ``method``, session_index, value labels) through the
judgments import — validated and idempotent like people's judgments — and human coders of a blinding study never see
them."""

from __future__ import annotations

import json

import pytest

from annotation.models import Judgment, Schema, StudyMember
from annotation.services import study_archive
from audit.models import AuditEvent
from benchmark import conversation_ingest
from care.demo import CARE_DEMO_FILE, CARE_DEMO_JUDGE_FILE
from common.errors import jsonl_rows
from tests.factories import StudyFactory, StudyMemberFactory

pytestmark = pytest.mark.django_db

METHODS = "/api/v1/studies/care-demo/methods/"
IMPORT = "/api/v1/studies/care-demo/judgments/import/"


@pytest.fixture
def care_study(admin_user, reviewer):
    study = StudyFactory(slug="care-demo", schema=Schema.objects.get(slug="care-v1"), model_slots=["Assistant"])
    StudyMemberFactory(study=study, user=reviewer, role="reviewer")
    with CARE_DEMO_FILE.open(encoding="utf-8") as stream:
        conversation_ingest.conversations_import(rows=list(jsonl_rows(stream)), study=study)
    return study


@pytest.fixture
def importer(admin_user, as_token, care_study):
    return as_token(admin_user, scopes=["read", "import"], study=care_study)


def post_labels(client, text: str, **headers):
    return client.generic("POST", IMPORT, text, content_type="application/x-ndjson", **headers)


def test_a_judge_is_registered_and_its_labels_ingested_idempotently(importer, care_study):
    registered = importer.post(METHODS, {"name": "demo-care-judge", "version": "gpt-x-2026-01",
                                         "prompt_id": "care-judge-v3"}, format="json")
    assert registered.status_code == 200, registered.json()
    assert registered.json() == {"name": "demo-care-judge", "version": "gpt-x-2026-01", "prompt_id": "care-judge-v3"}
    assert importer.get(METHODS).json() == [registered.json()]

    text = CARE_DEMO_JUDGE_FILE.read_text(encoding="utf-8")
    first = post_labels(importer, text)
    assert first.status_code == 200, first.json()
    assert first.json()["judgments_created"] == 108
    again = post_labels(importer, text)
    assert (again.json()["judgments_created"], again.json()["judgments_unchanged"]) == (0, 108)
    replay = post_labels(importer, text, HTTP_IDEMPOTENCY_KEY="labels-1")
    assert post_labels(importer, text, HTTP_IDEMPOTENCY_KEY="labels-1").json() == replay.json()
    assert StudyMember.objects.get(study=care_study, user__username="demo-care-judge").role == "method"
    assert Judgment.objects.filter(round__study=care_study, session__isnull=False).count() == 18


def test_wrong_labels_are_refused_line_by_line_with_nothing_written(importer):
    importer.post(METHODS, {"name": "demo-care-judge"}, format="json")
    rows = [json.loads(line) for line in CARE_DEMO_JUDGE_FILE.read_text(encoding="utf-8").splitlines()[:3]]
    rows[1]["score"] = "Calm"
    rows[2]["session_index"] = 4
    response = post_labels(importer, "".join(json.dumps(r) + "\n" for r in rows))
    assert response.status_code == 400
    body = json.dumps(response.json())
    assert "'Calm' is not one of its values" in body
    assert "turn 5 of CARE-demo/care-demo-1 is in session 3, not 4" in body
    assert not Judgment.objects.exists()


def test_labels_of_an_unregistered_method_are_refused(importer):
    text = CARE_DEMO_JUDGE_FILE.read_text(encoding="utf-8")
    response = post_labels(importer, text)
    assert response.status_code == 400
    assert "method is only for a method registered in the study" in json.dumps(response.json())


def test_only_admins_register_methods(care_study, reviewer, as_token):
    api = as_token(reviewer)
    assert api.post(METHODS, {"name": "judge"}, format="json").status_code == 403
    assert api.get(METHODS).status_code == 403


def test_a_method_may_not_take_a_persons_name(importer, reviewer):
    response = importer.post(METHODS, {"name": reviewer.username}, format="json")
    assert response.status_code == 400 and "a method needs a name of its own" in json.dumps(response.json())


def test_a_blinded_reviewer_gets_none_of_the_judges_labels_from_the_api(importer, care_study, reviewer, as_token):
    importer.post(METHODS, {"name": "demo-care-judge"}, format="json")
    post_labels(importer, CARE_DEMO_JUDGE_FILE.read_text(encoding="utf-8"))
    listed = as_token(reviewer, scopes=["read"]).get("/api/v1/studies/care-demo/judgments/")
    assert listed.status_code == 200 and listed.json()["results"] == []


def test_a_name_or_version_sent_as_a_number_is_refused_and_nothing_registered(importer):
    from annotation.models import StudyMember

    before = StudyMember.objects.count()
    for body in ({"name": -43875}, {"name": "judge", "version": 2}, {"name": "judge", "prompt_id": 1.5}):
        response = importer.post(METHODS, body, format="json")
        assert response.status_code == 400, (body, response.content)
        assert "must be a JSON string" in response.content.decode()
    assert StudyMember.objects.count() == before


REFERENCES = "/api/v1/studies/care-demo/references/"


@pytest.mark.parametrize(("url", "body", "field", "message"), [
    (METHODS, {"name": "j" * 101}, "name", "at most 100 characters (it has 101)"),
    (METHODS, {"name": "judge", "version": "v" * 101}, "version", "at most 100 characters (it has 101)"),
    (METHODS, {"name": "judge", "prompt_id": "p" * 101}, "prompt_id", "at most 100 characters (it has 101)"),
    (METHODS, {"name": "a judge"}, "name", "letters, digits and @.+-_ only, at most 100 characters"),
    (REFERENCES, {"name": "r" * 150}, "name", "at most 100 characters (it has 150)"),
    (REFERENCES, {"name": "ref", "description": "d" * 101}, "description", "at most 100 characters (it has 101)"),
])
def test_what_the_membership_cannot_hold_is_a_400_naming_the_field_and_nothing_is_registered(
        importer, url, body, field, message):
    before = (StudyMember.objects.count(), AuditEvent.objects.count())
    response = importer.post(url, body, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["fields"] == {field: [message]}
    assert (StudyMember.objects.count(), AuditEvent.objects.count()) == before


def test_the_longest_name_the_membership_holds_is_registered(importer):
    response = importer.post(METHODS, {"name": "j" * 100, "version": "v" * 100, "prompt_id": "p" * 100},
                             format="json")
    assert response.status_code == 200, response.content
    assert response.json() == {"name": "j" * 100, "version": "v" * 100, "prompt_id": "p" * 100}


def test_an_archived_study_takes_no_import_over_the_api(importer, care_study, admin_user):
    importer.post(METHODS, {"name": "demo-care-judge"}, format="json")
    study_archive(study=care_study, by=admin_user)
    before = (Judgment.objects.count(), AuditEvent.objects.count())
    response = post_labels(importer, CARE_DEMO_JUDGE_FILE.read_text(encoding="utf-8"))
    assert response.status_code == 400, response.content
    message = "study 'care-demo' is archived: its judgments and labels no longer change"
    assert response.json()["errors"] == [{"line": 1, "field": "study", "message": message}]
    assert (Judgment.objects.count(), AuditEvent.objects.count()) == before


def test_an_archived_study_takes_no_new_coder_over_the_api(importer, care_study, admin_user):
    study_archive(study=care_study, by=admin_user)
    before = (list(StudyMember.objects.values_list("pk", "role")), AuditEvent.objects.count())
    for url in (METHODS, REFERENCES):
        response = importer.post(url, {"name": "late-judge"}, format="json")
        assert response.status_code == 400, response.content
        assert response.json()["fields"] == {"name": ["study 'care-demo' is archived: it takes no new coders and its "
                                                      "coders no longer change"]}
    assert (list(StudyMember.objects.values_list("pk", "role")), AuditEvent.objects.count()) == before
