"""Writes for the benchmark app: importing conversations with their turns and model responses.

Import is validate-everything-then-write: every row is checked (shape, internal consistency, clashes with
the database) before anything is written, and the write is one transaction of set-based inserts.
Re-importing identical content changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from benchmark.models import Conversation, Dataset, ModelResponse, Turn
from benchmark.serializers import ConversationIn
from cab.errors import RowError, RowErrors, flatten_serializer_errors


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


@transaction.atomic
def conversations_import(
    *, rows: Iterable[tuple[int, Any]], by: AbstractBaseUser | None = None, is_synthetic: bool = False
) -> ImportSummary:
    """Import conversations (SPEC §6). Raises RowErrors, having written nothing, when any row is wrong.

    Existing conversations are updated to the file's content, except that the text of a response that already
    has judgments never changes: such a row is an error (spans are offsets into that text).
    """
    valid, errors = conversations_validate(rows)
    if errors:
        raise RowErrors(errors)
    summary = ImportSummary()
    datasets = {d.name: d for d in Dataset.objects.filter(name__in={data["dataset"] for _, data in valid})}
    for name in sorted({data["dataset"] for _, data in valid} - set(datasets)):
        datasets[name] = Dataset.objects.create(name=name)
        summary.datasets_created.append(name)

    existing = _existing_conversations(valid, datasets)
    judged = set(
        ModelResponse.objects.filter(turn__conversation__in=list(existing.values()), judgments__isnull=False)
        .values_list("id", flat=True)
        .distinct()
    )

    new_conversations: list[tuple[dict, Conversation]] = []
    turn_updates: list[Turn] = []
    new_turns: list[tuple[dict, Turn]] = []
    new_responses: list[ModelResponse] = []
    response_updates: list[ModelResponse] = []
    conversation_updates: list[Conversation] = []
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
            new_conversations.append((data, conversation))
            continue
        changed = False
        for attr, value in (("kind", data["kind"]), ("topic", data["topic"]), ("complexity", data["complexity"]),
                            ("title", data["title"])):
            if getattr(conversation, attr) != value:
                setattr(conversation, attr, value)
                changed = True
        if changed:
            conversation_updates.append(conversation)
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
                new_turns.append((turn_data, turn))
                changed = True
                continue
            if (turn.client_text, turn.therapist_reference) != (turn_data["client"], turn_data["therapist_reference"]):
                turn.client_text, turn.therapist_reference = turn_data["client"], turn_data["therapist_reference"]
                turn_updates.append(turn)
                changed = True
            responses = {response.model_slot: response for response in turn.responses.all()}
            for r_pos, response_data in enumerate(turn_data["responses"]):
                response = responses.get(response_data["model"])
                if response is None:
                    new_responses.append(ModelResponse(turn=turn, model_slot=response_data["model"],
                                                       model_version=response_data["model_version"],
                                                       text=response_data["text"]))
                    changed = True
                elif (response.text, response.model_version) != (response_data["text"], response_data["model_version"]):
                    if response.pk in judged and response.text != response_data["text"]:
                        errors.append(RowError(row, f"turns[{t_pos}].responses[{r_pos}].text",
                                               f"the {response.model_slot} response of turn {turn.index} already has "
                                               "judgments; its text cannot change"))
                        continue
                    response.text, response.model_version = response_data["text"], response_data["model_version"]
                    response_updates.append(response)
                    changed = True
        if changed:
            summary.conversations_updated += 1
        else:
            summary.conversations_unchanged += 1
    if errors:
        raise RowErrors(errors)

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
    if conversation_updates:
        Conversation.objects.bulk_update(conversation_updates, ["kind", "topic", "complexity", "title"])
    if turn_updates:
        Turn.objects.bulk_update(turn_updates, ["client_text", "therapist_reference"])
    if response_updates:
        ModelResponse.objects.bulk_update(response_updates, ["text", "model_version"])
    summary.responses_updated = len(response_updates)
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
