"""API services (api/services.py): tokens stored hashed and shown once, expiring, revocable (also by the
management commands); idempotent calls replay the first answer to an Idempotency-Key."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.utils import timezone

from api import services as api_services
from api.models import ApiToken, IdempotencyRecord
from audit.models import AuditEvent
from benchmark.models import ModelResponse
from tests.factories import IdempotencyRecordFactory, response_items

pytestmark = pytest.mark.django_db

STUDIES = "/api/v1/studies/"
RESPONSES = "/api/v1/studies/cab-demo/responses/"


# --- tokens ----------------------------------------------------------------------------------------------------


def test_only_the_sha256_of_the_token_is_stored(admin_user, token_for):
    raw = token_for(admin_user)
    token = ApiToken.objects.get()
    assert raw.startswith("cab_") and len(raw) >= 40
    assert token.key_hash == hashlib.sha256(raw.encode()).hexdigest()
    stored = {field.name: getattr(token, field.name) for field in ApiToken._meta.fields}
    assert raw not in [str(value) for value in stored.values()]
    assert token.key_prefix == raw[:12]


def test_a_token_cannot_be_created_already_expired(admin_user):
    with pytest.raises(Exception, match="must be in the future"):
        api_services.api_token_create(user=admin_user, name="x", scopes=["read"], by=None,
                                      expires_at=timezone.now() - timedelta(days=1))


def test_a_revoked_token_is_refused_and_the_revocation_is_audited(admin_user, token_for, api, study):

    raw = token_for(admin_user)
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert api.get(STUDIES).status_code == 200
    api_services.api_token_revoke(token=ApiToken.objects.get(), by=admin_user)
    response = api.get(STUDIES)
    assert response.status_code == 401
    assert response.json()["detail"] == "This token has been revoked."
    assert AuditEvent.objects.filter(action="api_token.revoke", actor=admin_user).exists()


def test_revoking_from_a_stale_copy_of_a_revoked_token_changes_nothing(admin_user, token_for):
    token_for(admin_user)
    first, stale = ApiToken.objects.get(), ApiToken.objects.get()  # two admins' pages, loaded before either acted
    api_services.api_token_revoke(token=first, by=admin_user)
    revoked_at = ApiToken.objects.get().revoked_at

    api_services.api_token_revoke(token=stale, by=admin_user)
    assert ApiToken.objects.get().revoked_at == revoked_at == stale.revoked_at
    assert AuditEvent.objects.filter(action="api_token.revoke").count() == 1


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


def test_a_setup_token_limited_to_one_study_is_refused_when_it_is_made(admin_user, study, client):
    """docs/api.md: the setup scope creates studies, "not with a token limited to one study". Such a token was made
    by the command and the API tokens page alike, and only refused (403) when a script first used it."""
    from api.forms import TokenForm

    assert "setup" in api_services.token_scopes_allowed(admin_user)
    with pytest.raises(CommandError, match="the setup scope creates studies, which a token limited to one study"):
        call_command("create_api_token", "--user", admin_user.username, "--scope", "setup", "--scope", "read",
                     "--study", study.slug)
    with pytest.raises(ValidationError, match="leave out the study or the setup scope"):
        api_services.api_token_create(user=admin_user, name="one study", scopes=["setup"], by=admin_user,
                                      study=study)
    form = TokenForm({"name": "one study", "scopes": ["setup"], "study": study.pk}, scopes=["read", "setup"],
                     studies=type(study).objects.all())
    assert form.errors["scopes"] == [api_services.SETUP_WITH_STUDY]
    client.force_login(admin_user)
    page = client.post("/api-tokens/", {"name": "one study", "scopes": ["setup"], "study": study.pk})
    assert page.status_code == 200 and "which a token limited to one study cannot do" in page.content.decode()
    assert not ApiToken.objects.exists()
    call_command("create_api_token", "--user", admin_user.username, "--scope", "setup")  # every study: made
    assert ApiToken.objects.get().scopes == ["setup"]


@pytest.mark.parametrize("days", ["0", "-1", "3651", "5000000", str(10**12)])
def test_create_api_token_refuses_an_expiry_the_token_page_refuses(admin_user, days):
    """The token page takes 1 to 3650 days; before, 5000000 crashed the command with an OverflowError."""
    with pytest.raises(CommandError, match=f"--expires-in-days must be from 1 to 3650, got {days}"):
        call_command("create_api_token", "--user", admin_user.username, "--scope", "read", "--expires-in-days", days)
    assert not ApiToken.objects.exists()


def test_a_token_expires_at_most_3650_days_ahead_whoever_makes_it(admin_user, capsys):
    from api.forms import TokenForm

    call_command("create_api_token", "--user", admin_user.username, "--scope", "read", "--expires-in-days", "3650")
    assert timedelta(days=3649) < ApiToken.objects.get().expires_at - timezone.now() <= timedelta(days=3650)
    with pytest.raises(ValidationError, match="at most 3650 days ahead"):
        api_services.api_token_create(user=admin_user, name="far", scopes=["read"], by=admin_user,
                                      expires_at=timezone.now() + timedelta(days=3651))
    assert ApiToken.objects.count() == 1
    form = TokenForm({"name": "far", "scopes": ["read"], "expires_in_days": "3651"}, scopes=["read"],
                     studies=ApiToken.objects.none())
    assert form.errors["expires_in_days"] == ["Ensure this value is less than or equal to 3650."]


def test_revoke_api_token_by_prefix(admin_user, token_for, capsys):
    raw = token_for(admin_user)
    call_command("revoke_api_token", raw[:12])
    assert ApiToken.objects.get().revoked_at is not None
    assert "revoked 1 token" in capsys.readouterr().out


# --- idempotency -----------------------------------------------------------------------------------------------


def test_idempotency_key_replays_the_first_answer(ingester, turns_only):
    first = ingester.post(RESPONSES, response_items(), format="json", HTTP_IDEMPOTENCY_KEY="batch-0001")
    again = ingester.post(RESPONSES, response_items(), format="json", HTTP_IDEMPOTENCY_KEY="batch-0001")
    assert first.json() == again.json() == {"items": 20, "created": 20, "updated": 0, "unchanged": 0,
                                            "turns_back_in_queues": 0}
    assert again["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first
    without_key = ingester.post(RESPONSES, response_items(), format="json")
    assert without_key.json()["unchanged"] == 20


def test_idempotency_key_reused_for_different_content_is_a_422(ingester, turns_only):
    ingester.post(RESPONSES, response_items()[:5], format="json", HTTP_IDEMPOTENCY_KEY="k1")
    response = ingester.post(RESPONSES, response_items(), format="json", HTTP_IDEMPOTENCY_KEY="k1")
    assert response.status_code == 422
    assert ModelResponse.objects.count() == 5


def test_a_failed_request_is_not_remembered_under_its_idempotency_key(ingester, turns_only):
    items = response_items()
    items[0]["text"] = ""
    assert ingester.post(RESPONSES, items, format="json", HTTP_IDEMPOTENCY_KEY="k2").status_code == 400
    response = ingester.post(RESPONSES, response_items(), format="json", HTTP_IDEMPOTENCY_KEY="k2")
    assert response.status_code == 200 and response.json()["created"] == 20


def test_a_malformed_idempotency_key_is_a_400(ingester, turns_only):
    response = ingester.post(RESPONSES, response_items(), format="json", HTTP_IDEMPOTENCY_KEY="has space")
    assert response.status_code == 400
    assert ModelResponse.objects.count() == 0


def test_an_idempotency_record_older_than_a_day_is_not_replayed(ingester, turns_only, admin_user):
    from datetime import timedelta

    from django.utils import timezone


    IdempotencyRecordFactory(user=admin_user, key="old-key", response={"stale": True})
    IdempotencyRecord.objects.update(created_at=timezone.now() - timedelta(hours=25))
    response = ingester.post(RESPONSES, response_items(), format="json", HTTP_IDEMPOTENCY_KEY="old-key")
    assert response.status_code == 200 and response.json()["created"] == 20
    assert "Idempotent-Replayed" not in response
    assert IdempotencyRecord.objects.get(key="old-key").response == response.json()
