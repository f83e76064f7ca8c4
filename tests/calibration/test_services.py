"""Calibration services (calibration/services.py): calibration sets, opening and closing rounds, the gold panel's
consensus, workshop notes, reopening and panel retention — every state rule tried (main-round assignment:
test_main_round.py), on the protocol study of tests/calibration/conftest.py (3 reviewers, 2 experts; round 1
closed, round 2 open)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.urls import reverse
from django.utils import timezone

from annotation import services as annotation_services
from annotation.models import Assignment, Judgment, Round, Study, StudyMember, WorkshopNote
from annotation.services import ChangedMeanwhile
from audit.models import AuditEvent
from calibration import selectors as calibration_selectors
from calibration import services as calibration_services
from metrics.models import MetricRun
from tests.annotation.test_views import with_parts
from tests.factories import (
    ModelResponseFactory,
    RoundFactory,
    RoundItemFactory,
    StudyFactory,
    StudyMemberFactory,
    UserFactory,
    attribute,
)
from tests.form_fuzz import fingerprint

pytestmark = pytest.mark.django_db

CLOSED_ROUNDS = 1  # for the protocol fixture: round 1 closed with its metric run, round 2 open and coded
CLOSED, OPEN, POOL = 1, 2, 3


def open_items(round_: Round) -> list[calibration_selectors.ConsensusItem]:
    return [item for item in calibration_selectors.consensus_items(round=round_) if item.gold is None]


# --- calibration sets and opening a round ------------------------------------------------------------------------


def test_only_study_admins_draw_a_calibration_set(protocol):
    round_ = annotation_services.round_ensure(study=protocol.study, kind="calibration", number=3, by=protocol.admin)
    with pytest.raises(PermissionDenied, match="Only study admins"):
        calibration_services.calibration_set_sample(round=round_, by=protocol.reviewers[0], n=3, seed=3)
    assert not round_.items.exists()


def test_a_round_without_a_calibration_set_cannot_open(protocol):
    round_ = annotation_services.round_ensure(study=protocol.study, kind="calibration", number=3, by=protocol.admin)
    with pytest.raises(ValidationError, match="has no calibration set yet"):
        calibration_services.calibration_round_open(round=round_, by=protocol.admin, allow_parallel=True)


@pytest.mark.parametrize("number", [CLOSED, OPEN])
def test_calibration_set_is_stratified_across_datasets(protocol, number):
    items = protocol.round(number).items.select_related("turn__conversation__dataset")
    assert len(items) == 3
    assert len({item.turn.conversation.dataset.name for item in items}) >= 2


def test_opening_assigns_every_member_the_same_items(protocol):
    round_ = protocol.round(OPEN)
    assert Assignment.objects.filter(round=round_).count() == 3 * 5
    items = list(round_.items.order_by("position").values_list("turn_id", flat=True))
    for coder in [*protocol.reviewers, *protocol.experts]:
        queue = Assignment.objects.filter(round=round_, coder=coder).order_by("position")
        assert list(queue.values_list("turn_id", flat=True)) == items, coder.username


def test_the_calibration_set_is_fixed_once_the_round_is_open(protocol):
    with pytest.raises(ValidationError, match="its items are fixed"):
        calibration_services.calibration_set_sample(round=protocol.round(OPEN), by=protocol.admin, n=3, seed=9)



def test_a_drafts_set_is_drawn_again_from_every_turn_it_could_first_be_drawn_from(client, protocol):
    """Drawing a draft's set again (another seed, another size) draws from the turns no *other* round holds, as a
    hand-built set does: the draft's own turns are not taken from it. Before, they were: the study page offered
    the turns left over ("of 4 available" after 3 of 7 were drawn), a second draw of the same size was refused as
    "only 4 unused turns are available", and once every turn was drawn the page offered no draw at all."""
    every_turn = len(calibration_selectors.calibration_candidates(study=protocol.study))
    round_ = annotation_services.round_ensure(study=protocol.study, kind="calibration", number=3, by=protocol.admin)
    first = calibration_services.calibration_set_sample(round=round_, by=protocol.admin, n=every_turn, seed=1)
    again = calibration_services.calibration_set_sample(round=round_, by=protocol.admin, n=every_turn, seed=2)
    assert sorted(t.pk for t in again) == sorted(t.pk for t in first)
    assert list(round_.items.order_by("position").values_list("turn_id", flat=True)) == [t.pk for t in again]
    client.force_login(protocol.admin)
    page = client.get(reverse("study-dashboard", args=[protocol.study.slug])).content.decode()
    assert f'of {every_turn} available' in page and "No turn is available for a set" not in page
    # Another draft cannot take them while this one holds them.
    other = annotation_services.round_ensure(study=protocol.study, kind="calibration", number=4, by=protocol.admin)
    with pytest.raises(ValidationError, match="only 0 unused turns are available, 1 were asked for"):
        calibration_services.calibration_set_sample(round=other, by=protocol.admin, n=1)

# --- the gold panel ----------------------------------------------------------------------------------------------


def test_unanimous_items_are_accepted_as_gold(protocol):
    round_ = protocol.round(OPEN)
    accepted = calibration_services.gold_accept_unanimous(round=round_, by=protocol.admin)
    remaining = open_items(round_)
    # The experts differ on the flags only: everything else is unanimous.
    assert accepted > 0 and remaining and all(item.attribute.group == "flag" for item in remaining)
    assert Judgment.objects.filter(round=round_, is_gold=True).count() == accepted


def test_items_the_experts_disagree_on_are_decided_one_by_one(protocol):
    round_ = protocol.round(OPEN)
    expert = protocol.experts[0]
    disputed = [item for item in open_items(round_) if not item.unanimous]
    assert disputed
    for item in disputed:
        calibration_services.gold_record(round=round_, by=protocol.admin, attribute=item.attribute, turn=item.turn,
                                         response=item.response, score=item.expert_scores[expert.username],
                                         agreed_by=protocol.experts, note="the first reading holds")
    assert all(item.unanimous for item in open_items(round_))
    gold = round_.judgments.filter(is_gold=True)
    assert gold.count() == len(disputed) and set(gold.values_list("note", flat=True)) == {"the first reading holds"}


def test_an_expert_taken_off_mid_round_keeps_counting_on_the_gold_panel(protocol):
    """expert-2 differs on the flags and is taken off before the gold is decided: their codings still count, so the
    flags are not unanimous, and the unanimous items name both experts as agreeing; before, the flags were accepted
    as unanimous, agreed by the first expert alone."""
    round_ = protocol.round(OPEN)
    expert, second = protocol.experts
    annotation_services.study_member_remove(
        member=StudyMember.objects.get(study=protocol.study, user=second), by=protocol.admin)
    items = calibration_selectors.consensus_items(round=round_)
    assert all(item.former == {second.username} for item in items)
    assert all(list(item.expert_scores) == [expert.username, second.username] for item in items)
    accepted = calibration_services.gold_accept_unanimous(round=round_, by=protocol.admin)
    remaining = open_items(round_)
    assert accepted > 0 and remaining and all(item.attribute.group == "flag" for item in remaining)
    agreed = {tuple(sorted(u.username for u in gold.agreed_by.all()))
              for gold in Judgment.objects.filter(round=round_, is_gold=True).prefetch_related("agreed_by")}
    assert agreed == {(expert.username, second.username)}


def test_a_unit_an_expert_taken_off_never_scored_is_agreed_by_those_who_did(protocol):
    """Someone taken off codes no more: a unit they left unscored waits for nobody, and "agreed by" names the
    experts who scored it, not them. A current expert's missing score still holds the unit back."""
    round_ = protocol.round(OPEN)
    expert, second = protocol.experts
    left, waiting = [item for item in open_items(round_) if item.unanimous][:2]
    for item, coder in ((left, second), (waiting, expert)):  # as though never scored
        annotation_services.judgments_purge(judgments=Judgment.objects.filter(
            round=round_, coder=coder, attribute=item.attribute, turn=item.turn, response=item.response),
            by=None, reason="the test's unscored unit")
    annotation_services.study_member_remove(
        member=StudyMember.objects.get(study=protocol.study, user=second), by=protocol.admin)
    calibration_services.gold_accept_unanimous(round=round_, by=protocol.admin)
    gold = Judgment.objects.get(round=round_, is_gold=True, attribute=left.attribute, turn=left.turn,
                                response=left.response)
    assert [u.username for u in gold.agreed_by.all()] == [expert.username]
    assert not Judgment.objects.filter(round=round_, is_gold=True, attribute=waiting.attribute, turn=waiting.turn,
                                       response=waiting.response).exists()


