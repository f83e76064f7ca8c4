"""The API tokens page: scopes limited to the account's role, the key shown once and stored hashed, revoke."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from api.models import ApiToken
from api.services import api_token_hash

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
