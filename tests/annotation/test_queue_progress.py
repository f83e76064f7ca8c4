"""The queue counters (``QueueProgress``, ``ConversationProgress``, kept by the triggers of migration 0017) equal a
fresh count of the assignments after every kind of write, concurrent writers included; the turn page reads its
progress from them, with the same values as the count it replaced and without a statement that counts the queue."""

from __future__ import annotations

import contextlib
import threading

import pytest
from django.db import connection, transaction
from django.db.models import Count, Max, Min, Q
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from access import roles
from access.services import user_ensure
from annotation import selectors, services
from annotation.models import Assignment, ConversationProgress, QueueProgress, Round
from benchmark.models import Conversation, Turn
from tests.factories import ConversationFactory, RoundFactory, StudyFactory, TurnFactory
from tests.races import together


def counted() -> tuple[set, set]:
    """(queue rows, conversation rows) as a fresh count over the assignments makes them."""
    queue = {(r["round_id"], r["coder_id"], r["total"], r["done"]) for r in Assignment.objects.values(
        "round_id", "coder_id").annotate(total=Count("id"), done=Count("id", filter=Q(completed_at__isnull=False)))}
    conversations = {(r["round_id"], r["coder_id"], r["turn__conversation_id"], r["total"], r["done"])
                     for r in Assignment.objects.values("round_id", "coder_id", "turn__conversation_id").annotate(
                         total=Count("id"), done=Count("id", filter=Q(completed_at__isnull=False)))}
    return queue, conversations


def kept() -> tuple[set, set]:
    return (set(QueueProgress.objects.values_list("round_id", "coder_id", "total", "done")),
            set(ConversationProgress.objects.values_list("round_id", "coder_id", "conversation_id", "total", "done")))


def assert_kept() -> None:
    assert kept() == counted()


def turns(conversations: int, per_conversation: int) -> list[Turn]:
    made = []
    for _ in range(conversations):
        conversation = ConversationFactory()
        made += [TurnFactory(conversation=conversation, index=i) for i in range(1, per_conversation + 1)]
    return made


@pytest.mark.django_db
def test_every_write_keeps_the_counters(round_, reviewer, other_reviewer, admin_user):
    queue = turns(3, 4)
    # Through the service, twice (the second call appends), and for a second coder.
    assert services.assignments_ensure(round=round_, coder=reviewer, turns=queue[:5], by=admin_user) == 5
    assert_kept()
    services.assignments_ensure(round=round_, coder=reviewer, turns=queue, by=admin_user)
    services.assignments_ensure(round=round_, coder=other_reviewer, turns=queue[3:9], by=admin_user)
    assert_kept()
    assert QueueProgress.objects.get(round=round_, coder=reviewer).total == 12
    # bulk_create, as the generators and the archive import write, in another round.
    other_round = RoundFactory(study=round_.study, kind="main")
    Assignment.objects.bulk_create([Assignment(round=other_round, coder=reviewer, turn=t, position=i,
                                               completed_at=timezone.now() if i % 2 else None)
                                    for i, t in enumerate(queue, start=1)], batch_size=5)
    assert_kept()
    # Completed, one at a time and in bulk; un-completed (no page does; a fix in a shell may).
    mine = Assignment.objects.filter(round=round_, coder=reviewer).order_by("position")
    Assignment.objects.filter(pk=mine[0].pk).update(completed_at=timezone.now())
    Assignment.objects.filter(round=round_, coder=reviewer, position__gt=6).update(completed_at=timezone.now())
    assert_kept()
    assert QueueProgress.objects.get(round=round_, coder=reviewer).done == 7
    Assignment.objects.filter(round=round_, coder=reviewer, position__gt=10).update(completed_at=None)
    assert_kept()
    # Writes that do not move a counter leave them as they are.
    Assignment.objects.filter(round=round_).update(active_seconds=5, comment="noted")
    assert_kept()
    # Moved to another coder, to another turn (another conversation), saved one by one.
    Assignment.objects.filter(round=round_, coder=reviewer, position=1).update(coder=other_reviewer, position=100)
    moved = Assignment.objects.get(round=round_, coder=reviewer, position=2)
    moved.turn = TurnFactory()
    moved.save()
    assert_kept()
    # Deleted: some, then the coder's last ones (the counter rows go with them).
    Assignment.objects.filter(round=round_, coder=reviewer, position__lt=5).delete()
    assert_kept()
    Assignment.objects.filter(round=round_, coder=other_reviewer).delete()
    assert_kept()
    assert not QueueProgress.objects.filter(round=round_, coder=other_reviewer).exists()
    assert not ConversationProgress.objects.filter(round=round_, coder=other_reviewer).exists()
    # The cascade of a round's deletion.
    other_round.delete()
    assert_kept()
    assert not QueueProgress.objects.filter(round_id=other_round.pk).exists()
    assert QueueProgress.objects.filter(round=round_, coder=reviewer).exists()


@pytest.mark.django_db
def test_a_study_deleted_with_its_rounds_leaves_no_counter(reviewer, admin_user):
    study = StudyFactory()
    round_ = RoundFactory(study=study)
    services.assignments_ensure(round=round_, coder=reviewer, turns=turns(2, 2), by=admin_user)
    assert QueueProgress.objects.filter(round=round_).exists()
    study.delete()
    assert not Round.objects.filter(pk=round_.pk).exists()
    assert kept() == counted() == (set(), set())