def test_after_the_gold_panel_no_item_is_left_without_gold(protocol):
    """Unanimous items accepted at once and the rest decided one by one (tests/scenarios.py, as in round 1)."""
    round_ = protocol.round(CLOSED)
    assert calibration_selectors.consensus_items(round=round_) and not open_items(round_)


def test_gold_outside_the_scale_is_refused(protocol):
    round_ = protocol.round(OPEN)
    item = next(item for item in open_items(round_) if item.attribute.group == "flag")
    with pytest.raises(ValidationError, match="outside the scale"):
        calibration_services.gold_record(round=round_, by=protocol.admin, attribute=item.attribute, turn=item.turn,
                                         response=item.response, score=7)
    assert not Judgment.objects.filter(round=round_, is_gold=True).exists()



def test_an_archived_studys_gold_no_longer_changes(protocol):
    """As its rounds: neither a closed round's gold with a reason (which would start a metrics run) nor the
    unanimous items are recorded; nothing is written, no event, no run."""
    calibration_services.round_close(round=protocol.round(OPEN), by=protocol.admin)
    annotation_services.study_archive(study=protocol.study, by=protocol.admin)
    round_ = protocol.round(CLOSED)
    item = next(item for item in calibration_selectors.consensus_items(round=round_) if item.gold is not None)
    assert item.gold is not None
    other = (item.gold.score + 1) % (item.attribute.scale_max + 1)
    before = (list(Judgment.objects.filter(is_gold=True).order_by("pk").values_list("pk", "score", "version")),
              AuditEvent.objects.count(), MetricRun.objects.count())
    with pytest.raises(ValidationError, match=f"study {protocol.study.slug!r} is archived: its gold no longer changes"):
        calibration_services.gold_record(round=round_, by=protocol.admin, attribute=item.attribute, turn=item.turn,
                                         response=item.response, score=other, reason="a second look")
    for number in (CLOSED, OPEN):
        with pytest.raises(ValidationError, match="is archived: its gold no longer changes"):
            calibration_services.gold_accept_unanimous(round=protocol.round(number), by=protocol.admin)
    assert (list(Judgment.objects.filter(is_gold=True).order_by("pk").values_list("pk", "score", "version")),
            AuditEvent.objects.count(), MetricRun.objects.count()) == before


