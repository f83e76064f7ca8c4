"""Permissions (api/permissions.py): a token acts only within its scopes and, when limited to one, its study."""

from __future__ import annotations

import pytest

from tests.factories import response_items

pytestmark = pytest.mark.django_db

STUDIES = "/api/v1/studies/"
JUDGMENTS = "/api/v1/studies/cab-demo/judgments/"
RESPONSES = "/api/v1/studies/cab-demo/responses/"


def test_a_token_without_the_read_scope_cannot_read(admin_user, as_token, study):
    response = as_token(admin_user, scopes=["ingest"]).get(STUDIES)
    assert response.status_code == 403
    assert "'read'" in response.json()["detail"]


def test_a_study_scoped_token_lists_only_its_study(admin_user, as_token, study, other_study):
    response = as_token(admin_user, scopes=["read"], study=study).get(STUDIES)
    assert [s["slug"] for s in response.json()] == ["cab-demo"]


def test_a_study_scoped_token_cannot_reach_another_study(admin_user, as_token, study, other_study):
    api = as_token(admin_user, scopes=["read", "ingest"], study=study)
    assert api.get("/api/v1/studies/other-study/").status_code == 403
    response = api.post("/api/v1/studies/other-study/responses/", [], format="json")
    assert response.status_code == 403
    assert response.json()["detail"] == "This token is limited to study 'cab-demo'."


def test_a_read_token_cannot_ingest(admin_user, as_token, study, turns_only):
    response = as_token(admin_user, scopes=["read"]).post(RESPONSES, response_items(), format="json")
    assert response.status_code == 403


def test_a_study_scoped_ingestion_token_cannot_read_judgments(admin_user, as_token, study):
    response = as_token(admin_user, scopes=["ingest"], study=study).get(JUDGMENTS)
    assert response.status_code == 403
