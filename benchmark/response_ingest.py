"""Ingesting model responses in bulk through the API (``responses_ingest``): items addressed by (dataset,
conversation id, turn index, model), validated on a fast path that reads a bulk body's items straight from their
slices of the body (msgspec), resolved to their turns a chunk at a time, compared with the stored texts by digest,
and the new ones written with one binary COPY. All or nothing, with the same study isolation and frozen text
checks as every ingestion (benchmark/material_rules.py), and the rule of histories of sessions: one model slot each
(benchmark/sessions.py).
"""

from __future__ import annotations

import hashlib
import re
import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from sys import intern
from typing import Any, NamedTuple

import msgspec
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import CharField, Func
from django.utils import timezone

from api.parsers import LazyItems
from audit.services import audit_record
from benchmark.material_rules import (
    Edit,
    MaterialConflict,
    StudyRef,
    chunks,
    claim,
    material_conflicts,
    turns_back_in_queues,
    turns_sent_back,
)
from benchmark.models import ModelResponse, Turn
from benchmark.sessions import assistant_problem, history_slots
from common.errors import RowError, RowErrors
from common.locks import advisory_lock
from common.lookups import any_of

# PostgreSQL integer columns (turn index) stop here; a bigger number must be a row error, not a database error.
_MAX_INT = 2**31 - 1
_RESPONSE_FIELDS = ("dataset", "conversation_id", "turn_index", "model", "model_version", "text")
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")  # PostgreSQL text holds neither


@dataclass
class IngestSummary:
    items: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    turns_back_in_queues: int = 0  # coders' completed turns a new response took out of the completed ones

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _string_problem(value: Any, *, max_length: int | None, allow_blank: bool) -> str | None:
    """What is wrong with a string field, or None. Mirrors DRF's CharField rules (no NUL, no lone surrogates),
    which the database would otherwise turn into a server error."""
    if not isinstance(value, str):
        return "must be a string"
    if not allow_blank and value == "":
        return "may not be blank"
    if max_length is not None and len(value) > max_length:
        return f"at most {max_length} characters (got {len(value)})"
    unstorable = _UNSTORABLE.search(value)
    if unstorable is None:
        return None
    return "may not contain NUL characters" if unstorable.group() == "\x00" else \
        "may not contain lone surrogate characters"


def _turn_index(value: Any) -> int | str:
    if isinstance(value, bool):
        return "must be a whole number, not true/false"
    if isinstance(value, str) and value.strip().isdigit() and value.strip().isascii():
        value = int(value.strip())
    if not isinstance(value, int):
        return f"must be a whole number, got {type(value).__name__}"
    if not 1 <= value <= _MAX_INT:
        return f"must be between 1 and {_MAX_INT}"
    return value


def _response_item_clean(index: int, item: dict) -> tuple[dict[str, Any], list[RowError]]:
    """One item's fields, stripped and checked one by one: (cleaned values, their problems in field order)."""
    item_errors = [RowError(index, name, f"unknown field; fields are {', '.join(_RESPONSE_FIELDS)}")
                   for name in sorted(set(item) - set(_RESPONSE_FIELDS), key=str)]
    cleaned: dict[str, Any] = {}
    for name, max_length, allow_blank, strip in (("dataset", 100, False, True),
                                                 ("conversation_id", 200, False, True),
                                                 ("model", 50, False, True), ("model_version", 200, True, True),
                                                 ("text", None, False, False)):
        if name not in item:
            if name == "model_version":
                cleaned[name] = ""
                continue
            item_errors.append(RowError(index, name, "required"))
            continue
        value = item[name]
        if strip and isinstance(value, str):
            value = value.strip()  # like the conversation importer; response text is never trimmed
        problem = _string_problem(value, max_length=max_length, allow_blank=allow_blank)
        if problem:
            item_errors.append(RowError(index, name, problem))
        cleaned[name] = value
    if "turn_index" not in item:
        item_errors.append(RowError(index, "turn_index", "required"))
    else:
        turn_index = _turn_index(item["turn_index"])
        if isinstance(turn_index, str):
            item_errors.append(RowError(index, "turn_index", turn_index))
        cleaned["turn_index"] = turn_index
    return cleaned, item_errors


_FIELD_SET = frozenset(_RESPONSE_FIELDS)


Utf8 = bytes | memoryview  # a text's UTF-8: its own bytes, or its slice of the request body


