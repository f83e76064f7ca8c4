"""``access.login_sessions.SessionStore``: Django's database sessions, read by one plain statement; it loads what
Django's own store loads, and nothing for an expired or unknown key. ``access.backends.UserBackend``: the signed-in user
read by one plain statement, as the ORM reads it, with ModelBackend's rules; sessions made through ModelBackend stay
signed in."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_in
from django.contrib.sessions.backends.db import SessionStore as DjangoStore
from django.contrib.sessions.models import Session
from django.core import signing
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from access import login_sessions
from access.backends import DJANGO_MODEL_BACKEND, USER_BACKEND, UserBackend
from access.login_sessions import RENEWED, SessionStore
from tests.common.test_outage import _ended, _own_pid
from tests.races import HeldLock

pytestmark = pytest.mark.django_db


def test_the_site_reads_its_sessions_through_this_store():
    assert settings.SESSION_ENGINE == "access.login_sessions"


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


def test_a_payload_this_process_decoded_is_not_verified_again_and_loads_fresh_values(monkeypatch):
    """A stored payload is verified (its signature) and decoded once per process: a later load of the same stored
    text deserializes what that decoding gave. Each load gets values of its own: a change to one load's (a list in
    the session) reaches neither the next load nor what the row keeps."""
    saved = SessionStore()
    saved.update({"_auth_user_id": "7", "answer": [1, "two"], "text": "é"})
    saved.create()
    monkeypatch.setattr(login_sessions, "_decoded", {}, raising=False)  # nothing decoded yet by this process
    verified: list[object] = []
    loads = signing.loads
    monkeypatch.setattr(signing, "loads", lambda *args, **kwargs: verified.append(args) or loads(*args, **kwargs))
    first = SessionStore(saved.session_key).load()
    first["answer"].append("three")
    second = SessionStore(saved.session_key).load()
    assert second == DjangoStore(saved.session_key).load() == {"_auth_user_id": "7", "answer": [1, "two"], "text": "é"}
    assert len(verified) == 2, "once for this store (the first load), once for Django's; the second load: none"


def test_a_decoded_payload_is_kept_only_while_its_row_holds_it(reviewer):
    """What a process kept of a decoded payload never outlives its row: a session saved with new values loads them,
    a session ended (signed out, expired) loads nothing, and a payload whose signature does not verify is refused on
    every load and never kept."""
    store = SessionStore()
    store.update({"_auth_user_id": str(reviewer.pk), "answer": 1})
    store.create()
    key = store.session_key
    assert SessionStore(key).load()["answer"] == 1
    store["answer"] = 2
    store.save()
    assert SessionStore(key).load()["answer"] == 2
    row = Session.objects.get(session_key=key)
    forged = row.session_data[:-1] + ("A" if row.session_data[-1] != "A" else "B")
    Session.objects.filter(session_key=key).update(session_data=forged)
    for _ in range(2):
        assert SessionStore(key).load() == {}
    assert forged not in login_sessions._decoded
    Session.objects.filter(session_key=key).update(session_data=row.session_data)
    assert SessionStore(key).load()["answer"] == 2
    Session.objects.filter(session_key=key).update(expire_date=timezone.now() - timedelta(seconds=1))
    assert SessionStore(key).load() == {}
    Session.objects.filter(session_key=key).delete()
    assert SessionStore(key).load() == {}


def test_a_signed_in_session_still_ends_with_its_user_after_its_payload_was_kept(client, reviewer):
    """The payload kept decoded, the user is still read and checked on every request: deactivated, or the password
    changed elsewhere, the same session is signed out at its next request; signed out, it stays signed out."""
    client.force_login(reviewer)
    assert client.get(reverse("home")).status_code == 200
    assert client.get(reverse("home")).status_code == 200  # its payload decoded by this process already
    get_user_model().objects.filter(pk=reviewer.pk).update(is_active=False)
    assert client.get(reverse("home")).status_code == 302
    get_user_model().objects.filter(pk=reviewer.pk).update(is_active=True)
    client.force_login(reviewer)
    assert client.get(reverse("home")).status_code == 200
    reviewer.set_password("changed-elsewhere-42")
    reviewer.save()
    assert client.get(reverse("home")).status_code == 302
    client.force_login(reviewer)
    assert client.get(reverse("home")).status_code == 200
    key = client.session.session_key
    client.logout()
    assert not Session.objects.filter(session_key=key).exists()
    client.cookies[settings.SESSION_COOKIE_NAME] = key  # the ended session's cookie, sent again
    assert client.get(reverse("home")).status_code == 302


def test_the_signed_in_user_is_read_as_the_orm_reads_it(reviewer):
    backend = UserBackend()
    found = backend.get_user(str(reviewer.pk))  # the session keeps the id as text
    expected = get_user_model().objects.get(pk=reviewer.pk)
    assert type(found) is type(expected)
    assert {f.attname: getattr(found, f.attname) for f in expected._meta.concrete_fields} == {
        f.attname: getattr(expected, f.attname) for f in expected._meta.concrete_fields}
    assert found._state.adding is False
    assert backend.get_user(str(reviewer.pk + 10_000)) is None
    get_user_model().objects.filter(pk=reviewer.pk).update(is_active=False)
    assert backend.get_user(str(reviewer.pk)) is None, "an inactive user is refused, as ModelBackend refuses them"


def test_a_session_signed_in_through_djangos_model_backend_stays_signed_in(client, reviewer):
    assert settings.AUTHENTICATION_BACKENDS[-1] == USER_BACKEND
    client.force_login(reviewer, backend=DJANGO_MODEL_BACKEND)  # as sessions made before UserBackend were
    answer = client.get(reverse("home"))
    assert answer.status_code == 200 and answer.context["user"] == reviewer
    # A password changed elsewhere still ends the session (Django's session hash, checked after the backend).
    reviewer.set_password("changed-elsewhere-42")
    reviewer.save()
    assert client.get(reverse("home")).status_code == 302


@pytest.mark.django_db(transaction=True, serialized_rollback=True)  # the request's connection is ended for real
def test_a_sign_in_whose_session_the_database_cannot_save_answers_503_and_a_later_one_signs_in(reviewer, settings):
    """The sign-in is checked and its session row made; then the database ends the request's connection, before
    the session is saved with the user in it (on the answer's way out). Before, Django turned the failed save into
    SessionInterrupted: 400 "Bad Request", as if the browser were at fault; now it is the outage's 503 (nothing
    was changed: nobody is signed in), and once the database is back the same sign-in signs in."""
    settings.DEBUG = False
    browser = Client(raise_request_exception=False)

    def end_the_connection(**_: object) -> None:
        _ended(_own_pid())

    user_logged_in.connect(end_the_connection, dispatch_uid="test-end-the-connection")
    try:
        answer = browser.post(reverse("login"), {"username": "reviewer", "password": "pw-for-tests"})
    finally:
        user_logged_in.disconnect(dispatch_uid="test-end-the-connection")
        connection.close()
    assert answer.status_code == 503, answer.status_code
    assert b"The database cannot be reached" in answer.content
    assert browser.get(reverse("home")).status_code == 302, "not signed in"
    again = browser.post(reverse("login"), {"username": "reviewer", "password": "pw-for-tests"})
    assert (again.status_code, again["Location"]) == (302, "/")
    assert browser.get(reverse("home")).status_code == 200


def _row_locked(key: str) -> HeldLock:
    """Another connection holds the session row ``key`` locked (``SELECT … FOR UPDATE``) until the block ends: the
    test's connection may read it, but its update waits."""
    return HeldLock("SELECT 1 FROM django_session WHERE session_key = %s FOR UPDATE", (key,))


