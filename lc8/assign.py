"""Session-rated studies (docs/lc8-rating.md#rating-sessions): a rater's unit of work is a whole counseling session, not
a turn.

A session's assignment is keyed by the session's first turn (an ``Assignment`` needs a turn); the turn page of
that assignment shows the LC8 session page (``lc8.selectors``). ``session_queue`` fixes the order in
which a rater meets the sessions: trajectory by trajectory (``in_order``) or one seeded shuffle of all sessions
(``blinded``) in which two sessions of one trajectory are never adjacent where that can be avoided.
See docs/lc8-rating.md#rating-sessions.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max

from annotation.models import Assignment, Round, Study
from audit.services import audit_record
from benchmark.models import Session, Turn


def _by_trajectory(sessions: Sequence[Session]) -> list[list[Session]]:
    """The sessions grouped by trajectory (conversation) in order of first appearance, each by session index."""
    groups: dict[int, list[Session]] = {}
    for session in sessions:
        groups.setdefault(session.conversation_id, []).append(session)
    return [sorted(group, key=lambda s: s.index) for group in groups.values()]


def _blinded(sessions: Sequence[Session], seed: int) -> list[Session]:
    """One seeded shuffle of all sessions: at each step a trajectory is drawn with probability proportional to its
    remaining sessions (so the order is close to a uniform shuffle), among those that keep the rest arrangeable
    without two sessions of one trajectory side by side; then one of its remaining sessions at random."""
    import numpy as np  # admin work, rare: web workers do not load numpy at start-up

    rng = np.random.default_rng(seed)
    # The input order does not matter: the same sessions and seed give the same queue.
    groups = sorted(_by_trajectory(sessions), key=lambda g: g[0].conversation_id)
    pools = [[group[i] for i in rng.permutation(len(group))] for group in groups]
    counts = np.array([len(p) for p in pools], dtype=np.int64)
    queue: list[Session] = []
    previous = -1
    while (left := int(counts.sum())) > 0:
        after = left - 1
        order = np.sort(counts)
        top, second = int(order[-1]), int(order[-2]) if len(order) > 1 else 0
        n_top = int((counts == top).sum())
        # Picking c leaves the rest arrangeable when, with c now the previous one, c's remaining count is at most
        # the others' total, and every other trajectory's is at most the others' total plus one.
        others_max = np.where((counts < top) | (n_top > 1), top, second)
        feasible = (counts > 0) & (2 * (counts - 1) <= after) & (2 * others_max <= after + 1)
        if previous >= 0:
            feasible[previous] = False
        if not feasible.any():  # unavoidable (one trajectory dominates): any trajectory, another one first
            feasible = counts > 0
            if previous >= 0 and int(feasible.sum()) > 1:
                feasible[previous] = False
        weights = np.where(feasible, counts, 0).astype(float)
        pick = int(rng.choice(len(counts), p=weights / weights.sum()))
        queue.append(pools[pick].pop())
        counts[pick] -= 1
        previous = pick
    return queue


def session_queue(sessions: list[Session], *, order: str, seed: int) -> list[Session]:
    """The order in which a rater meets ``sessions``: ``Study.SessionOrder.IN_ORDER`` gives trajectory by
    trajectory (in order of first appearance), each trajectory's sessions 1..S; ``BLINDED`` one seeded shuffle of
    all sessions, deterministic for the seed."""
    if order == Study.SessionOrder.IN_ORDER:
        return [session for group in _by_trajectory(sessions) for session in group]
    if order == Study.SessionOrder.BLINDED:
        return _blinded(sessions, seed)
    raise ValidationError(f"session order {order!r} is not one of {', '.join(Study.SessionOrder.values)}")


def first_turns(sessions: Sequence[Session]) -> dict[int, Turn]:
    """Each session's first turn (lowest index), by session id, with its session and conversation (and dataset);
    a session without turns is missing. The key of a session's assignment."""
    first: dict[int, Turn] = {}
    for turn in (Turn.objects.filter(session__in=[s.pk for s in sessions]).order_by("session_id", "index")
                 .select_related("session", "conversation__dataset")):
        first.setdefault(turn.session_id, turn)  # type: ignore[arg-type]  # filtered on session
    return first


def session_keys(turns: Sequence[Turn]) -> list[Turn]:
    """The first turn of every session that ``turns`` touch (turns without a session name none), in the order of
    ``turns``' sessions: what a session-rated study's round assigns in place of the turns."""
    session_ids = list(dict.fromkeys(t.session_id for t in turns if t.session_id is not None))
    first = first_turns(list(Session.objects.filter(pk__in=session_ids)))
    return [first[pk] for pk in session_ids if pk in first]


def session_assignment_rows(*, round: Round, queues: Sequence[tuple[User, Sequence[Turn]]],
                            seed: int) -> list[Assignment]:
    """Unsaved assignments of whole queues of session keys (``session_keys``), coder by coder: each coder's sessions
    in ``session_queue`` order for the study's session order, with the seed plus the coder's place in ``queues`` (so
    two raters of a blinded study do not meet the sessions in the same order), numbered from 1."""
    rows: list[Assignment] = []
    for offset, (coder, keys) in enumerate(queues):
        by_session = {turn.session_id: turn for turn in keys}
        sessions = [turn.session for turn in keys if turn.session is not None]
        ordered = session_queue(sessions, order=round.study.session_order, seed=seed + offset)
        rows += [Assignment(round=round, coder=coder, turn=by_session[s.pk], position=position)
                 for position, s in enumerate(ordered, start=1)]
    return rows


@transaction.atomic
def session_assignments_create(*, round: Round, coder: User, sessions: list[Session], seed: int = 0,
                               by: User | None = None) -> int:
    """One assignment per session (keyed by its first turn), after the coder's existing ones, in ``session_queue``
    order for the study's session order; sessions the coder already has are skipped. Returns how many were
    created. A session without turns is refused (nothing is written)."""
    first = first_turns(sessions)
    empty = [f"{s.conversation_id}/session {s.index}" for s in sessions if s.pk not in first]
    if empty:
        raise ValidationError(f"session(s) without turns cannot be rated: {', '.join(empty[:5])}")
    mine = Assignment.objects.filter(round=round, coder=coder)
    have = set(mine.values_list("turn_id", flat=True))
    start = mine.aggregate(m=Max("position"))["m"] or 0
    queue = session_queue(sessions, order=round.study.session_order, seed=seed)
    new = [first[s.pk] for s in queue if first[s.pk].pk not in have]
    Assignment.objects.bulk_create(
        Assignment(round=round, coder=coder, turn=turn, position=start + offset)
        for offset, turn in enumerate(new, start=1)
    )
    if new:
        audit_record(by=by, action="assignments.add", study=round.study, target=f"round:{round.name}",
                     coder=coder.get_username(), n=len(new), unit="session")
    return len(new)