def test_an_archived_study_takes_no_new_round_panel_or_main_round(protocol):
    """Its rounds and its panel (which the reviewers' figures of a report follow) stay as they were: a new
    calibration round, a change of the retained panel and the main round's assignments are refused in words, and
    nothing is written; before, each was."""
    calibration_services.round_close(round=protocol.round(OPEN), by=protocol.admin)
    annotation_services.study_archive(study=protocol.study, by=protocol.admin)
    before = (list(Round.objects.filter(study=protocol.study).values_list("pk", "status")),
              list(StudyMember.objects.filter(study=protocol.study).values_list("pk", "retained")),
              Assignment.objects.count(), AuditEvent.objects.count())
    slug = protocol.study.slug
    with pytest.raises(ValidationError, match=f"study {slug!r} is archived: its rounds no longer change"):
        calibration_services.calibration_round_create(study=protocol.study, by=protocol.admin, number=9)
    with pytest.raises(ValidationError, match=f"study {slug!r} is archived: its panel no longer changes"):
        calibration_services.panel_retain(study=protocol.study, by=protocol.admin,
                                          usernames=[protocol.reviewers[0].username], reason="after the end")
    with pytest.raises(ValidationError, match=f"study {slug!r} is archived: its rounds no longer change"):
        calibration_services.main_round_assign(study=protocol.study, by=protocol.admin)
    assert (list(Round.objects.filter(study=protocol.study).values_list("pk", "status")),
            list(StudyMember.objects.filter(study=protocol.study).values_list("pk", "retained")),
            Assignment.objects.count(), AuditEvent.objects.count()) == before


