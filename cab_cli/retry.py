"""When the CLI asks the server again: an answer that says the server could not take the request just then
(``UNAVAILABLE``: its database or broker unreachable or busy, overloaded, a proxy without it) changed nothing, and
the same request may be sent again, as late as its ``Retry-After`` asks, within bounds
(docs/api.md#the-researcher-cli). ``cab run``, ``cab wait`` and ``cab download`` wait so."""

from __future__ import annotations

import email.utils
from collections.abc import Mapping
from datetime import UTC, datetime
from http import HTTPStatus

UNAVAILABLE = {HTTPStatus.TOO_MANY_REQUESTS, HTTPStatus.BAD_GATEWAY, HTTPStatus.SERVICE_UNAVAILABLE,
               HTTPStatus.GATEWAY_TIMEOUT}
# A Retry-After longer than this is waited this long: a wrong header must not hold the command for hours. Never
# past the command's --timeout either.
RETRY_AFTER_MOST = 60.0


def retry_after(headers: Mapping[str, str]) -> float | None:
    """The seconds an answer's Retry-After asks for (a number of seconds or an HTTP date), or None when it has none
    the command can read."""
    value = headers.get("Retry-After", "").strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # "-0000": UTC, as HTTP dates are
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def pause(every: float, retry_after: float | None) -> float:
    """How long to wait before asking again: what the server's Retry-After asks (at most RETRY_AFTER_MOST), and
    never less than ``every``."""
    return every if retry_after is None else max(every, min(retry_after, RETRY_AFTER_MOST))


def backoff(attempt: int) -> float:
    """The least wait after failed attempt ``attempt`` (1, 2, 4… s, at most 30) of a command that counts its
    retries (``cab download``'s ``--retries``)."""
    return float(min(2 ** (attempt - 1), 30))


def asked(retry_after: float | None) -> str:
    """The words for how late the command asks again, when the server said."""
    return "" if retry_after is None else f" in {retry_after:g} s (the server's Retry-After)"
