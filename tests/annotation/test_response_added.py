"""A model response added to a turn that coders have completed (annotation migration 0023; README, "Study isolation and
frozen text"): on every path that adds one (the responses endpoints with a JSON array, JSON Lines or a file, the
conversations endpoint, the upload page, a shell's INSERT), each coder who completed the turn in an open round gets
it back in their queue, where the home page and the queue send them and where completing wants the new response
coded, and the answer says how many; a closed round, a feedback-locked item, someone taken off the study, a model
slot the study does not code and a schema that codes no responses keep their completions. ``import_conversations``
cannot add one to a turn a study uses. Before, every completion stood and the new response was coded by nobody."""

from __future__ import annotations

import io
import threading
import time
from datetime import timedelta
from unittest import mock

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.db import connection, transaction
from django.urls import reverse
from django.utils import timezone

from annotation import selectors, services
from annotation.models import Assignment, QueueProgress, Round, Schema, StudyMember
from audit.models import AuditEvent
from benchmark import conversation_ingest, response_ingest
from benchmark.demo import demo_records
from benchmark.material_rules import turns_back_in_queues
from benchmark.models import Conversation, ModelResponse, Turn
from calibration import services as calibration_services
from tests.factories import (
    AssignmentFactory,
    ModelResponseFactory,
    RoundFactory,
    StudyFactory,
    TurnFactory,
    conversations_without_responses,
    jsonl,
    response_items,
)
from tests.races import WAIT, together

pytestmark = pytest.mark.django_db

RESPONSES = "/api/v1/studies/cab-demo/responses/"
CONVERSATIONS = "/api/v1/studies/cab-demo/conversations/"
NEW_SLOT = "Qwen"


def _first_new_item() -> dict:
    """The first Qwen response of the demo, which the fixture leaves out."""
    return next(item for item in response_items() if item["model"] == NEW_SLOT)


def _turn_of(item: dict) -> Turn:
    return Turn.objects.get(conversation__dataset__name=item["dataset"],
                            conversation__external_id=item["conversation_id"], index=item["turn_index"])


def code_and_complete(round_: Round, coder, position: int) -> services.TurnCheck:
    """Score every form of the coder's turn as the coding page would, then complete it."""
    view = selectors.turn_view(round_id=round_.pk, user=coder, position=position)
    for form in view.all_forms():
        if form.scored:
            continue
        response = None if form.response_handle is None else selectors.response_by_handle(
            study=view.study, coder_id=coder.pk, turn=view.turn, handle=form.response_handle)
        services.judgment_save(round=round_, by=coder, attribute=form.attribute, turn=view.turn, response=response,
                               score=form.attribute.scale[0])
    assignment = Assignment.objects.get(round=round_, coder=coder, position=position)
    return services.assignment_complete(assignment=assignment, by=coder, confirm=True)


@pytest.fixture
def completed(ingester, study, reviewer, other_reviewer, admin_user) -> Round:
    """cab-demo's conversations ingested through the study without their Qwen responses; its main round open, with
    two items for both reviewers, a turn that has no Qwen response in the demo, then the turn of the first Qwen
    response; each reviewer coded every form of both and completed them. Returns the round."""
    assert ingester.post(CONVERSATIONS, conversations_without_responses(), format="json").status_code == 200
    items = [item for item in response_items() if item["model"] != NEW_SLOT]
    assert ingester.post(RESPONSES, items, format="json").status_code == 200
    round_ = RoundFactory(study=study, kind="main", status="open")
    new_turn = _turn_of(_first_new_item())
    without = {(i["conversation_id"], i["turn_index"]) for i in response_items() if i["model"] == NEW_SLOT}
    other_turn = next(t for t in Turn.objects.order_by("pk").select_related("conversation")
                      if (t.conversation.external_id, t.index) not in without)
    for coder in (reviewer, other_reviewer):
        services.assignments_ensure(round=round_, coder=coder, turns=[other_turn, new_turn], by=admin_user)
        assert code_and_complete(round_, coder, 1).completed and code_and_complete(round_, coder, 2).completed
    assert Assignment.objects.filter(completed_at__isnull=True).count() == 0
    return round_


