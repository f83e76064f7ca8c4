"""Writes for the benchmark app: importing conversations with their turns and model responses.

Import is validate-everything-then-write: every row is checked (shape, internal consistency, clashes with
the database) before anything is written, and the write is one transaction of set-based inserts.
Re-importing identical content changes nothing.

Every write goes through a study or through none (an import without a study: ``import_conversations``, the demo).
It may change only material that no other study owns or uses, and never what reviewers coded against; see
``_material_conflicts`` and README, "Study isolation and frozen text".
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from sys import intern
from typing import IO, Any, NamedTuple, Protocol

import msgspec
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import CharField, Func
from django.utils import timezone

from api.parsers import LazyItems
from audit.services import audit_record
from benchmark.models import Conversation, Dataset, ModelResponse, Turn
from benchmark.sessions import conversation_serializer, record_turns, sessions_changes, sessions_write
from common.errors import RowConflicts, RowError, RowErrors, flatten_serializer_errors
from common.locks import advisory_lock
from common.lookups import any_of


@dataclass
class ImportSummary:
    conversations_created: int = 0
    conversations_updated: int = 0
    conversations_unchanged: int = 0
    turns_created: int = 0
    responses_created: int = 0
    responses_updated: int = 0
    datasets_created: list[str] = field(default_factory=list)
    sessions_created: int = 0  # histories in the sessions form (benchmark.sessions)
    sessions_updated: int = 0

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def read_jsonl(stream: IO[str] | Iterable[str]) -> Iterator[tuple[int, Any]]:
    """Yield (line number, parsed value) for every non-blank line; a line that is not JSON yields a RowError."""
    for number, line in enumerate(stream, start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as error:
            yield number, RowError(number, "line", f"not valid JSON ({error.msg} at column {error.colno})")
        except RecursionError:
            yield number, RowError(number, "line", "JSON nested too deeply")


def conversations_validate(rows: Iterable[tuple[int, Any]]) -> tuple[list[tuple[int, dict]], list[RowError]]:
    """Shape and consistency of every record, plus duplicates inside the input."""
    valid: list[tuple[int, dict]] = []
    errors: list[RowError] = []
    seen: dict[tuple[str, str], int] = {}
    for row, record in rows:
        if isinstance(record, RowError):
            errors.append(record)
            continue
        if not isinstance(record, dict):
            errors.append(RowError(row, "record", "must be a JSON object"))
            continue
        serializer = conversation_serializer(record)  # the turns form, or the sessions form of a history
        if not serializer.is_valid():
            errors += [RowError(row, path, message) for path, message in flatten_serializer_errors(serializer.errors)]
            continue
        data = serializer.validated_data
        key = (data["dataset"], data["conversation_id"])
        if key in seen:
            message = f"{key[1]!r} of {key[0]} already appears on row {seen[key]}"
            errors.append(RowError(row, "conversation_id", message))
            continue
        seen[key] = row
        valid.append((row, data))
    return valid, errors


_LOOKUP_CHUNK = 5000  # keeps every IN (…) list far below PostgreSQL's 65,535 parameters per statement


def _chunks(values: list, size: int = _LOOKUP_CHUNK) -> Iterator[list]:
    for start in range(0, len(values), size):
        yield values[start:start + size]


# --- who may change what: study isolation and frozen material ---------------------------------------------------

# annotation.Round.Status.OPEN: benchmark sits below annotation, so it names the value, not the class.
_OPEN_ROUND = "open"


class StudyRef(Protocol):
    """The study an ingestion writes through (an ``annotation.Study``, which benchmark cannot import)."""

    @property
    def pk(self) -> Any: ...

    @property
    def slug(self) -> str: ...


class MaterialConflict(RowConflicts):
    """Every problem is a change this ingestion may not make: to material another study owns or uses, or to text
    reviewers coded against (judged, or in an open round). Nothing was written."""

    conflict_detail = ("{n} item(s) would change material of another study, or text that reviewers coded against "
                       "(judged, or in an open round); nothing was changed.")


# slots: an ingestion makes one per item; not frozen, since a frozen dataclass sets each field through
# object.__setattr__ (measured: four times the cost of making one, a few per cent of a bulk ingest)
@dataclass(slots=True)
class _Edit:
    """One change an ingestion would make to stored material, and where its input asks for it.

    ``kind`` says what the freeze rules look at: ``conversation`` (a field of it, named by ``field``), ``turn``
    (its client text or therapist reference), ``response`` (its text), or ``other`` (a new turn or response, a new
    model version), which only the study isolation rule looks at."""

    row: int
    field: str
    conversation_id: int
    label: str  # dataset/conversation id, as the errors name it
    kind: str = "other"
    turn_id: int | None = None
    turn_index: int | None = None
    response_id: int | None = None
    model_slot: str = ""


@dataclass
class _MaterialUse:
    """How studies use some conversations, read after locking them."""

    studies: dict[int, set[int]] = field(default_factory=dict)  # conversation -> studies with items, assignments…
    judged_through: dict[int, float] = field(default_factory=dict)  # conversation -> highest judged turn (inf: itself)
    open_through: dict[int, int] = field(default_factory=dict)  # conversation -> highest turn in an open round
    judged_responses: set[int] = field(default_factory=set)
    open_turns: set[int] = field(default_factory=set)  # turns in an open round: their responses' text is frozen

    def used_by(self, conversation_id: int, study_id: int) -> None:
        self.studies.setdefault(conversation_id, set()).add(study_id)

    def problem(self, edit: _Edit) -> str | None:
        """Why the edit would change what reviewers coded against (or will code, in an open round), or None.
        A turn is also frozen while a later turn of its conversation is, since the turn page shows earlier turns as
        context."""
        judged = edit.conversation_id in self.judged_through
        in_open_round = edit.conversation_id in self.open_through
        if edit.kind == "conversation" and (judged or in_open_round):
            return (f"{edit.label} {'has judgments' if judged else 'is in an open round'}; its {edit.field} cannot "
                    "change")
        if edit.kind == "turn" and edit.turn_index is not None:
            what = "client text" if edit.field.endswith(".client") else "therapist reference"
            if edit.turn_index <= self.judged_through.get(edit.conversation_id, 0):
                return (f"turn {edit.turn_index} of {edit.label} has judgments (on it, or on a later turn that shows "
                        f"it as context); its {what} cannot change")
            if edit.turn_index <= self.open_through.get(edit.conversation_id, 0):
                return (f"turn {edit.turn_index} of {edit.label} is in an open round (itself, or as context of a "
                        f"later turn); its {what} cannot change")
        if edit.kind == "response":
            where = f"the {edit.model_slot} response of turn {edit.turn_index} of {edit.label}"
            if edit.response_id in self.judged_responses:
                return f"{where} already has judgments; its text cannot change (spans are character offsets into it)"
            if edit.turn_id in self.open_turns:
                return f"{where} is in an open round; its text cannot change until the round closes"
        return None


def _owners_locked(conversation_ids: list[int]) -> dict[int, int | None]:
    """Lock the conversations (FOR UPDATE, in id order) and return their owning studies. A judgment can then not
    start pointing at them until this transaction ends: inserting one takes a key-share lock on its conversation."""
    owners: dict[int, int | None] = {}
    for chunk in _chunks(conversation_ids):
        owners.update(Conversation.objects.select_for_update().filter(any_of("pk", chunk)).order_by("pk")
                      .values_list("pk", "study_id"))
    return owners


def _material_use(conversation_ids: list[int]) -> _MaterialUse:
    """Who uses these conversations and what of them is coded: three set-based reads per chunk."""
    use = _MaterialUse()
    for chunk in _chunks(conversation_ids):
        for conversation_id, study_id, turn_index, response_id in (
            Conversation.objects.filter(any_of("pk", chunk), judgments__isnull=False).order_by()
            .values_list("pk", "judgments__round__study_id", "judgments__turn__index", "judgments__response_id")
            .distinct()
        ):
            use.used_by(conversation_id, study_id)
            reach = math.inf if turn_index is None else turn_index  # a judgment of the conversation as a whole
            use.judged_through[conversation_id] = max(use.judged_through.get(conversation_id, 0), reach)
            if response_id is not None:
                use.judged_responses.add(response_id)
        for relation in ("round_items", "assignments"):
            for conversation_id, turn_id, index, study_id, status in (
                Turn.objects.filter(any_of("conversation_id", chunk), **{f"{relation}__isnull": False}).order_by()
                .values_list("conversation_id", "pk", "index", f"{relation}__round__study_id",
                             f"{relation}__round__status")
                .distinct()
            ):
                use.used_by(conversation_id, study_id)
                if status == _OPEN_ROUND:
                    use.open_turns.add(turn_id)
                    use.open_through[conversation_id] = max(use.open_through.get(conversation_id, 0), index)
    return use


def _writable(owner: int | None, users: set[int], study_id: int | None) -> bool:
    """Study isolation: a write through a study may change material no other study owns or uses; a write without
    a study (the library import) only material no study owns or uses."""
    if study_id is None:
        return owner is None and not users
    return owner in (None, study_id) and users <= {study_id}


def _foreign(label: str, study: StudyRef | None) -> str:
    """The error for material of another study. It does not name that study: a study you cannot see does not
    exist for you."""
    if study is None:
        return f"{label} belongs to a study: only that study's ingestion may change it, not an import without a study"
    return f"{label} belongs to another study: it cannot be changed through this one"


def _material_conflicts(edits: list[_Edit], *, study: StudyRef | None) -> tuple[list[RowError], set[int]]:
    """Lock the conversations the edits touch, then every problem: an item that would change material of another
    study (one error per item and conversation, whatever it changes), else each change to text reviewers coded
    against. Also returns the unowned conversations the write claims for its study."""
    if not edits:
        return [], set()
    conversation_ids = sorted({edit.conversation_id for edit in edits})
    owners = _owners_locked(conversation_ids)
    use = _material_use(conversation_ids)
    study_id = study.pk if study is not None else None
    foreign = {c for c in conversation_ids if not _writable(owners.get(c), use.studies.get(c, set()), study_id)}
    errors: list[RowError] = []
    reported: set[tuple[int, int]] = set()
    for edit in edits:
        if edit.conversation_id in foreign:
            if (edit.row, edit.conversation_id) not in reported:
                reported.add((edit.row, edit.conversation_id))
                errors.append(RowError(edit.row, "conversation_id", _foreign(edit.label, study)))
            continue
        problem = use.problem(edit)
        if problem is not None:
            errors.append(RowError(edit.row, edit.field, problem))
    claims = {c for c in conversation_ids if owners.get(c) is None} if study_id is not None else set()
    return errors, claims


def _claim(conversation_ids: set[int], study: StudyRef | None) -> None:
    """The first study to change an unowned conversation owns it from then on."""
    if study is not None and conversation_ids:
        for chunk in _chunks(sorted(conversation_ids)):
            Conversation.objects.filter(any_of("pk", chunk), study__isnull=True).update(study_id=study.pk)


# --- conversations (docs/reference.md#conversations-json-lines) ----------------------------------------------------


@dataclass
class _ConversationChanges:
    """What an import will write, gathered for every row before anything is written."""

    new_conversations: list[tuple[dict, Conversation]] = field(default_factory=list)
    conversation_updates: list[Conversation] = field(default_factory=list)
    new_turns: list[tuple[dict, Turn]] = field(default_factory=list)
    turn_updates: list[Turn] = field(default_factory=list)
    new_responses: list[ModelResponse] = field(default_factory=list)
    response_updates: list[ModelResponse] = field(default_factory=list)
    # every change to stored material, for the study isolation and freeze checks
    edits: list[_Edit] = field(default_factory=list)


def _datasets_ensure(names: set[str], summary: ImportSummary) -> dict[str, Dataset]:
    """The datasets by name, creating (in name order, noted in the summary) those that do not exist yet."""
    datasets = {d.name: d for d in Dataset.objects.filter(name__in=names)}
    for name in sorted(names - set(datasets)):
        datasets[name] = Dataset.objects.create(name=name)
        summary.datasets_created.append(name)
    return datasets


def _turn_changes(row: int, t_pos: int, turn_data: dict, turn: Turn, label: str,
                  changes: _ConversationChanges) -> bool:
    """Gather what brings a stored turn and its responses to the row's content; True when anything changes."""
    changed = False
    for name, attr in (("client", "client_text"), ("therapist_reference", "therapist_reference")):
        if getattr(turn, attr) != turn_data[name]:
            setattr(turn, attr, turn_data[name])
            changes.edits.append(_Edit(row, f"turns[{t_pos}].{name}", turn.conversation_id, label, "turn",
                                       turn_id=turn.pk, turn_index=turn.index))
            changed = True
    if changed:
        changes.turn_updates.append(turn)
    responses = {response.model_slot: response for response in turn.responses.all()}
    for r_pos, response_data in enumerate(turn_data["responses"]):
        where = f"turns[{t_pos}].responses[{r_pos}]"
        response = responses.get(response_data["model"])
        if response is None:
            changes.new_responses.append(ModelResponse(turn=turn, model_slot=response_data["model"],
                                                       model_version=response_data["model_version"],
                                                       text=response_data["text"]))
            changes.edits.append(_Edit(row, where, turn.conversation_id, label))
            changed = True
        elif (response.text, response.model_version) != (response_data["text"], response_data["model_version"]):
            if response.text != response_data["text"]:
                changes.edits.append(_Edit(row, f"{where}.text", turn.conversation_id, label, "response",
                                           turn_id=turn.pk, turn_index=turn.index, response_id=response.pk,
                                           model_slot=response.model_slot))
            else:
                changes.edits.append(_Edit(row, f"{where}.model_version", turn.conversation_id, label))
            response.text, response.model_version = response_data["text"], response_data["model_version"]
            changes.response_updates.append(response)
            changed = True
    return changed


