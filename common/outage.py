"""A dependency outage answers 503, never 500: when PostgreSQL or Redis cannot be reached (or a statement was
cancelled by a server going away), the request gets ``503 Service Unavailable`` with ``Retry-After``: a styled page
that touches neither (no session, no user, no database), or for ``/api/`` the API's error shape ``{"detail": …}``.
Anything else is the ordinary 500 page. Nothing the user did is lost: the failed request changed nothing (its
transaction never committed), and the pages' autosave keeps the change and sends it again. A request that goes on
reading after its commit (the words on a metric run it saved) reads through ``read_after_commit``, so that the 503
is never its answer: its work was saved, and a user or client told otherwise would do it again.

Wired as the project's ``handler500`` (cab/urls.py): Django calls it for any exception a view or a middleware
raised, inside the ``except`` that caught it, so the exception is ``sys.exc_info()``'s."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import TypeVar

import kombu.exceptions
import redis.exceptions
from django.db import DatabaseError, InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template import loader
from django.views.defaults import server_error as django_server_error

log = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 10
_UNREACHABLE: dict[str, tuple[type[BaseException], ...]] = {
    "database": (OperationalError, InterfaceError),
    "redis": (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, kombu.exceptions.OperationalError),
}
_WHAT = {"database": "the database", "redis": "the task broker (Redis)"}


def unreachable(error: BaseException | None) -> str | None:
    """Which dependency ``error`` (or an error it was raised from) says is unreachable: "database", "redis" or
    None."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        for name, kinds in _UNREACHABLE.items():
            if isinstance(error, kinds):
                return name
        error = error.__cause__ or error.__context__
    return None


T = TypeVar("T")


def read_after_commit(read: Callable[[], T], *, otherwise: T) -> T:
    """``read()``, or ``otherwise`` when the database cannot be reached: for what a request reads once its work is
    committed, whose outage must not answer the 503 that says nothing was changed."""
    try:
        return read()
    except DatabaseError as error:
        if unreachable(error) != "database":
            raise
        log.warning("a read after the request's commit was left out: the database cannot be reached (%s)",
                    type(error).__name__)
        return otherwise


def unavailable(request: HttpRequest, dependency: str) -> HttpResponse:
    """The 503 for an outage of ``dependency``: JSON under /api/, else the page (rendered without the request, so
    without context processors: they would read the session and the user)."""
    detail = (f"The service is briefly unavailable: {_WHAT[dependency]} cannot be reached. Nothing was changed; "
              f"try again in {RETRY_AFTER_SECONDS} seconds.")
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse({"detail": detail, "unavailable": dependency}, status=503)
    else:
        page = loader.get_template("503.html").render({"retry_after": RETRY_AFTER_SECONDS,
                                                        "what": _WHAT[dependency]})
        response = HttpResponse(page, status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    response["Cache-Control"] = "no-store"
    return response


def server_error(request: HttpRequest) -> HttpResponse:
    dependency = unreachable(sys.exc_info()[1])
    if dependency is not None:
        return unavailable(request, dependency)
    return django_server_error(request)
