"""A reviewer's check-item alert follows what its agreement rests on (``annotation.services.check_alert_update``;
``annotation.selectors.check_agreement``: their codings of the hidden check items they completed, against gold).
Every write that changes those codings, or takes a check item out of the completed ones, updates the alert in its
own transaction: a completion, the coding page's autosave of a completed check item (a score changed, or cleared,
which takes the item out of the completed ones), ``requeue_short_turns``, a round reopened with a turn that got a
response meanwhile, a response ingested into a completed check item's turn (on every path that ingests one), a gold
value recorded or imported, and a purge. An alert whose agreement no longer falls below the threshold is withdrawn
(resolved by nobody, audited), an open one that still does takes the new figures, and one is raised when the
agreement falls below again. Before, only a completion of a check item updated it, and only by raising one: the
study page kept an alert for an agreement that no longer held, or had none for one that did; and an item under way
counted."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from unittest import mock

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from annotation import selectors, services
from annotation.models import Assignment, AttributeDefinition, Judgment, ReviewerAlert, Round, RoundItem, Study
from audit.models import AuditEvent
from benchmark.models import ModelResponse, Turn
from tests.annotation.test_response_added import (
    CONVERSATIONS,
    NEW_SLOT,
    RESPONSES,
    _first_new_item,
    _records_with_new_response,
    _turn_of,
)
from tests.factories import RoundFactory, conversations_without_responses, jsonl, response_items
from tests.races import together

pytestmark = pytest.mark.django_db


def _other_bucket(attribute: AttributeDefinition, score: int) -> int | None:
    """A score of the attribute's scale in another bucket than ``score`` (None: it has one bucket)."""
    return next((s for s in attribute.scale if attribute.bucket[str(s)] != attribute.bucket[str(score)]), None)


def _code(round_: Round, coder: User, position: int) -> None:
    """Score every form of the coder's item with the lowest score of its scale, as the coding page would."""
    view = selectors.turn_view(round_id=round_.pk, user=coder, position=position)
    for form in view.all_forms():
        response = None if form.response_handle is None else selectors.response_by_handle(
            study=view.study, coder_id=coder.pk, turn=view.turn, handle=form.response_handle)
        services.judgment_save(round=round_, by=coder, attribute=form.attribute, turn=view.turn, response=response,
                               score=form.attribute.scale[0])


@dataclass
class Checked:
    main: Round
    reviewer: User
    items: list[Assignment]  # the reviewer's two check items, in queue order
    x: Judgment  # the reviewer's coding of the second item whose gold is in another bucket
    n: int  # how many of the reviewer's codings have a gold value, both items together

    def complete(self, position: int) -> services.TurnCheck:
        assignment = Assignment.objects.select_related("round__study").get(pk=self.items[position - 1].pk)
        return services.assignment_complete(assignment=assignment, by=self.reviewer, confirm=True)

    def save(self, judgment: Judgment, score: int | None) -> services.ItemSave:
        """The coding page's autosave of one of the reviewer's judgments (``item_judgment_save``)."""
        judgment = Judgment.objects.select_related("attribute").get(pk=judgment.pk)
        assignment = Assignment.objects.select_related("round__study").get(
            round=self.main, coder=self.reviewer, turn_id=judgment.turn_id)
        return services.item_judgment_save(assignment=assignment, by=self.reviewer, attribute=judgment.attribute,
                                           turn=judgment.turn, response=judgment.response, score=score,
                                           expected_version=judgment.version)

    def open_alerts(self) -> list[tuple[float, int]]:
        return [(round(a.agreement, 9), a.n_items) for a in ReviewerAlert.objects.filter(resolved_at__isnull=True)]

    def below(self, agreeing: int, n: int | None = None) -> list[tuple[float, int]]:
        """The open alert there should be: ``agreeing`` codings of ``n`` (all of both items) in gold's bucket."""
        n = self.n if n is None else n
        return [(round(agreeing / n, 9), n)]