def test_an_archived_studys_workshop_notes_no_longer_change(protocol):
    calibration_services.round_close(round=protocol.round(OPEN), by=protocol.admin)
    round_ = protocol.round(CLOSED)
    item = next(iter(calibration_selectors.consensus_items(round=round_)))
    calibration_services.workshop_note_save(round=round_, by=protocol.admin, attribute=item.attribute,
                                            turn=item.turn, response=item.response, text="agreed: b")
    annotation_services.study_archive(study=protocol.study, by=protocol.admin)
    before = (list(WorkshopNote.objects.values_list("pk", "text")), AuditEvent.objects.count())
    for text in ("changed", ""):  # a change, and the removal
        with pytest.raises(ValidationError, match="is archived: its workshop notes no longer change"):
            calibration_services.workshop_note_save(round=round_, by=protocol.admin, attribute=item.attribute,
                                                    turn=item.turn, response=item.response, text=text)
    assert (list(WorkshopNote.objects.values_list("pk", "text")), AuditEvent.objects.count()) == before


def test_gold_recorded_over_a_newer_value_says_changed_meanwhile(admin_user):
    item = RoundItemFactory(round=RoundFactory(status="open"))
    u1 = attribute("U1")
    calibration_services.gold_record(round=item.round, by=admin_user, attribute=u1, turn=item.turn, response=None,
                                     score=1, expected_version=0)
    with pytest.raises(ChangedMeanwhile):  # a second admin, still looking at "no gold yet"
        calibration_services.gold_record(round=item.round, by=admin_user, attribute=u1, turn=item.turn,
                                         response=None, score=2, expected_version=0)
    gold = item.round.judgments.get(is_gold=True)
    assert (gold.score, gold.version) == (1, 1)
    calibration_services.gold_record(round=item.round, by=admin_user, attribute=u1, turn=item.turn, response=None,
                                     score=2, expected_version=1)
    gold.refresh_from_db()
    assert (gold.score, gold.version) == (2, 2)


def test_gold_uses_the_judgment_rules_and_their_words(admin_user):
    item = RoundItemFactory(round=RoundFactory(status="open"))
    with pytest.raises(ValidationError, match="U1: score 7 is outside the scale 0–2"):
        calibration_services.gold_record(round=item.round, by=admin_user, attribute=attribute("U1"), turn=item.turn,
                                         response=None, score=7)
    assert not item.round.judgments.exists()


# --- closing, the workshop, reopening ----------------------------------------------------------------------------


def test_closing_a_round_locks_judgments_and_requests_a_run(admin_user, reviewer, django_capture_on_commit_callbacks):
    round_ = RoundFactory(study=StudyFactory(status="open"))
    StudyMemberFactory(study=round_.study, user=reviewer, role="reviewer")
    response = ModelResponseFactory()
    annotation_services.judgment_save(round=round_, by=reviewer, attribute=attribute("AUR"), response=response,
                                      score=1)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        calibration_services.round_close(round=round_, by=admin_user)
    run = MetricRun.objects.get(study=round_.study)
    assert run.trigger == "round-closed" and run.status == "queued" and len(callbacks) == 1
    round_.refresh_from_db()
    with pytest.raises(ValidationError, match="calibration-1 is closed: judgments can no longer change"):
        annotation_services.judgment_save(round=round_, by=reviewer, attribute=attribute("AUR"), response=response,
                                          score=2)
    assert Judgment.objects.get(coder=reviewer).score == 1


def test_a_closed_round_refuses_every_change_of_judgment(protocol):
    round_ = protocol.round(CLOSED)
    flag = Judgment.objects.filter(round=round_, is_gold=True, attribute__group="flag").first()
    with pytest.raises(ValidationError, match="can no longer change"):
        annotation_services.judgment_save(round=round_, by=protocol.reviewers[0], attribute=flag.attribute,
                                          response=flag.response, score=0)


