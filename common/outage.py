"""A dependency outage answers 503, never 500: when PostgreSQL or Redis cannot be reached (or the database ended the
request's connection as it went away), the request gets ``503 Service Unavailable`` with ``Retry-After``: a styled
page that touches neither (no session, no user, no database), or for ``/api/`` the API's error shape
``{"detail": …}``. Anything else is the ordinary 500 page. Nothing the user did is lost: the failed request changed
nothing (its transaction never committed), and the pages' autosave keeps the change and sends it again. A request
that goes on reading after its commit (the words on a metric run it saved) reads through ``read_after_commit``, so
that the 503 is never its answer: its work was saved, and a user or client told otherwise would do it again.

What the database's error says is read from its SQLSTATE (psycopg's ``sqlstate``), never from its words:

- **Unreachable** (``unreachable``): no SQLSTATE (psycopg could not connect, or the connection broke), a connection
  exception (class 08), the server shutting down, crashed or starting up (57P01, 57P02, 57P03: what a restart does
  to every open connection) or out of connection slots (53300). The 503 above; a metric run goes back to the queue.
- **Busy** (``busy``): a deadlock (40P01), a serialization failure (40001) or a lock not granted in time (55P03).
  The database is up, and the request lost to another one: PostgreSQL rolled its transaction back, so nothing was
  changed, and the same request sent again succeeds once the other has finished. A 503 that says so, with the same
  ``Retry-After``; a metric run goes back to the queue as for an outage, counted against the same
  ``METRIC_RUN_MAX_ATTEMPTS`` (metrics.runs), so a run that deadlocks every time ends failed with the reason.
- **Anything else is no outage**, a cancelled statement (57014: a ``statement_timeout``, or someone's
  ``pg_cancel_backend``) included: the same statement sent again would run as long again, so a retry would not
  help. It is the ordinary 500, its traceback logged for the operator to find the statement, and a metric run
  fails at once with the reason (never queued again and again).

A recognised outage or busy database logs one WARNING line per request (method, path, the dependency, the error's
class; no user text, no SQL): in a long outage every client's every request meets it, and a traceback each said
nothing more. Anything else is logged as Django logs a 500, with its traceback.

Wired as the project's ``handler500`` (cab/urls.py): Django calls it for any exception a view or a middleware
raised, inside the ``except`` that caught it, so the exception is ``sys.exc_info()``'s."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import TypeVar

import kombu.exceptions
import psycopg
import redis.exceptions
from django.db import DatabaseError, InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template import loader
from django.views.defaults import server_error as django_server_error

log = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 10
_DATABASE = (OperationalError, InterfaceError, psycopg.OperationalError, psycopg.InterfaceError)
_REDIS = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, kombu.exceptions.OperationalError)
_GONE = {"57P01", "57P02", "57P03", "53300"}  # shut down, crashed, starting up, no connection slot left
_BUSY = {"40001", "40P01", "55P03"}  # serialization failure, deadlock, lock not available
_SAID = {"database": "the database cannot be reached", "redis": "the task broker (Redis) cannot be reached",
         "busy": "the database was busy with another request at the same time"}


def _chain(error: BaseException | None) -> list[BaseException]:
    """``error`` and the errors it was raised from (or while handling), each once."""
    seen: list[BaseException] = []
    while error is not None and all(error is not other for other in seen):
        seen.append(error)
        error = error.__cause__ or error.__context__
    return seen


def _database_error(error: BaseException | None) -> tuple[bool, str | None]:
    """Whether ``error`` (or one it was raised from) is a database error of the connection's kind, and the SQLSTATE
    of the first such (Django's error carries psycopg's as its ``__cause__``)."""
    for each in _chain(error):
        if isinstance(each, _DATABASE):
            state = getattr(each, "sqlstate", None) or getattr(each.__cause__, "sqlstate", None)
            return True, state
    return False, None


def unreachable(error: BaseException | None) -> str | None:
    """Which dependency ``error`` (or an error it was raised from) says is unreachable: "database", "redis" or
    None (a database that answered with another error, a deadlock or a cancelled statement, is reachable)."""
    database, state = _database_error(error)
    if database and (state is None or state.startswith("08") or state in _GONE):
        return "database"
    if any(isinstance(each, _REDIS) for each in _chain(error)):
        return "redis"
    return None


def busy(error: BaseException | None) -> bool:
    """Whether ``error`` says the database rolled the transaction back for another one (deadlock, serialization
    failure, lock not granted in time): nothing was changed, and the same work done again succeeds."""
    database, state = _database_error(error)
    return database and state in _BUSY


def said(error: BaseException | None) -> str | None:
    """What ``error`` says of the service, in the words of the 503 ("the database cannot be reached", "the database
    was busy with another request at the same time", the broker's), or None for any other error: for a command, which
    says it in one line (manage.py)."""
    why = unreachable(error) or ("busy" if busy(error) else None)
    return None if why is None else _SAID[why]


T = TypeVar("T")


def read_after_commit(read: Callable[[], T], *, otherwise: T) -> T:
    """``read()``, or ``otherwise`` when the database cannot be reached (or is busy): for what a request reads once
    its work is committed, whose outage must not answer the 503 that says nothing was changed."""
    try:
        return read()
    except DatabaseError as error:
        if unreachable(error) != "database" and not busy(error):
            raise
        log.warning("a read after the request's commit was left out: the database cannot be reached or is busy "
                    "(%s)", type(error).__name__)
        return otherwise


def unavailable(request: HttpRequest, why: str) -> HttpResponse:
    """The 503 for ``why``, an unreachable dependency ("database", "redis") or a "busy" database: JSON under /api/,
    else the page (rendered without the request, so without context processors: they would read the session and
    the user)."""
    detail = (f"The service is briefly unavailable: {_SAID[why]}. Nothing was changed; try again in "
              f"{RETRY_AFTER_SECONDS} seconds.")
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse({"detail": detail, "unavailable": why}, status=503)
    else:
        page = loader.get_template("503.html").render({"retry_after": RETRY_AFTER_SECONDS, "said": _SAID[why]})
        response = HttpResponse(page, status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    response["Cache-Control"] = "no-store"
    return response


def server_error(request: HttpRequest) -> HttpResponse:
    """The 503 of an outage or a busy database, logged in one line a request; else Django's 500 (logged by Django
    with its traceback)."""
    error = sys.exc_info()[1]
    why = unreachable(error) or ("busy" if busy(error) else None)
    if why is None:
        return django_server_error(request)
    return logged(request, unavailable(request, why), said=f"{_SAID[why]} ({type(error).__name__})")


def logged(request: HttpRequest, response: HttpResponse, *, said: str) -> HttpResponse:
    """``response``, a 503 for an outage, logged in one WARNING line a request (a middleware may meet the outage
    again on the answer's way out) and marked as logged, so that Django does not log it again at ERROR."""
    if not getattr(request, "outage_logged", False):
        log.warning("503 %s %s: %s", request.method, request.path, said)
        request.outage_logged = True  # type: ignore[attr-defined]
    response._has_been_logged = True  # type: ignore[attr-defined]  # Django's own mark (django.utils.log)
    return response
