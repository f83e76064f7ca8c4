"""Accounts under attack: sign-in throttling and lockout (django-axes), API rate limits (DRF throttles), sessions
that end after idle time."""

from __future__ import annotations

import socket
from datetime import timedelta
from importlib import import_module

import pytest
from django.conf import settings
from django.contrib.sessions.backends.db import SessionStore as DatabaseStore
from django.contrib.sessions.models import Session
from django.core.cache import cache
from django.test import override_settings
from django.utils import timezone

from access.login_sessions import RENEWED
from tests.conftest import sign_in

pytestmark = pytest.mark.django_db
PASSWORD = "pw-for-tests"  # noqa: S105 - the personas' test password


def test_wrong_passwords_lock_the_account_from_that_address_even_for_the_right_one(client, reviewer, expert):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        assert not sign_in(client, "reviewer", "guess")
    locked = client.post("/login/", {"username": "reviewer", "password": PASSWORD})
    assert locked.status_code == 429
    assert "Sign-in paused" in locked.content.decode()
    assert "_auth_user_id" not in client.session
    assert sign_in(client, "expert", PASSWORD), "another account from the same address is not locked"


def test_a_right_password_before_the_limit_resets_the_count(client, reviewer):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert not sign_in(client, "reviewer", "guess")
    assert sign_in(client, "reviewer", PASSWORD)
    client.logout()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert not sign_in(client, "reviewer", "guess")
    assert sign_in(client, "reviewer", PASSWORD)


def test_the_api_answers_429_with_retry_after_beyond_the_accounts_rate(researcher, as_token):
    cache.clear()
    api = as_token(researcher)
    rates = {"anonymous": "60/min", "account": "3/min"}
    with override_settings(REST_FRAMEWORK={**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": rates}):
        answers = [api.get("/api/v1/studies/") for _ in range(4)]
    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    assert int(answers[-1]["Retry-After"]) > 0
    assert "throttled" in answers[-1].json()["detail"].lower() or "request" in answers[-1].json()["detail"].lower()
    cache.clear()


def test_the_api_goes_on_uncounted_when_redis_cannot_be_reached(researcher, as_token):
    """Rate limits are counted in the cache (Redis); an unreachable Redis is a cache miss (django-redis's
    IGNORE_EXCEPTIONS), so requests go on uncounted rather than failing every API call for the length of the outage
    (issue 31 item 1; on the previous cache backend each answered 503)."""
    api = as_token(researcher)
    dead = {"default": {**settings.CACHES["default"], "LOCATION": f"redis://127.0.0.1:{_closed_port()}/0"}}
    rates = {"anonymous": "60/min", "account": "3/min"}
    with override_settings(CACHES=dead, REST_FRAMEWORK={**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": rates}):
        answers = [api.get("/api/v1/studies/").status_code for _ in range(5)]
    assert answers == [200] * 5


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again when this returns: nothing listens there


def _expired(key: str) -> None:
    """The session ended as idle time ends it: its row expired."""
    Session.objects.filter(session_key=key).update(expire_date=timezone.now() - timedelta(seconds=1))


def test_sessions_live_in_the_database_whatever_redis(client, reviewer):
    """Sessions are rows of the database (not Redis, even where Redis is configured), so a Redis outage signs nobody
    out and cannot keep a signed-out session alive (tests/integration/test_outage.py stops Redis for real)."""
    engine = import_module(settings.SESSION_ENGINE).SessionStore  # access.login_sessions: one plain read
    assert issubclass(engine, DatabaseStore) and engine.get_model_class() is Session
    assert sign_in(client, "reviewer", PASSWORD)
    key = client.session.session_key
    assert Session.objects.get(session_key=key).get_decoded()["_auth_user_id"] == str(reviewer.pk)
    client.post("/logout/")
    assert not Session.objects.filter(session_key=key).exists(), "signing out deletes the row"


def test_a_session_idle_longer_than_the_limit_is_signed_out_and_use_renews_it(client, reviewer):
    assert sign_in(client, "reviewer", PASSWORD)
    key = client.session.session_key
    first = Session.objects.get(session_key=key).expire_date
    assert timedelta(0) < first - timezone.now() <= timedelta(seconds=settings.SESSION_COOKIE_AGE)
    _expired(key)
    assert client.get("/").status_code == 302  # to the sign-in page
    assert sign_in(client, "reviewer", PASSWORD)
    key = client.session.session_key
    at_sign_in = Session.objects.get(session_key=key).expire_date
    assert client.get("/").status_code == 200
    assert Session.objects.get(session_key=key).expire_date == at_sign_in, "within a minute a request saves nothing"
    session = client.session
    session[RENEWED] -= settings.SESSION_RENEW_SECONDS  # as if the last renewal were a minute ago
    session.save()
    Session.objects.filter(session_key=key).update(expire_date=timezone.now() + timedelta(seconds=5))
    assert client.get("/").status_code == 200
    assert Session.objects.get(session_key=key).expire_date > timezone.now() + timedelta(seconds=60)
