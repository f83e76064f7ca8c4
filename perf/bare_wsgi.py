"""The project's WSGI application with two more paths, for the benchmarks only; each is a floor under the
reviewer's requests, measured by the same clients in the same run:

- ``/bench/select-1`` answers after one ``SELECT 1`` on the worker's database connection, without Django's request
  handling (no URL resolver, middleware, session or template): gunicorn, HTTP on loopback and one database round
  trip, the floor under every page;
- ``/bench/signed-in`` is a ``POST`` through all of Django's request handling, every middleware of the product
  included (its session read, its user, the CSRF check, the security headers), to a view that reads the form body
  and does nothing else: what an autosave costs before the save's own work starts. Without a session it answers
  401, and without the CSRF token 403, as an autosave would.

Served only by a benchmark that asks for it (``perf/_common.py``: ``gunicorn(app=BARE_APP)``); the product's
URLs (``cab/urls.py``) and its WSGI entry point (``cab.wsgi``) never include them, so no deployment serves them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.core.handlers.wsgi import WSGIHandler
from django.db import connection
from django.http import HttpRequest, HttpResponse
from django.urls import ResolverMatch

from cab.wsgi import application as cab_application
from perf._common import BARE_PATH, SIGNED_IN_PATH

_BODY = b"1"


def signed_in(request: HttpRequest) -> HttpResponse:
    """The signed-in floor's view: the checks an autosave's view makes before its own work (a signed-in user, a
    POST with a form body), then nothing."""
    if not request.user.is_authenticated:
        return HttpResponse("Your session has ended: sign in again.", status=401, content_type="text/plain")
    if request.method != "POST":
        return HttpResponse(status=405, headers={"Allow": "POST"})
    request.POST.get("form_id")
    return HttpResponse(_BODY, content_type="text/plain")


class _SignedInHandler(WSGIHandler):
    """Django's WSGI handler, the product's middleware and settings, resolving whatever it is given to
    ``signed_in``: ``application`` gives it ``SIGNED_IN_PATH`` alone, which the product's URLs do not know."""

    def resolve_request(self, request: HttpRequest) -> ResolverMatch:
        match = ResolverMatch(signed_in, (), {}, url_name="bench-signed-in", route=SIGNED_IN_PATH.lstrip("/"))
        request.resolver_match = match
        return match


_signed_in_application = _SignedInHandler()


def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    path = environ.get("PATH_INFO")
    if path == SIGNED_IN_PATH:
        return _signed_in_application(environ, start_response)
    if path != BARE_PATH:
        return cab_application(environ, start_response)
    # The worker's own connection (persistent, as Django keeps it between requests): one round trip.
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(_BODY)))])
    return [_BODY]