def _conversation_changes(row: int, data: dict, conversation: Conversation, changes: _ConversationChanges,
                          errors: list[RowError]) -> bool:
    """Gather what brings a stored conversation to the row's content; True when anything changes. Stored turns
    the row lacks are an error (appended to ``errors``)."""
    label = f"{data['dataset']}/{data['conversation_id']}"
    changed = False
    for attr, value in (("kind", data["kind"]), ("topic", data["topic"]), ("complexity", data["complexity"]),
                        ("title", data["title"])):
        if getattr(conversation, attr) != value:
            setattr(conversation, attr, value)
            changes.edits.append(_Edit(row, attr, conversation.pk, label, "conversation"))
            changed = True
    if changed:
        changes.conversation_updates.append(conversation)
    turns = {turn.index: turn for turn in conversation.turns.all()}
    extra = sorted(set(turns) - {t["index"] for t in data["turns"]})
    if extra:
        errors.append(RowError(row, "turns", f"the stored conversation has turns {extra} that this row lacks; "
                                             "turns are never deleted by an import"))
    for t_pos, turn_data in enumerate(data["turns"]):
        turn = turns.get(turn_data["index"])
        if turn is None:
            turn = Turn(conversation=conversation, index=turn_data["index"], client_text=turn_data["client"],
                        therapist_reference=turn_data["therapist_reference"])
            changes.new_turns.append((turn_data, turn))
            changes.edits.append(_Edit(row, f"turns[{t_pos}]", conversation.pk, label))
            changed = True
            continue
        changed |= _turn_changes(row, t_pos, turn_data, turn, label, changes)
    return changed