@pytest.fixture
def checked(ingester, study, reviewer, admin_user) -> Checked:
    """cab-demo's conversations, without their Qwen responses; its main round open, the reviewer's two items in it
    hidden check items (the second the turn of the first Qwen response), every form of both scored and not yet
    completed; their gold (in a closed calibration round) the reviewer's score on every unit but one of the second
    item, ``x``, whose gold is in another bucket. An alert from one coding on, below 0.99."""
    assert ingester.post(CONVERSATIONS, conversations_without_responses(), format="json").status_code == 200
    assert ingester.post(RESPONSES, [i for i in response_items() if i["model"] != NEW_SLOT],
                         format="json").status_code == 200
    study.check_min_items, study.check_threshold = 1, 0.99
    study.save(update_fields=["check_min_items", "check_threshold"])
    main = RoundFactory(study=study, kind="main", status="open")
    calibration = RoundFactory(study=study, kind="calibration", number=1, status="closed")
    new_turn = _turn_of(_first_new_item())
    without = {(i["conversation_id"], i["turn_index"]) for i in response_items() if i["model"] == NEW_SLOT}
    other_turn = next(t for t in Turn.objects.order_by("pk").select_related("conversation")
                      if (t.conversation.external_id, t.index) not in without)
    services.assignments_ensure(round=main, coder=reviewer, turns=[other_turn, new_turn], by=admin_user)
    Assignment.objects.filter(round=main, coder=reviewer).update(is_check_item=True)
    items = list(Assignment.objects.filter(round=main, coder=reviewer).order_by("position"))
    for item in items:
        _code(main, reviewer, item.position)
    codings = list(Judgment.objects.filter(round=main, coder=reviewer, turn__isnull=False)
                   .select_related("attribute").order_by("pk"))
    x = next(j for j in codings if j.turn_id == new_turn.pk and _other_bucket(j.attribute, j.score) is not None)
    for j in codings:
        Judgment.objects.create(round=calibration, coder=admin_user, is_gold=True, attribute=j.attribute,
                                turn=j.turn, response=j.response, conversation_id=j.conversation_id,
                                score=_other_bucket(j.attribute, j.score) if j.pk == x.pk else j.score)
    assert not ReviewerAlert.objects.exists()
    return Checked(main=main, reviewer=reviewer, items=items, x=x, n=len(codings))


def _first_count(checked: Checked) -> int:
    """How many of the reviewer's codings the first item holds."""
    return Judgment.objects.filter(round=checked.main, coder=checked.reviewer, turn=checked.items[0].turn).count()


def _second_item_coding_but_x(checked: Checked) -> Judgment:
    return Judgment.objects.filter(round=checked.main, coder=checked.reviewer, turn=checked.items[1].turn).exclude(
        pk=checked.x.pk).select_related("attribute", "turn", "response").order_by("pk").first()


def _withdrawn(checked: Checked) -> None:
    """The reviewer's alert was withdrawn: resolved, no alert open, the withdrawal audited with the figures."""
    alert = ReviewerAlert.objects.get()
    assert alert.resolved_at is not None and checked.open_alerts() == []
    event = AuditEvent.objects.get(action="check.alert_withdraw")
    assert (event.actor_id, event.target) == (None, f"user:{checked.reviewer.username}")


def test_only_completed_check_items_count_and_completing_one_raises_the_alert(checked):
    """The second item's codings, ``x`` among them, count once it is completed: before, an item under way counted,
    and completing the first item raised an alert for the second's coding."""
    assert selectors.check_agreement(study=checked.main.study, user=checked.reviewer) == (None, 0)
    assert checked.complete(1).completed
    first = _first_count(checked)
    assert selectors.check_agreement(study=checked.main.study, user=checked.reviewer) == (1.0, first)
    assert checked.open_alerts() == []
    assert checked.complete(2).completed
    assert checked.open_alerts() == checked.below(checked.n - 1)