@pytest.mark.django_db
def test_the_migration_backfill_counts_as_the_triggers_do(round_, reviewer, other_reviewer, admin_user):
    """The backfill of migration 0017, run again over counters emptied behind the triggers' back."""
    from importlib import import_module
    backfill = import_module("annotation.migrations.0017_queue_progress").PG_FORWARD
    services.assignments_ensure(round=round_, coder=reviewer, turns=turns(2, 3), by=admin_user)
    Assignment.objects.filter(position__lt=3).update(completed_at=timezone.now())
    before = kept()
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM annotation_queueprogress; DELETE FROM annotation_conversationprogress")
        cursor.execute(backfill[backfill.index("INSERT INTO annotation_queueprogress (round_id"):])
    assert kept() == before == counted()


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_two_transactions_adding_to_the_same_queue_lose_no_count():
    reviewer = user_ensure(username="race-reviewer", role=roles.REVIEWER)
    round_ = RoundFactory()
    halves = [turns(1, 5), turns(1, 5)]
    both_inserted = threading.Barrier(2)

    def add(half: list[Turn], start: int):
        def run() -> int:
            with transaction.atomic():
                Assignment.objects.bulk_create(Assignment(round=round_, coder=reviewer, turn=t, position=start + i)
                                               for i, t in enumerate(half))
                # Each waits, its rows written and uncommitted, for the other: without the counter row's lock the
                # second would read the count before the first commits and overwrite it.
                with contextlib.suppress(threading.BrokenBarrierError):
                    both_inserted.wait(timeout=2)
            return len(half)
        return run

    assert together(add(halves[0], 1), add(halves[1], 100)) == [5, 5]
    assert QueueProgress.objects.get(round=round_, coder=reviewer).total == 10
    assert_kept()


def old_progress(assignment: Assignment) -> dict:
    """What the turn page computed before the counters: an aggregate over the coder's whole queue."""
    conversation_id = assignment.turn.conversation_id
    return Assignment.objects.filter(round_id=assignment.round_id, coder_id=assignment.coder_id).aggregate(
        total=Count("id"),
        done=Count("id", filter=Q(completed_at__isnull=False)),
        conversation_total=Count("id", filter=Q(turn__conversation_id=conversation_id)),
        conversation_done=Count("id", filter=Q(turn__conversation_id=conversation_id, completed_at__isnull=False)),
        previous=Max("position", filter=Q(position__lt=assignment.position)),
        next=Min("position", filter=Q(position__gt=assignment.position)),
    )


@pytest.fixture
def long_queue(round_, reviewer, other_reviewer, admin_user):
    """300 of the reviewer's assignments over 60 conversations, positions with gaps, a third completed; the other
    reviewer's queue beside it."""
    queue = turns(60, 5)
    queue = queue[::2] + queue[1::2]  # a conversation's turns apart in the queue
    Assignment.objects.bulk_create(Assignment(round=round_, coder=reviewer, turn=t, position=3 * i + 1,
                                              completed_at=timezone.now() if i % 3 == 0 else None)
                                   for i, t in enumerate(queue))
    services.assignments_ensure(round=round_, coder=other_reviewer, turns=queue[:40], by=admin_user)
    Assignment.objects.filter(coder=other_reviewer).update(completed_at=timezone.now())
    return list(Assignment.objects.filter(round=round_, coder=reviewer).select_related("turn").order_by("position"))


@pytest.mark.django_db
def test_the_turn_page_progress_is_what_the_count_was(long_queue):
    assert Conversation.objects.count() >= 60
    for assignment in long_queue[:3] + long_queue[140:160] + long_queue[-3:]:
        progress = selectors.turn_progress(assignment=assignment, conversation_id=assignment.turn.conversation_id)
        assert progress == old_progress(assignment), assignment.position
    assert selectors.turn_progress(assignment=long_queue[0], conversation_id=long_queue[0].turn.conversation_id)[
        "previous"] is None
    assert selectors.turn_progress(assignment=long_queue[-1], conversation_id=long_queue[-1].turn.conversation_id)[
        "next"] is None


@pytest.mark.django_db
def test_the_turn_page_counts_nothing_and_scans_no_queue(long_queue, reviewer):
    assignment = long_queue[150]
    with CaptureQueriesContext(connection) as captured:
        view = selectors.turn_view(round_id=assignment.round_id, user=reviewer, position=assignment.position)
    assert view is not None and (view.total, view.done) == (300, 100)
    statements = [q["sql"] for q in captured.captured_queries]
    on_assignments = [s for s in statements if "annotation_assignment" in s]
    assert on_assignments
    assert not [s for s in on_assignments if "COUNT(" in s.upper()], on_assignments
    # And the plan of the progress query touches the assignment table only by index probes.
    (progress_sql,) = [s for s in statements if "annotation_queueprogress" in s]
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE annotation_assignment")
        cursor.execute(f"EXPLAIN {progress_sql}")
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "Seq Scan on annotation_assignment" not in plan, plan
    assert plan.count("assignment_queue_position_idx") == 2, plan  # previous and next: one probe each