def _conversation_changes_write(changes: _ConversationChanges, summary: ImportSummary) -> None:
    """The set-based writes: new conversations, then turns, then responses (each needs its parent's id), then
    the updates."""
    new_conversations, new_turns, new_responses = changes.new_conversations, changes.new_turns, changes.new_responses
    Conversation.objects.bulk_create([conversation for _, conversation in new_conversations])
    summary.conversations_created = len(new_conversations)
    for data, conversation in new_conversations:
        for turn_data in data["turns"]:
            new_turns.append((turn_data, Turn(conversation=conversation, index=turn_data["index"],
                                              client_text=turn_data["client"],
                                              therapist_reference=turn_data["therapist_reference"])))
    Turn.objects.bulk_create([turn for _, turn in new_turns], batch_size=2000)
    summary.turns_created = len(new_turns)
    for turn_data, turn in new_turns:
        new_responses += [ModelResponse(turn=turn, model_slot=r["model"], model_version=r["model_version"],
                                        text=r["text"]) for r in turn_data["responses"]]
    ModelResponse.objects.bulk_create(new_responses, batch_size=2000)
    summary.responses_created = len(new_responses)
    if changes.conversation_updates:
        Conversation.objects.bulk_update(changes.conversation_updates, ["kind", "topic", "complexity", "title"])
    if changes.turn_updates:
        Turn.objects.bulk_update(changes.turn_updates, ["client_text", "therapist_reference"])
    if changes.response_updates:
        ModelResponse.objects.bulk_update(changes.response_updates, ["text", "model_version"])
    summary.responses_updated = len(changes.response_updates)