def test_a_changed_score_of_a_completed_check_item_withdraws_the_alert_or_raises_it(checked):
    """The autosave of a completed check item's coding: ``x`` set to its gold's bucket withdraws the alert (the
    agreement is whole again); set back, a new alert is raised. Before, the first alert stayed open, and no other
    was raised until the reviewer completed another check item."""
    checked.complete(1)
    checked.complete(2)
    gold = Judgment.objects.get(is_gold=True, turn_id=checked.x.turn_id, response_id=checked.x.response_id,
                                attribute_id=checked.x.attribute_id).score
    checked.save(checked.x, gold)
    _withdrawn(checked)
    assert ReviewerAlert.objects.get().withdrawn  # not an admin's resolution: the same figures raise it again
    checked.save(checked.x, checked.x.score)
    assert checked.open_alerts() == checked.below(checked.n - 1)
    assert AuditEvent.objects.filter(action="check.alert").count() == 2


def test_an_alert_an_admin_resolved_stays_resolved_while_the_figures_are_those_resolved(checked, admin_user):
    """An admin resolved the reviewer's alert: a save that leaves the figures as they were (a score saved again, as
    an autosave of a span does) raises none again; figures that differ (another coding out of gold's bucket) raise a
    new one. Before, every save of a completed check item raised the resolved alert again at once."""
    checked.complete(1)
    checked.complete(2)
    alert = ReviewerAlert.objects.get()
    services.alert_resolve(alert=alert, by=admin_user)
    resolved = ReviewerAlert.objects.get()
    assert (resolved.resolved_at is not None, resolved.withdrawn) == (True, False)
    same = _second_item_coding_but_x(checked)
    checked.save(same, same.score)
    assert checked.open_alerts() == [] and ReviewerAlert.objects.count() == 1
    assert AuditEvent.objects.filter(action="check.alert").count() == 1
    other = next(j for j in Judgment.objects.filter(round=checked.main, coder=checked.reviewer,
                                                    turn=checked.items[0].turn).select_related("attribute")
                 if _other_bucket(j.attribute, j.score) is not None)
    checked.save(other, _other_bucket(other.attribute, other.score))
    assert checked.open_alerts() == checked.below(checked.n - 2)
    assert ReviewerAlert.objects.count() == 2 and AuditEvent.objects.filter(action="check.alert").count() == 2


def test_an_open_alert_takes_the_figures_of_a_changed_score(checked):
    """Still below the threshold after a save (another coding out of gold's bucket): the open alert is the same one,
    with the new agreement."""
    checked.complete(1)
    checked.complete(2)
    alert = ReviewerAlert.objects.get()
    other = next(j for j in Judgment.objects.filter(round=checked.main, coder=checked.reviewer,
                                                    turn=checked.items[0].turn).select_related("attribute")
                 if _other_bucket(j.attribute, j.score) is not None)
    checked.save(other, _other_bucket(other.attribute, other.score))
    assert checked.open_alerts() == checked.below(checked.n - 2)
    assert ReviewerAlert.objects.get().pk == alert.pk and AuditEvent.objects.filter(action="check.alert").count() == 1


def test_a_cleared_score_takes_the_check_item_out_of_the_agreement(checked):
    """A save that clears a score of the completed second item takes it out of the completed ones, and its codings
    out of the agreement, which is whole again: the alert is withdrawn in the same save."""
    checked.complete(1)
    checked.complete(2)
    cleared = _second_item_coding_but_x(checked)
    saved = checked.save(cleared, None)
    assert saved.reopened and Assignment.objects.get(pk=checked.items[1].pk).completed_at is None
    _withdrawn(checked)
    assert selectors.check_agreement(study=checked.main.study, user=checked.reviewer) == (1.0, _first_count(checked))


def test_requeue_short_turns_takes_the_check_item_out_of_the_agreement(checked):
    """A completed check item left short by 0.2.0's save (a score cleared, the item kept completed) goes back to the
    queue with ``requeue_short_turns --fix``: its codings leave the agreement, and the alert is withdrawn."""
    checked.complete(1)
    checked.complete(2)
    cleared = _second_item_coding_but_x(checked)
    services.judgment_save(round=checked.main, by=checked.reviewer, attribute=cleared.attribute, turn=cleared.turn,
                           response=cleared.response, score=None)  # 0.2.0's save: no check of the item
    assert checked.open_alerts() == checked.below(checked.n - 1)  # as the completion left it
    requeued = services.turns_short_requeue(found=services.turns_short_find().short, by=None)
    assert [turn.assignment_id for turn in requeued] == [checked.items[1].pk]
    _withdrawn(checked)