def _response_item_fast(item: dict) -> tuple[tuple[str, str, int, str], str, Utf8] | None:
    """An item with nothing to report, cleaned exactly as ``_response_item_clean`` would clean it: (key, version,
    text as UTF-8); or None, and then ``_response_item_clean`` says what is wrong (or that nothing is). The usual
    item of a bulk request takes this path: a few type and length checks, one pattern search over the short
    fields and the text's encoding instead of a pass per field, so validation stays a small share of an ingest."""
    if not item.keys() <= _FIELD_SET:
        return None
    text = item.get("text")
    if type(text) is not str or not text:
        return None
    try:
        encoded = text.encode()  # a lone surrogate cannot be encoded
    except UnicodeEncodeError:
        return None
    if b"\x00" in encoded:
        return None
    return _short_fields_fast(item.get("dataset"), item.get("conversation_id"), item.get("turn_index"),
                              item.get("model"), item.get("model_version", ""), encoded)


def _short_fields_fast(dataset: Any, conversation: Any, turn_index: Any, model: Any, version: Any,
                       text: Utf8) -> tuple[tuple[str, str, int, str], str, Utf8] | None:
    if type(dataset) is not str or type(conversation) is not str or type(model) is not str \
            or type(version) is not str or type(turn_index) is not int:
        return None
    dataset, conversation, model, version = dataset.strip(), conversation.strip(), model.strip(), version.strip()
    if not (0 < len(dataset) <= 100 and 0 < len(conversation) <= 200 and 0 < len(model) <= 50
            and len(version) <= 200 and 1 <= turn_index <= _MAX_INT):
        return None
    if _UNSTORABLE.search(dataset + conversation + model + version):
        return None
    # One string object per distinct value (the same few datasets, models and versions in every item, each
    # conversation id in several): a request keeps tens of thousands of these until it ends.
    return (intern(dataset), intern(conversation), turn_index, intern(model)), intern(version), text


class _ResponseItem(msgspec.Struct, forbid_unknown_fields=True):
    """The usual item of a bulk body, decoded from its slice of the body without building a dict or the text's
    str: the text stays the JSON string's bytes in the body (``msgspec.Raw``)."""

    dataset: str
    conversation_id: str
    turn_index: int
    model: str
    text: msgspec.Raw
    model_version: str = ""


_DECODE_ITEM = msgspec.json.Decoder(_ResponseItem).decode
_DECODE_STR = msgspec.json.Decoder(str).decode
_BACKSLASH = re.compile(rb"\\")


def _response_item_typed(item: _ResponseItem) -> tuple[tuple[str, str, int, str], str, Utf8] | None:
    """``_response_item_fast`` for an item decoded as ``_ResponseItem``. A JSON string without a backslash is its
    text's UTF-8 between the quotes (JSON has no raw control character in a string: msgspec refuses one, as json
    does), so the text is that slice of the body, which COPY takes as it is; one with escapes is decoded (msgspec
    refuses a lone surrogate, and the item then goes the usual way)."""
    raw = memoryview(item.text)
    if len(raw) <= 2 or raw[0] != 0x22:  # not a string, or an empty one
        return None
    if _BACKSLASH.search(raw) is None:
        text: Utf8 = raw[1:-1]
    else:
        try:
            text = _DECODE_STR(raw).encode()
        except (msgspec.MsgspecError, UnicodeEncodeError):
            return None
        if b"\x00" in text:
            return None
    return _short_fields_fast(item.dataset, item.conversation_id, item.turn_index, item.model, item.model_version,
                              text)


def _typed(
    items: Iterable[Any], slots: set[str]
) -> Iterator[tuple[int, Any, tuple[tuple[str, str, int, str], str, Utf8] | None]]:
    """(index, item, its fast cleaning or None) for every item. The items of a bulk body are decoded as
    ``_ResponseItem`` first; an item that does not decode so, is not clean or names a model outside ``slots``
    is read as the parser reads it (item, None)."""
    if isinstance(items, LazyItems):
        for index, typed in items.decoded_as(_DECODE_ITEM):
            fast = None if typed is None else _response_item_typed(typed)
            if fast is not None and (not slots or fast[0][3] in slots):
                yield index, None, fast
            else:
                yield index, items[index], None
        return
    for index, item in enumerate(items):
        yield index, item, None