@transaction.atomic
def conversations_import(
    *, rows: Iterable[tuple[int, Any]], by: User | None = None, is_synthetic: bool = False,
    study: StudyRef | None = None,
) -> ImportSummary:
    """Import conversations (docs/reference.md#conversations-json-lines) through ``study`` (None: an import without a
    study). Raises RowErrors, having written nothing, when any row is wrong, and MaterialConflict when the only problems
    are changes this import may not make.

    New conversations belong to ``study``. Existing ones are updated to the file's content, except material
    another study owns or uses (or, without a study, any study's material) and text reviewers coded against
    (``_MaterialUse.problem``).
    """
    # Concurrent imports must neither race to insert the same new conversations nor change what is compared below.
    advisory_lock("benchmark.ingest")
    valid, errors = conversations_validate(rows)
    if errors:
        raise RowErrors(errors)
    summary = ImportSummary()
    datasets = _datasets_ensure({data["dataset"] for _, data in valid}, summary)
    existing = _existing_conversations(valid, datasets)

    changes = _ConversationChanges()
    for row, data in valid:
        dataset = datasets[data["dataset"]]
        conversation = existing.get((dataset.pk, data["conversation_id"]))
        if conversation is None:
            conversation = Conversation(
                dataset=dataset,
                external_id=data["conversation_id"],
                kind=data["kind"],
                topic=data["topic"],
                complexity=data["complexity"],
                title=data["title"],
                is_synthetic=is_synthetic,
                study_id=study.pk if study is not None else None,
            )
            changes.new_conversations.append((data, conversation))
        elif _conversation_changes(row, data, conversation, changes, errors):
            summary.conversations_updated += 1
        else:
            summary.conversations_unchanged += 1
    session_edits, session_errors = sessions_changes(valid, existing, datasets)
    errors += session_errors
    labels = {row: f"{data['dataset']}/{data['conversation_id']}" for row, data in valid} if session_edits else {}
    changes.edits += [_Edit(e.row, e.field, e.conversation_id, labels[e.row], "conversation") for e in session_edits]
    conflicts, claims = _material_conflicts(changes.edits, study=study)
    if errors:
        raise RowErrors(errors + conflicts)
    if conflicts:
        raise MaterialConflict(conflicts)

    _conversation_changes_write(changes, summary)
    written = sessions_write(valid=valid, datasets=datasets)
    summary.sessions_created, summary.sessions_updated = written.created, written.updated + len(written.turns_moved)
    _claim(claims, study)
    if summary.conversations_created or summary.conversations_updated or summary.sessions_updated:
        # a resend that changes nothing is no event
        audit_record(by=by, action="conversations.import", target="conversations", study=study, **summary.as_dict())
    return summary