def test_a_reopened_round_that_sends_the_check_item_back_withdraws_the_alert(checked, admin_user):
    """A response added to the second item's turn while the round was closed sends the item back to the queue when
    the round reopens (``items_short_of_responses_reopened``): its codings leave the agreement, and the alert is
    withdrawn."""
    checked.complete(1)
    checked.complete(2)
    services.round_close(round=checked.main, by=admin_user)
    item = _first_new_item()
    ModelResponse.objects.create(turn=_turn_of(item), model_slot=NEW_SLOT, model_version="", text=item["text"])
    reopened = services.round_reopen(round=Round.objects.get(pk=checked.main.pk), by=admin_user, reason="late")
    assert reopened.turns_back_in_queues == 1
    _withdrawn(checked)


@pytest.mark.parametrize("whose", ["the reviewer's coding", "its gold"])
def test_a_purge_of_a_counted_coding_or_its_gold_updates_the_alert(checked, whose):
    """Purging ``x`` (or the gold it is compared with) takes it out of the agreement: whole again, the alert is
    withdrawn in the purge's transaction."""
    checked.complete(1)
    checked.complete(2)
    purged = Judgment.objects.filter(pk=checked.x.pk) if whose == "the reviewer's coding" else Judgment.objects.filter(
        is_gold=True, turn_id=checked.x.turn_id, response_id=checked.x.response_id,
        attribute_id=checked.x.attribute_id)
    assert services.judgments_purge(judgments=purged, by=None, reason="entered in error") == 1
    _withdrawn(checked)


def _gold_of_x(checked: Checked) -> Judgment:
    return Judgment.objects.select_related("round", "turn__conversation__dataset", "response", "attribute").get(
        is_gold=True, turn_id=checked.x.turn_id, response_id=checked.x.response_id,
        attribute_id=checked.x.attribute_id)


def test_a_gold_value_recorded_on_the_consensus_screen_updates_the_alert(checked, admin_user):
    """``x``'s gold recorded again in the reviewer's bucket (``gold_save``, the consensus screen's): the agreement
    is whole, and the alert is withdrawn in the same transaction; recorded back in another, a new one is raised."""
    checked.complete(1)
    checked.complete(2)
    gold = _gold_of_x(checked)

    def record(score: int) -> None:
        services.gold_save(round=gold.round, by=admin_user, attribute=gold.attribute, turn=gold.turn,
                           response=gold.response, score=score)

    record(checked.x.score)
    _withdrawn(checked)
    record(gold.score)
    assert checked.open_alerts() == checked.below(checked.n - 1)


def test_a_gold_value_imported_updates_the_alert(checked):
    """``x``'s gold purged (the alert withdrawn), then imported again from a long-format row: the reviewers'
    completed check items are compared with it at once, and the alert is raised again by the import."""
    from annotation import judgment_import

    checked.complete(1)
    checked.complete(2)
    gold = _gold_of_x(checked)
    services.judgments_purge(judgments=Judgment.objects.filter(pk=gold.pk), by=None, reason="entered in error")
    _withdrawn(checked)
    row = {"study": checked.main.study.slug, "round": gold.round.name, "reviewer": gold.coder.username,
           "is_gold": True, "role": "", "dataset": gold.turn.conversation.dataset.name,
           "conversation_id": gold.turn.conversation.external_id, "turn_index": gold.turn.index,
           "model": gold.response.model_slot if gold.response else "", "attribute": gold.attribute.code,
           "score": gold.score, "instance_count": None, "spans": []}
    summary = judgment_import.judgments_import(rows=[(1, row)], study_slug=checked.main.study.slug, by=None,
                                               typed=True)
    assert summary.judgments_created == 1
    assert checked.open_alerts() == checked.below(checked.n - 1)


