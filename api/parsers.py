"""Bounded body parsers: JSON objects, bulk JSON arrays or JSON Lines, and the judgments import's file (CSV / JSON
Lines). A body over the limit is refused with 413 before it is buffered; a body that is not UTF-8 or not JSON is a
400. A UTF-8 byte order mark that begins a body is dropped, as every path that reads a file drops it (utf-8-sig).

The judgments import's file is never held in memory: it is imported whole (it cannot be sent in parts), so it may be
larger than a body (its own limit, ``common.uploads.import_limit``), and it is streamed to a temporary file, as the
body itself or as a form's part, which the importer then reads as ``manage.py import_judgments`` reads a file.

A bulk body stays bytes: its items are found (msgspec splits a JSON array into slices of the body without decoding
them; JSON Lines are split at "\n") and each is decoded only when the ingestion reads it, so a request never holds
the body decoded as one string (4 bytes a character once a text has an emoji) nor every item decoded at once. The
items are exactly what the standard library's json would give: msgspec refuses whatever it parses differently
(NaN, numbers out of a float's range, lone surrogates in escapes), and such a body or item is parsed by json."""

from __future__ import annotations

import codecs
import hashlib
import json
import re
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import IO, Any, cast, overload

import msgspec
from django.conf import settings
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import FileUploadHandler, MemoryFileUploadHandler
from django.http.multipartparser import MultiPartParser, MultiPartParserError
from rest_framework import exceptions, parsers, status

from common import file_formats
from common.errors import json_line
from common.uploads import ImportUploadHandler, body_limit, import_limit

MAX_ITEMS = 50_000  # per bulk request; each request is validated and applied as one transaction


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is too large."
    default_code = "payload_too_large"


_CHUNK = 1 << 20  # bytes of a streamed file read (and written, and hashed) at a time


@dataclass
class RawFile:
    """The judgments import's file, in a temporary file (read from its start) within the import's size limit, and
    its media type (text/csv or application/x-ndjson). The view closes it: the temporary file goes with it."""

    file: IO[bytes]
    media_type: str

    @cached_property
    def sha256(self) -> str:
        """For an Idempotency-Key only: hashed when a request has one (hashing every body is a cost for nothing),
        a chunk at a time; the file is then read again from its start. The format it is read as is part of the
        request: the same bytes sent again under the key as the other format are another request (422), not the
        first answer replayed."""
        digest = hashlib.sha256(self.media_type.encode() + b"\n")
        while chunk := self.file.read(_CHUNK):
            digest.update(chunk)
        self.file.seek(0)
        return digest.hexdigest()


@dataclass
class BulkBody:
    items: Sequence[Any]  # a RowError in place of a JSON Lines line that is not JSON
    content: bytes = field(repr=False)

    @cached_property
    def sha256(self) -> str:
        """For an Idempotency-Key only: hashed when a request has one (hashing every body is a cost for nothing)."""
        return hashlib.sha256(self.content).hexdigest()