def _existing_conversations(
    valid: list[tuple[int, dict]], datasets: dict[str, Dataset]
) -> dict[tuple[int, str], Conversation]:
    wanted: dict[int, set[str]] = {}
    for _, data in valid:
        wanted.setdefault(datasets[data["dataset"]].pk, set()).add(data["conversation_id"])
    found: dict[tuple[int, str], Conversation] = {}
    for dataset_id, external_ids in wanted.items():
        for conversation in Conversation.objects.filter(any_of("external_id", external_ids), dataset_id=dataset_id) \
                .prefetch_related("turns__responses"):
            found[(dataset_id, conversation.external_id)] = conversation
    return found


# --- API ingestion -------------------------------------------------------------------------------------------

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
) -> tuple[list[_ResolvedItem], list[RowError]]:
    """Each valid item's turn, looked up a chunk of conversations at a time, for the items whose turn is stored,
    and an error for each of the others."""
    conversation_ids = sorted({key[1] for _, key, _, _ in valid})
    datasets = {key[0] for _, key, _, _ in valid}
    turns: dict[tuple[str, str, int], tuple[int, int]] = {}
    known_conversations: set[tuple[str, str]] = set()
    for chunk in _chunks(conversation_ids):
        for turn_id, conversation_pk, dataset, conversation, index in Turn.objects.filter(
            any_of("conversation__external_id", chunk), conversation__dataset__name__in=datasets
        ).values_list("id", "conversation_id", "conversation__dataset__name", "conversation__external_id", "index"):
            turns[(dataset, conversation, index)] = (turn_id, conversation_pk)
            known_conversations.add((dataset, conversation))
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
    return resolved, errors


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
    for chunk in _chunks(turn_ids):
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