@pytest.mark.parametrize("written", ["the counting gold first", "the counting gold last"])
@pytest.mark.parametrize("counting", ["main", "reserved gold pool"])
def test_a_check_item_is_compared_with_the_gold_of_the_round_that_counts_whatever_order_it_was_written_in(
        checked, admin_user, counting, written):
    """``x``'s unit has gold in two rounds: calibration-1's, in another bucket than the reviewer's score, and, in
    the reviewer's bucket, the main round's own (gold imported into it) or a reserved gold pool's numbered after it
    (calibration-2). The gold that counts is the main round's, else the latest calibration round's by number
    (docs/reference.md#a-unit-coded-in-several-rounds): here the second's, so the agreement is whole and no alert is
    raised, whichever row was written first. Before, ``x`` was compared with whichever the database read last."""
    study = checked.main.study
    older = _gold_of_x(checked)
    counts = checked.main if counting == "main" else RoundFactory(study=study, kind="calibration", number=2,
                                                                  status="closed", gold_pool=True)

    def write(round_: Round, score: int) -> None:
        Judgment.objects.create(round=round_, coder=admin_user, is_gold=True, attribute_id=checked.x.attribute_id,
                                turn_id=checked.x.turn_id, response_id=checked.x.response_id,
                                conversation_id=checked.x.conversation_id, score=score)

    if written == "the counting gold first":
        assert services.judgments_purge(judgments=Judgment.objects.filter(pk=older.pk), by=None,
                                        reason="written again after the counting gold") == 1
        write(counts, checked.x.score)
        write(older.round, older.score)
    else:
        write(counts, checked.x.score)
    assert Judgment.objects.filter(is_gold=True, turn_id=checked.x.turn_id, response_id=checked.x.response_id,
                                   attribute_id=checked.x.attribute_id).count() == 2
    checked.complete(1)
    checked.complete(2)
    assert selectors.check_agreement(study=study, user=checked.reviewer) == (1.0, checked.n)
    assert checked.open_alerts() == []


def test_the_studys_threshold_or_minimum_changed_updates_its_alerts(checked, admin_user):
    """The admin's Settings: a threshold lowered below the agreement withdraws the alert, raised again raises one
    with the new threshold; a minimum above the codings withdraws it. Before, an open alert kept stating the
    threshold it was raised under until the reviewer completed another check item."""
    study = checked.main.study
    assert checked.complete(1).completed and checked.complete(2).completed
    assert checked.open_alerts() == checked.below(checked.n - 1)
    services.study_settings_update(study=study, by=admin_user, check_threshold=0.5)
    _withdrawn(checked)
    services.study_settings_update(study=study, by=admin_user, check_threshold=0.995)
    alert = ReviewerAlert.objects.get(resolved_at__isnull=True)
    assert (alert.threshold, checked.open_alerts()) == (0.995, checked.below(checked.n - 1))
    services.study_settings_update(study=study, by=admin_user, check_min_items=checked.n + 1)
    assert checked.open_alerts() == []


# --- a response ingested into a completed check item's turn (the trigger of migration 0025) -----------------------

_INGESTIONS = ["responses: a JSON array", "responses: JSON Lines", "responses: a file", "conversations: a JSON array",
               "conversations: a file", "the upload page"]


def _ingest_new_response(path: str, ingester, client, admin_user) -> int:
    """The first Qwen response (the second item's turn) ingested by ``path``; how many turns it sent back, as the
    answer (or the upload page's message) says."""
    items = [_first_new_item()]
    records = jsonl(_records_with_new_response()).encode()
    if path == "the upload page":
        client.force_login(admin_user)
        page = client.post(reverse("conversations-upload", args=["cab-demo"]),
                           {"file": SimpleUploadedFile("c.jsonl", records)}, follow=True)
        assert page.status_code == 200
        return 1 if "1 completed turn(s) of coders went back to their queues" in page.content.decode() else 0
    if path == "responses: a JSON array":
        answer = ingester.post(RESPONSES, items, format="json")
    elif path == "responses: JSON Lines":
        answer = ingester.generic("POST", RESPONSES, jsonl(items).encode(), content_type="application/x-ndjson")
    elif path == "responses: a file":
        answer = ingester.post(RESPONSES + "upload/", {"file": SimpleUploadedFile("r.jsonl", jsonl(items).encode())},
                               format="multipart")
    elif path == "conversations: a JSON array":
        answer = ingester.post(CONVERSATIONS, _records_with_new_response(), format="json")
    else:
        answer = ingester.post(CONVERSATIONS + "upload/", {"file": SimpleUploadedFile("c.jsonl", records)},
                               format="multipart")
    assert answer.status_code == 200, answer.content
    return answer.json()["turns_back_in_queues"]


