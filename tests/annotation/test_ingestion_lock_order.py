"""The order in which an ingestion of new responses and a reviewer's writes take their locks (README, "Study
isolation and frozen text"), provoked on two real connections with the interleaving forced, not hoped for.

An ingestion locks the conversations it changes (``benchmark.material_rules.material_conflicts``), then its insert's
trigger (annotation migrations 0023 and 0025) takes the completions lock of each study that assigns one of its
turns, sends the completed items of those turns back (the assignments' rows) and so moves their coders' queue
counters (migration 0017's triggers, in key order). A save that takes its completed item out of the completed ones
(``annotation.services.item_judgment_save``) locks the item, then the counters. Each must take what the other
takes in the same order, or both wait for each other and PostgreSQL breaks the deadlock by failing one: a lost
save, or a lost ingestion that answers 503 (never a 500) having written nothing.

The ingestion is held inside its transaction right after it inserted responses (a statement trigger of the test's,
``PAUSE``, waits for a lock the test holds), while the other connection does its part; then it goes on."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from unittest import mock

import pytest
from django.db import OperationalError, connection, transaction

from annotation import services
from annotation.models import (
    Assignment,
    ConversationProgress,
    FormerStudyMember,
    Judgment,
    QueueProgress,
    Round,
    Study,
    StudyMember,
)
from audit.models import AuditEvent
from benchmark.demo import demo_records
from benchmark.models import ModelResponse, Turn
from calibration import services as calibration_services
from tests.annotation.test_check_alerts import _code
from tests.factories import (
    RoundFactory,
    RoundItemFactory,
    conversations_without_responses,
    response_items,
)
from tests.races import HeldLock, together

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

RESPONSES = "/api/v1/studies/cab-demo/responses/"
CONVERSATIONS = "/api/v1/studies/cab-demo/conversations/"
NEW_SLOT = "Qwen"
PAUSE = (424242, 1)  # the advisory lock the test holds while the ingestion waits for it after an insert


@pytest.fixture
def paused() -> Iterator[HeldLock]:
    """Every statement that inserts responses ends by waiting for ``PAUSE`` (a statement trigger after the study's
    own: triggers of one event fire in name order) until the test lets it go (``release``); the first wait of a
    transaction is the only one. Gone after the test."""
    with connection.cursor() as cursor:
        cursor.execute(f"""
            CREATE FUNCTION test_pause_after_insert() RETURNS trigger AS $$
            BEGIN PERFORM pg_advisory_xact_lock_shared({PAUSE[0]}, {PAUSE[1]}); RETURN NULL; END
            $$ LANGUAGE plpgsql;
            CREATE TRIGGER zz_test_pause AFTER INSERT ON benchmark_modelresponse
                FOR EACH STATEMENT EXECUTE FUNCTION test_pause_after_insert();""")
    try:
        with HeldLock("SELECT pg_advisory_xact_lock(%s, %s)", PAUSE) as held:
            yield held
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TRIGGER zz_test_pause ON benchmark_modelresponse; "
                           "DROP FUNCTION test_pause_after_insert();")


def _until(sql: str, params: tuple = (), timeout: float = 60.0) -> list:
    """The rows of ``sql`` once it gives any, asked every 50 ms on this thread's connection; none after ``timeout``
    seconds (a loaded machine runs the other thread slowly)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
        if rows:
            return rows
        time.sleep(0.05)
    return []


def ingestion_held() -> int | None:
    """The connection of the ingestion once it has inserted responses and waits at ``PAUSE``."""
    found = _until("SELECT l.pid FROM pg_locks l JOIN pg_database d ON d.oid = l.database "
                   "WHERE d.datname = current_database() AND l.locktype = 'advisory' AND NOT l.granted "
                   "AND l.classid = %s AND l.objid = %s", PAUSE)  # another test's database has its own
    return found[0][0] if found else None


