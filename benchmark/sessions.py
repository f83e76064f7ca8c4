"""Longitudinal histories (docs/sessions.md#histories-of-sessions-conversations-json-lines): conversations made of
sessions, in the ``sessions`` form of the conversations JSON Lines, and their ingestion.

A record gives ``sessions`` (``{"index", "kind", "crisis_type", "turns": [...]}``) instead of ``turns``; each
session's turns have the usual turn shape (``index`` within the whole history, ``client``, ``responses`` — the
assistant's reply under its model slot). The conversations importer (``benchmark.conversation_ingest``) reads such
a record as the history's turns, flattened in order, plus the sessions they belong to, and calls the three hooks
here: ``conversation_serializer`` (the shape), ``sessions_changes`` (what would change in stored sessions: errors and
edits for the freeze and study isolation checks) and ``sessions_write`` (after the turns are written). A record in
the ``turns`` form is exactly what it was: its conversation has no sessions (one implicit session) and none of this
reads a row of it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from benchmark.models import Conversation, Dataset, ModelResponse, Session, Turn
from benchmark.serializers import Choice, ConversationIn, TurnIn
from common.errors import RowError
from common.lookups import any_of


class SessionIn(serializers.Serializer):
    index = serializers.IntegerField(min_value=1, help_text="1-based position in the history: 1, 2, … in order")
    kind = Choice(
        choices=Session.Kind.values,
        help_text="chat, crisis or callback in a multi-turn history; counseling, and only counseling, in a "
                  "longitudinal trajectory")
    crisis_type = Choice(
        choices=Session.CrisisType.values, allow_null=True, required=False, default=None,
        help_text="required for a crisis session; the crisis a callback returns to (optional); null for chat and "
                  "counseling sessions")
    turns = TurnIn(many=True, allow_empty=False,
                   help_text="this session's turns; their indices run through the whole history")

    def validate(self, attrs):
        if attrs["kind"] == Session.Kind.CRISIS and attrs.get("crisis_type") is None:
            raise serializers.ValidationError({"crisis_type": "required for a crisis session (SI, self-harm or "
                                                              "anxiety)"})
        if attrs["kind"] == Session.Kind.CHAT and attrs.get("crisis_type") is not None:
            raise serializers.ValidationError({"crisis_type": "must be null for a chat session"})
        return attrs


@extend_schema_serializer(component_name="ConversationSessions")
class HistoryIn(ConversationIn):
    """A conversation in the ``sessions`` form: validated data as for ``ConversationIn`` (``turns`` is the history's
    turns in order) plus ``sessions``: ``[{"index", "kind", "crisis_type", "turn_indices"}]``."""

    turns = None  # type: ignore[assignment]  # given inside the sessions; filled in by validate
    sessions = SessionIn(many=True, allow_empty=False,
                         help_text="the history's sessions, indices 1, 2, … in order (instead of turns: never both)")

    def validate(self, attrs):
        if "turns" in self.initial_data:
            raise serializers.ValidationError({"turns": "give either turns or sessions, not both"})
        if attrs["kind"] == Conversation.Kind.LONGITUDINAL:
            _trajectory_problems(attrs)
        elif attrs["kind"] != Conversation.Kind.MULTI:
            raise serializers.ValidationError({"kind": "a history of sessions is a multi-turn conversation: kind "
                                                       "must be multi"})
        else:
            counseling = [i for i, session in enumerate(attrs["sessions"])
                          if session["kind"] == Session.Kind.COUNSELING]
            if counseling:
                raise serializers.ValidationError({f"sessions[{counseling[0]}].kind": (
                    "a counseling session belongs to a trajectory: the conversation's kind must be longitudinal")})
        indices = [session["index"] for session in attrs["sessions"]]
        if indices != list(range(1, len(indices) + 1)):
            raise serializers.ValidationError({"sessions": f"session indices must be 1, 2, … in order; got "
                                                           f"{indices}"})
        _one_assistant(attrs["sessions"])
        turns = [turn for session in attrs["sessions"] for turn in session["turns"]]
        turn_indices = [turn["index"] for turn in turns]
        if turn_indices != list(range(1, len(turn_indices) + 1)):
            raise serializers.ValidationError({"sessions": "turn indices run through the whole history: 1, 2, … "
                                                           f"in order across the sessions; got {turn_indices}"})
        attrs["turns"] = turns
        attrs["sessions"] = [{"index": session["index"], "kind": session["kind"],
                              "crisis_type": session.get("crisis_type"),
                              "turn_indices": [turn["index"] for turn in session["turns"]]}
                             for session in attrs["sessions"]]
        return super().validate(attrs)


ONE_ASSISTANT = "a history's replies are one assistant's, under one model slot"


def assistant_problem(kept: list[str], slot: str, history: str = "this history") -> str | None:
    """What is wrong with a reply under ``slot`` in a history whose replies are under ``kept`` (none yet: any slot
    is the history's), or None. The one rule of every path that adds a reply to a history (docs/sessions.md): the
    kinds' sections read a history's reply codes as its one assistant's."""
    if not kept or slot in kept:
        return None
    return f"{slot!r}: {ONE_ASSISTANT}, and {history}'s are under {', '.join(map(repr, kept))}"


def _one_assistant(sessions: list[dict]) -> None:
    """Every response of a history record is under one model slot, the assistant under study's: a turn has that one
    reply."""
    kept: list[str] = []
    for s_pos, session in enumerate(sessions):
        for t_pos, turn in enumerate(session["turns"]):
            for r_pos, response in enumerate(turn["responses"]):
                problem = assistant_problem(kept, response["model"])
                if problem:
                    raise serializers.ValidationError({
                        f"sessions[{s_pos}].turns[{t_pos}].responses[{r_pos}].model": problem})
                kept = kept or [response["model"]]


def history_slots(conversation_ids: list[int]) -> dict[int, list[str]]:
    """The model slots of the stored replies of these conversations, sorted (one query): what
    ``assistant_problem`` keeps for a stored history. A conversation without replies is left out."""
    slots: dict[int, set[str]] = {}
    for conversation_id, slot in ModelResponse.objects.filter(any_of("turn__conversation_id", conversation_ids)) \
            .values_list("turn__conversation_id", "model_slot").distinct():
        slots.setdefault(conversation_id, set()).add(slot)
    return {conversation_id: sorted(kept) for conversation_id, kept in slots.items()}


def _trajectory_problems(attrs: dict) -> None:
    """A longitudinal conversation (one client's counseling sessions): every session is a counseling
    session, with no crisis type, and the conversation has no complexity (like any multi-turn one)."""
    for position, session in enumerate(attrs["sessions"]):
        if session["kind"] != Session.Kind.COUNSELING:
            raise serializers.ValidationError({f"sessions[{position}].kind": (
                f"a longitudinal trajectory is made of counseling sessions, not {session['kind']}")})
        if session.get("crisis_type") is not None:
            raise serializers.ValidationError({f"sessions[{position}].crisis_type": (
                "must be null for a counseling session")})
    if attrs.get("complexity") is not None:
        raise serializers.ValidationError({"complexity": "must be null for a longitudinal trajectory"})


@extend_schema_serializer(component_name="ConversationTurns")
class TurnsIn(ConversationIn):
    """A conversation in the ``turns`` form: as ``ConversationIn``, but a longitudinal trajectory must come in the
    ``sessions`` form (its sessions are what is rated)."""

    def validate(self, attrs):
        if attrs["kind"] == Conversation.Kind.LONGITUDINAL:
            raise serializers.ValidationError({"kind": "a longitudinal trajectory is made of sessions: send it in "
                                                       "the sessions form (sessions of kind counseling), not turns"})
        return super().validate(attrs)


def conversation_serializer(record: dict) -> ConversationIn:
    """The serializer for one conversations JSON Lines record: the ``sessions`` form or the ``turns`` form."""
    return HistoryIn(data=record) if "sessions" in record else TurnsIn(data=record)


def record_turns(record: Any) -> Iterator[tuple[str, Any]]:
    """(path, turn) for every turn of a raw record in either form, tolerant of any shape (the serializer reports on
    that): ``turns[i]`` or ``sessions[s].turns[i]``."""
    if not isinstance(record, dict):
        return
    turns = record.get("turns")
    for position, turn in enumerate(turns if isinstance(turns, list) else []):
        yield f"turns[{position}]", turn
    sessions = record.get("sessions")
    for s_pos, session in enumerate(sessions if isinstance(sessions, list) else []):
        session_turns = session.get("turns") if isinstance(session, dict) else None
        for position, turn in enumerate(session_turns if isinstance(session_turns, list) else []):
            yield f"sessions[{s_pos}].turns[{position}]", turn


def turn_paths(data: dict) -> list[str]:
    """Where each of a valid record's turns (``data["turns"]``, a history's flattened) is in the record, as its errors
    name it: ``turns[i]``, or ``sessions[s].turns[i]`` for a history."""
    sessions = data.get("sessions")
    if sessions is None:
        return [f"turns[{position}]" for position in range(len(data["turns"]))]
    return [f"sessions[{s_pos}].turns[{position}]" for s_pos, session in enumerate(sessions)
            for position in range(len(session["turn_indices"]))]


# --- what an import would change, and writing it ------------------------------------------------------------------


@dataclass(frozen=True)
class SessionEdit:
    """A change to a stored history's sessions: to its kind, crisis type or turns (which session a turn is in).
    The importer checks it like a change to the conversation's own fields (frozen once coded)."""

    row: int
    field: str
    conversation_id: int


def _stored_sessions(conversation_ids: list[int]) -> tuple[dict[int, dict[int, tuple[str, str | None]]],
                                                             dict[int, int]]:
    """(conversation -> session index -> (kind, crisis type), session id -> session index), in one query."""
    stored: dict[int, dict[int, tuple[str, str | None]]] = {}
    index_of: dict[int, int] = {}
    if conversation_ids:
        for pk, conversation_id, index, kind, crisis_type in Session.objects.filter(
            conversation_id__in=conversation_ids
        ).values_list("pk", "conversation_id", "index", "kind", "crisis_type"):
            stored.setdefault(conversation_id, {})[index] = (kind, crisis_type)
            index_of[pk] = index
    return stored, index_of


def sessions_changes(
    valid: list[tuple[int, dict]], existing: dict[tuple[int, str], Conversation], datasets: dict[str, Dataset]
) -> tuple[list[SessionEdit], list[RowError]]:
    """What the rows would change in the sessions of stored conversations (one query, none when nothing is
    stored): the edits, and the errors (a stored session the row lacks; a history sent in the ``turns`` form; a
    reply under another model slot than the stored history's)."""
    rows = []
    for row, data in valid:
        conversation = existing.get((datasets[data["dataset"]].pk, data["conversation_id"]))
        if conversation is not None:
            rows.append((row, data, conversation))
    stored, index_of = _stored_sessions(sorted({conversation.pk for _, _, conversation in rows}))
    edits: list[SessionEdit] = []
    errors: list[RowError] = []
    for row, data, conversation in rows:
        have = stored.get(conversation.pk, {})
        sessions = data.get("sessions")
        if sessions is None:
            if have:
                errors.append(RowError(row, "turns", "this conversation is a history of sessions: send it in the "
                                                     "sessions form"))
            continue
        given = {session["index"] for session in sessions}
        missing = sorted(set(have) - given)
        if missing:
            errors.append(RowError(row, "sessions", f"the stored conversation has sessions {missing} that this row "
                                                    "lacks; sessions are never deleted by an import"))
        turns = list(conversation.turns.all())  # prefetched by the importer
        errors += _stored_assistant_problem(row, data, turns)
        if not have and turns:  # a stored conversation without sessions becomes a history
            edits.append(SessionEdit(row, "sessions", conversation.pk))
            continue
        stored_of_turn = {turn.index: index_of[turn.session_id] for turn in turns if turn.session_id in index_of}
        for position, session in enumerate(sessions):
            before = have.get(session["index"])
            if before is not None and before[0] != session["kind"]:
                edits.append(SessionEdit(row, f"sessions[{position}].kind", conversation.pk))
            if before is not None and before[1] != session["crisis_type"]:
                edits.append(SessionEdit(row, f"sessions[{position}].crisis_type", conversation.pk))
            # A turn moved from another session, or a new turn put in a stored session: its turns change.
            if any(stored_of_turn.get(index, session["index"] if before is None else None) != session["index"]
                   for index in session["turn_indices"]):
                edits.append(SessionEdit(row, f"sessions[{position}].turns", conversation.pk))
    return edits, errors


def _stored_assistant_problem(row: int, data: dict, turns: list[Turn]) -> list[RowError]:
    """The row's replies under another model slot than the stored conversation's (its responses prefetched)."""
    kept = sorted({response.model_slot for turn in turns for response in turn.responses.all()})
    sent = sorted({response["model"] for turn in data["turns"] for response in turn["responses"]})
    if len(set(kept) | set(sent)) <= 1:
        return []
    return [RowError(row, "sessions", f"{ONE_ASSISTANT}: the stored history's are under {', '.join(map(repr, kept))}, "
                                      f"this row's under {', '.join(map(repr, sent))}")]


@dataclass
class SessionsWritten:
    created: int = 0
    updated: int = 0
    turns_moved: list[int] = field(default_factory=list)


def sessions_write(*, valid: list[tuple[int, dict]], datasets: dict[str, Dataset]) -> SessionsWritten:
    """Bring the stored sessions of the rows in the ``sessions`` form to the rows' content, once their
    conversations and turns are written: create the missing sessions, update kind and crisis type, and put every
    turn in its session. Set-based: a few statements whatever the number of rows; nothing for ``turns`` rows."""
    histories = [data for _, data in valid if data.get("sessions") is not None]
    written = SessionsWritten()
    if not histories:
        return written
    pks: dict[tuple[int, str], int] = {}
    wanted: dict[int, set[str]] = {}
    for data in histories:
        wanted.setdefault(datasets[data["dataset"]].pk, set()).add(data["conversation_id"])
    for dataset_id, external_ids in wanted.items():
        for pk, external_id in Conversation.objects.filter(dataset_id=dataset_id, external_id__in=external_ids) \
                .values_list("pk", "external_id"):
            pks[(dataset_id, external_id)] = pk
    conversation_of = {id(data): pks[(datasets[data["dataset"]].pk, data["conversation_id"])] for data in histories}
    stored = {(s.conversation_id, s.index): s for s in Session.objects.filter(conversation_id__in=pks.values())}
    new: list[Session] = []
    changed: list[Session] = []
    for data in histories:
        conversation_id = conversation_of[id(data)]
        for session in data["sessions"]:
            found = stored.get((conversation_id, session["index"]))
            if found is None:
                found = Session(conversation_id=conversation_id, index=session["index"], kind=session["kind"],
                                crisis_type=session["crisis_type"])
                new.append(found)
                stored[(conversation_id, session["index"])] = found
            elif (found.kind, found.crisis_type) != (session["kind"], session["crisis_type"]):
                found.kind, found.crisis_type = session["kind"], session["crisis_type"]
                changed.append(found)
    Session.objects.bulk_create(new)
    if changed:
        Session.objects.bulk_update(changed, ["kind", "crisis_type"])
    written.created, written.updated = len(new), len(changed)

    session_of_turn = {(conversation_of[id(data)], index): stored[(conversation_of[id(data)], session["index"])].pk
                       for data in histories for session in data["sessions"] for index in session["turn_indices"]}
    moves = [(pk, session_id, session_of_turn[(conversation_id, index)])
             for pk, conversation_id, index, session_id in Turn.objects.filter(
                 conversation_id__in=pks.values()).values_list("pk", "conversation_id", "index", "session_id")
             if session_of_turn.get((conversation_id, index), session_id) != session_id]
    if moves:
        Turn.objects.bulk_update([Turn(pk=pk, session_id=to) for pk, _, to in moves], ["session"], batch_size=2000)
    written.turns_moved = [pk for pk, _, _ in moves]
    # Updated: the sessions stored before this import whose kind, crisis type or turns changed, each once. A new
    # session is created, not updated, though its turns (new, or stored without a session) are put in it.
    created = {session.pk for session in new}
    touched = {session.pk for session in changed} | {end for _, before, to in moves for end in (before, to)}
    written.updated = len(touched - created - {None})
    return written
