"""API tokens: stored hashed, shown once, can expire, can be revoked, can be limited to scopes and one study."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from api import services as api_services
from api.models import ApiToken

pytestmark = pytest.mark.django_db

STUDIES = "/api/v1/studies/"


def test_only_the_sha256_of_the_token_is_stored(admin_user, token_for):
    raw = token_for(admin_user)
    token = ApiToken.objects.get()
    assert raw.startswith("cab_") and len(raw) >= 40
    assert token.key_hash == hashlib.sha256(raw.encode()).hexdigest()
    stored = {field.name: getattr(token, field.name) for field in ApiToken._meta.fields}
    assert raw not in [str(value) for value in stored.values()]
    assert token.key_prefix == raw[:12]


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


def test_a_token_cannot_be_created_already_expired(admin_user):
    with pytest.raises(Exception, match="must be in the future"):
        api_services.api_token_create(user=admin_user, name="x", scopes=["read"], by=None,
                                      expires_at=timezone.now() - timedelta(days=1))


def test_a_revoked_token_is_refused_and_the_revocation_is_audited(admin_user, token_for, api, study):
    from audit.models import AuditEvent

    raw = token_for(admin_user)
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert api.get(STUDIES).status_code == 200
    api_services.api_token_revoke(token=ApiToken.objects.get(), by=admin_user)
    response = api.get(STUDIES)
    assert response.status_code == 401
    assert response.json()["detail"] == "This token has been revoked."
    assert AuditEvent.objects.filter(action="api_token.revoke", actor=admin_user).exists()


def test_the_token_of_a_disabled_account_is_refused(admin_user, token_for, api, study):
    raw = token_for(admin_user)
    admin_user.is_active = False
    admin_user.save()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert api.get(STUDIES).status_code == 401


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


def test_create_api_token_prints_the_token_once_and_stores_its_hash(admin_user, study, capsys):
    call_command("create_api_token", "--user", admin_user.username, "--scope", "ingest", "--study", "cab-demo",
                 "--expires-in-days", "7")
    out, err = capsys.readouterr()
    raw = out.strip()
    token = ApiToken.objects.get()
    assert token.key_hash == hashlib.sha256(raw.encode()).hexdigest()
    assert token.scopes == ["ingest"] and token.study == study
    assert timedelta(days=6) < token.expires_at - timezone.now() <= timedelta(days=7)
    assert raw not in err


def test_create_api_token_refuses_unknown_accounts_and_studies(admin_user):
    with pytest.raises(CommandError, match="no account"):
        call_command("create_api_token", "--user", "nobody", "--scope", "read")
    with pytest.raises(CommandError, match="no study"):
        call_command("create_api_token", "--user", admin_user.username, "--scope", "read", "--study", "nope")


def test_revoke_api_token_by_prefix(admin_user, token_for, capsys):
    raw = token_for(admin_user)
    call_command("revoke_api_token", raw[:12])
    assert ApiToken.objects.get().revoked_at is not None
    assert "revoked 1 token" in capsys.readouterr().out


def test_a_token_is_found_by_the_hash_of_what_the_client_sends(admin_user, api, study):
    from tests.factories import ApiTokenFactory

    ApiTokenFactory(raw="cab_known-secret-value", user=admin_user, scopes=["read"])
    api.credentials(HTTP_AUTHORIZATION="Token cab_known-secret-value")
    assert api.get(STUDIES).status_code == 200
    api.credentials(HTTP_AUTHORIZATION="Bearer cab_known-secret-valuE")
    assert api.get(STUDIES).status_code == 401