def test_a_workshop_note_appears_in_the_calibration_memo(protocol):
    round_ = protocol.round(CLOSED)
    item = calibration_selectors.workshop_items(round=round_)[0]
    calibration_services.workshop_note_save(round=round_, by=protocol.admin, attribute=item.attribute,
                                            turn=item.turn, response=item.response,
                                            text="Round 1: anchor 1 means hedged inference.")
    memo = calibration_selectors.calibration_memo_markdown(round=round_)
    assert "Round 1: anchor 1 means hedged inference." in memo and memo.startswith("# Calibration")
    calibration_services.workshop_note_save(round=round_, by=protocol.admin, attribute=item.attribute,
                                            turn=item.turn, response=item.response,
                                            text="<script>alert(1)</script>\n# not a heading")
    memo = calibration_selectors.calibration_memo_markdown(round=round_)
    assert "<script>" not in memo and "\\<script\\>alert(1)\\</script\\>\n  \\# not a heading" in memo


def test_reopening_needs_a_reason_and_records_it(protocol):
    closed = protocol.round(CLOSED)
    with pytest.raises(ValidationError, match="say why"):
        calibration_services.round_reopen(round=closed, by=protocol.admin, reason=" ")
    assert protocol.round(CLOSED).status == "closed"
    calibration_services.round_reopen(round=closed, by=protocol.admin,
                                      reason="a reviewer's codings were lost in transit")
    assert protocol.round(CLOSED).status == "open"
    assert AuditEvent.objects.filter(action="round.reopen", data__reason__startswith="a reviewer").exists()


# --- the retained panel and the main round -----------------------------------------------------------------------


def test_panel_retention_needs_a_reason_off_the_ranking(protocol):
    study, admin = protocol.study, protocol.admin

    def retained():
        return sorted(study.members.filter(retained=True).values_list("user__username", flat=True))

    calibration_services.panel_retain(study=study, by=admin, usernames=["rev-a", "rev-b"], k=2)
    with pytest.raises(ValidationError, match="give the reason"):
        calibration_services.panel_retain(study=study, by=admin, usernames=["rev-a", "rev-c"], k=2)
    assert retained() == ["rev-a", "rev-b"]
    calibration_services.panel_retain(study=study, by=admin, usernames=["rev-a", "rev-c"], k=2,
                                      reason="rev-b is away for the main round")
    assert retained() == ["rev-a", "rev-c"]
    calibration_services.panel_retain(study=study, by=admin, usernames=["rev-a", "rev-b"], k=2)
    assert retained() == ["rev-a", "rev-b"]


def test_without_a_reserved_pool_no_seen_gold_becomes_a_check_item(protocol):
    calibration_services.panel_retain(study=protocol.study, by=protocol.admin, usernames=["rev-a", "rev-b"], k=2)
    summary = calibration_services.main_round_assign(study=protocol.study, by=protocol.admin, check_items=2)
    assert summary["check_items"] == 0 and summary["check_conversations_fewest"] == 0


def test_a_gold_pool_is_coded_by_experts_only_and_runs_beside_a_calibration_round(protocol):
    round_ = calibration_services.calibration_round_create(study=protocol.study, by=protocol.admin, number=POOL,
                                                           gold_pool=True)
    calibration_services.calibration_set_sample(round=round_, by=protocol.admin, n=2, seed=5)
    calibration_services.calibration_round_open(round=round_, by=protocol.admin)  # round 2 is open too
    coders = set(Assignment.objects.filter(round=round_).values_list("coder__username", flat=True))
    assert coders == {"expert", "expert-2"}
    with pytest.raises(ValidationError, match="no longer a draft"):
        calibration_services.calibration_round_create(study=protocol.study, by=protocol.admin, number=POOL)


# --- reopening after feedback -------------------------------------------------------------------------------------


def first_item(round_: Round):
    item = round_.items.select_related("turn").order_by("position").first()
    return item.turn, attribute("U1")


