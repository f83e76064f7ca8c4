"""Bounded body parsers: JSON objects, bulk JSON arrays or JSON Lines, and raw files (CSV / JSON Lines). A body
over the limit is refused with 413 before it is buffered; a body that is not UTF-8 or not JSON is a 400."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from rest_framework import exceptions, parsers, status

from common.errors import RowError

MAX_ITEMS = 50_000  # per bulk request; each request is validated and applied as one transaction


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is too large."
    default_code = "payload_too_large"


@dataclass
class RawBody:
    """A request body as bytes with its SHA-256 (for Idempotency-Key), read within the size limit."""

    content: bytes
    sha256: str
    media_type: str


@dataclass
class BulkBody:
    items: list[Any]  # a RowError in place of a JSON Lines line that is not JSON
    sha256: str


def body_limit() -> int:
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 64 * 1024 * 1024


def read_body(stream, parser_context: dict | None) -> bytes:
    """The whole body, refusing with 413 before reading when the declared length is over the limit (Django's own
    check would answer 400, and only after buffering)."""
    request = (parser_context or {}).get("request")
    meta = request.META if request is not None else {}
    try:
        length = int(meta.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    limit = body_limit()
    if length > limit:
        raise PayloadTooLarge(
            f"The body is {length:,} bytes; at most {limit:,} bytes are accepted per request. Send fewer items "
            "per request."
        )
    content = stream.read(limit + 1) if stream is not None else b""
    if len(content) > limit:
        raise PayloadTooLarge(f"The body is over {limit:,} bytes, the limit per request.")
    return content


def _decode(content: bytes) -> str:
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError as error:
        raise exceptions.ParseError(f"The body is not UTF-8 ({error.reason} at byte {error.start}).") from error


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise exceptions.ParseError(f"Not valid JSON: {error.msg} at line {error.lineno}, column {error.colno}.") \
            from error
    except RecursionError as error:
        raise exceptions.ParseError("Not valid JSON: nested too deeply.") from error


class BoundedJSONParser(parsers.BaseParser):
    """JSON objects for small requests (metric runs…), with the same 413 rule as the bulk parsers."""

    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):
        return _loads(_decode(read_body(stream, parser_context)))


class BulkJSONParser(parsers.BaseParser):
    """A JSON array of items."""

    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):
        content = read_body(stream, parser_context)
        items = _loads(_decode(content))
        if not isinstance(items, list):
            raise exceptions.ParseError("The body must be a JSON array of items (or JSON Lines, one item a line).")
        return _bulk(items, content)


class BulkJSONLinesParser(parsers.BaseParser):
    """JSON Lines: one item a line; blank lines are skipped and not counted. A line that is not JSON is reported
    as that item's error, together with every other item's."""

    media_type = "application/x-ndjson"

    def parse(self, stream, media_type=None, parser_context=None):
        content = read_body(stream, parser_context)
        items: list[Any] = []
        # Split on "\n" only: JSON text may hold U+2028 and friends, which str.splitlines() would break on.
        for line in _decode(content).split("\n"):
            if not line.strip():
                continue
            try:
                items.append(json.loads(line))
            except json.JSONDecodeError as error:
                items.append(RowError(len(items), "item", f"not valid JSON ({error.msg} at column {error.colno})"))
            except RecursionError:
                items.append(RowError(len(items), "item", "not valid JSON (nested too deeply)"))
        return _bulk(items, content)


class BulkJSONLinesAltParser(BulkJSONLinesParser):
    media_type = "application/jsonl"


BULK_PARSERS = [BulkJSONParser, BulkJSONLinesParser, BulkJSONLinesAltParser]


def _bulk(items: list, content: bytes) -> BulkBody:
    if len(items) > MAX_ITEMS:
        raise PayloadTooLarge(f"{len(items):,} items; at most {MAX_ITEMS:,} are accepted per request.")
    return BulkBody(items=items, sha256=hashlib.sha256(content).hexdigest())


class RawTextParser(parsers.BaseParser):
    """A file sent as the body (CSV or JSON Lines), kept as bytes for the importer."""

    media_type = "text/csv"

    def parse(self, stream, media_type=None, parser_context=None):
        content = read_body(stream, parser_context)
        return RawBody(content=content, sha256=hashlib.sha256(content).hexdigest(),
                       media_type=(media_type or self.media_type).split(";")[0].strip())


class RawJSONLinesParser(RawTextParser):
    media_type = "application/x-ndjson"


class RawJSONLinesAltParser(RawTextParser):
    media_type = "application/jsonl"


def bulk_body(request) -> BulkBody:
    data = request.data
    if not isinstance(data, BulkBody):
        raise exceptions.ParseError("The body is empty: send a JSON array of items, or JSON Lines.")
    return data
