"""Importing conversations with their turns and model responses (docs/reference.md#conversations-json-lines):
the ``import_conversations`` command, the demo and synthetic studies (``conversations_import``), a study's upload
page (``conversations_upload``) and the API (``conversations_ingest``).

Import is validate-everything-then-write: every row is checked (shape, internal consistency, clashes with
the database) before anything is written, and the write is one transaction of set-based inserts.
Re-importing identical content changes nothing.

Every write goes through a study or through none (an import without a study: ``import_conversations``, the demo).
It may change only material that no other study owns or uses, and never what reviewers coded against
(benchmark/material_rules.py; README, "Study isolation and frozen text"). An ingestion through a study also
passes each record to the check of the study's kind (``problems``: benchmark knows no kind, so its callers pass it
in, from ``annotation.kinds.conversation_check``), e.g. a history with more sessions than the kind's report can
place; an import without a study has no kind to ask.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from django.contrib.auth.models import User
from django.db import transaction

from audit.services import audit_record
from benchmark.material_rules import (
    Edit,
    MaterialConflict,
    StudyRef,
    claim,
    material_conflicts,
    turns_back_in_queues,
    turns_sent_back,
)
from benchmark.models import Conversation, Dataset, ModelResponse, Turn
from benchmark.response_ingest import responses_insert
from benchmark.sessions import conversation_serializer, record_turns, sessions_changes, sessions_write, turn_paths
from common.errors import RowError, RowErrors, flatten_serializer_errors, jsonl_rows
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
    turns_back_in_queues: int = 0  # coders' completed turns a new response took out of the completed ones

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


# The check of a study's kind on one valid record: its problems as (field, why).
KindProblems = Callable[[dict[str, Any]], list[tuple[str, str]]]


def conversations_validate(rows: Iterable[tuple[int, Any]], problems: KindProblems | None = None,
                           ) -> tuple[list[tuple[int, dict]], list[RowError]]:
    """Shape and consistency of every record, the study's kind's ``problems`` with it, plus duplicates inside the
    input."""
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
        refused = problems(data) if problems is not None else []
        if refused:
            errors += [RowError(row, path, message) for path, message in refused]
            continue
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
    # every change to stored material, for the study isolation and freeze checks
    edits: list[Edit] = field(default_factory=list)


def _datasets_ensure(names: set[str], summary: ImportSummary) -> dict[str, Dataset]:
    """The datasets by name, creating (in name order, noted in the summary) those that do not exist yet."""
    datasets = {d.name: d for d in Dataset.objects.filter(name__in=names)}
    for name in sorted(names - set(datasets)):
        datasets[name] = Dataset.objects.create(name=name)
        summary.datasets_created.append(name)
    return datasets


def _turn_changes(row: int, t_path: str, turn_data: dict, turn: Turn, label: str,
                  changes: _ConversationChanges) -> bool:
    """Gather what brings a stored turn and its responses to the row's content; True when anything changes."""
    changed = False
    for name, attr in (("client", "client_text"), ("therapist_reference", "therapist_reference")):
        if getattr(turn, attr) != turn_data[name]:
            setattr(turn, attr, turn_data[name])
            changes.edits.append(Edit(row, f"{t_path}.{name}", turn.conversation_id, label, "turn",
                                       turn_id=turn.pk, turn_index=turn.index))
            changed = True
    if changed:
        changes.turn_updates.append(turn)
    responses = {response.model_slot: response for response in turn.responses.all()}
    for r_pos, response_data in enumerate(turn_data["responses"]):
        where = f"{t_path}.responses[{r_pos}]"
        response = responses.get(response_data["model"])
        if response is None:
            changes.new_responses.append(ModelResponse(turn=turn, model_slot=response_data["model"],
                                                       model_version=response_data["model_version"],
                                                       text=response_data["text"]))
            changes.edits.append(Edit(row, where, turn.conversation_id, label, "reply", turn_id=turn.pk,
                                       turn_index=turn.index, model_slot=response_data["model"]))
            changed = True
        elif (response.text, response.model_version) != (response_data["text"], response_data["model_version"]):
            if response.text != response_data["text"]:
                changes.edits.append(Edit(row, f"{where}.text", turn.conversation_id, label, "response",
                                           turn_id=turn.pk, turn_index=turn.index, response_id=response.pk,
                                           model_slot=response.model_slot))
            else:
                changes.edits.append(Edit(row, f"{where}.model_version", turn.conversation_id, label))
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
            changes.edits.append(Edit(row, attr, conversation.pk, label, "conversation"))
            changed = True
    if changed:
        changes.conversation_updates.append(conversation)
    turns = {turn.index: turn for turn in conversation.turns.all()}
    extra = sorted(set(turns) - {t["index"] for t in data["turns"]})
    if extra:
        errors.append(RowError(row, "turns", f"the stored conversation has turns {extra} that this row lacks; "
                                             "turns are never deleted by an import"))
    for t_path, turn_data in zip(turn_paths(data), data["turns"], strict=True):
        turn = turns.get(turn_data["index"])
        if turn is None:
            turn = Turn(conversation=conversation, index=turn_data["index"], client_text=turn_data["client"],
                        therapist_reference=turn_data["therapist_reference"])
            changes.new_turns.append((turn_data, turn))
            changes.edits.append(Edit(row, t_path, conversation.pk, label, "new_turn"))
            changed = True
            continue
        changed |= _turn_changes(row, t_path, turn_data, turn, label, changes)
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
    # In one statement, as every ingestion writes them (``responses_insert`` says why: the order of the locks).
    responses_insert([(response.turn.pk, response.model_slot, response.model_version, response.text.encode())
                      for response in new_responses])
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
    study: StudyRef | None = None, problems: KindProblems | None = None,
) -> ImportSummary:
    """Import conversations (docs/reference.md#conversations-json-lines) through ``study`` (None: an import without a
    study), each record checked by ``problems`` (the study's kind's check, None: none). Raises RowErrors, having
    written nothing, when any row is wrong, and MaterialConflict when the only problems are changes this import may
    not make.

    New conversations belong to ``study``. Existing ones are updated to the file's content, except material
    another study owns or uses (or, without a study, any study's material) and text reviewers coded against
    (benchmark/material_rules.py). A response added to a stored turn takes it out of the completed ones of the
    coders who completed it in an open round (annotation migration 0023's trigger); the summary counts them.
    """
    # Concurrent imports must neither race to insert the same new conversations nor change what is compared below.
    advisory_lock("benchmark.ingest")
    valid, errors = conversations_validate(rows, problems)
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
    changes.edits += [Edit(e.row, e.field, e.conversation_id, labels[e.row], "conversation") for e in session_edits]
    conflicts, claims = material_conflicts(changes.edits, study=study)
    if errors:
        raise RowErrors(errors + conflicts)
    if conflicts:
        raise MaterialConflict(conflicts)

    # Only a response added to a stored turn can have been completed by a coder (a new turn has no assignment yet).
    back_before = turns_back_in_queues() if changes.new_responses else None
    _conversation_changes_write(changes, summary)
    if back_before is not None:
        summary.turns_back_in_queues = turns_sent_back(back_before, (r.turn_id for r in changes.new_responses))
    written = sessions_write(valid=valid, datasets=datasets)
    summary.sessions_created, summary.sessions_updated = written.created, written.updated
    claim(claims, study)
    if (summary.conversations_created or summary.conversations_updated or summary.sessions_created
            or summary.sessions_updated or written.turns_moved):
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