def waits_for(pid: int | None) -> set[str]:
    """What another connection waits for that connection ``pid`` holds (a row's lock, a transaction's, an advisory
    lock: pg_locks' ``locktype``), once one does."""
    return {locktype for (locktype,) in _until(
        "SELECT DISTINCT l.locktype FROM pg_locks l WHERE NOT l.granted AND %s = ANY(pg_blocking_pids(l.pid))",
        (pid,))}


def _new_items() -> list[dict]:
    """The demo's Qwen responses of its first two turns that have one, in the order of the demo's records (so that
    both ingestions write them in that order)."""
    order = {(r["conversation_id"], t["index"]): n for n, (r, t) in enumerate(
        (record, turn) for record in demo_records() for turn in record["turns"])}
    items = sorted((i for i in response_items() if i["model"] == NEW_SLOT),
                   key=lambda i: order[(i["conversation_id"], i["turn_index"])])
    return items[:2]


def _turn_of(item: dict) -> Turn:
    return Turn.objects.get(conversation__dataset__name=item["dataset"],
                            conversation__external_id=item["conversation_id"], index=item["turn_index"])


def _records_with(items: list[dict]) -> list[dict]:
    """The demo conversations as stored, with ``items`` (Qwen responses) added to their turns."""
    wanted = {(i["conversation_id"], i["turn_index"], i["model"]) for i in items}
    records = demo_records()
    for record in records:
        for turn in record["turns"]:
            turn["responses"] = [r for r in turn["responses"] if r["model"] != NEW_SLOT
                                 or (record["conversation_id"], turn["index"], r["model"]) in wanted]
    return records


def _complete(round_: Round, coder, position: int) -> services.TurnCheck:
    assignment = Assignment.objects.get(round=round_, coder=coder, position=position)
    return services.assignment_complete(assignment=assignment, by=coder, confirm=True)


@pytest.fixture
def material(ingester) -> None:
    """cab-demo's conversations ingested through the study, with every response but the Qwen ones."""
    assert ingester.post(CONVERSATIONS, conversations_without_responses(), format="json").status_code == 200
    stored = [item for item in response_items() if item["model"] != NEW_SLOT]
    assert ingester.post(RESPONSES, stored, format="json").status_code == 200


@pytest.fixture
def two_completed(material, study, reviewer, admin_user) -> Round:
    """The study's main round, open: the reviewer coded and completed the two turns of ``_new_items``, in that
    order. Returns the round."""
    round_ = RoundFactory(study=study, kind="main", status="open")
    services.assignments_ensure(round=round_, coder=reviewer, turns=[_turn_of(i) for i in _new_items()],
                                by=admin_user)
    for position in (1, 2):
        _code(round_, reviewer, position)
        assert _complete(round_, reviewer, position).completed
    return round_


def _counters_match_assignments() -> None:
    """The queue counters are what the assignments count (migration 0017)."""
    for round_id, coder_id, total, done in QueueProgress.objects.values_list("round", "coder", "total", "done"):
        mine = Assignment.objects.filter(round_id=round_id, coder_id=coder_id)
        assert (total, done) == (mine.count(), mine.filter(completed_at__isnull=False).count())
    assert sum(ConversationProgress.objects.values_list("done", flat=True)) \
        == Assignment.objects.filter(completed_at__isnull=False).count()


def _ingest(ingester, path: str) -> Callable[[], object]:
    if path == "responses":
        return lambda: ingester.post(RESPONSES, _new_items(), format="json")
    return lambda: ingester.post(CONVERSATIONS, _records_with(_new_items()), format="json")


