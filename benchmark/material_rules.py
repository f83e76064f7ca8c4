"""Who may change benchmark material, checked by every ingestion before it writes (README, "Study isolation and
frozen text"): study isolation (a write through a study may change only material no other study owns or uses; a
write without a study, only material no study owns or uses) and frozen text (nothing reviewers coded against, or
will code in an open round, changes). ``material_conflicts`` locks the conversations an ingestion would change and
names every change it may not make; ``claim`` gives the unowned ones to the study that changed them. A response added
to a turn that coders completed in an open round takes it out of their completed ones (a trigger: annotation
migration 0023); ``turns_back_in_queues`` says how many, for the ingestion's answer, and ``turns_sent_back`` tells
the layers above of the turns (``on_turns_sent_back``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from django.db import connection
from django.db.models import Max

from benchmark.models import Conversation, Session, Turn
from common.errors import RowConflicts, RowError
from common.lookups import any_of

_LOOKUP_CHUNK = 5000  # keeps every IN (…) list far below PostgreSQL's 65,535 parameters per statement


def chunks(values: list, size: int = _LOOKUP_CHUNK) -> Iterator[list]:
    for start in range(0, len(values), size):
        yield values[start:start + size]


# annotation.Round.Status.OPEN: benchmark sits below annotation, so it names the value, not the class.
_OPEN_ROUND = "open"
# Where the trigger of annotation migration 0023 counts, in the transaction, the completed assignments it took out of
# the completed ones because a response was added to their turn.
_BACK_IN_QUEUES = "cab.turns_back_in_queues"


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
class Edit:
    """One change an ingestion would make to stored material, and where its input asks for it.

    ``kind`` says what the freeze rules look at: ``conversation`` (a field of it, named by ``field``), ``turn``
    (its client text or therapist reference), ``response`` (its text), ``reply`` (a new response to a stored
    turn: a change to the transcript of the turn's session, if it is in one, and of its conversation), ``new_turn``
    (a turn joining a stored conversation: a change to its transcript), or ``other`` (a new model version), which
    only the study isolation rule looks at."""

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

    studies: dict[int, set[int]] = field(default_factory=dict)  # conversation -> studies with items, labels…
    judged_through: dict[int, float] = field(default_factory=dict)  # conversation -> highest judged turn (inf: itself)
    open_through: dict[int, int] = field(default_factory=dict)  # conversation -> highest turn in an open round
    judged_responses: set[int] = field(default_factory=set)
    open_turns: set[int] = field(default_factory=set)  # turns in an open round: their responses' text is frozen
    # conversations with a conversation-level judgment (no turn, no session): coded on their whole transcript
    whole_conversations: set[int] = field(default_factory=set)
    # conversation -> (last turn index, session index, why) of each session coded as a whole: judged (a session
    # code), or a session-rated study's unit in an open round
    whole_sessions: dict[int, list[tuple[int, int, str]]] = field(default_factory=dict)

    def used_by(self, conversation_id: int, study_id: int) -> None:
        self.studies.setdefault(conversation_id, set()).add(study_id)

    def session_coded_over(self, conversation_id: int, turn_index: int) -> tuple[int, str] | None:
        """(session index, why) of the first session coded as a whole whose transcript shows the turn (its own
        turns, and the earlier sessions its page may show as history), or None."""
        for last, index, why in sorted(self.whole_sessions.get(conversation_id, ())):
            if turn_index <= last:
                return index, why
        return None

    def problem(self, edit: Edit) -> str | None:
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
        whole_conversation = self._conversation_coded_whole(edit)
        if whole_conversation is not None:
            return whole_conversation
        if edit.kind in ("turn", "response", "reply") and edit.turn_index is not None:
            whole = self.session_coded_over(edit.conversation_id, edit.turn_index)
            if whole is not None:
                index, why = whole
                change = {"turn": f"its {'client text' if edit.field.endswith('.client') else 'therapist reference'}"
                                  " cannot change",
                          "response": f"its {edit.model_slot} reply's text cannot change",
                          "reply": "no reply can be added to it"}[edit.kind]
                return (f"turn {edit.turn_index} of {edit.label} is in the transcript session {index} {why} (a "
                        f"session is coded on its whole transcript, with the earlier sessions its page shows); "
                        f"{change}")
        return None

    def removal_problem(self, edit: Edit) -> str | None:
        """Why deleting the turn (an edit of kind ``turn``) or the response (``response``) would take away what
        reviewers coded against, or will code in an open round, or None: what ``problem`` freezes is not deleted
        either. The session coded as a whole is named first, as it is what the transcript was coded as."""
        turn = f"turn {edit.turn_index} of {edit.label}"
        what = turn if edit.kind == "turn" else f"the {edit.model_slot} reply of {turn}"
        whole = self.session_coded_over(edit.conversation_id, edit.turn_index or 0)
        if whole is not None:
            return (f"{what} is in the transcript session {whole[0]} {whole[1]} (a session is coded on its whole "
                    "transcript, with the earlier sessions its page shows); it cannot be deleted")
        problem = self.problem(edit)
        if problem is None:
            return None
        if edit.kind == "response":
            why = ("has judgments" if edit.response_id in self.judged_responses
                   else f"is in the transcript of {edit.label}'s conversation-level judgment"
                   if edit.conversation_id in self.whole_conversations else "is in an open round")
            return f"{what} {why}; it cannot be deleted"
        judged = self.judged_through.get(edit.conversation_id, 0)
        if math.isinf(judged):
            return (f"{turn} is in {edit.label}, which has judgments of the conversation or of a session as a "
                    "whole; none of its turns can be deleted")
        if edit.turn_index is not None and edit.turn_index <= judged:
            return f"{turn} has judgments (on it, or on a later turn that shows it as context); it cannot be deleted"
        return f"{turn} is in an open round (itself, or as context of a later turn); it cannot be deleted"

    def _conversation_coded_whole(self, edit: Edit) -> str | None:
        """Why the edit would change the transcript a conversation-level judgment was given on (a new turn, a reply
        added to a turn, a reply's text), or None. Its turns' own text is frozen by ``judged_through`` already."""
        if edit.conversation_id not in self.whole_conversations:
            return None
        if edit.kind == "new_turn":
            return (f"{edit.label} has a conversation-level judgment, given on its whole transcript; no turn can join "
                    "it")
        if edit.kind in ("response", "reply") and edit.turn_index is not None:
            change = ("no reply can be added to it" if edit.kind == "reply"
                      else f"its {edit.model_slot} reply's text cannot change")
            return (f"turn {edit.turn_index} of {edit.label} is in the transcript its conversation-level judgment was "
                    f"given on (a conversation-level judgment is given on the whole transcript); {change}")
        return None


def _owners_locked(conversation_ids: list[int]) -> dict[int, int | None]:
    """Lock the conversations (FOR UPDATE, in id order) and return their owning studies. A judgment can then not
    start pointing at them until this transaction ends: inserting one takes a key-share lock on its conversation."""
    owners: dict[int, int | None] = {}
    for chunk in chunks(conversation_ids):
        owners.update(Conversation.objects.select_for_update().filter(any_of("pk", chunk)).order_by("pk")
                      .values_list("pk", "study_id"))
    return owners


def _material_use(conversation_ids: list[int]) -> _MaterialUse:
    """Who uses these conversations and what of them is coded: four set-based reads per chunk. A study uses a
    conversation it judged, has a turn of in a round (an item or an assignment) or labelled a session of (a method's
    or reference's session label): the uses by which ``annotation.selectors.conversations_of_study`` makes it the
    study's. A label fixes no text (it is a session's, not a turn's or response's), so it freezes nothing."""
    use = _MaterialUse()
    for chunk in chunks(conversation_ids):
        judged_sessions: set[int] = set()
        for conversation_id, study_id, turn_index, response_id, session_id in (
            Conversation.objects.filter(any_of("pk", chunk), judgments__isnull=False).order_by()
            .values_list("pk", "judgments__round__study_id", "judgments__turn__index", "judgments__response_id",
                         "judgments__session_id")
            .distinct()
        ):
            use.used_by(conversation_id, study_id)
            if session_id is not None:
                judged_sessions.add(session_id)
            reach = math.inf if turn_index is None else turn_index  # a judgment of the conversation as a whole
            use.judged_through[conversation_id] = max(use.judged_through.get(conversation_id, 0), reach)
            if turn_index is None and session_id is None:  # of the conversation unit: on its whole transcript
                use.whole_conversations.add(conversation_id)
            if response_id is not None:
                use.judged_responses.add(response_id)
        open_sessions: dict[int, set[int]] = {}  # study -> sessions of its turns in an open round
        for relation in ("round_items", "assignments"):
            for conversation_id, turn_id, index, session_id, study_id, status in (
                Turn.objects.filter(any_of("conversation_id", chunk), **{f"{relation}__isnull": False}).order_by()
                .values_list("conversation_id", "pk", "index", "session_id", f"{relation}__round__study_id",
                             f"{relation}__round__status")
                .distinct()
            ):
                use.used_by(conversation_id, study_id)
                if status == _OPEN_ROUND:
                    use.open_turns.add(turn_id)
                    use.open_through[conversation_id] = max(use.open_through.get(conversation_id, 0), index)
                    if session_id is not None:
                        open_sessions.setdefault(study_id, set()).add(session_id)
        _whole_sessions_read(judged_sessions, open_sessions, use)
        for conversation_id, study_id in (
            Session.objects.filter(any_of("conversation_id", chunk), labels__isnull=False).order_by()
            .values_list("conversation_id", "labels__study_id").distinct()
        ):
            use.used_by(conversation_id, study_id)
    return use


# Which of some studies code whole sessions (a session-rated kind: a round item is a session, keyed by its first
# turn): benchmark knows no kind, so annotation registers the question (``on_whole_sessions``).
WholeSessionStudies = Callable[[set[int]], set[int]]
_WHOLE_SESSION_STUDIES: list[WholeSessionStudies] = []


def on_whole_sessions(hook: WholeSessionStudies) -> None:
    """Have ``hook`` say which of the studies it is given rate whole sessions (``_whole_sessions_read``), once."""
    if hook not in _WHOLE_SESSION_STUDIES:
        _WHOLE_SESSION_STUDIES.append(hook)


def _whole_sessions_read(judged_sessions: set[int], open_sessions: dict[int, set[int]], use: _MaterialUse) -> None:
    """The sessions coded as a whole, with the last turn of each: those with a session code (``judged_sessions``: a
    judgment of the session unit, a rating or a checklist item), and the sessions a session-rated study has in an
    open round (``open_sessions``, by study: its item is keyed by the session's first turn, but its page shows the
    session's whole transcript). A session's codes were given on its transcript as it stood, so none of its turns'
    replies may be added or changed, as a judged response's text may not (docs/sessions.md). No query when there
    are none (a conversation without sessions)."""
    why = dict.fromkeys(judged_sessions, "was judged on")
    rated: set[int] = set()
    for hook in _WHOLE_SESSION_STUDIES if open_sessions else ():
        rated |= hook(set(open_sessions))
    for study_id in rated:
        for session_id in open_sessions[study_id]:
            why.setdefault(session_id, "is coded on in an open round")
    if not why:
        return
    for session_id, conversation_id, index, last in (
        Session.objects.filter(any_of("pk", sorted(why))).order_by().annotate(last=Max("turns__index"))
        .values_list("pk", "conversation_id", "index", "last")
    ):
        if last is not None:
            use.whole_sessions.setdefault(conversation_id, []).append((last, index, why[session_id]))


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


def material_conflicts(edits: list[Edit], *, study: StudyRef | None) -> tuple[list[RowError], set[int]]:
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


def removal_conflicts(edits: list[Edit]) -> list[RowError]:
    """Lock the conversations of the turns and responses the edits name (each of kind ``turn`` or ``response``: a
    delete), then why each may not be deleted (``_MaterialUse.removal_problem``): the Django admin's deletes keep
    the frozen text rule every ingestion keeps (benchmark/admin.py). Study isolation is not asked: the admin is no
    study's, and what it may delete no reviewer coded against."""
    if not edits:
        return []
    use = _material_use(sorted(_owners_locked(sorted({edit.conversation_id for edit in edits}))))
    return [RowError(edit.row, edit.field, problem) for edit in edits
            if (problem := use.removal_problem(edit)) is not None]


def claim(conversation_ids: set[int], study: StudyRef | None) -> None:
    """The first study to change an unowned conversation owns it from then on."""
    if study is not None and conversation_ids:
        for chunk in chunks(sorted(conversation_ids)):
            Conversation.objects.filter(any_of("pk", chunk), study__isnull=True).update(study_id=study.pk)


def turns_back_in_queues() -> int:
    """How many coders' completed turns the responses inserted so far in this transaction sent back to their
    queues: in an open round of a study that codes the response (README, "Study isolation and frozen text"). An
    ingestion reads it before and after it writes; the difference is its own."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(nullif(current_setting(%s, true), ''), '0')::bigint", [_BACK_IN_QUEUES])
        return int(cursor.fetchone()[0])


# What a layer above does, in the ingestion's transaction, when its new responses sent coders' completed turns back
# to their queues: called with the ids of the turns the responses went to (``on_turns_sent_back``).
TurnsSentBack = Callable[[Sequence[int]], None]
_ON_TURNS_SENT_BACK: list[TurnsSentBack] = []


def on_turns_sent_back(hook: TurnsSentBack) -> None:
    """Have ``hook`` called by every ingestion whose new responses sent completed turns back (``turns_sent_back``),
    once (a hook registered again is not called twice). Benchmark knows nothing of what a completion counts in:
    annotation registers its check-item alerts' update from its app's ``ready``."""
    if hook not in _ON_TURNS_SENT_BACK:
        _ON_TURNS_SENT_BACK.append(hook)


def turns_sent_back(before: int, turn_ids: Iterable[int]) -> int:
    """How many coders' completed turns the responses an ingestion has just inserted (into the turns ``turn_ids``)
    sent back to their queues: ``turns_back_in_queues`` now, less ``before`` (read before the insert). When any did,
    each hook of ``on_turns_sent_back`` is called with those turns' ids, in the ingestion's transaction; when none
    did (new material, a closed round), nothing more is read or called."""
    back = turns_back_in_queues() - before
    if back:
        turns = sorted(set(turn_ids))
        for hook in _ON_TURNS_SENT_BACK:
            hook(turns)
    return back