NOTHING = "no conversations: nothing to import"


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
    *, items: Sequence[Any], study: StudyRef | None, model_slots: Sequence[str] = (), by: User | None = None,
    problems: KindProblems | None = None,
) -> ImportSummary:
    """conversations_import through ``study`` for API items (0-based indices), limited to its model slots and
    checked by its kind's ``problems``."""
    return _conversations_for_study(rows=list(enumerate(items)), study=study, model_slots=model_slots, by=by,
                                    problems=problems, row_label="item")


@transaction.atomic
def conversations_upload(
    *, stream: IO[str] | Iterable[str], study: StudyRef | None = None, model_slots: Sequence[str] = (),
    by: User | None = None, problems: KindProblems | None = None,
) -> ImportSummary:
    """conversations_import for a JSON Lines file (1-based line numbers) uploaded on a study's page, limited to the
    study's model slots and checked by its kind's ``problems``, or read by ``import_conversations``: without
    ``study`` it is an import without a study, which creates new conversations but changes no study's material."""
    return _conversations_for_study(rows=list(jsonl_rows(stream)), study=study, model_slots=model_slots, by=by,
                                    problems=problems, row_label="line")


def _conversations_for_study(*, rows: list[tuple[int, Any]], study: StudyRef | None, model_slots: Sequence[str],
                             by: User | None, problems: KindProblems | None, row_label: str) -> ImportSummary:
    if not rows:  # a file of blank lines, an empty request: an import of nothing is a mistake, said by every path
        raise RowErrors([RowError(1, "file", NOTHING) if row_label == "line" else RowError(0, "items", NOTHING)],
                        row_label=row_label)
    errors = _model_slot_errors(rows, model_slots)
    if errors:
        _, shape_errors = conversations_validate(rows, problems)
        raise RowErrors([*shape_errors, *errors], row_label=row_label)
    try:
        return conversations_import(rows=rows, by=by, study=study, problems=problems)
    except RowErrors as error:
        error.row_label = row_label
        raise