@pytest.mark.parametrize("path", ["responses", "conversations"])
def test_a_save_that_sends_its_turn_back_while_an_ingestion_sends_others_back_deadlocks_neither(
        two_completed, ingester, reviewer, paused, path, monkeypatch):
    """The reviewer clears a score of their completed second turn (their autosave: the turn goes back to their queue,
    their counters move) while an ingestion adds a response to both turns. The ingestion has written its first
    responses (the first turn sent back, the reviewer's counters locked) and is held; the save locks its item and
    then waits for the counters; the ingestion goes on. The conversations' ingestion wrote 2,000 new responses a
    statement (one statement here, made of one response, as past 2,000): its second statement's trigger then locked
    the reviewer's second item, which the save held, while it held the counters the save waited for, and PostgreSQL
    failed one of them (the save, or the ingestion answering 503). Now every new response goes in one statement,
    whose trigger locks the items before the counters, as the save does: the save waits for the ingestion, then
    finds its item sent back already."""
    original_bulk_create = ModelResponse.objects.bulk_create

    def one_a_statement(objs, *args, **kwargs):
        return original_bulk_create(objs, *args, **{**kwargs, "batch_size": 1})

    monkeypatch.setattr(ModelResponse.objects, "bulk_create", one_a_statement)
    second = Assignment.objects.get(round=two_completed, coder=reviewer, position=2)
    cleared = Judgment.objects.filter(round=two_completed, coder=reviewer, turn=second.turn,
                                      response__isnull=False).select_related("attribute", "response").first()

    def save() -> services.ItemSave:
        assert ingestion_held() is not None
        return services.item_judgment_save(assignment=Assignment.objects.get(pk=second.pk), by=reviewer,
                                           attribute=cleared.attribute, turn=second.turn, response=cleared.response,
                                           score=None)

    def release() -> None:
        waits_for(ingestion_held())  # the save, for the ingestion's rows
        time.sleep(0.2)
        paused.release.set()

    answer, saved, _ = together(_ingest(ingester, path), save, release)
    assert isinstance(saved, services.ItemSave), saved
    assert not isinstance(answer, Exception), answer
    assert answer.status_code == 200, answer.content
    assert answer.json()["turns_back_in_queues"] == 2
    assert Judgment.objects.get(pk=cleared.pk).score is None
    assert not Assignment.objects.filter(round=two_completed, completed_at__isnull=False).exists()
    assert QueueProgress.objects.filter(round=two_completed, coder=reviewer).values_list("total", "done").get() \
        == (2, 0)
    _counters_match_assignments()


@pytest.mark.parametrize("path", ["responses", "conversations"])
def test_an_ingestion_that_loses_a_deadlock_answers_503_and_writes_nothing(two_completed, admin_user, as_token,
                                                                          study, reviewer, path):
    """Another transaction holds the reviewer's first completed item when the ingestion's trigger wants it, then
    wants the conversation the ingestion locked (as a save that holds its item does at its commit, when it made a
    judgment of that conversation): PostgreSQL fails the ingestion, which waited first. The answer is the 503 of a
    busy database (try again), never a 500, and nothing of the ingestion is written: no response, no item sent back,
    no counter moved, no audit event."""
    ingester = as_token(admin_user, scopes=["ingest"], study=study)
    ingester.raise_request_exception = False  # what a client gets: the project's error handler answers
    first = Assignment.objects.get(round=two_completed, coder=reviewer, position=1)
    counters = list(QueueProgress.objects.values_list("round", "coder", "total", "done"))
    held = threading.Event()

    def hold_item_then_want_conversation() -> None:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM annotation_assignment WHERE id = %s FOR UPDATE", [first.pk])
            held.set()
            assert waits_for(connection.connection.info.backend_pid)  # the ingestion's trigger, for the item
            cursor.execute("SELECT 1 FROM benchmark_conversation WHERE id = %s FOR KEY SHARE",
                           [first.turn.conversation_id])

    def ingest():
        assert held.wait(60)
        return _ingest(ingester, path)()

    answer, holder = together(ingest, hold_item_then_want_conversation)
    assert answer.status_code == 503, answer.content
    assert holder is None, holder
    assert answer.json()["unavailable"] == "busy" and answer["Retry-After"]
    assert not ModelResponse.objects.filter(model_slot=NEW_SLOT).exists()
    assert Assignment.objects.filter(round=two_completed, completed_at__isnull=True).count() == 0
    assert list(QueueProgress.objects.values_list("round", "coder", "total", "done")) == counters
    assert not AuditEvent.objects.filter(action__in=["responses.ingest", "conversations.import"],
                                         at__gte=first.completed_at).exists()