@pytest.mark.django_db(transaction=True, serialized_rollback=True)  # the row is locked from a connection of its own
def test_a_renewal_the_busy_database_cannot_take_is_left_to_the_next_request(reviewer, settings, caplog):
    """The session is due for its renewal, and another transaction holds its row: the renewal's update is not granted
    its lock in time (SQLSTATE 55P03). Before, the request answered 503 "Nothing was changed" for a renewal, which is
    not the user's work (and had the request saved any, it was saved); now the page answers, and the next request
    renews the session."""
    settings.DEBUG = False
    browser = Client(raise_request_exception=False)
    browser.force_login(reviewer)
    session = browser.session
    session[RENEWED] = 0
    session.save()
    expiry = Session.objects.get(session_key=session.session_key).expire_date
    with connection.cursor() as cursor:
        cursor.execute("SET lock_timeout = '300ms'")  # the test's connection, the one its requests use
    try:
        with _row_locked(session.session_key):
            answer = browser.get(reverse("home"))
        assert answer.status_code == 200, (answer.status_code, answer.content[-300:])
        assert Session.objects.get(session_key=session.session_key).expire_date == expiry, "not renewed"
        assert "session renewal left to the next request: the database was busy (OperationalError)" in caplog.text
        assert browser.get(reverse("home")).status_code == 200
        assert Session.objects.get(session_key=session.session_key).expire_date > expiry, "renewed"
    finally:
        connection.close()


@pytest.mark.django_db(transaction=True, serialized_rollback=True)  # the row is locked from a connection of its own
def test_a_sign_in_whose_session_the_busy_database_cannot_save_answers_the_busy_503(reviewer, settings, caplog):
    """The sign-in's session row is made, then another transaction locks it before the session is saved with the
    user in it: the save's lock is not granted in time (55P03). Before, the 503 said the database could not be
    reached (the error was raised without the database's SQLSTATE); now it says the database was busy."""
    settings.DEBUG = False
    browser = Client(raise_request_exception=False)
    locks: list[HeldLock] = []

    def lock_the_row(request, **_: object) -> None:  # noqa: ANN001
        locks.append(_row_locked(request.session.session_key).__enter__())

    with connection.cursor() as cursor:
        cursor.execute("SET lock_timeout = '300ms'")
    user_logged_in.connect(lock_the_row, dispatch_uid="test-lock-the-row")
    try:
        answer = browser.post(reverse("login"), {"username": "reviewer", "password": "pw-for-tests"})
    finally:
        user_logged_in.disconnect(dispatch_uid="test-lock-the-row")
        for lock in locks:
            lock.__exit__()
        connection.close()
    assert locks, "the sign-in's session row was locked"
    assert answer.status_code == 503, answer.status_code
    assert b"busy with another request" in answer.content and b"Nothing was changed" in answer.content
    assert "503 POST /login/: the database was busy with another request at the same time (OperationalError)" in (
        caplog.text)
