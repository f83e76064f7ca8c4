"""Reading the parts of a request every API view shares: the Idempotency-Key header and the query filters."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from drf_spectacular.utils import OpenApiParameter
from rest_framework import exceptions

if TYPE_CHECKING:
    from django.contrib.auth.models import User
    from rest_framework.request import Request

_IDEMPOTENCY_KEY = re.compile(r"^[\x21-\x7e]{1,200}$")


def idempotency_headers(*, resend: str = "the first answer again", status: int = 200) -> list[OpenApiParameter]:
    """The request's Idempotency-Key header and the answer's Idempotent-Replayed, in the schema of an operation that
    takes them: ``resend``, what a resend gets; ``status``, the answer's."""
    return [
        OpenApiParameter(
            "Idempotency-Key",
            {"type": "string", "pattern": r"^[\x21-\x7e]{1,200}$", "minLength": 1, "maxLength": 200},
            OpenApiParameter.HEADER, required=False,
            description="Any unique string (≤ 200 printable ASCII characters). A resend with the same key and body "
                        f"gets {resend} (header Idempotent-Replayed: true); the same key with another body is 422.",
        ),
        OpenApiParameter(
            "Idempotent-Replayed", {"type": "string", "enum": ["true"]}, OpenApiParameter.HEADER, response=[status],
            description="present when this answer is the first answer to the request's Idempotency-Key, replayed",
        ),
    ]


IDEMPOTENCY_HEADERS = idempotency_headers()


def request_user(request: Request) -> User:
    """The signed-in account: IsAuthenticated, a default permission, lets no anonymous request reach a view."""
    user = request.user
    assert user.is_authenticated
    return user


def idempotency_key(request: Request) -> str | None:
    key = request.headers.get("Idempotency-Key")
    if key is None:
        return None
    if not _IDEMPOTENCY_KEY.match(key):
        raise exceptions.ValidationError({"Idempotency-Key": "1 to 200 printable ASCII characters, no spaces"})
    return key


def query_filters(request: Request) -> dict[str, str]:
    """The query string as a plain dict (an empty value is a value, not an absent one), refusing repeated names."""
    repeated = sorted(name for name, values in request.query_params.lists() if len(values) > 1)
    if repeated:
        raise exceptions.ValidationError(dict.fromkeys(repeated, "give this parameter once"))
    return request.query_params.dict()


NAMES_LISTED = 50  # a refused filter lists at most this many of the names it may take


def query_filter_named(*, parameter: str, value: str, names: Iterable[str], what: str, shown: bool = True) -> str:
    """The one of ``names`` (a study's model slots, attribute codes, coders…) that a query filter's ``value`` names:
    itself, or else the only one equal to it ignoring case (``gpt`` for a study's ``GPT``). A value that names none
    (or, ignoring case, several) is a 400 naming the parameter and why, listing ``what`` the study has when the
    caller may see them (``shown``): a filter that names nothing would answer an empty list, read as "none there"."""
    known = sorted(set(names))
    if value in known:
        return value
    folded = [name for name in known if name.casefold() == value.casefold()]
    if len(folded) == 1:
        return folded[0]
    given = repr(value[:100])
    if folded:
        message = f"{given} matches {', '.join(folded)} ignoring case: give one of them exactly"
    elif not shown:
        message = f"{given} names none of this study's {what}"
    elif not known:
        message = f"{given} names none of this study's {what}: it has none"
    else:
        listed = ", ".join(known[:NAMES_LISTED]) + (f", … ({len(known)} in all)" if len(known) > NAMES_LISTED else "")
        message = f"{given} names none of this study's {what} ({listed}; matched ignoring case)"
    raise exceptions.ValidationError({parameter: message})


def request_fingerprint(request: Request, body_sha256: str) -> str:
    return hashlib.sha256(f"{request.method} {request.path}\n{body_sha256}".encode()).hexdigest()
