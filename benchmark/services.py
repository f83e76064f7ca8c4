"""Writes for the benchmark app: importing conversations with their turns and model responses.

Import is validate-everything-then-write: every row is checked (shape, internal consistency, clashes with
the database) before anything is written, and the write is one transaction of set-based inserts.
Re-importing identical content changes nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from audit.services import audit_record
from benchmark.models import Conversation, Dataset, ModelResponse, Turn
from benchmark.serializers import ConversationIn
from common.errors import RowConflicts, RowError, RowErrors, flatten_serializer_errors
from common.locks import advisory_lock


@dataclass
class ImportSummary:
    conversations_created: int = 0
    conversations_updated: int = 0
    conversations_unchanged: int = 0
    turns_created: int = 0
    responses_created: int = 0
    responses_updated: int = 0
    datasets_created: list[str] = field(default_factory=list)

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
        serializer = ConversationIn(data=record)
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


@dataclass
class _ConversationChanges:
    """What an import will write, gathered for every row before anything is written."""

    new_conversations: list[tuple[dict, Conversation]] = field(default_factory=list)
    conversation_updates: list[Conversation] = field(default_factory=list)
    new_turns: list[tuple[dict, Turn]] = field(default_factory=list)
    turn_updates: list[Turn] = field(default_factory=list)
    new_responses: list[ModelResponse] = field(default_factory=list)
    response_updates: list[ModelResponse] = field(default_factory=list)
    # judged text that would change: reported as a conflict when nothing else is wrong
    conflicts: list[RowError] = field(default_factory=list)


def _datasets_ensure(names: set[str], summary: ImportSummary) -> dict[str, Dataset]:
    """The datasets by name, creating (in name order, noted in the summary) those that do not exist yet."""
    datasets = {d.name: d for d in Dataset.objects.filter(name__in=names)}
    for name in sorted(names - set(datasets)):
        datasets[name] = Dataset.objects.create(name=name)
        summary.datasets_created.append(name)
    return datasets


def _turn_changes(row: int, t_pos: int, turn_data: dict, turn: Turn, judged: set[int],
                  changes: _ConversationChanges) -> bool:
    """Gather what brings a stored turn and its responses to the row's content; True when anything changes."""
    changed = False
    if (turn.client_text, turn.therapist_reference) != (turn_data["client"], turn_data["therapist_reference"]):
        turn.client_text, turn.therapist_reference = turn_data["client"], turn_data["therapist_reference"]
        changes.turn_updates.append(turn)
        changed = True
    responses = {response.model_slot: response for response in turn.responses.all()}
    for r_pos, response_data in enumerate(turn_data["responses"]):
        response = responses.get(response_data["model"])
        if response is None:
            changes.new_responses.append(ModelResponse(turn=turn, model_slot=response_data["model"],
                                                       model_version=response_data["model_version"],
                                                       text=response_data["text"]))
            changed = True
        elif (response.text, response.model_version) != (response_data["text"], response_data["model_version"]):
            if response.pk in judged and response.text != response_data["text"]:
                changes.conflicts.append(RowError(row, f"turns[{t_pos}].responses[{r_pos}].text",
                                                  f"the {response.model_slot} response of turn {turn.index} already "
                                                  "has judgments; its text cannot change"))
                continue
            response.text, response.model_version = response_data["text"], response_data["model_version"]
            changes.response_updates.append(response)
            changed = True
    return changed


def _conversation_changes(row: int, data: dict, conversation: Conversation, judged: set[int],
                          changes: _ConversationChanges, errors: list[RowError]) -> bool:
    """Gather what brings a stored conversation to the row's content; True when anything changes. Stored turns
    the row lacks are an error (appended to ``errors``)."""
    changed = False
    for attr, value in (("kind", data["kind"]), ("topic", data["topic"]), ("complexity", data["complexity"]),
                        ("title", data["title"])):
        if getattr(conversation, attr) != value:
            setattr(conversation, attr, value)
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
            changed = True
            continue
        changed |= _turn_changes(row, t_pos, turn_data, turn, judged, changes)
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
    *, rows: Iterable[tuple[int, Any]], by: User | None = None, is_synthetic: bool = False
) -> ImportSummary:
    """Import conversations (SPEC §6). Raises RowErrors, having written nothing, when any row is wrong.

    Existing conversations are updated to the file's content, except that the text of a response that already
    has judgments never changes: such a row is an error (spans are offsets into that text).
    """
    valid, errors = conversations_validate(rows)
    if errors:
        raise RowErrors(errors)
    summary = ImportSummary()
    datasets = _datasets_ensure({data["dataset"] for _, data in valid}, summary)

    existing = _existing_conversations(valid, datasets)
    judged = set(
        ModelResponse.objects.filter(turn__conversation__in=list(existing.values()), judgments__isnull=False)
        .values_list("id", flat=True)
        .distinct()
    )

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
            )
            changes.new_conversations.append((data, conversation))
        elif _conversation_changes(row, data, conversation, judged, changes, errors):
            summary.conversations_updated += 1
        else:
            summary.conversations_unchanged += 1
    if errors:
        raise RowErrors(errors + changes.conflicts)
    if changes.conflicts:
        raise ResponseTextConflict(changes.conflicts)

    _conversation_changes_write(changes, summary)
    if summary.conversations_created or summary.conversations_updated:  # a resend that changes nothing is no event
        audit_record(by=by, action="conversations.import", target="conversations", **summary.as_dict())
    return summary