def _responses_insert(rows: list[tuple[int, str, str, Utf8]]) -> None:
    """New responses, (turn id, model slot, version, text as UTF-8) each: one COPY (no model instance, no statement
    per batch: the insert is a small share of an ingest). Every check ran before."""
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
    with connection.cursor() as cursor, cursor.cursor.copy(copy_sql) as copy:
        parts: list[Utf8] = [_COPY_SIGNATURE]  # sent a megabyte at a time
        size = 0
        for turn_id, slot, version, text in rows:
            middle = middles.get((slot, version))
            if middle is None:
                slot_bytes, version_bytes = slot.encode(), version.encode()
                middle = middles[(slot, version)] = (_COPY_LENGTH(len(slot_bytes)) + slot_bytes
                                                     + _COPY_LENGTH(len(version_bytes)) + version_bytes)
            parts += (_COPY_ROW_HEAD(len(_COPY_COLUMNS), 8, turn_id), middle, _COPY_LENGTH(len(text)), text, stamps)
            size += len(text)
            if size >= _COPY_BATCH_BYTES:
                copy.write(b"".join(parts))
                parts, size = [], 0
        parts.append(_COPY_TRAILER)
        copy.write(b"".join(parts))


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
    advisory_lock("benchmark.ingest")  # concurrent ingests of the same new responses must not race to insert
    valid, errors = _response_items_validate(items, model_slots)

    resolved, unresolved = _response_items_resolve(valid)
    del valid  # each request's per-item lists are let go as soon as the next one is made: peak memory
    errors += unresolved
    if errors:
        raise RowErrors(errors, row_label="item")

    existing = _responses_existing(sorted({item.turn_id for item in resolved}))
    summary = IngestSummary(items=len(items))
    new: list[tuple[int, str, str, Utf8]] = []  # (turn id, model slot, version, text)
    changed: dict[int, tuple[str, Utf8]] = {}  # response id -> (version, text)
    edits: list[_Edit] = []
    for item in resolved:
        found = existing.get((item.turn_id, item.model))
        if found is None:
            new.append((item.turn_id, item.model, item.version, item.text))
            edits.append(_Edit(item.row, "model", item.conversation_id, item.label))
            continue
        same_text = found[2] == _text_digest(item.text)
        if same_text and found[1] == item.version:
            summary.unchanged += 1
        else:
            changed[found[0]] = (item.version, item.text)
            edits.append(_Edit(item.row, "text", item.conversation_id, item.label, "response", turn_id=item.turn_id,
                               turn_index=item.turn_index, response_id=found[0], model_slot=item.model)
                         if not same_text else _Edit(item.row, "model_version", item.conversation_id, item.label))

    del resolved, existing
    conflicts, claims = _material_conflicts(edits, study=study)
    del edits
    if conflicts:
        raise MaterialConflict(conflicts, row_label="item")

    _responses_insert(new)
    summary.created = len(new)
    if changed:
        now = timezone.now()
        updates = [ModelResponse(pk=response_id, model_version=version, text=str(text, "utf-8"), updated_at=now)
                   for response_id, (version, text) in changed.items()]
        ModelResponse.objects.bulk_update(updates, ["model_version", "text", "updated_at"], batch_size=1000)
    summary.updated = len(changed)
    _claim(claims, study)
    if summary.created or summary.updated:  # a resend that changes nothing is no event
        audit_record(by=by, action="responses.ingest", target="responses", study=study, **summary.as_dict())
    return summary


