"""The API tokens page: scopes limited to the account's role, the key shown once and stored hashed, revoke."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from api.models import ApiToken
from api.services import api_token_hash
from tests.annotation.test_after_commit import _ended_after_the_commit_of

pytestmark = pytest.mark.django_db


def test_a_researcher_may_choose_read_and_metrics_only(client, researcher):
    client.force_login(researcher)
    page = client.get(reverse("api-tokens")).content.decode()
    assert 'value="read"' in page and 'value="metrics"' in page
    assert 'value="ingest"' not in page and 'value="import"' not in page
    refused = client.post(reverse("api-tokens"), {"name": "x", "scopes": ["ingest"]})
    assert "Select a valid choice" in refused.content.decode() and not ApiToken.objects.exists()


def test_the_key_is_shown_once_and_only_its_hash_is_kept(client, admin_user):
    client.force_login(admin_user)
    response = client.post(reverse("api-tokens"), {"name": "ingest script", "scopes": ["ingest", "read"]})
    assert "no-cache" in response["Cache-Control"] or "max-age=0" in response["Cache-Control"]
    raw = re.search(r'<code class="token">(cab_[^<]+)</code>', response.content.decode()).group(1)
    token = ApiToken.objects.get()
    assert token.key_hash == api_token_hash(raw) and token.scopes == ["ingest", "read"]
    again = client.get(reverse("api-tokens")).content.decode()
    assert raw not in again and f"{token.key_prefix}…" in again
    api = client.get("/api/v1/studies/", HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert api.status_code == 200


def test_revoking_stops_the_token(client, admin_user, reviewer):
    client.force_login(reviewer)
    raw = re.search(r'<code class="token">(cab_[^<]+)</code>', client.post(
        reverse("api-tokens"), {"name": "mine", "scopes": ["read"]}).content.decode()).group(1)
    token = ApiToken.objects.get()
    client.force_login(admin_user)
    assert "reviewer" in client.get(reverse("api-tokens")).content.decode(), "admins see everyone's tokens"
    client.post(reverse("api-token-revoke", args=[token.pk]))
    assert client.get("/api/v1/studies/", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code == 401


def test_someone_elses_token_cannot_be_revoked_by_a_reviewer(client, admin_user, reviewer):
    client.force_login(admin_user)
    client.post(reverse("api-tokens"), {"name": "admin's", "scopes": ["read"]})
    client.force_login(reviewer)
    assert client.post(reverse("api-token-revoke", args=[ApiToken.objects.get().pk])).status_code == 404
    assert ApiToken.objects.get().revoked_at is None


@pytest.mark.django_db(transaction=True, serialized_rollback=True)  # the request's connection is ended for real
def test_a_token_made_as_the_database_drops_shows_its_key(admin_user, settings):
    """The token is committed, then the database ends the request's connection before the page that shows its key
    is read (the list of tokens, the form's studies). Before, the answer was 503 "Nothing was changed": the token
    was made but its key, shown in that one answer only, was lost. Now the key is shown on a page that reads
    nothing, saying the list will be back; it works once the database is."""
    settings.DEBUG = False  # the pages' own 500 and 503
    page = Client(raise_request_exception=False)
    page.force_login(admin_user)
    with _ended_after_the_commit_of('INSERT INTO "cab_apitoken"') as seen:
        answer = page.post(reverse("api-tokens"), {"name": "ingest script", "scopes": ["read"]})
    assert seen, "the token was committed"
    assert answer.status_code == 200, (answer.status_code, answer.content[-300:])
    assert "no-cache" in answer["Cache-Control"] or "max-age=0" in answer["Cache-Control"]
    text = answer.content.decode()
    raw = re.search(r'<code class="token">(cab_[^<]+)</code>', text).group(1)
    assert "the list of tokens cannot be read just now" in text
    assert ApiToken.objects.get().key_hash == api_token_hash(raw)
    assert page.get("/api/v1/studies/", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code == 200