def _existing_conversations(
    valid: list[tuple[int, dict]], datasets: dict[str, Dataset]
) -> dict[tuple[int, str], Conversation]:
    wanted: dict[int, set[str]] = {}
    for _, data in valid:
        wanted.setdefault(datasets[data["dataset"]].pk, set()).add(data["conversation_id"])
    found: dict[tuple[int, str], Conversation] = {}
    for dataset_id, external_ids in wanted.items():
        for conversation in Conversation.objects.filter(dataset_id=dataset_id, external_id__in=external_ids) \
                .prefetch_related("turns__responses"):
            found[(dataset_id, conversation.external_id)] = conversation
    return found


# --- API ingestion -------------------------------------------------------------------------------------------

# PostgreSQL integer columns (turn index) stop here; a bigger number must be a row error, not a database error.
_MAX_INT = 2**31 - 1
_RESPONSE_FIELDS = ("dataset", "conversation_id", "turn_index", "model", "model_version", "text")
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")  # PostgreSQL text holds neither
_LOOKUP_CHUNK = 5000  # keeps every IN (…) list far below PostgreSQL's 65,535 parameters per statement


class ResponseTextConflict(RowConflicts):
    """Every problem is new text for a response that already has judgments (spans are offsets into its text).
    Nothing was written."""

    conflict_detail = ("{n} item(s) would change the text of responses that already have judgments; nothing was "
                       "changed.")


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


def _response_items_validate(
    items: Sequence[Any], model_slots: Sequence[str]
) -> tuple[list[tuple[int, tuple[str, str, int, str], str, str]], list[RowError]]:
    """Shape of every item and duplicates inside the request; returns (index, (dataset, conversation, turn,
    model), version, text) for the valid ones."""
    valid = []
    errors: list[RowError] = []
    seen: dict[tuple[str, str, int, str], int] = {}
    slots = set(model_slots)
    for index, item in enumerate(items):
        if isinstance(item, RowError):
            errors.append(item)
            continue
        if not isinstance(item, dict):
            errors.append(RowError(index, "item", "must be a JSON object"))
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
        valid.append((index, key, cleaned["model_version"], cleaned["text"]))
    return valid, errors


def _chunks(values: list, size: int = _LOOKUP_CHUNK) -> Iterator[list]:
    for start in range(0, len(values), size):
        yield values[start:start + size]


def _response_items_resolve(
    valid: list[tuple[int, tuple[str, str, int, str], str, str]]
) -> tuple[list[tuple[int, int, str, str, str]], list[RowError]]:
    """Each valid item's turn, looked up a chunk of conversations at a time: (index, turn id, model, version,
    text) for the items whose turn is stored, and an error for each of the others."""
    conversation_ids = sorted({key[1] for _, key, _, _ in valid})
    datasets = {key[0] for _, key, _, _ in valid}
    turns: dict[tuple[str, str, int], int] = {}
    known_conversations: set[tuple[str, str]] = set()
    for chunk in _chunks(conversation_ids):
        for turn_id, dataset, conversation, index in Turn.objects.filter(
            conversation__external_id__in=chunk, conversation__dataset__name__in=datasets
        ).values_list("id", "conversation__dataset__name", "conversation__external_id", "index"):
            turns[(dataset, conversation, index)] = turn_id
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
        resolved.append((index, found, key[3], version, text))
    return resolved, errors


def _responses_existing(turn_ids: list[int]) -> dict[tuple[int, str], tuple[int, str, str]]:
    """The stored responses of these turns: (turn id, model slot) -> (response id, version, text)."""
    existing: dict[tuple[int, str], tuple[int, str, str]] = {}
    for chunk in _chunks(turn_ids):
        for response_id, turn_id, slot, version, text in ModelResponse.objects.filter(turn_id__in=chunk).values_list(
            "id", "turn_id", "model_slot", "model_version", "text"
        ):
            existing[(turn_id, slot)] = (response_id, version, text)
    return existing


def _judged_after_lock(response_ids: list[int]) -> set[int]:
    """Lock these responses (select_for_update), then return those that already have judgments."""
    judged: set[int] = set()
    for chunk in _chunks(response_ids):
        list(ModelResponse.objects.select_for_update().filter(pk__in=chunk).values_list("id"))
        judged |= set(ModelResponse.objects.filter(pk__in=chunk, judgments__isnull=False)
                      .values_list("id", flat=True).distinct())
    return judged