@pytest.mark.parametrize("path", _INGESTIONS)
def test_a_response_ingested_into_a_completed_check_item_withdraws_the_alert(checked, ingester, client, admin_user,
                                                                             path):
    """A new response to the second item's turn sends it back to the reviewer's queue (the trigger): its codings,
    ``x`` among them, leave the agreement, whole again, and the alert is withdrawn in the ingestion's transaction.
    Before, the alert kept counting them until the reviewer completed the item again."""
    checked.complete(1)
    checked.complete(2)
    assert checked.open_alerts() == checked.below(checked.n - 1)
    assert _ingest_new_response(path, ingester, client, admin_user) == 1
    assert Assignment.objects.get(pk=checked.items[1].pk).completed_at is None
    _withdrawn(checked)
    assert selectors.check_agreement(study=checked.main.study, user=checked.reviewer) == (1.0, _first_count(checked))


def _first_item_disagreeing(checked: Checked) -> int:
    """Move the gold of one of the first item's codings to another bucket; how many of its codings then agree."""
    coding = next(j for j in Judgment.objects.filter(round=checked.main, coder=checked.reviewer,
                                                     turn=checked.items[0].turn).select_related("attribute")
                  if _other_bucket(j.attribute, j.score) is not None)
    Judgment.objects.filter(is_gold=True, turn_id=coding.turn_id, response_id=coding.response_id,
                            attribute_id=coding.attribute_id).update(score=_other_bucket(coding.attribute,
                                                                                          coding.score))
    return _first_count(checked) - 1


def test_a_response_ingested_into_a_completed_check_item_updates_an_alert_that_still_holds(checked, ingester,
                                                                                           client, admin_user):
    """One coding of the first item out of gold's bucket too: with the second item sent back the agreement, that of
    the first item alone, is still below the threshold, and the open alert takes its figures."""
    agreeing = _first_item_disagreeing(checked)
    checked.complete(1)
    checked.complete(2)
    alert = ReviewerAlert.objects.get()
    assert checked.open_alerts() == checked.below(checked.n - 2)
    assert _ingest_new_response("responses: a JSON array", ingester, client, admin_user) == 1
    assert checked.open_alerts() == checked.below(agreeing, _first_count(checked))
    assert ReviewerAlert.objects.get().pk == alert.pk and AuditEvent.objects.filter(action="check.alert").count() == 1


def test_a_response_ingested_into_a_completed_check_item_raises_the_alert_its_codings_held_off(checked, ingester,
                                                                                               client, admin_user):
    """The second item's codings all in gold's bucket, one of the first item's not: over both items the agreement is
    at the threshold, over the first alone below it. The second item sent back, the alert is raised."""
    Judgment.objects.filter(is_gold=True, turn_id=checked.x.turn_id, response_id=checked.x.response_id,
                            attribute_id=checked.x.attribute_id).update(score=checked.x.score)
    agreeing, first = _first_item_disagreeing(checked), _first_count(checked)
    study = checked.main.study
    study.check_threshold = (checked.n - 1) / checked.n
    study.save(update_fields=["check_threshold"])
    assert agreeing / first < study.check_threshold
    checked.complete(1)  # alone below the threshold: an alert, which completing the second item withdraws
    checked.complete(2)
    assert checked.open_alerts() == []
    raised = AuditEvent.objects.filter(action="check.alert").count()
    assert _ingest_new_response("responses: a JSON array", ingester, client, admin_user) == 1
    assert checked.open_alerts() == checked.below(agreeing, first)
    assert AuditEvent.objects.filter(action="check.alert").count() == raised + 1