def assert_back_in_queues(round_: Round, reviewer, client) -> None:
    """Both reviewers' second turn, the one with the new response, is no longer completed, their first still is
    (the counters with them); the reviewer's home page and queue send them to it, and completing it wants the new
    response coded, then completes it again."""
    assert set(Assignment.objects.filter(round=round_, completed_at__isnull=True).values_list("coder", "position")) \
        == {(coder, 2) for coder in Assignment.objects.values_list("coder", flat=True)}
    assert set(QueueProgress.objects.filter(round=round_).values_list("total", "done")) == {(2, 1)}
    client.force_login(reviewer)
    link = f'<a class="resume" href="/rounds/{round_.pk}/turns/2/">'
    assert link + "Resume</a>" in client.get("/").content.decode()
    assert link + "Resume at #2</a>" in client.get(reverse("queue", args=[round_.pk])).content.decode()
    assignment = Assignment.objects.get(round=round_, coder=reviewer, position=2)
    check = services.assignment_complete(assignment=assignment, by=reviewer, confirm=True)
    view = selectors.turn_view(round_id=round_.pk, user=reviewer, position=2)
    new = next(card for card in view.cards if card.response.model_slot == NEW_SLOT)
    assert not check.completed
    assert check.missing == [f"{form.label} · {form.attribute.code} · {form.attribute.name}"
                             for _, forms in new.groups for form in forms]
    assert code_and_complete(round_, reviewer, 2).completed


# --- every path that adds a response ------------------------------------------------------------------------------


@pytest.mark.parametrize("body", ["a JSON array", "JSON Lines", "a file"])
def test_a_response_ingested_into_a_completed_turn_sends_it_back_to_both_coders(completed, ingester, reviewer,
                                                                                client, body):
    items = [_first_new_item()]
    if body == "a JSON array":
        answer = ingester.post(RESPONSES, items, format="json")
    elif body == "JSON Lines":
        answer = ingester.generic("POST", RESPONSES, jsonl(items).encode(), content_type="application/x-ndjson")
    else:
        answer = ingester.post(RESPONSES + "upload/", {"file": SimpleUploadedFile("r.jsonl", jsonl(items).encode())},
                               format="multipart")
    assert answer.status_code == 200, answer.content
    assert answer.json() == {"items": 1, "created": 1, "updated": 0, "unchanged": 0, "turns_back_in_queues": 2}
    assert_back_in_queues(completed, reviewer, client)
    again = ingester.post(RESPONSES, items, format="json")  # the same again: nothing new, nothing sent back
    assert again.json()["unchanged"] == 1 and again.json()["turns_back_in_queues"] == 0


def _records_with_new_response() -> list[dict]:
    """The demo conversations as stored, the first Qwen response added to its turn."""
    item = _first_new_item()
    stored = {(i["dataset"], i["conversation_id"], i["turn_index"], i["model"]) for i in response_items()
              if i["model"] != NEW_SLOT}
    records = demo_records()
    for record in records:
        for turn in record["turns"]:
            turn["responses"] = [r for r in turn["responses"] if (
                record["dataset"], record["conversation_id"], turn["index"], r["model"]) in stored
                or (record["conversation_id"], turn["index"], r["model"]) == (
                    item["conversation_id"], item["turn_index"], item["model"])]
    return records


def test_a_response_sent_with_its_conversation_sends_the_turn_back(completed, ingester, reviewer, client):
    answer = ingester.post(CONVERSATIONS, _records_with_new_response(), format="json")
    assert answer.status_code == 200, answer.content
    assert (answer.json()["responses_created"], answer.json()["turns_back_in_queues"]) == (1, 2)
    assert_back_in_queues(completed, reviewer, client)


def test_the_upload_page_says_how_many_turns_went_back(completed, admin_user, reviewer, client):
    client.force_login(admin_user)
    upload = SimpleUploadedFile("c.jsonl", jsonl(_records_with_new_response()).encode())
    answer = client.post(reverse("conversations-upload", args=["cab-demo"]), {"file": upload}, follow=True)
    assert ("1 responses imported; 3 unchanged, 1 updated. 2 completed turn(s) of coders went back to their queues, "
            "each with a new response to code.") in answer.content.decode()
    assert_back_in_queues(completed, reviewer, client)