def declared_length_check(parser_context: dict | None, *, limit: int | None = None) -> None:
    """413 when the declared length is over the limit (``limit``, else a body's), before anything is read (Django's
    own check would answer 400, and only after buffering), with what to do instead: the view's ``too_large``, else
    fewer items a request."""
    request = (parser_context or {}).get("request")
    meta = request.META if request is not None else {}
    try:
        length = int(meta.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    limit = body_limit() if limit is None else limit
    if length > limit:
        instead = getattr((parser_context or {}).get("view"), "too_large", "Send fewer items per request.")
        raise PayloadTooLarge(f"The body is {length:,} bytes; at most {limit:,} bytes are accepted per request. "
                              f"{instead}")


def read_body(stream, parser_context: dict | None) -> bytes:
    """The whole body, refusing with 413 before reading when the declared length is over the limit."""
    declared_length_check(parser_context)
    limit = body_limit()
    content = stream.read(limit + 1) if stream is not None else b""
    if len(content) > limit:
        raise PayloadTooLarge(f"The body is over {limit:,} bytes, the limit per request.")
    return content


def _decode(content: bytes) -> str:
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError as error:
        raise exceptions.ParseError(f"The body is not UTF-8 ({error.reason} at byte {error.start}).") from error


_UTF8_CHUNK = 1 << 20  # bytes decoded at a time to check a bulk body, then dropped


def _utf8_check(content: bytes) -> None:
    """The 400 of ``_decode`` (same reason, same byte), without holding the decoded body: it is decoded a chunk at a
    time and thrown away (an incremental decoder carries a character split between chunks)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(content)
    for start in range(0, len(content), _UTF8_CHUNK):
        carried = len(decoder.getstate()[0])  # bytes of a character begun in the previous chunk
        try:
            decoder.decode(view[start:start + _UTF8_CHUNK], final=start + _UTF8_CHUNK >= len(content))
        except UnicodeDecodeError as error:
            raise exceptions.ParseError(
                f"The body is not UTF-8 ({error.reason} at byte {start - carried + error.start})."
            ) from error


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise exceptions.ParseError(f"Not valid JSON: {error.msg} at line {error.lineno}, column {error.colno}.") \
            from error
    except RecursionError as error:
        raise exceptions.ParseError("Not valid JSON: nested too deeply.") from error
    except ValueError as error:  # a number of more digits than Python reads (sys.get_int_max_str_digits)
        raise exceptions.ParseError(f"Not valid JSON: {error}.") from error


class BoundedJSONParser(parsers.BaseParser):
    """JSON objects for small requests (metric runs…), with the same 413 rule as the bulk parsers."""

    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):
        return _loads(_decode(read_body(stream, parser_context)).removeprefix("\ufeff"))


def _json_array(content: bytes) -> list[Any]:
    """The body parsed whole by the standard library: for a body msgspec cannot split, so that it answers (its
    items, or its 400) exactly as json does."""
    items = _loads(_decode(content))
    if not isinstance(items, list):
        raise exceptions.ParseError("The body must be a JSON array of items (or JSON Lines, one item a line).")
    return items


_DECODE = msgspec.json.Decoder().decode
_SPLIT = msgspec.json.Decoder(list[msgspec.Raw]).decode  # a JSON array's items as slices of the body, not decoded
_NOT_DECODED = (msgspec.MsgspecError, ValueError, RecursionError)


class LazyItems(Sequence[Any]):
    """A bulk body's items, each decoded from its slice of the body when read, and not kept. ``spans`` are
    msgspec.Raw slices (a JSON array) or (start, end) byte offsets of non-blank lines (JSON Lines)."""

    def __init__(self, content: bytes, spans: list[Any], *, lines: bool) -> None:
        self._content, self._spans, self._lines = content, spans, lines

    def __len__(self) -> int:
        return len(self._spans)

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self._item(i) for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self._item(index)

    def __iter__(self) -> Iterator[Any]:
        for index in range(len(self._spans)):
            yield self._item(index)

    def decoded_as(self, decode: Callable[[Any], Any]) -> Iterator[tuple[int, Any]]:
        """(index, the item as ``decode`` gives it) for every item, in order; ``decode`` is a typed msgspec decoder
        (a Struct). None where it refuses the item: the caller reads that one as usual (``self[index]``), so every
        answer about a wrong item stays the standard library's. A Struct's ``msgspec.Raw`` field is a slice of the
        body, not a copy."""
        view = memoryview(self._content)
        for index, span in enumerate(self._spans):
            try:
                yield index, decode(view[span[0]:span[1]] if self._lines else span)
            except _NOT_DECODED:
                yield index, None

    def _item(self, index: int) -> Any:
        span = self._spans[index]
        data = self._content[span[0]:span[1]] if self._lines else span
        try:
            item = _DECODE(data)
        except _NOT_DECODED:
            pass  # json decides: the item as it parses it, or its error
        else:
            if not _nested_deeper_than(item, _DEEP):
                return item
        text = codecs.decode(data, "utf-8")  # the body is UTF-8: checked before splitting
        if self._lines:
            return json_line(index, text, field="item")  # the line's error, as every JSON Lines reader words it
        try:
            item = json.loads(text)
        except (ValueError, RecursionError):  # not JSON, or a number of more digits than Python reads
            item = _NOTHING
        if item is _NOTHING or _nested_deeper_than(item, _DEEP):
            # Near the recursion limit only the whole body says what json says (its 400 "nested too deeply")
            _json_array(self._content)
            if item is _NOTHING:
                raise exceptions.ParseError("Not valid JSON.")
        return item


# Items nested deeper than this are parsed by json: json and msgspec both refuse nesting near Python's recursion
# limit, but not at the same level. No item of an ingestion comes close (a conversation nests 5 levels).
_DEEP = 100
_NOTHING = object()


def _nested_deeper_than(value: Any, levels: int) -> bool:
    """Whether lists and dicts nest more than ``levels`` deep in ``value`` (a flat item: one look at its values)."""
    level = [value] if isinstance(value, (dict, list)) else []
    while level:
        if levels == 0:
            return True
        levels -= 1
        level = [child for node in level for child in (node.values() if isinstance(node, dict) else node)
                 if isinstance(child, (dict, list))]
    return False


# The ASCII characters str.isspace() accepts: a line of only these is blank; one with a character past ASCII is
# decoded to say (str.strip() knows Unicode's spaces too).
_ASCII_SPACE = b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"


def _line_spans(content: bytes) -> list[tuple[int, int]]:
    """Where the non-blank lines are, split on "\n" only: JSON text may hold U+2028 and friends, which
    str.splitlines() would break on."""
    spans: list[tuple[int, int]] = []
    start, size = 0, len(content)
    while start <= size:
        end = content.find(b"\n", start)
        if end < 0:
            end = size
        rest = content[start:end].lstrip(_ASCII_SPACE)
        if rest and (rest[0] < 0x80 or codecs.decode(rest, "utf-8").strip()):
            spans.append((start, end))
        start = end + 1
    return spans


def _array_items(content: bytes) -> BulkBody:
    _utf8_check(content)
    content = content.removeprefix(codecs.BOM_UTF8)  # (a copy only when there is one)
    try:
        spans = _SPLIT(content)
    except _NOT_DECODED:
        return _bulk(_json_array(content), content)  # json's answer: the body's 400, or its items
    return _bulk(LazyItems(content, spans, lines=False), content)


def _lines_items(content: bytes) -> BulkBody:
    _utf8_check(content)
    content = content.removeprefix(codecs.BOM_UTF8)
    return _bulk(LazyItems(content, _line_spans(content), lines=True), content)


class BulkJSONParser(parsers.BaseParser):
    """A JSON array of items."""

    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):
        return _array_items(read_body(stream, parser_context))


class BulkJSONLinesParser(parsers.BaseParser):
    """JSON Lines: one item a line; blank lines are skipped and not counted. A line that is not JSON is reported
    as that item's error, together with every other item's."""

    media_type = "application/x-ndjson"

    def parse(self, stream, media_type=None, parser_context=None):
        return _lines_items(read_body(stream, parser_context))


class BulkJSONLinesAltParser(BulkJSONLinesParser):
    media_type = "application/jsonl"


_FIRST_CHARACTER = re.compile(rb"[^ \t\r\n]")  # past JSON's spaces


class BulkUploadParser(parsers.BaseParser):
    """A file of items uploaded as a form (``multipart/form-data``, the part ``file``), for clients that send files
    that way (generated ones do): JSON Lines, or a JSON array. An item is an object, so a file whose first character
    past spaces is ``[`` is an array and any other is JSON Lines."""

    media_type = "multipart/form-data"

    def parse(self, stream, media_type=None, parser_context=None):
        content = read_upload(stream, media_type, parser_context)
        first = _FIRST_CHARACTER.search(content, len(codecs.BOM_UTF8) if content.startswith(codecs.BOM_UTF8) else 0)
        return _array_items(content) if first is not None and first.group() == b"[" else _lines_items(content)


BULK_PARSERS = [BulkJSONParser, BulkJSONLinesParser, BulkJSONLinesAltParser]


def _bulk(items: Sequence[Any], content: bytes) -> BulkBody:
    if len(items) > MAX_ITEMS:
        raise PayloadTooLarge(f"{len(items):,} items; at most {MAX_ITEMS:,} are accepted per request.")
    return BulkBody(items=items, content=content)


def _spooled(stream, parser_context: dict | None) -> IO[bytes]:
    """The body, written to a temporary file a chunk at a time (never held whole), refused with 413 before reading
    when its declared length is over the import's limit, and cut there with a 413 when it says no length."""
    limit = import_limit()
    declared_length_check(parser_context, limit=limit)
    file = tempfile.TemporaryFile(dir=settings.FILE_UPLOAD_TEMP_DIR)  # noqa: SIM115 - the view closes it
    try:
        size = 0
        while chunk := stream.read(_CHUNK):
            size += len(chunk)
            if size > limit:
                raise PayloadTooLarge(f"The body is over {limit:,} bytes, the limit of an import.")
            file.write(chunk)
        file.seek(0)
    except BaseException:
        file.close()
        raise
    return file


class RawTextParser(parsers.BaseParser):
    """The judgments import's file sent as the body (CSV or JSON Lines), streamed to a temporary file."""

    media_type = "text/csv"

    def parse(self, stream, media_type=None, parser_context=None):
        return RawFile(file=_spooled(stream, parser_context),
                       media_type=(media_type or self.media_type).split(";")[0].strip())


class RawJSONLinesParser(RawTextParser):
    media_type = "application/x-ndjson"


class RawJSONLinesAltParser(RawTextParser):
    media_type = "application/jsonl"


# --- a file uploaded as a form (multipart/form-data) ------------------------------------------------------------


@dataclass
class Upload:
    """The part ``file`` of a form upload, within the size limit (in memory, or a temporary file: whoever reads it
    closes it), and the form's other fields."""

    file: UploadedFile
    file_name: str
    content_type: str
    fields: dict[str, str]


def read_upload(stream, media_type: str | None, parser_context: dict | None) -> bytes:
    """The content of the form's one ``file`` part, within a body's limit (``form_file``)."""
    upload = form_file(stream, media_type, parser_context)
    try:
        return upload.file.read()
    finally:
        upload.file.close()  # a temporary file goes now, not when the request is collected


def form_file(stream, media_type: str | None, parser_context: dict | None, *, limit: int | None = None,
              handlers: list[FileUploadHandler] | None = None) -> Upload:
    """The form's one ``file`` part, of at most ``limit`` bytes (default: a body's), not read. The declared length
    is checked before anything is read (413, as for any body); Django's multipart parser then streams the file to
    the upload handlers (default: the request's: memory, or a temporary file past FILE_UPLOAD_MAX_MEMORY_SIZE), and
    every refusal of the form is a 400 or 413 in the API's error shape."""
    request = (parser_context or {})["request"]
    limit = body_limit() if limit is None else limit
    declared_length_check(parser_context, limit=limit)
    meta = request.META.copy()
    meta["CONTENT_TYPE"] = media_type
    try:
        fields, files = MultiPartParser(meta, stream, request.upload_handlers if handlers is None else handlers,
                                        (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)).parse()
    except RequestDataTooBig as error:
        raise PayloadTooLarge(f"The form is over the size limit: {error}") from error
    except (MultiPartParserError, SuspiciousOperation) as error:
        raise exceptions.ParseError(f"Not a readable form upload: {error}") from error
    uploads = files.getlist("file")
    if len(uploads) != 1:
        raise exceptions.ParseError('Send the file as the form\'s one part named "file" (multipart/form-data).')
    upload = uploads[0]
    if (upload.size or 0) > limit:  # a body of no declared length: the file's size, counted by the handlers
        upload.close()
        raise PayloadTooLarge(f"The file is {upload.size:,} bytes; at most {limit:,} bytes are accepted per request.")
    return Upload(file=upload, file_name=upload.name or "", content_type=upload.content_type or "",
                  fields={name: fields.get(name, "") for name in fields})


# A file's format by the form's ``format`` field, else its name's suffix (common.file_formats, the rule of every
# path of the judgments import), else its part's Content-Type: a client that names no file may say it so.
RAW_FORMATS = {"csv": "text/csv", "jsonl": "application/x-ndjson"}
_CONTENT_TYPES = {"text/csv": "csv", "application/x-ndjson": "jsonl", "application/jsonl": "jsonl"}


def upload_format(upload: Upload) -> str:
    """``csv`` or ``jsonl``: what the importer reads the uploaded file as."""
    given = upload.fields.get("format")
    if given is None and file_formats.suffix_format(upload.file_name) is None:
        given = _CONTENT_TYPES.get(upload.content_type.split(";")[0].strip().lower())
    try:
        return file_formats.file_format(upload.file_name, given=given, say="the form's field format=csv|jsonl")
    except file_formats.FormatUnknown as problem:
        raise exceptions.ValidationError({"format": str(problem)}) from None


class RawUploadParser(parsers.BaseParser):
    """The judgments import's file uploaded as a form (``multipart/form-data``, the part ``file``), within the
    import's limit and kept in its temporary file (``ImportUploadHandler``), with its format (``upload_format``) as
    the media type it would have been sent with as the body."""

    media_type = "multipart/form-data"

    def parse(self, stream, media_type=None, parser_context=None):
        request = (parser_context or {})["request"]
        upload = form_file(stream, media_type, parser_context, limit=import_limit(),
                           handlers=[MemoryFileUploadHandler(request), ImportUploadHandler(request)])
        try:
            media = RAW_FORMATS[upload_format(upload)]
        except BaseException:
            upload.file.close()
            raise
        # The file object itself (a BytesIO, or the temporary file that goes when it is closed), for a text reader
        return RawFile(file=cast("IO[bytes]", upload.file.file), media_type=media)


def bulk_body(request) -> BulkBody:
    data = request.data
    if not isinstance(data, BulkBody):
        raise exceptions.ParseError("The body is empty: send a JSON array of items, or JSON Lines.")
    return data
