"""Plumbing every API view shares: bounded body parsers, cursor pagination, and one exception handler that turns
the services' errors (RowErrors, conflicts, Django ValidationError) into specific 4xx answers, never a 500."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions, parsers, serializers, status
from rest_framework.pagination import CursorPagination
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from cab.errors import RowError, RowErrors
from cab.services import IdempotencyKeyReused

MAX_ITEMS = 50_000  # per bulk request; each request is validated and applied as one transaction
MAX_ERRORS_SHOWN = 1000
_IDEMPOTENCY_KEY = re.compile(r"^[\x21-\x7e]{1,200}$")


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


def idempotency_key(request) -> str | None:
    key = request.headers.get("Idempotency-Key")
    if key is None:
        return None
    if not _IDEMPOTENCY_KEY.match(key):
        raise exceptions.ValidationError({"Idempotency-Key": "1 to 200 printable ASCII characters, no spaces"})
    return key


def query_filters(request) -> dict[str, str]:
    """The query string as a plain dict (an empty value is a value, not an absent one), refusing repeated names."""
    repeated = sorted(name for name, values in request.query_params.lists() if len(values) > 1)
    if repeated:
        raise exceptions.ValidationError(dict.fromkeys(repeated, "give this parameter once"))
    return request.query_params.dict()


def request_fingerprint(request, body_sha256: str) -> str:
    return hashlib.sha256(f"{request.method} {request.path}\n{body_sha256}".encode()).hexdigest()


class IdCursorPagination(CursorPagination):
    """Stable under inserts (ordered by id); a cursor that does not decode to an id position is a 404."""

    ordering = "id"
    page_size = 500
    page_size_query_param = "page_size"
    max_page_size = 5000

    def get_page_size(self, request):
        values = request.query_params.getlist(self.page_size_query_param)
        if not values:
            return self.page_size
        if len(values) > 1 or not (values[0].isascii() and values[0].isdigit()) or int(values[0]) < 1:
            raise exceptions.ValidationError({self.page_size_query_param: "one whole number, 1 or more"})
        return min(int(values[0]), self.max_page_size)

    def decode_cursor(self, request):
        if len(request.query_params.getlist(self.cursor_query_param)) > 1:
            raise exceptions.ValidationError({self.cursor_query_param: "give one cursor"})
        cursor = super().decode_cursor(request)
        if cursor is not None and cursor.position is not None:
            position = str(cursor.position)
            if not (position.isascii() and position.lstrip("-").isdigit()) or abs(int(position)) >= 2**63:
                raise exceptions.NotFound(self.invalid_cursor_message)
        return cursor


# --- errors --------------------------------------------------------------------------------------------------


def row_errors_body(error: RowErrors, *, key: str) -> dict:
    shown = error.errors[:MAX_ERRORS_SHOWN]
    return {
        "detail": f"{len(error.errors)} error(s); nothing was changed.",
        "error_count": len(error.errors),
        "errors": [{key: e.row, "field": e.field, "message": e.message} for e in shown],
    }


def exception_handler(exc, context):
    from benchmark.services import ResponseTextConflict

    key = getattr(context.get("view"), "error_row_key", "index")
    if isinstance(exc, ResponseTextConflict):
        body = row_errors_body(exc, key=key)
        body["detail"] = (f"{len(exc.errors)} item(s) would change the text of responses that already have "
                          "judgments; nothing was changed.")
        return Response(body, status=status.HTTP_409_CONFLICT)
    if isinstance(exc, RowErrors):
        return Response(row_errors_body(exc, key=key), status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, IdempotencyKeyReused):
        return Response({"detail": "This Idempotency-Key was already used for a different request; use a new key "
                                   "for new content."}, status=status.HTTP_422_UNPROCESSABLE_ENTITY)
    if isinstance(exc, DjangoValidationError):
        messages = exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages}
        return Response({"detail": "; ".join(exc.messages), "fields": messages}, status=status.HTTP_400_BAD_REQUEST)
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(exc, exceptions.ValidationError):
        # One error shape everywhere: {"detail": …} first, the per-field messages beside it.
        fields = exc.detail if isinstance(exc.detail, dict) else {"detail": exc.detail}
        response.data = {"detail": "Invalid input: " + "; ".join(
            f"{name}: {' '.join(str(m) for m in (msgs if isinstance(msgs, list) else [msgs]))}"
            for name, msgs in fields.items()), "fields": fields}
    return response


# --- the shape of every error answer, for the OpenAPI schema -----------------------------------------------


class ItemErrorOut(serializers.Serializer):
    index = serializers.IntegerField(required=False, help_text="0-based position of the item in the request")
    line = serializers.IntegerField(required=False, help_text="1-based line of an uploaded file (CSV: header is 1)")
    field = serializers.CharField()
    message = serializers.CharField()


class ErrorOut(serializers.Serializer):
    detail = serializers.CharField()
    fields = serializers.DictField(required=False, help_text="field -> messages, for a malformed parameter or body")
    error_count = serializers.IntegerField(required=False)
    errors = ItemErrorOut(many=True, required=False, help_text="every problem, item by item (at most 1000 shown)")




def error_responses(*codes: int) -> dict[int, type[ErrorOut]]:
    """The documented error answers of an operation (401 and 403 always: every operation needs a login)."""
    return dict.fromkeys(sorted({401, 403, *codes}), ErrorOut)


@csrf_exempt  # nothing happens here; without this a POST would get the HTML CSRF page instead of the JSON 404
def api_not_found(request, *args, **kwargs):
    """Any /api/v1/… path that names no endpoint: a JSON 404 like every other API error (not the HTML page)."""
    return JsonResponse({"detail": "No such API endpoint; see /api/docs/."}, status=404)


# --- path parameters, described exactly --------------------------------------------------------------------

# A regex route gives drf-spectacular only an unanchored pattern; the schema states exactly what each route accepts.
PATH_PARAMETER_SCHEMAS = {
    "slug": {"type": "string", "pattern": r"^[-a-zA-Z0-9_]+$"},
    "round_name": {"type": "string", "pattern": r"^(calibration-[1-9][0-9]{0,8}|main)$"},
    "fmt": {"type": "string", "enum": ["csv", "jsonl"]},
    "table": {"type": "string", "pattern": r"^[a-z][a-z0-9_]{0,49}$"},
    "run_id": {"type": "integer", "minimum": 0},
}


def exact_path_parameters(result, generator, request, public):
    """drf-spectacular postprocessing hook."""
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            for parameter in operation.get("parameters", []) if isinstance(operation, dict) else []:
                if parameter.get("in") == "path" and parameter.get("name") in PATH_PARAMETER_SCHEMAS:
                    parameter["schema"] = dict(PATH_PARAMETER_SCHEMAS[parameter["name"]])
    return result
