"""``access.sessions.SessionStore``: Django's database sessions, read by one plain statement; it loads what Django's
own store loads, and nothing for an expired or unknown key."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.sessions.backends.db import SessionStore as DjangoStore
from django.contrib.sessions.models import Session
from django.utils import timezone

from access.sessions import SessionStore

pytestmark = pytest.mark.django_db


def test_the_site_reads_its_sessions_through_this_store():
    assert settings.SESSION_ENGINE == "access.sessions"


def test_a_session_loads_what_djangos_store_loads():
    saved = SessionStore()
    saved.update({"_auth_user_id": "7", "answer": [1, "two"]})
    saved.create()
    mine, django = SessionStore(saved.session_key), DjangoStore(saved.session_key)
    assert mine.load() == django.load() == {"_auth_user_id": "7", "answer": [1, "two"]}
    assert mine.session_key == saved.session_key


def test_an_expired_or_unknown_session_loads_nothing_and_forgets_its_key():
    saved = SessionStore()
    saved["answer"] = 42
    saved.create()
    Session.objects.filter(session_key=saved.session_key).update(expire_date=timezone.now() - timedelta(seconds=1))
    for key in (saved.session_key, "x" * 32):
        store = SessionStore(key)
        assert store.load() == {} == DjangoStore(key).load()
        assert store.session_key is None
