"""Sessions end after idle time: a session that has had no request for ``SESSION_COOKIE_AGE`` seconds is gone.

Each save of a session moves its expiry to now + ``SESSION_COOKIE_AGE``. Saving it on every request would cost
three queries on every page and autosave; instead a request renews it when the last renewal is more than
``SESSION_RENEW_SECONDS`` old (and signing in counts as one), so the idle limit holds to within that margin. A
renewal the database cannot take (an outage after the request's own work was committed, or its row locked by
another request past ``lock_timeout``) is left to the next request: it is not the user's work, and failing on it
would answer 503 "Nothing was changed" (``common.outage``) for a request whose work was saved. Any other save it
cannot take (a sign-in's) answers that 503.

``SESSION_ENGINE = "access.login_sessions"``: Django's database sessions, in the same table, with the read that every
signed-in request makes written as one statement instead of a queryset compiled per request (issue 34: the
compiling cost more CPU than a health check's whole request), and a stored payload this process has already verified
and decoded not verified again (``SessionStore.decode``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY
from django.contrib.auth.signals import user_logged_in
from django.contrib.sessions.backends import db
from django.contrib.sessions.backends.base import UpdateError
from django.contrib.sessions.models import Session
from django.db import DatabaseError, connections, router
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from access.backends import DJANGO_MODEL_BACKEND, USER_BACKEND
from common.outage import busy, unreachable

log = logging.getLogger(__name__)

RENEWED = "_renewed_at"


@receiver(user_logged_in)
def _renewed_at_sign_in(sender: Any, request: HttpRequest | None, **_: Any) -> None:
    if request is not None and hasattr(request, "session"):
        request.session[RENEWED] = int(time.time())


class IdleSessionMiddleware:
    """Placed right after ``SessionMiddleware``, so the renewal it asks for is saved on the way out."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        session = getattr(request, "session", None)
        # Only a request that read its session renews it (a health check or a static page never loads it).
        if session is not None and session.accessed and session.session_key and not session.is_empty():
            now = int(time.time())
            if now - session.get(RENEWED, 0) >= settings.SESSION_RENEW_SECONDS:
                if not session.modified and isinstance(session, SessionStore):
                    session.renewal_only = True
                session[RENEWED] = now
        return response


class SessionStore(db.SessionStore):
    """Django's database session store; a session is read by one statement of plain SQL: the same row, under the
    same condition (its key, not expired), as ``Session.objects.get(session_key=…, expire_date__gt=now)``. A session
    signed in through Django's ModelBackend before ``access.backends.UserBackend`` replaced it is read as
    UserBackend's (the same rules), so nobody is signed out by the change."""

    renewal_only = False  # set by IdleSessionMiddleware: the request changed nothing else of the session

    def save(self, must_create: bool = False) -> None:
        """A renewal alone that the database cannot take, unreachable or busy, is left out (logged), never the
        request's answer. Any other save the database cannot take (a sign-in's) raises the database's error, which
        answers the outage's 503 (``common.outage``): Django's store raises UpdateError from it, which its middleware
        turns into SessionInterrupted, a 400 that blames the browser."""
        try:
            super().save(must_create=must_create)
        except (DatabaseError, UpdateError) as error:
            database = error.__context__ if isinstance(error, UpdateError) else error
            outage = unreachable(error) == "database"
            if not isinstance(database, DatabaseError) or not (outage or busy(error)):
                raise
            if self.renewal_only:
                log.warning("session renewal left to the next request: the database %s (%s)",
                            "cannot be reached" if outage else "was busy", type(database).__name__)
                return
            # With its cause, psycopg's error: its SQLSTATE says which 503 (unreachable or busy).
            raise database from database.__cause__

    def load(self) -> dict[str, Any]:
        """What Django's store loads (``decode`` of the stored payload; ``{}`` for an expired or unknown key, which is
        forgotten), read without a model instance of the row."""
        row = self._stored_row()
        data = self.decode(row[0]) if row is not None else {}
        if data.get(BACKEND_SESSION_KEY) == DJANGO_MODEL_BACKEND:
            data[BACKEND_SESSION_KEY] = USER_BACKEND
        return data

    def decode(self, session_data: bytes | str) -> dict[str, Any]:
        """Django's decoding of a stored payload (its signature checked against ``SECRET_KEY`` and its fallbacks,
        then decompressed and deserialized), done once per process and payload: a payload whose stored text is one
        this process has decoded already is deserialized from what that decoding gave, without checking the same
        signature on the same text again (``DECODED_KEPT``). Every request still reads its session's row, so its
        expiry, its idle renewal and its deletion hold as before, and its user is read and checked against the
        session's auth hash as before; a payload that does not verify is never kept (Django's ``{}``, logged)."""
        kept = _decoded.get(session_data)
        if kept is not None:
            return self.serializer().loads(kept)
        data: dict[str, Any] = super().decode(session_data)
        if data:
            if len(_decoded) >= DECODED_KEPT:  # never let a long-lived worker grow without bound
                _decoded.clear()
            _decoded[session_data] = self.serializer().dumps(data)
        return data

    def _stored_row(self) -> tuple[str, datetime] | None:
        """The session's stored payload and expiry, read by one plain statement: the same row, under the same
        condition, as ``Session.objects.get(session_key=…, expire_date__gt=now)``; None (and the key forgotten, as
        Django's store forgets it) for an expired or unknown key."""
        connection = connections[router.db_for_read(Session)]
        table = connection.ops.quote_name(Session._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT session_data, expire_date FROM {table} "  # noqa: S608  # nosec B608 - the model's table
                           "WHERE session_key = %s AND expire_date > %s", [self.session_key, timezone.now()])
            row = cursor.fetchone()
        if row is None:
            self._session_key = None
            return None
        return row[0], row[1]

    def _get_session_from_db(self) -> Session | None:
        row = self._stored_row()
        if row is None:
            return None
        return Session(session_key=str(self.session_key), session_data=row[0], expire_date=row[1])


# The stored payloads this process has decoded (``SessionStore.decode``), by their signed text, each as its
# serializer's bytes: at most this many (a few hundred bytes each), dropped together when full.
DECODED_KEPT = 4096
_decoded: dict[bytes | str, bytes] = {}