def _model_slot_errors(rows: Sequence[tuple[int, Any]], model_slots: Sequence[str]) -> list[RowError]:
    """Responses for models outside the study's slots; tolerant of any shape (the serializer reports on that)."""
    errors: list[RowError] = []
    slots = set(model_slots)
    if not slots:
        return errors
    for index, record in rows:
        for where, turn in record_turns(record):  # the turns form, or the sessions form of a history
            responses = turn.get("responses") if isinstance(turn, dict) else None
            for r_pos, response in enumerate(responses if isinstance(responses, list) else []):
                model = response.get("model") if isinstance(response, dict) else None
                if isinstance(model, str) and model.strip() and model.strip() not in slots:
                    errors.append(RowError(index, f"{where}.responses[{r_pos}].model",
                                           f"{model.strip()!r} is not one of this study's model slots "
                                           f"({', '.join(model_slots)})"))
    return errors


@transaction.atomic
def conversations_ingest(
    *, items: Sequence[Any], study: StudyRef | None, model_slots: Sequence[str] = (), by: User | None = None
) -> ImportSummary:
    """conversations_import through ``study`` for API items (0-based indices), limited to its model slots."""
    return _conversations_for_study(rows=list(enumerate(items)), study=study, model_slots=model_slots, by=by,
                                    row_label="item")


@transaction.atomic
def conversations_upload(
    *, stream: IO[str] | Iterable[str], study: StudyRef | None = None, model_slots: Sequence[str] = (),
    by: User | None = None,
) -> ImportSummary:
    """conversations_import for a JSON Lines file uploaded on a study's page (1-based line numbers), limited to
    the study's model slots. Without ``study`` it is an import without a study: it creates new conversations
    but changes no study's material."""
    return _conversations_for_study(rows=list(read_jsonl(stream)), study=study, model_slots=model_slots, by=by,
                                    row_label="line")


def _conversations_for_study(*, rows: list[tuple[int, Any]], study: StudyRef | None, model_slots: Sequence[str],
                             by: User | None, row_label: str) -> ImportSummary:
    errors = _model_slot_errors(rows, model_slots)
    if errors:
        _, shape_errors = conversations_validate(rows)
        raise RowErrors([*shape_errors, *errors], row_label=row_label)
    try:
        return conversations_import(rows=rows, by=by, study=study)
    except RowErrors as error:
        error.row_label = row_label
        raise
