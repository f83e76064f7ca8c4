"""The project's WSGI application with one more path, for the benchmarks only: ``/bench/select-1`` answers after one
``SELECT 1`` on the worker's database connection, without Django's request handling (no URL resolver, middleware,
session or template). It is the floor under every page: gunicorn, HTTP on loopback and one database round trip.

Served only by a benchmark that asks for it (``perf/_common.py``: ``gunicorn(app=BARE_APP)``); the product's
URLs (``cab/urls.py``) and its WSGI entry point (``cab.wsgi``) never include it, so no deployment serves it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.db import connection

from cab.wsgi import application as cab_application
from perf._common import BARE_PATH

_BODY = b"1"


def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    if environ.get("PATH_INFO") != BARE_PATH:
        return cab_application(environ, start_response)
    # The worker's own connection (persistent, as Django keeps it between requests): one round trip.
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(_BODY)))])
    return [_BODY]