@pytest.mark.parametrize("how", ["a calibration round opened", "a turn added to the queue"])
def test_a_turn_assigned_and_coded_while_an_ingestion_adds_a_response_to_it_is_never_completed_short(
        material, ingester, study, reviewer, admin_user, paused, how):
    """A response is added to a turn no round assigns yet, so the ingestion's trigger finds nobody to send back and
    takes no study's completions lock; while it is held before its commit, the admin gives the turn to the reviewer
    (a calibration round of it opened, or the turn added to the reviewer's main-round queue, which already holds
    another turn of its conversation), and the reviewer codes the turn and completes it. The completion never
    misses the new response: the ingestion holds the conversation locked until it commits (``material_conflicts``),
    and a judgment points to its conversation (its foreign key shares the row when it commits), as does the first
    assignment of a coder in a conversation (its queue counter's row); so the round's opening waits for the
    ingestion and the reviewer then codes the new response too, or the assignment lands and the reviewer's first
    judgment waits, and the completion that follows wants the new response coded."""
    item = next(i for i in response_items() if i["model"] == NEW_SLOT and _turn_of(i).conversation.turns.count() > 1)
    turn = _turn_of(item)
    if how == "a calibration round opened":
        round_ = RoundFactory(study=study, kind="calibration", status="draft")
        RoundItemFactory(round=round_, turn=turn, position=1)
        position = 1
    else:
        round_ = RoundFactory(study=study, kind="main", status="open")
        services.assignments_ensure(round=round_, coder=reviewer, by=admin_user,
                                    turns=[turn.conversation.turns.exclude(pk=turn.pk).first()])
        position = 2

    def assign_code_and_complete() -> services.TurnCheck:
        assert ingestion_held() is not None
        if how == "a calibration round opened":
            calibration_services.round_open(round=Round.objects.get(pk=round_.pk), by=admin_user)
        else:
            services.assignments_ensure(round=round_, coder=reviewer, turns=[turn], by=admin_user)
        _code(round_, reviewer, position)
        return _complete(round_, reviewer, position)

    def release() -> None:
        waits_for(ingestion_held())  # the opening or the reviewer's judgment, for the conversation
        time.sleep(0.2)
        paused.release.set()

    answer, check, _ = together(lambda: ingester.post(RESPONSES, [item], format="json"), assign_code_and_complete,
                                release)
    assert not isinstance(answer, Exception) and answer.status_code == 200, answer
    assert answer.json()["turns_back_in_queues"] == 0  # nobody had the turn when the response came
    assert isinstance(check, services.TurnCheck), check
    new = ModelResponse.objects.get(turn=turn, model_slot=NEW_SLOT)
    coded = Judgment.objects.filter(round=round_, coder=reviewer, response=new).exists()
    assert check.completed is coded, check  # completed only with the new response coded
    assert check.completed is (how == "a calibration round opened")  # the opening waited: the reviewer saw it
    completed = Assignment.objects.get(round=round_, coder=reviewer, turn=turn).completed_at is not None
    assert completed is coded
    assert services.turns_short_find().short == []
    _counters_match_assignments()