def _response_items_validate(
    items: Iterable[Any], model_slots: Sequence[str]
) -> tuple[list[tuple[int, tuple[str, str, int, str], str, Utf8]], list[RowError]]:
    """Shape of every item and duplicates inside the request; returns (index, (dataset, conversation, turn,
    model), version, text as UTF-8) for the valid ones. Reads the items once, in order, and keeps none of them
    (a bulk body decodes each item as it is read): the texts are kept as UTF-8, a quarter of a str's size once
    a text holds an emoji, and a bulk body's unescaped texts as their slices of the body (no copy)."""
    valid = []
    errors: list[RowError] = []
    seen: dict[tuple[str, str, int, str], int] = {}
    slots = set(model_slots)
    for index, item, fast in _typed(items, slots):
        if fast is None:
            if isinstance(item, RowError):
                errors.append(item)
                continue
            if not isinstance(item, dict):
                errors.append(RowError(index, "item", "must be a JSON object"))
                continue
            fast = _response_item_fast(item)
        if fast is not None and (not slots or fast[0][3] in slots):
            key, version, text = fast
            if key in seen:
                errors.append(RowError(index, "model", f"the {key[3]} response to turn {key[2]} of "
                                                       f"{key[0]}/{key[1]} already appears as item {seen[key]}"))
                continue
            seen[key] = index
            valid.append((index, key, version, text))
            continue
        cleaned, item_errors = _response_item_clean(index, item)
        if not item_errors and slots and cleaned["model"] not in slots:
            item_errors.append(RowError(index, "model", f"{cleaned['model']!r} is not one of this study's model "
                                                        f"slots ({', '.join(model_slots)})"))
        if item_errors:
            errors += item_errors
            continue
        key = (cleaned["dataset"], cleaned["conversation_id"], cleaned["turn_index"], cleaned["model"])
        if key in seen:
            errors.append(RowError(index, "model", f"the {key[3]} response to turn {key[2]} of {key[0]}/{key[1]} "
                                                   f"already appears as item {seen[key]}"))
            continue
        seen[key] = index
        valid.append((index, key, cleaned["model_version"], cleaned["text"].encode()))
    return valid, errors


class _ResolvedItem(NamedTuple):  # a tuple: tens of thousands are made per request
    row: int  # the item's position in the request
    turn_id: int
    conversation_id: int
    label: str  # dataset/conversation id
    turn_index: int
    model: str
    version: str
    text: Utf8


def _response_items_resolve(
    valid: list[tuple[int, tuple[str, str, int, str], str, Utf8]]
) -> tuple[list[_ResolvedItem], list[RowError], set[int]]:
    """Each valid item's turn, looked up a chunk of conversations at a time, for the items whose turn is stored,
    an error for each of the others, and which of the conversations are histories of sessions (their turns are in
    sessions)."""
    conversation_ids = sorted({key[1] for _, key, _, _ in valid})
    datasets = {key[0] for _, key, _, _ in valid}
    turns: dict[tuple[str, str, int], tuple[int, int]] = {}
    known_conversations: set[tuple[str, str]] = set()
    histories: set[int] = set()
    for chunk in chunks(conversation_ids):
        for turn_id, conversation_pk, dataset, conversation, index, session_id in Turn.objects.filter(
            any_of("conversation__external_id", chunk), conversation__dataset__name__in=datasets
        ).values_list("id", "conversation_id", "conversation__dataset__name", "conversation__external_id", "index",
                      "session_id"):
            turns[(dataset, conversation, index)] = (turn_id, conversation_pk)
            known_conversations.add((dataset, conversation))
            if session_id is not None:
                histories.add(conversation_pk)
    resolved = []
    errors: list[RowError] = []
    for index, key, version, text in valid:
        found = turns.get(key[:3])
        if found is None:
            if key[:2] in known_conversations:
                errors.append(RowError(index, "turn_index", f"{key[0]}/{key[1]} has no turn {key[2]}"))
            else:
                errors.append(RowError(index, "conversation_id", f"{key[0]}/{key[1]} is not imported; send the "
                                                                  "conversation first"))
            continue
        resolved.append(_ResolvedItem(index, found[0], found[1], f"{key[0]}/{key[1]}", key[2], key[3], version, text))
    return resolved, errors, histories


def _second_assistants(resolved: list[_ResolvedItem], histories: set[int]) -> list[RowError]:
    """The items that would put a reply under a second model slot in a stored history: the sessions form's rule
    (``benchmark.sessions.assistant_problem``, docs/sessions.md), which a response item must keep as a record does.
    A history without replies takes the slot of its first item."""
    if not histories:
        return []
    kept = history_slots(sorted(histories))
    errors = []
    for item in resolved:
        if item.conversation_id not in histories:
            continue
        slots = kept.setdefault(item.conversation_id, [])
        problem = assistant_problem(slots, item.model, history=item.label)
        if problem:
            errors.append(RowError(item.row, "model", problem))
        elif not slots:
            slots.append(item.model)
    return errors