@pytest.mark.parametrize("state", ["under way", "closed"])
def test_an_ingestion_that_sends_no_check_item_back_asks_nothing_of_the_alerts(checked, ingester, state):
    """The bulk ingestion's cost: when the trigger sent nothing back (the items under way, or the round closed),
    the ingestion reads no check item and no alert; it reads the trigger's count before and after its insert, as
    before."""
    if state == "closed":
        checked.complete(1)
        checked.complete(2)
        Round.objects.filter(pk=checked.main.pk).update(status="closed", closed_at=timezone.now())
    alerts = list(ReviewerAlert.objects.values_list("pk", "agreement", "n_items", "resolved_at"))
    with CaptureQueriesContext(connection) as queries:
        answer = ingester.post(RESPONSES, [_first_new_item()], format="json")
    assert (answer.status_code, answer.json()["created"], answer.json()["turns_back_in_queues"]) == (200, 1, 0)
    asked = [q["sql"] for q in queries.captured_queries if "is_check_item" in q["sql"] or "revieweralert" in q["sql"]]
    assert asked == []
    assert sum("cab.turns_back_in_queues" in q["sql"] for q in queries.captured_queries) == 2
    assert list(ReviewerAlert.objects.values_list("pk", "agreement", "n_items", "resolved_at")) == alerts


def test_a_completion_read_before_the_threshold_changed_is_measured_against_the_new_one(checked, admin_user):
    """The reviewer's *Complete turn* read the item, its round and its study before an admin lowered the threshold
    below their agreement: the completion measures it against the threshold as committed, and raises no alert.
    Before, it took the threshold of the study as the request had read it, and raised an alert the new threshold
    does not call for (or withdrew one the settings' update had raised)."""
    assert checked.complete(1).completed
    read_before = Assignment.objects.select_related("round__study").get(pk=checked.items[1].pk)
    services.study_settings_update(study=checked.main.study, by=admin_user, check_threshold=0.5)
    assert services.assignment_complete(assignment=read_before, by=checked.reviewer, confirm=True).completed
    assert checked.open_alerts() == []
    services.study_settings_update(study=checked.main.study, by=admin_user, check_threshold=0.99)
    assert checked.open_alerts() == checked.below(checked.n - 1)
    alert = ReviewerAlert.objects.get(resolved_at__isnull=True)
    read_before = Assignment.objects.select_related("round__study").get(pk=checked.items[1].pk)
    services.study_settings_update(study=checked.main.study, by=admin_user, check_threshold=0.995)
    stale = Judgment.objects.select_related("attribute", "turn", "response").get(pk=checked.x.pk)
    services.item_judgment_save(assignment=read_before, by=checked.reviewer, attribute=stale.attribute,
                                turn=stale.turn, response=stale.response, score=stale.score,
                                expected_version=stale.version)
    alert.refresh_from_db()
    assert (alert.resolved_at, alert.threshold) == (None, 0.995)