def test_import_conversations_cannot_add_a_response_to_a_turn_a_study_codes(completed, tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(jsonl(_records_with_new_response()), encoding="utf-8")
    with pytest.raises(CommandError, match="belongs to a study: only that study's ingestion may change it"):
        call_command("import_conversations", str(path), stdout=io.StringIO())
    assert not ModelResponse.objects.filter(model_slot=NEW_SLOT).exists()
    assert Assignment.objects.filter(completed_at__isnull=True).count() == 0


def test_a_response_inserted_by_hand_sends_the_turn_back(completed, reviewer, client):
    item = _first_new_item()
    with connection.cursor() as cursor:  # a shell session's fix, past every service
        cursor.execute("INSERT INTO benchmark_modelresponse (turn_id, model_slot, model_version, text, created_at, "
                       "updated_at) VALUES (%s, %s, '', %s, now(), now())", [_turn_of(item).pk, NEW_SLOT, item["text"]])
    assert_back_in_queues(completed, reviewer, client)


# --- what keeps its completions ---------------------------------------------------------------------------------


def test_a_closed_round_keeps_its_completions(completed, ingester):
    Round.objects.filter(pk=completed.pk).update(status="closed", closed_at=timezone.now())
    answer = ingester.post(RESPONSES, [_first_new_item()], format="json")
    assert (answer.status_code, answer.json()["turns_back_in_queues"]) == (200, 0)
    assert Assignment.objects.filter(completed_at__isnull=True).count() == 0


def test_a_feedback_locked_item_and_someone_taken_off_keep_their_completions(completed, ingester, reviewer,
                                                                             other_reviewer, admin_user):
    Assignment.objects.filter(coder=reviewer).update(feedback_locked=True)  # its judgments no longer change
    services.study_member_remove(member=StudyMember.objects.get(user=other_reviewer), by=admin_user)
    answer = ingester.post(RESPONSES, [_first_new_item()], format="json")
    assert (answer.status_code, answer.json()["turns_back_in_queues"]) == (200, 0)
    assert Assignment.objects.filter(completed_at__isnull=True).count() == 0


def _completed_item(study) -> Assignment:
    """A completed item of ``study``'s open main round, on a turn without responses, its coder a member."""
    round_ = RoundFactory(study=study, kind="main", status="open")
    assignment = AssignmentFactory(round=round_, turn=TurnFactory(), completed_at=timezone.now())
    StudyMember.objects.create(study=study, user=assignment.coder, role="reviewer")
    return assignment


def test_a_response_under_a_slot_the_study_does_not_code_keeps_the_completion():
    assignment = _completed_item(StudyFactory(model_slots=["GPT"]))
    ModelResponseFactory(turn=assignment.turn, model_slot="Claude")
    assert Assignment.objects.get(pk=assignment.pk).completed_at is not None
    ModelResponseFactory(turn=assignment.turn, model_slot="GPT")
    assert Assignment.objects.get(pk=assignment.pk).completed_at is None


def test_a_study_whose_schema_codes_no_responses_keeps_the_completion():
    assignment = _completed_item(StudyFactory(schema=Schema.objects.get(slug="lc8-v1")))  # session-level only
    ModelResponseFactory(turn=assignment.turn, model_slot="GPT")
    assert Assignment.objects.get(pk=assignment.pk).completed_at is not None


def test_the_others_keep_their_order_and_the_answer_counts_only_its_own_ingestion(completed, ingester, reviewer):
    turn = _turn_of(_first_new_item())

    def seen() -> list[int]:
        responses = list(ModelResponse.objects.filter(turn=turn))
        return [r.pk for r, _ in selectors.responses_as_seen(study=completed.study, coder_id=reviewer.pk,
                                                              turn_id=turn.pk, responses=responses)]

    before = seen()
    elsewhere = _completed_item(StudyFactory())
    ModelResponseFactory(turn=elsewhere.turn)  # earlier in the same transaction: sent back, but not by the ingestion
    assert Assignment.objects.get(pk=elsewhere.pk).completed_at is None
    assert ingester.post(RESPONSES, [_first_new_item()], format="json").json()["turns_back_in_queues"] == 2
    after = seen()
    assert [pk for pk in after if pk in before] == before, (before, after)
    assert len(after) == len(before) + 1


# --- a response added while a coder completes the turn ----------------------------------------------------------

threads = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@threads
@pytest.mark.parametrize("first", ["the response", "the completion"])
def test_a_response_added_while_its_turn_is_completed_leaves_it_short_of_no_completion(completed, reviewer, first):
    """A completion and an ingestion of a new response to the same turn at once: the completion reads the turn's
    codes before the ingestion commits, so it cannot see the new response, and the trigger reads the completions
    before the completion commits, so it cannot see it either. Either the completion waits for the ingestion and
    then wants the new response coded, or the trigger waits for the completion and sends the turn back; never a
    turn completed with a response nobody coded. ``first``: which of the two reaches the turn first, the other
    arriving while it has not committed."""
    Assignment.objects.filter(round=completed, coder=reviewer, position=2).update(completed_at=None)
    item = _first_new_item()
    turn = _turn_of(item)
    inserted, read = threading.Event(), threading.Event()
    check_codes = services._turn_check

    def codes_read(**kwargs):
        found = check_codes(**kwargs)
        read.set()
        if first == "the completion":  # the ingestion adds its response before this completion commits
            inserted.wait(WAIT)
        return found

    def add() -> None:
        with transaction.atomic():
            if first == "the completion":
                read.wait(WAIT)
            ModelResponse.objects.create(turn=turn, model_slot=NEW_SLOT, model_version="", text=item["text"])
            inserted.set()
            if first == "the response":  # the completion reads the codes before this ingestion commits
                read.wait(WAIT)

    def complete() -> services.TurnCheck:
        if first == "the response":
            inserted.wait(WAIT)
        assignment = Assignment.objects.get(round=completed, coder=reviewer, position=2)
        return services.assignment_complete(assignment=assignment, by=reviewer, confirm=True)

    with mock.patch.object(services, "_turn_check", codes_read):
        added, check = together(add, complete)
    assert added is None and isinstance(check, services.TurnCheck), (added, check)
    assert Assignment.objects.get(round=completed, coder=reviewer, position=2).completed_at is None
    assert check.completed is (first == "the completion")


def test_someone_taken_off_and_added_back_gets_back_the_turn_a_response_was_added_to_meanwhile(
        completed, ingester, reviewer, other_reviewer, admin_user):
    """Someone taken off keeps their completions while a response is added (they cannot code it then); added back,
    they can, and their completed turn with the response none of their codes are of goes back to their queue, as it
    would have had they stayed. Before, it stayed completed, and the new response was coded by nobody of theirs."""
    services.study_member_remove(member=StudyMember.objects.get(user=other_reviewer), by=admin_user)
    answer = ingester.post(RESPONSES, [_first_new_item()], format="json")
    assert answer.json()["turns_back_in_queues"] == 1  # the reviewer's
    assert Assignment.objects.get(round=completed, coder=other_reviewer, position=2).completed_at is not None
    services.study_member_add(study=completed.study, user=other_reviewer, role="reviewer", by=admin_user)
    assert set(Assignment.objects.filter(round=completed, completed_at__isnull=True).values_list(
        "coder", "position")) == {(reviewer.pk, 2), (other_reviewer.pk, 2)}
    assert set(QueueProgress.objects.filter(round=completed).values_list("total", "done")) == {(2, 1)}
    check = code_and_complete(completed, other_reviewer, 2)
    assert check.completed
# --- a response added while the round was closed: on reopening ------------------------------------------------------


def _reopen(client, admin_user, round_: Round) -> str:
    """Reopen the round from the study page, as an admin does; the page's message."""
    client.force_login(admin_user)
    page = client.post(reverse("round-reopen", args=[round_.study.slug, round_.pk]), {"reason": "a late model"},
                       follow=True)
    assert page.status_code == 200
    return page.content.decode().replace("&#x27;", "'")


def test_a_response_added_while_the_round_was_closed_sends_the_turn_back_when_it_reopens(completed, ingester,
                                                                                       reviewer, admin_user, client):
    """Closed, the round keeps its completions as its coders left them; reopened, each coder who completed the
    turn has it back in their queue, as the trigger would have done had the round been open, and the admin is told
    how many. A reopening with no new response sends nothing back (the responses are older than the completions)."""
    services.round_close(round=completed, by=admin_user)
    assert "went back to their queues" not in _reopen(client, admin_user, completed)
    assert Assignment.objects.filter(completed_at__isnull=True).count() == 0
    services.round_close(round=Round.objects.get(pk=completed.pk), by=admin_user)
    answer = ingester.post(RESPONSES, [_first_new_item()], format="json")
    assert (answer.status_code, answer.json()["turns_back_in_queues"]) == (200, 0)
    assert Assignment.objects.filter(completed_at__isnull=True).count() == 0  # closed: as it was, until reopened
    assert set(QueueProgress.objects.filter(round=completed).values_list("total", "done")) == {(2, 2)}
    page = _reopen(client, admin_user, completed)
    assert ("main is open again; the reason was recorded. 2 completed turn(s) of coders went back to their queues, "
            "each with a new response to code (added while the round was closed).") in page
    reopenings = AuditEvent.objects.filter(action="round.reopen").order_by("pk")
    assert [event.data for event in reopenings] == [{"reason": "a late model", "turns_back_in_queues": 0},
                                                    {"reason": "a late model", "turns_back_in_queues": 2}]
    assert_back_in_queues(completed, reviewer, client)


def test_reopening_leaves_a_feedback_locked_item_and_someone_taken_off_completed(completed, ingester, reviewer,
                                                                                 other_reviewer, admin_user):
    Assignment.objects.filter(coder=reviewer).update(feedback_locked=True)  # its judgments no longer change
    services.study_member_remove(member=StudyMember.objects.get(user=other_reviewer), by=admin_user)
    services.round_close(round=completed, by=admin_user)
    assert ingester.post(RESPONSES, [_first_new_item()], format="json").status_code == 200
    reopened = services.round_reopen(round=Round.objects.get(pk=completed.pk), by=admin_user, reason="a late model")
    assert reopened.turns_back_in_queues == 0
    assert Assignment.objects.filter(completed_at__isnull=True).count() == 0


def test_reopening_leaves_a_turn_whose_responses_its_coder_coded(completed, admin_user):
    """A response the coder has coded in the round is not new to them, whatever its ``created_at`` says: a study
    imported where its conversations already were reuses the stored responses, with their later times, and every
    completion would otherwise go back on reopening."""
    services.round_close(round=completed, by=admin_user)
    Assignment.objects.update(completed_at=timezone.now() - timedelta(days=30))  # before every response
    reopened = services.round_reopen(round=Round.objects.get(pk=completed.pk), by=admin_user, reason="moved here")
    assert reopened.turns_back_in_queues == 0
    assert Assignment.objects.filter(completed_at__isnull=True).count() == 0


def test_reopening_sends_back_only_what_the_trigger_would_have(admin_user):
    """A slot the study does not code and a schema without response-level codes keep their completions on
    reopening, as they do in an open round; a coded slot's response sends the item back."""
    admin = admin_user
    slots = _completed_item(StudyFactory(model_slots=["GPT"]))
    sessions = _completed_item(StudyFactory(schema=Schema.objects.get(slug="lc8-v1")))
    for item in (slots, sessions):
        Round.objects.filter(pk=item.round_id).update(status="closed", closed_at=timezone.now())
        ModelResponseFactory(turn=item.turn, model_slot="Claude")
    ModelResponseFactory(turn=sessions.turn, model_slot="GPT")
    for item in (slots, sessions):
        assert services.round_reopen(round=Round.objects.get(pk=item.round_id), by=admin,
                                     reason="late").turns_back_in_queues == 0
        Round.objects.filter(pk=item.round_id).update(status="closed", closed_at=timezone.now())
    ModelResponseFactory(turn=slots.turn, model_slot="GPT")
    assert Assignment.objects.get(pk=slots.pk).completed_at is not None
    assert services.round_reopen(round=Round.objects.get(pk=slots.round_id), by=admin,
                                 reason="late").turns_back_in_queues == 1
    assert Assignment.objects.get(pk=slots.pk).completed_at is None
    assert Assignment.objects.get(pk=sessions.pk).completed_at is not None


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_response_ingested_while_the_round_reopens_goes_back_to_the_queues(completed, ingester, admin_user):
    """An ingestion that starts while a reopening has run its statement but not committed waits for it (the study's
    completions lock), so its trigger sees the round open; before, it saw the round closed and the reopening had
    not seen the response: both let it through, and the response was coded by nobody."""
    services.round_close(round=completed, by=admin_user)
    reopening_holds = threading.Event()
    original_audit = services.audit_record

    def audit_and_linger(*args, **kwargs):
        if kwargs.get("action") == "round.reopen":
            reopening_holds.set()  # the reopening's statement has run; its transaction has not committed
            time.sleep(1.0)
        return original_audit(*args, **kwargs)

    def reopen():
        with mock.patch.object(services, "audit_record", audit_and_linger):
            return services.round_reopen(round=Round.objects.get(pk=completed.pk), by=admin_user, reason="late")

    def ingest():
        assert reopening_holds.wait(timeout=30)
        return ingester.post(RESPONSES, [_first_new_item()], format="json").json()

    reopened, answer = together(reopen, ingest)
    assert isinstance(reopened, services.RoundReopen), reopened
    assert reopened.turns_back_in_queues + answer["turns_back_in_queues"] == 2, (reopened, answer)
    assert Assignment.objects.filter(round=completed, completed_at__isnull=True).count() == 2


@threads
def test_a_response_ingested_while_someone_is_added_back_goes_back_to_their_queue(
        completed, ingester, reviewer, other_reviewer, admin_user):
    """An ingestion that starts while someone taken off is being added back (their membership written, their
    completed items looked at, not committed) waits for it (the study's completions lock), so its trigger sees them
    a member; before, it saw them off the study and the addition had not seen the response: their completed turn
    kept a response none of their codes are of."""
    services.study_member_remove(member=StudyMember.objects.get(user=other_reviewer), by=admin_user)
    adding_holds = threading.Event()
    original_audit = services.audit_record

    def audit_and_linger(*args, **kwargs):
        if kwargs.get("action") == "member.add":
            adding_holds.set()  # the addition has looked at their items; its transaction has not committed
            time.sleep(1.0)
        return original_audit(*args, **kwargs)

    def add_back():
        with mock.patch.object(services, "audit_record", audit_and_linger):
            return services.study_member_add(study=completed.study, user=other_reviewer, role="reviewer",
                                             by=admin_user)

    def ingest():
        assert adding_holds.wait(timeout=30)
        return ingester.post(RESPONSES, [_first_new_item()], format="json").json()

    member, answer = together(add_back, ingest)
    assert isinstance(member, StudyMember), member
    assert answer["turns_back_in_queues"] == 2, answer
    assert set(Assignment.objects.filter(round=completed, completed_at__isnull=True).values_list(
        "coder", "position")) == {(reviewer.pk, 2), (other_reviewer.pk, 2)}


# --- the early exit (annotation migration 0025) ---------------------------------------------------------------------


def _locks() -> tuple[set[str], int]:
    """The lock modes this transaction holds on ``annotation_assignment`` (an UPDATE takes RowExclusiveLock on it
    before it looks at a row, a read only AccessShareLock), and how many advisory locks it holds."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT mode FROM pg_locks WHERE pid = pg_backend_pid() "
                       "AND relation = 'annotation_assignment'::regclass")
        modes = {mode for (mode,) in cursor.fetchall()}
        cursor.execute("SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory'")
        return modes, cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)  # the setup's locks are gone before each insert
def test_a_statement_whose_turns_have_no_completed_assignment_returns_before_the_update():
    """0025's early exit: a statement of new turns only reads the assignments' turn index, takes no study's lock
    and returns; one whose turns are assigned but not completed takes their study's completions lock and returns
    before 0023's UPDATE, the count unset; the same statement with one turn whose assignment is completed runs the
    UPDATE, which sends that turn back and counts it."""
    done = _completed_item(StudyFactory())
    queued = AssignmentFactory(round=done.round, coder=done.coder, turn=TurnFactory())  # not completed
    new_turn = TurnFactory()

    def responses(*turns: Turn) -> list[ModelResponse]:
        return [ModelResponse(turn=turn, model_slot="GPT", model_version="v1", text="A new response.")
                for turn in turns]

    with transaction.atomic():
        ModelResponse.objects.bulk_create(responses(new_turn))  # one INSERT, one firing
        assert _locks() == ({"AccessShareLock"}, 0)
        transaction.set_rollback(True)
    with transaction.atomic():
        ModelResponse.objects.bulk_create(responses(new_turn, queued.turn))
        assert _locks() == ({"AccessShareLock"}, 1)
        assert turns_back_in_queues() == 0
        transaction.set_rollback(True)
    assert Assignment.objects.get(pk=done.pk).completed_at is not None

    with transaction.atomic():
        ModelResponse.objects.bulk_create(responses(new_turn, queued.turn, done.turn))
        assert "RowExclusiveLock" in _locks()[0]
        assert turns_back_in_queues() == 1
    assert Assignment.objects.get(pk=done.pk).completed_at is None
    assert Assignment.objects.get(pk=queued.pk).completed_at is None


@threads
@pytest.mark.parametrize("path", ["responses", "conversations"])
@pytest.mark.parametrize("what", ["a reopening", "a member added back"])
def test_a_response_ingested_into_an_unowned_conversation_while_the_study_is_locked_deadlocks_nobody(
        completed, ingester, reviewer, other_reviewer, admin_user, what, path):
    """An ingestion through the study into a conversation no study owns yet claims it for the study (its foreign
    key: a share of the study's row) after its trigger took the study's completions lock; a reopening from the
    study page and a member added back lock the study's row, then wait for that lock. Taken in that order the two
    waited for each other, and PostgreSQL broke the deadlock by failing one of them (the reopening's page or the
    ingestion's request answered 500); now they take the completions lock before the study's row, as the ingestion
    does, and wait for it."""
    Conversation.objects.update(study=None)  # a library's conversations, used by the study's round
    services.round_close(round=completed, by=admin_user)
    if what == "a member added back":
        services.study_member_remove(member=StudyMember.objects.get(user=other_reviewer), by=admin_user)
    inserted, study_locked = threading.Event(), threading.Event()
    ingestion = response_ingest if path == "responses" else conversation_ingest
    original_insert = (response_ingest.responses_insert if path == "responses"
                       else conversation_ingest._conversation_changes_write)
    original_study_locked = services.study_locked

    def insert_then_wait(*args, **kwargs):
        original_insert(*args, **kwargs)
        inserted.set()  # the response is in: its trigger holds the study's completions lock
        study_locked.wait(WAIT)
        time.sleep(0.5)  # the other waits for the completions lock

    def locked_then_told(study):
        archived = original_study_locked(study)
        study_locked.set()
        return archived

    def other():
        assert inserted.wait(30)
        with mock.patch.object(services, "study_locked", locked_then_told):
            if what == "a reopening":
                return calibration_services.round_reopen(round=Round.objects.get(pk=completed.pk), by=admin_user,
                                                         reason="late")
            return services.study_member_add(study=completed.study, user=other_reviewer, role="reviewer",
                                             by=admin_user)

    def ingest():
        with mock.patch.object(ingestion, original_insert.__name__, insert_then_wait):
            if path == "responses":
                return ingester.post(RESPONSES, [_first_new_item()], format="json")
            return ingester.post(CONVERSATIONS, _records_with_new_response(), format="json")

    answer, done = together(ingest, other)
    assert not isinstance(done, Exception), str(done)
    assert not isinstance(answer, Exception) and answer.status_code == 200, answer
    assert Conversation.objects.filter(study=completed.study).exists()  # claimed
    if what == "a reopening":  # after the ingestion: the response is seen
        assert done.turns_back_in_queues == 2, done