class _Utf8Sha256(Func):
    """SHA-256 of a text's UTF-8 bytes as 64 hex digits, in PostgreSQL's own functions (Django's SHA256 needs the
    pgcrypto extension there)."""

    template = "encode(sha256(convert_to(%(expressions)s, 'UTF8')), 'hex')"
    output_field = CharField()


def _text_digest(text: Utf8) -> str:
    return hashlib.sha256(text).hexdigest()


def _responses_existing(turn_ids: list[int]) -> dict[tuple[int, str], tuple[int, str, str]]:
    """The stored responses of these turns: (turn id, model slot) -> (response id, version, SHA-256 of the text).
    The database hashes the texts: a resend compares digests instead of reading every stored text back."""
    digest = _Utf8Sha256("text")
    existing: dict[tuple[int, str], tuple[int, str, str]] = {}
    for chunk in chunks(turn_ids):
        for response_id, turn_id, slot, version, text_sha256 in ModelResponse.objects.filter(
            any_of("turn_id", chunk)
        ).values_list("id", "turn_id", "model_slot", "model_version", digest):
            existing[(turn_id, slot)] = (response_id, version, text_sha256)
    return existing


_COPY_COLUMNS = ("turn_id", "model_slot", "model_version", "text", "created_at", "updated_at")
_COPY_BATCH_BYTES = 1 << 20
# COPY's binary format: a signature, flags and header extension length (both 0), then per row its field count and
# each field as a length and its bytes (big-endian), then -1 as the field count of no row
_COPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + bytes(8)
_COPY_TRAILER = b"\xff\xff"
_COPY_ROW_HEAD = struct.Struct(">hiq").pack  # field count, 8, turn id (bigint)
_COPY_LENGTH = struct.Struct(">i").pack
_POSTGRES_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
# PostgreSQL's memory for the COPY's new rows, which the trigger of annotation migration 0023 reads back (a transition
# table, about 11 MB per 10,000 responses). Past ``work_mem`` (4 MB by default) they go to a temporary file and are
# read back from it, which cost a bulk ingest about as much as the rest of the trigger (docs/benchmarks.md). A request
# larger than this still spills; the memory is the statement's and is freed when it ends.
_COPY_WORK_MEM = "64MB"


def responses_insert(rows: Sequence[tuple[int, str, str, Utf8]]) -> None:
    """New responses, (turn id, model slot, version, text as UTF-8) each: one COPY (no model instance, no statement
    per batch: the insert is a small share of an ingest). Every check ran before. Every ingestion writes its new
    responses here (``conversation_ingest`` too), for the order of its locks as much as for speed.

    One statement, whatever the number: its trigger (annotation migrations 0023 and 0025) takes the completions lock
    of each study that assigns one of the turns, then the completed items of those turns it sends back, then their
    coders' queue counters (migration 0017, in key order), once. A save that sends its own item back
    (``annotation.services.item_judgment_save``) locks the item, then the counters: the same order. Written in
    several statements (2,000 responses each, as the conversations' ingestion did), a later statement's trigger
    locked items while an earlier one's held their coders' counters, the reverse of the save's order: the two
    waited for each other, and PostgreSQL failed one of them (a deadlock)."""
    if not rows:
        return
    # COPY's binary format: each text goes as its UTF-8 bytes with their length, nothing to escape or search for
    # (validation has refused NUL already, which PostgreSQL refuses in a text). Timestamps are microseconds since
    # 2000-01-01 UTC (integer datetimes, PostgreSQL's only kind since version 10).
    microseconds = (timezone.now() - _POSTGRES_EPOCH) // timedelta(microseconds=1)
    stamps = (_COPY_LENGTH(8) + microseconds.to_bytes(8, "big", signed=True)) * 2  # created_at, updated_at
    middles: dict[tuple[str, str], bytes] = {}  # slot and version with their lengths, packed once per pair
    table = connection.ops.quote_name(ModelResponse._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(column) for column in _COPY_COLUMNS)
    copy_sql = f"COPY {table} ({columns}) FROM STDIN (FORMAT BINARY)"  # noqa: S608  # nosec B608 - quoted names
    with connection.cursor() as cursor:
        # For the COPY only (SET LOCAL, then back): the rest of the transaction keeps the session's setting. A
        # failed COPY aborts the transaction, whose rollback undoes the setting with everything else.
        cursor.execute("SELECT current_setting('work_mem'), set_config('work_mem', %s, true)", [_COPY_WORK_MEM])
        work_mem = cursor.fetchone()[0]
        with cursor.cursor.copy(copy_sql) as copy:
            parts: list[Utf8] = [_COPY_SIGNATURE]  # sent a megabyte at a time
            size = 0
            for turn_id, slot, version, text in rows:
                middle = middles.get((slot, version))
                if middle is None:
                    slot_bytes, version_bytes = slot.encode(), version.encode()
                    middle = middles[(slot, version)] = (_COPY_LENGTH(len(slot_bytes)) + slot_bytes
                                                         + _COPY_LENGTH(len(version_bytes)) + version_bytes)
                parts += (_COPY_ROW_HEAD(len(_COPY_COLUMNS), 8, turn_id), middle, _COPY_LENGTH(len(text)), text,
                          stamps)
                size += len(text)
                if size >= _COPY_BATCH_BYTES:
                    copy.write(b"".join(parts))
                    parts, size = [], 0
            parts.append(_COPY_TRAILER)
            copy.write(b"".join(parts))
        cursor.execute("SELECT set_config('work_mem', %s, true)", [work_mem])


