"""Authentication (api/authentication.py): a bearer token is found by the SHA-256 of what the client sends, and is
refused when unknown, expired, revoked or its account disabled; a browser session must send the CSRF token."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from api.models import ApiToken
from benchmark.demo import demo_records
from tests.factories import ApiTokenFactory

pytestmark = pytest.mark.django_db

STUDIES = "/api/v1/studies/"
CONVERSATIONS = "/api/v1/studies/cab-demo/conversations/"


def test_a_valid_token_authenticates_and_records_its_last_use(admin_user, as_token, study):
    response = as_token(admin_user).get(STUDIES)
    assert response.status_code == 200
    assert [s["slug"] for s in response.json()] == ["cab-demo"]
    assert ApiToken.objects.get().last_used_at is not None


def test_no_credentials_is_401_with_a_bearer_challenge(api, study):
    response = api.get(STUDIES)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_an_unknown_token_is_refused(api, study):
    api.credentials(HTTP_AUTHORIZATION="Bearer cab_not-a-real-token")
    response = api.get(STUDIES)
    assert response.status_code == 401
    assert response.json()["detail"] == "Invalid token."


def test_an_expired_token_is_refused(admin_user, token_for, api, study):
    raw = token_for(admin_user, expires_at=timezone.now() + timedelta(hours=1))
    ApiToken.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    response = api.get(STUDIES)
    assert response.status_code == 401
    assert response.json()["detail"] == "This token has expired."


def test_the_token_of_a_disabled_account_is_refused(admin_user, token_for, api, study):
    raw = token_for(admin_user)
    admin_user.is_active = False
    admin_user.save()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert api.get(STUDIES).status_code == 401


def test_a_token_is_found_by_the_hash_of_what_the_client_sends(admin_user, api, study):

    ApiTokenFactory(raw="cab_known-secret-value", user=admin_user, scopes=["read"])
    api.credentials(HTTP_AUTHORIZATION="Token cab_known-secret-value")
    assert api.get(STUDIES).status_code == 200
    api.credentials(HTTP_AUTHORIZATION="Bearer cab_known-secret-valuE")
    assert api.get(STUDIES).status_code == 401


def test_the_browser_session_must_send_the_csrf_token(admin_user, study):

    browser = APIClient(enforce_csrf_checks=True)
    browser.force_login(admin_user)
    response = browser.post(CONVERSATIONS, demo_records(), format="json")
    assert response.status_code == 403
    assert "CSRF" in response.json()["detail"]
