"""Queues of a session-rated study (docs/lc8-rating.md#rating-sessions): ``session_queue`` in order and
blinded, ``session_assignments_create`` and ``main_round_assign`` giving whole trajectories to one rater."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest
from django.core.exceptions import ValidationError

from annotation.kinds import kind_of
from annotation.models import Assignment, Round, Study, StudyMember
from benchmark.models import Session
from calibration.services import main_round_assign
from lc8 import assign as lc8_assign
from tests.factories import StudyFactory, UserFactory
from tests.lc8.test_rating_pages import lc8_schema, lc8_study, trajectory_sessions

pytestmark = pytest.mark.django_db


def fake_sessions(trajectories: int, sessions: int = 5) -> list[Session]:
    """Unsaved sessions (``session_queue`` reads only their ids, trajectories and indices)."""
    made = []
    for t in range(1, trajectories + 1):
        for s in range(1, sessions + 1):
            session = Session(pk=t * 100 + s, conversation_id=t, index=s, kind=Session.Kind.COUNSELING)
            made.append(session)
    return made


def keys(queue: list[Session]) -> list[tuple[int, int]]:
    return [(s.conversation_id, s.index) for s in queue]


def adjacent_same(queue: list[Session]) -> int:
    return sum(1 for a, b in zip(queue, queue[1:], strict=False) if a.conversation_id == b.conversation_id)


def test_an_lc8_schema_is_session_rated_and_cab_v1_is_not():
    assert kind_of(lc8_schema()).session_rated
    assert not kind_of(StudyFactory().schema).session_rated  # cab-v1


def test_in_order_goes_trajectory_by_trajectory_sessions_one_to_five():
    sessions = fake_sessions(3)
    shuffled = sessions[::-1]  # the order of trajectories as given, each one's sessions by index
    queue = lc8_assign.session_queue(shuffled, order=Study.SessionOrder.IN_ORDER, seed=5)
    assert keys(queue) == [(t, s) for t in (3, 2, 1) for s in range(1, 6)]


def test_blinded_is_a_seeded_shuffle_deterministic_for_the_seed_and_not_the_in_order_queue():
    sessions = fake_sessions(6)
    first = lc8_assign.session_queue(sessions, order=Study.SessionOrder.BLINDED, seed=11)
    again = lc8_assign.session_queue(list(reversed(sessions)), order=Study.SessionOrder.BLINDED, seed=11)
    other = lc8_assign.session_queue(sessions, order=Study.SessionOrder.BLINDED, seed=12)
    in_order = lc8_assign.session_queue(sessions, order=Study.SessionOrder.IN_ORDER, seed=11)
    assert keys(first) == keys(again)  # the same sessions and seed: the same queue, whatever the input order
    assert keys(first) != keys(other)
    assert keys(first) != keys(in_order)
    assert sorted(keys(first)) == sorted(keys(in_order))  # every session once
    # Two sessions of one trajectory are never side by side (possible here), and the sessions within a trajectory
    # are shuffled too (some trajectory does not come 1, 2, 3, 4, 5).
    assert adjacent_same(first) == 0 and adjacent_same(other) == 0
    by_trajectory = defaultdict(list)
    for trajectory, index in keys(first):
        by_trajectory[trajectory].append(index)
    assert any(indices != sorted(indices) for indices in by_trajectory.values())


@pytest.mark.parametrize("seed", range(30))
def test_blinded_never_puts_a_trajectorys_sessions_together_when_that_can_be_avoided(seed):
    # Uneven trajectories: 5 + 5 + 2 + 1 sessions; the longest two still fit apart.
    sessions = fake_sessions(2)
    sessions += [Session(pk=900 + s, conversation_id=9, index=s, kind="counseling") for s in (1, 2)]
    sessions += [Session(pk=950, conversation_id=8, index=1, kind="counseling")]
    queue = lc8_assign.session_queue(sessions, order=Study.SessionOrder.BLINDED, seed=seed)
    assert sorted(keys(queue)) == sorted(keys(sessions))
    assert adjacent_same(queue) == 0


def test_blinded_with_one_trajectory_only_still_gives_every_session_once():
    sessions = fake_sessions(1)
    queue = lc8_assign.session_queue(sessions, order=Study.SessionOrder.BLINDED, seed=1)
    assert sorted(keys(queue)) == keys(sessions)


def test_an_unknown_order_is_refused_in_words():
    with pytest.raises(ValidationError, match="session order 'random' is not one of in_order, blinded"):
        lc8_assign.session_queue(fake_sessions(1), order="random", seed=0)


def test_session_assignments_create_keys_each_session_by_its_first_turn_after_the_raters_existing_ones():
    study = lc8_study(session_order=Study.SessionOrder.IN_ORDER)
    rater = UserFactory(username="rater-a")
    StudyMember.objects.create(study=study, user=rater, role=StudyMember.Role.REVIEWER)
    round_ = Round.objects.create(study=study, kind=Round.Kind.MAIN, number=1, status=Round.Status.OPEN)
    sessions = trajectory_sessions(study)
    assert lc8_assign.session_assignments_create(round=round_, coder=rater, sessions=sessions[:5]) == 5
    assert lc8_assign.session_assignments_create(round=round_, coder=rater, sessions=sessions) == 5  # 5 new
    rows = list(Assignment.objects.filter(round=round_, coder=rater).order_by("position")
                .select_related("turn__session"))
    assert [a.position for a in rows] == list(range(1, 11))
    assert [(a.turn.session.conversation_id, a.turn.session.index) for a in rows] == keys(sessions)
    for a in rows:  # the session's first turn
        assert a.turn.index == min(a.turn.session.turns.values_list("index", flat=True))


def test_session_assignments_create_follows_the_studys_blinded_order_and_refuses_a_session_without_turns():
    study = lc8_study(session_order=Study.SessionOrder.BLINDED, trajectories=3)
    rater = UserFactory(username="rater-a")
    round_ = Round.objects.create(study=study, kind=Round.Kind.MAIN, number=1, status=Round.Status.OPEN)
    sessions = trajectory_sessions(study)
    lc8_assign.session_assignments_create(round=round_, coder=rater, sessions=sessions, seed=4)
    queued = [(a.turn.session.conversation_id, a.turn.session.index) for a in
              Assignment.objects.filter(round=round_, coder=rater).order_by("position").select_related("turn__session")]
    assert queued == keys(lc8_assign.session_queue(sessions, order=Study.SessionOrder.BLINDED, seed=4))
    assert queued != keys(sessions)

    empty = Session.objects.create(conversation=sessions[0].conversation, index=6, kind=Session.Kind.COUNSELING)
    other = UserFactory(username="rater-b")
    with pytest.raises(ValidationError, match="without turns"):
        lc8_assign.session_assignments_create(round=round_, coder=other, sessions=[sessions[0], empty])
    assert not Assignment.objects.filter(round=round_, coder=other).exists()


def _panel(study: Study, names: list[str]) -> None:
    for name in names:
        StudyMember.objects.create(study=study, user=UserFactory(username=name), role=StudyMember.Role.REVIEWER,
                                   retained=True)


@pytest.mark.parametrize("order", [Study.SessionOrder.IN_ORDER, Study.SessionOrder.BLINDED])
def test_main_round_assign_gives_whole_trajectories_to_one_rater_balanced_and_queued_by_session_queue(
        admin_user, order):
    study = lc8_study(trajectories=6, session_order=order)
    _panel(study, ["rater-a", "rater-b", "rater-c"])
    summary = main_round_assign(study=study, by=admin_user, overlap=0, seed=21)
    assert summary["assignments"] == 30  # one per session, not per turn (60 turns)
    main = Round.objects.get(study=study, kind=Round.Kind.MAIN)
    rows = list(Assignment.objects.filter(round=main).select_related("turn__session", "coder")
                .order_by("coder__username", "position"))
    raters_of = defaultdict(set)
    for a in rows:
        raters_of[a.turn.conversation_id].add(a.coder.username)
        assert a.turn.index == min(a.turn.session.turns.values_list("index", flat=True))
    assert all(len(raters) == 1 for raters in raters_of.values())  # a trajectory stays with one rater
    assert len(raters_of) == 6
    assert sorted(Counter(a.coder.username for a in rows).values()) == [10, 10, 10]  # balanced by sessions
    for offset, name in enumerate(["rater-a", "rater-b", "rater-c"]):
        mine = [a for a in rows if a.coder.username == name]
        assert [a.position for a in mine] == list(range(1, 11))
        sessions = [a.turn.session for a in mine]
        expected = lc8_assign.session_queue(sorted(sessions, key=lambda s: (s.conversation_id, s.index)),
                                            order=order, seed=21 + offset)
        if order == Study.SessionOrder.IN_ORDER:
            assert [s.index for s in sessions] == [1, 2, 3, 4, 5] * 2
        else:
            assert keys(sessions) == keys(expected)
            assert adjacent_same(sessions) == 0


def test_main_round_assign_double_codes_whole_trajectories_and_refuses_check_items(admin_user):
    study = lc8_study(trajectories=4, session_order=Study.SessionOrder.BLINDED)
    _panel(study, ["rater-a", "rater-b"])
    with pytest.raises(ValidationError, match="session-rated study"):
        main_round_assign(study=study, by=admin_user, overlap=0, check_items=2)
    assert not Assignment.objects.filter(round__study=study).exists()
    main_round_assign(study=study, by=admin_user, overlap=0.5, seed=2)
    per_trajectory = defaultdict(Counter)
    for conversation_id, coder in Assignment.objects.filter(round__study=study).values_list(
            "turn__conversation_id", "coder__username"):
        per_trajectory[conversation_id][coder] += 1
    assert sorted(len(c) for c in per_trajectory.values()) == [1, 1, 2, 2]
    assert all(n == 5 for c in per_trajectory.values() for n in c.values())  # all five sessions, per rater