NOTHING = "no responses: nothing to import"


@transaction.atomic
def responses_ingest(
    *, items: Sequence[Any], study: StudyRef | None, model_slots: Sequence[str] = (), by: User | None = None
) -> IngestSummary:
    """Create or update model responses through ``study``, each addressed by (dataset, conversation_id,
    turn_index, model).

    All or nothing: raises RowErrors (indices are 0-based item positions) having written nothing when any item
    is wrong, and MaterialConflict when the only problems are changes this ingestion may not make (to another
    study's material; new text for a response that is judged or in an open round). Identical content is reported
    as unchanged and not written. Reads and writes are set-based: a few statements per 5,000 items, never one per
    item.
    """
    if len(items) == 0:  # an empty request or file: an import of nothing is a mistake, as for conversations
        raise RowErrors([RowError(0, "items", NOTHING)], row_label="item")
    advisory_lock("benchmark.ingest")  # concurrent ingests of the same new responses must not race to insert
    valid, errors = _response_items_validate(items, model_slots)

    resolved, unresolved, histories = _response_items_resolve(valid)
    del valid  # each request's per-item lists are let go as soon as the next one is made: peak memory
    errors += unresolved + _second_assistants(resolved, histories)
    if errors:
        raise RowErrors(errors, row_label="item")

    existing = _responses_existing(sorted({item.turn_id for item in resolved}))
    summary = IngestSummary(items=len(items))
    new: list[tuple[int, str, str, Utf8]] = []  # (turn id, model slot, version, text)
    changed: dict[int, tuple[str, Utf8]] = {}  # response id -> (version, text)
    edits: list[Edit] = []
    for item in resolved:
        found = existing.get((item.turn_id, item.model))
        if found is None:
            new.append((item.turn_id, item.model, item.version, item.text))
            edits.append(Edit(item.row, "model", item.conversation_id, item.label, "reply", turn_id=item.turn_id,
                              turn_index=item.turn_index, model_slot=item.model))
            continue
        same_text = found[2] == _text_digest(item.text)
        if same_text and found[1] == item.version:
            summary.unchanged += 1
        else:
            changed[found[0]] = (item.version, item.text)
            edits.append(Edit(item.row, "text", item.conversation_id, item.label, "response", turn_id=item.turn_id,
                               turn_index=item.turn_index, response_id=found[0], model_slot=item.model)
                         if not same_text else Edit(item.row, "model_version", item.conversation_id, item.label))

    del resolved, existing
    conflicts, claims = material_conflicts(edits, study=study)
    del edits
    if conflicts:
        raise MaterialConflict(conflicts, row_label="item")

    if new:  # a resend of what is stored asks nothing more
        back_before = turns_back_in_queues()
        responses_insert(new)
        summary.turns_back_in_queues = turns_sent_back(back_before, (turn_id for turn_id, _, _, _ in new))
    summary.created = len(new)
    if changed:
        now = timezone.now()
        updates = [ModelResponse(pk=response_id, model_version=version, text=str(text, "utf-8"), updated_at=now)
                   for response_id, (version, text) in changed.items()]
        ModelResponse.objects.bulk_update(updates, ["model_version", "text", "updated_at"], batch_size=1000)
    summary.updated = len(changed)
    claim(claims, study)
    if summary.created or summary.updated:  # a resend that changes nothing is no event
        audit_record(by=by, action="responses.ingest", target="responses", study=study, **summary.as_dict())
    return summary