def test_a_requeue_of_short_turns_and_an_ingestion_into_them_wait_for_each_other_before_any_item(
        two_completed, ingester, reviewer):
    """``requeue_short_turns --fix`` (``turns_short_requeue``) sends completed items back, locking them in id order;
    an ingestion's trigger sends completed items back too, locking them in the order its statement finds them. Two
    such, each holding an item the other wants next, deadlock, and PostgreSQL fails one. An ingestion into the
    turns the requeue holds must therefore wait before it locks any item: at the study's completions lock, which the
    requeue now takes first (shared, as everything that may find an item short does); before, it waited for the
    requeue's items (a row's lock), one of them perhaps already its own."""
    for position in (1, 2):  # both turns short, still completed: 0.2.0's save kept them so
        assignment = Assignment.objects.get(round=two_completed, coder=reviewer, position=position)
        judgment = Judgment.objects.filter(round=two_completed, coder=reviewer, turn=assignment.turn,
                                           response__isnull=False).first()
        services.judgment_save(round=two_completed, by=reviewer, attribute=judgment.attribute, turn=assignment.turn,
                               response=judgment.response, score=None)
    found = services.turns_short_find().short
    assert len(found) == 2
    holding, waited_for = threading.Event(), []
    original_short = services._short

    def short_then_wait_for_the_ingestion(*args, **kwargs):
        read = original_short(*args, **kwargs)
        holding.set()  # every lock of the requeue's taken, the items among them
        waited_for.extend(waits_for(connection.connection.info.backend_pid))  # the ingestion, for this
        return read

    def requeue() -> list[services.ShortTurn]:
        with mock.patch.object(services, "_short", short_then_wait_for_the_ingestion):
            return services.turns_short_requeue(found=found, by=None)

    def ingest():
        assert holding.wait(60)
        return _ingest(ingester, "responses")()

    requeued, answer = together(requeue, ingest)
    assert isinstance(requeued, list) and len(requeued) == 2, requeued
    assert not isinstance(answer, Exception) and answer.status_code == 200, answer
    assert waited_for == ["advisory"], waited_for  # the study's completions lock, no item's
    assert answer.json()["turns_back_in_queues"] == 0  # the requeue sent both back before
    assert not Assignment.objects.filter(round=two_completed, completed_at__isnull=False).exists()
    _counters_match_assignments()


def test_someone_added_while_they_are_taken_off_takes_the_completions_lock_before_the_studys_row(
        study, other_reviewer, admin_user):
    """An addition of someone who is a member when it starts (a demo loaded again) and taken off before it locks
    the study's row (the removal holds the row, then commits) finds them a former member, whose items may go back
    to their queue: it holds the completions lock then. It must have taken it before the study's row, as an
    ingestion does (its trigger holds the lock, then its foreign keys share the study's row); before, it looked for
    a former member before any lock, found none and took the completions lock after the study's row, and waited for
    an ingestion holding it while holding the row the ingestion would want."""
    member = StudyMember.objects.get(study=study, user=other_reviewer)
    original_study_locked = services.study_locked
    removed = threading.Event()

    def taken_off_first(locked_study):
        if not removed.is_set():  # the addition's lock of the study's row: the removal commits just before it
            removed.set()
            [gone] = together(lambda: services.study_member_remove(member=member, by=admin_user))
            assert gone is None, gone
        return original_study_locked(locked_study)

    def add() -> StudyMember:
        with mock.patch.object(services, "study_locked", taken_off_first):
            return services.study_member_add(study=Study.objects.get(pk=study.pk), user=other_reviewer,
                                             role="reviewer", by=admin_user)

    def row_free_while_it_waits() -> bool:
        """Whether the study's row is free once the addition waits for the completions lock."""
        assert _until("SELECT 1 FROM pg_locks l JOIN pg_database d ON d.oid = l.database WHERE d.datname = "
                      "current_database() AND l.locktype = 'advisory' AND NOT l.granted AND l.objid = %s",
                      (study.pk,))
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SELECT 1 FROM annotation_study WHERE id = %s FOR NO KEY UPDATE NOWAIT", [study.pk])
            return True
        except OperationalError:  # lock not available: the addition holds it
            return False

    with HeldLock("SELECT pg_advisory_xact_lock(%s, %s)", (services.COMPLETIONS_LOCK, study.pk)) as ingestion:
        def let_go() -> bool:
            try:
                return row_free_while_it_waits()
            finally:
                ingestion.release.set()

        added, row_free = together(add, let_go)
    assert removed.is_set()
    assert row_free is True, row_free
    assert isinstance(added, StudyMember), added
    assert not FormerStudyMember.objects.filter(study=study, user=other_reviewer).exists()