@transaction.atomic
def responses_ingest(
    *, items: Sequence[Any], model_slots: Sequence[str] = (), by: User | None = None
) -> IngestSummary:
    """Create or update model responses, each addressed by (dataset, conversation_id, turn_index, model).

    All or nothing: raises RowErrors (indices are 0-based item positions) having written nothing when any item
    is wrong, and ResponseTextConflict when the only problem is new text for judged responses. Identical
    content is reported as unchanged and not written. Reads and writes are set-based: a few statements per
    5,000 items, never one per item.
    """
    advisory_lock("benchmark.ingest")  # concurrent ingests of the same new responses must not race to insert
    valid, errors = _response_items_validate(items, model_slots)

    resolved, unresolved = _response_items_resolve(valid)
    errors += unresolved
    if errors:
        raise RowErrors(errors, row_label="item")

    existing = _responses_existing(sorted({turn_id for _, turn_id, _, _, _ in resolved}))
    summary = IngestSummary(items=len(items))
    new: list[ModelResponse] = []
    changed: dict[int, tuple[int, str, str, bool]] = {}  # response id -> (item index, version, text, text changed)
    for index, turn_id, slot, version, text in resolved:
        found = existing.get((turn_id, slot))
        if found is None:
            new.append(ModelResponse(turn_id=turn_id, model_slot=slot, model_version=version, text=text))
        elif (found[1], found[2]) == (version, text):
            summary.unchanged += 1
        else:
            changed[found[0]] = (index, version, text, found[2] != text)

    # Lock what will change, so no judgment can start pointing at a text between this check and the update.
    judged = _judged_after_lock(sorted(response_id for response_id, c in changed.items() if c[3]))
    if judged:
        raise ResponseTextConflict(
            [RowError(changed[r][0], "text", "this response already has judgments; its text cannot change "
                                             "(spans are character offsets into it)") for r in sorted(judged)],
            row_label="item",
        )

    ModelResponse.objects.bulk_create(new, batch_size=2000)
    summary.created = len(new)
    if changed:
        now = timezone.now()
        updates = [ModelResponse(pk=response_id, model_version=version, text=text, updated_at=now)
                   for response_id, (_, version, text, _) in changed.items()]
        ModelResponse.objects.bulk_update(updates, ["model_version", "text", "updated_at"], batch_size=1000)
    summary.updated = len(changed)
    if summary.created or summary.updated:  # a resend that changes nothing is no event
        audit_record(by=by, action="responses.ingest", target="responses", **summary.as_dict())
    return summary


def _model_slot_errors(rows: Sequence[tuple[int, Any]], model_slots: Sequence[str]) -> list[RowError]:
    """Responses for models outside the study's slots; tolerant of any shape (the serializer reports on that)."""
    errors: list[RowError] = []
    slots = set(model_slots)
    if not slots:
        return errors
    for index, record in rows:
        turns = record.get("turns") if isinstance(record, dict) else None
        for t_pos, turn in enumerate(turns if isinstance(turns, list) else []):
            responses = turn.get("responses") if isinstance(turn, dict) else None
            for r_pos, response in enumerate(responses if isinstance(responses, list) else []):
                model = response.get("model") if isinstance(response, dict) else None
                if isinstance(model, str) and model.strip() and model.strip() not in slots:
                    errors.append(RowError(index, f"turns[{t_pos}].responses[{r_pos}].model",
                                           f"{model.strip()!r} is not one of this study's model slots "
                                           f"({', '.join(model_slots)})"))
    return errors


@transaction.atomic
def conversations_ingest(
    *, items: Sequence[Any], model_slots: Sequence[str] = (), by: User | None = None
) -> ImportSummary:
    """conversations_import for API items (0-based indices), limited to the study's model slots."""
    return _conversations_for_study(rows=list(enumerate(items)), model_slots=model_slots, by=by, row_label="item")


@transaction.atomic
def conversations_upload(
    *, stream: IO[str] | Iterable[str], model_slots: Sequence[str] = (), by: User | None = None
) -> ImportSummary:
    """conversations_import for a JSON Lines file uploaded on a study's page (1-based line numbers), limited to
    the study's model slots."""
    return _conversations_for_study(rows=list(read_jsonl(stream)), model_slots=model_slots, by=by, row_label="line")


def _conversations_for_study(*, rows: list[tuple[int, Any]], model_slots: Sequence[str], by: User | None,
                             row_label: str) -> ImportSummary:
    advisory_lock("benchmark.ingest")  # concurrent ingests of the same new conversations must not race to insert
    errors = _model_slot_errors(rows, model_slots)
    if errors:
        _, shape_errors = conversations_validate(rows)
        raise RowErrors([*shape_errors, *errors], row_label=row_label)
    try:
        return conversations_import(rows=rows, by=by)
    except RowErrors as error:
        error.row_label = row_label
        raise