def test_reopening_keeps_what_feedback_compared_with_gold_locked(protocol):
    closed = protocol.round(CLOSED)
    reviewer = protocol.reviewers[1]
    turn, u1 = first_item(closed)
    before = Judgment.objects.get(round=closed, coder=reviewer, attribute=u1, turn=turn)
    calibration_services.round_reopen(round=closed, by=protocol.admin, reason="a late reviewer joins")
    with pytest.raises(ValidationError, match="compared with gold in your feedback"):
        annotation_services.judgment_save(round=protocol.round(CLOSED), by=reviewer, attribute=u1, turn=turn,
                                          score=(before.score + 1) % 5)
    assert Judgment.objects.get(pk=before.pk).score == before.score
    assert not Assignment.objects.filter(round=closed, feedback_locked=False).exists()


def test_reopening_a_calibration_round_keeps_the_completions_feedback_compared(protocol):
    """A response added while a calibration round was closed sends no compared item back to its coder's queue
    when it reopens: the item is locked, its coder could never code the response, and the item would stay short for
    good. (A main round's items go back: tests/annotation/test_response_added.py.)"""
    closed = protocol.round(CLOSED)
    done = timezone.now() - timedelta(hours=1)
    Assignment.objects.filter(round=closed).update(completed_at=done)
    Study.objects.filter(pk=protocol.study.pk).update(model_slots=[])  # every slot is coded: Mistral too
    turn, _ = first_item(closed)
    ModelResponseFactory(turn=turn, model_slot="Mistral")
    reopened = calibration_services.round_reopen(round=closed, by=protocol.admin, reason="a late model")
    assert reopened.turns_back_in_queues == 0
    assert not Assignment.objects.filter(round=closed).exclude(completed_at=done).exists()
    assert not Assignment.objects.filter(round=closed, feedback_locked=False).exists()
    assert AuditEvent.objects.get(action="round.reopen").data == {"reason": "a late model", "turns_back_in_queues": 0}
    with pytest.raises(ValidationError, match="is open, not closed"):  # the lock goes with the refusal
        calibration_services.round_reopen(round=protocol.round(OPEN), by=protocol.admin, reason="by mistake")
    assert not Assignment.objects.filter(round=protocol.round(OPEN), feedback_locked=True).exists()


def test_a_member_who_joined_after_feedback_gets_the_set_on_reopening_and_can_code_it(protocol):
    closed = protocol.round(CLOSED)
    late = StudyMemberFactory(study=protocol.study, role="reviewer").user
    calibration_services.round_reopen(round=closed, by=protocol.admin, reason="a late reviewer joins")
    queue = Assignment.objects.filter(round=closed, coder=late)
    assert queue.count() == closed.items.count() and not queue.filter(feedback_locked=True).exists()
    turn, u1 = first_item(closed)
    saved = annotation_services.judgment_save(round=protocol.round(CLOSED), by=late, attribute=u1, turn=turn, score=2)
    assert saved.score == 2


def test_the_admin_is_told_the_reopen_rule_before_confirming(client, protocol):
    client.force_login(protocol.admin)
    page = client.get(f"/studies/{protocol.study.slug}/").content.decode()
    assert calibration_services.REOPEN_RULE["calibration"] in page


def test_a_locked_item_is_shown_read_only_with_the_reason(client, protocol):
    closed = protocol.round(CLOSED)
    calibration_services.round_reopen(round=closed, by=protocol.admin, reason="a late reviewer joins")
    client.force_login(protocol.reviewers[0])
    page = with_parts(client, client.get(f"/rounds/{closed.pk}/turns/1/"))
    assert "compared with gold" not in page  # the service's words are for refusals; the page says it plainly
    assert "feedback against gold before the round was reopened" in page
    assert 'type="radio"' in page and "disabled" in page