@contextmanager
def _first_agreement_read_held(locked: threading.Event) -> Iterator[None]:
    """The first read of a reviewer's agreement (a completion's, under the reviewer's lock) sets ``locked`` and
    holds for 1.5 s: the other write of a race test takes its locks meanwhile, then waits for the reviewer's."""
    original, calls = selectors.check_agreement, []

    def read_slowly(**kwargs):
        calls.append(1)
        if len(calls) == 1:
            locked.set()
            time.sleep(1.5)
        return original(**kwargs)

    with mock.patch.object(selectors, "check_agreement", read_slowly):
        yield


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_threshold_changed_while_a_completion_raises_the_alert_fails_neither(checked, admin_user):
    """An admin changes the threshold (Settings: the study's row, then each reviewer's alert under their lock) while
    the reviewer's *Complete turn* of their second check item, under their lock, raises an alert (a row naming the
    study). Both land, and the alert states the new threshold. Before, the settings held the study's row exclusively
    (FOR UPDATE), which the new alert's foreign key waits for, while the settings waited for the reviewer's lock:
    PostgreSQL failed one of the two with a deadlock (a 500)."""
    assert checked.complete(1).completed
    locked = threading.Event()

    def change() -> list[str]:
        assert locked.wait(10)
        return services.study_settings_update(study=Study.objects.get(pk=checked.main.study_id), by=admin_user,
                                              check_threshold=0.995)

    with _first_agreement_read_held(locked):
        completed, changed = together(lambda: checked.complete(2), change)
    assert not isinstance(completed, Exception), completed
    assert not isinstance(changed, Exception), changed
    assert completed.completed and changed == ["check_threshold"]
    alert = ReviewerAlert.objects.get(resolved_at__isnull=True)
    assert (alert.threshold, checked.open_alerts()) == (0.995, checked.below(checked.n - 1))


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_gold_value_recorded_while_a_completion_raises_the_alert_fails_neither(checked, admin_user):
    """The gold panel records a value of the first check item's turn (``calibration.services.gold_record``: the
    study's row, then the gold, then each reviewer's alert under their lock) while the reviewer's *Complete turn* of
    their second check item, under their lock, raises an alert. Both land, and the alert states the agreement with
    the new gold. Before, the study's row was held exclusively (FOR UPDATE), which the new alert's foreign key waits
    for, while the gold waited for the reviewer's lock: PostgreSQL failed one of the two with a deadlock (a 500)."""
    from calibration import services as calibration_services

    assert checked.complete(1).completed
    first = Judgment.objects.filter(round=checked.main, coder=checked.reviewer, turn=checked.items[0].turn_id)
    coding = next(j for j in first.select_related("attribute", "turn", "response").order_by("pk")
                  if _other_bucket(j.attribute, j.score) is not None)
    gold = Judgment.objects.select_related("round__study").get(
        is_gold=True, turn_id=coding.turn_id, response_id=coding.response_id, attribute_id=coding.attribute_id)
    RoundItem.objects.create(round=gold.round, turn=coding.turn, position=1)
    locked = threading.Event()

    def record() -> Judgment:
        assert locked.wait(10)
        return calibration_services.gold_record(
            round=gold.round, by=admin_user, attribute=coding.attribute, turn=coding.turn, response=coding.response,
            score=_other_bucket(coding.attribute, coding.score), reason="entered in error",
            expected_version=gold.version)

    with _first_agreement_read_held(locked):
        completed, recorded = together(lambda: checked.complete(2), record)
    assert not isinstance(completed, Exception), completed
    assert not isinstance(recorded, Exception), recorded
    assert completed.completed
    assert checked.open_alerts() == checked.below(checked.n - 2)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_gold_value_imported_while_a_completion_raises_the_alert_fails_neither(checked):
    """A judgments import of a gold row (the study's row, then the rows, then each reviewer's alert under their lock)
    while the reviewer's *Complete turn* of their second check item, under their lock, raises an alert: both land.
    Before, the import held the study's row exclusively (FOR UPDATE), which the new alert's foreign key waits for,
    while it waited for the reviewer's lock: PostgreSQL failed one of the two with a deadlock."""
    from annotation import judgment_import

    assert checked.complete(1).completed
    gold = Judgment.objects.select_related("round", "coder", "turn__conversation__dataset", "response", "attribute") \
        .filter(is_gold=True, turn_id=checked.items[0].turn_id).order_by("pk").first()
    services.judgments_purge(judgments=Judgment.objects.filter(pk=gold.pk), by=None, reason="entered in error")
    row = {"study": checked.main.study.slug, "round": gold.round.name, "reviewer": gold.coder.username,
           "is_gold": True, "role": "", "dataset": gold.turn.conversation.dataset.name,
           "conversation_id": gold.turn.conversation.external_id, "turn_index": gold.turn.index,
           "model": gold.response.model_slot if gold.response else "", "attribute": gold.attribute.code,
           "score": gold.score, "instance_count": None, "spans": []}
    locked = threading.Event()

    def imported():
        assert locked.wait(10)
        return judgment_import.judgments_import(rows=[(1, row)], study_slug=checked.main.study.slug, by=None,
                                                typed=True)

    with _first_agreement_read_held(locked):
        completed, summary = together(lambda: checked.complete(2), imported)
    assert not isinstance(completed, Exception), completed
    assert not isinstance(summary, Exception), summary
    assert completed.completed and summary.judgments_created == 1
    assert checked.open_alerts() == checked.below(checked.n - 1)