def test_gold_is_agreed_by_experts_of_the_panel_who_scored_the_item(admin_user):
    """"Who agreed" names experts of the gold panel who scored the item (docs/reference.md#gold): a reviewer, an
    expert who never scored it, or an expert taken off since whose own score is another value are refused, each
    named with the reason, nothing written; an expert still on the study may agree to a value they did not code,
    and the consensus screen shows their own score beside their name. Before, any name the form offered (every
    expert, now or before) was recorded, whatever they had scored."""
    round_ = RoundFactory(status="open", study=StudyFactory(status="open"))
    item = RoundItemFactory(round=round_)
    u1 = attribute("U1")
    people = {name: UserFactory(username=name) for name in ("ex-1", "ex-2", "ex-silent", "rev-1")}
    for name, user in people.items():
        StudyMemberFactory(study=round_.study, user=user, role="reviewer" if name == "rev-1" else "expert")
    for name, score in (("ex-1", 1), ("ex-2", 2), ("rev-1", 2)):
        annotation_services.judgment_save(round=round_, by=people[name], attribute=u1, turn=item.turn, score=score)
    annotation_services.study_member_remove(
        member=StudyMember.objects.get(study=round_.study, user=people["ex-2"]), by=admin_user)

    def record(score, *names):
        return calibration_services.gold_record(round=round_, by=admin_user, attribute=u1, turn=item.turn,
                                                response=None, score=score, agreed_by=[people[n] for n in names])

    before = fingerprint()
    with pytest.raises(ValidationError) as refused:
        record(1, "rev-1", "ex-silent", "ex-2", "ex-1")
    assert refused.value.message_dict == {"agreed_by": [
        "who agreed: ex-2, taken off the study since, scored 2, not 1; ex-silent did not score this item in "
        "calibration-1; rev-1 is not an expert of the study (now or before) (only the gold panel's experts who scored "
        "the item agree to its gold, and one taken off the study only to their own score)"]}
    assert fingerprint() == before
    gold = record(2, "ex-1", "ex-2")  # the panel settled on 2: ex-1 agreed to it, ex-2 coded it
    assert sorted(u.username for u in gold.agreed_by.all()) == ["ex-1", "ex-2"]
    shown = next(shown for shown in calibration_selectors.consensus_items(round=round_) if shown.attribute == u1)
    assert shown.agreed == [("ex-1", 1), ("ex-2", None)]


def test_an_expert_named_among_who_agreed_to_gold_keeps_their_score(admin_user):
    """Who agreed to a gold value is checked when it is recorded, against the experts' scores then
    (docs/reference.md#gold). ex-2 scored 2 and agreed to the gold 2; changing their score to 1 in the still open
    round was saved, and, once they were taken off the study, the gold named as agreeing a former expert whose
    score is not its value, which its recording refuses: "agreed by" had gone stale, silently. The change is
    refused, the score stays, and it may change again once the gold no longer names them."""
    round_ = RoundFactory(status="open", study=StudyFactory(status="open"))
    item = RoundItemFactory(round=round_)
    u1, u2 = attribute("U1"), attribute("U2")
    people = {name: UserFactory(username=name) for name in ("ex-1", "ex-2")}
    for user in people.values():
        StudyMemberFactory(study=round_.study, user=user, role="expert")

    def save(name, code, score):
        return annotation_services.judgment_save(round=round_, by=people[name], attribute=code, turn=item.turn,
                                                 score=score)

    for name, score in (("ex-1", 1), ("ex-2", 2)):
        save(name, u1, score)
        save(name, u2, score)

    def record(score, *names):
        return calibration_services.gold_record(round=round_, by=admin_user, attribute=u1, turn=item.turn,
                                                response=None, score=score, agreed_by=[people[n] for n in names])

    record(2, "ex-1", "ex-2")
    before = fingerprint()
    for score in (1, None):
        with pytest.raises(annotation_services.ItemLockedError) as refused:
            save("ex-2", u1, score)
        assert refused.value.message_dict == {"score": [
            "you agreed to the gold value 2 of this item: your score stays 2 while the gold names you among who "
            "agreed (a study admin can take your name off it on the consensus screen)"]}
        assert refused.value.current.score == 2
    assert fingerprint() == before
    assert save("ex-2", u2, 1).score == 1  # another attribute of the item: no gold names them there
    assert save("ex-1", u1, 1).score == 1  # the same score again: nothing changes
    record(2, "ex-1")
    assert save("ex-2", u1, 1).score == 1
