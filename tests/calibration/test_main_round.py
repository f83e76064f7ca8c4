"""Main-round assignment (calibration/services.py ``main_round_assign``), on the protocol study of
tests/calibration/conftest.py: round 2 decided and closed, a reserved gold pool of three turns coded and decided
(round 3), the top two of the ranking retained, and the main round assigned to them (half the conversations
double-coded, two hidden check items per queue). Built once for the module; every test only reads it."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from annotation.models import Assignment, Round
from calibration import services as calibration_services
from tests import scenarios

pytestmark = pytest.mark.django_db

CLOSED_ROUNDS = 1  # for the protocol fixture: round 1 closed with its metric run, round 2 open and coded
CLOSED, OPEN, POOL = 1, 2, 3


@pytest.fixture(scope="module")
def main_round_built(protocol_study_id, shared_state):
    """(main round's pk, the assignment's summary), inside the protocol study's module transaction."""
    with shared_state():
        protocol = scenarios.Protocol.load(protocol_study_id)
        scenarios.calibration_round_gold(protocol, protocol.round(OPEN))
        scenarios.calibration_round_close(protocol, protocol.round(OPEN))
        scenarios.gold_pool_done(protocol, POOL)
        calibration_services.panel_retain(study=protocol.study, by=protocol.admin, usernames=["rev-a", "rev-b"], k=2)
        summary = calibration_services.main_round_assign(study=protocol.study, by=protocol.admin, overlap=0.5,
                                                         check_items=2, seed=3)
        yield Round.objects.get(study=protocol.study, kind="main").pk, summary


@pytest.fixture
def main_round(main_round_built, protocol):
    pk, summary = main_round_built
    return Round.objects.get(pk=pk), dict(summary)


def test_main_round_goes_to_the_retained_panel_only(main_round):
    main, _ = main_round
    coders = set(Assignment.objects.filter(round=main).values_list("coder__username", flat=True))
    assert coders == {"rev-a", "rev-b"}


def test_main_round_double_codes_a_share_and_hides_check_items_in_every_queue(main_round):
    main, summary = main_round
    assert summary["double_coded_conversations"] > 0 and summary["check_items"] == 4
    assert Assignment.objects.filter(round=main, is_check_item=True).count() == 4


def test_calibration_turns_come_back_in_the_main_round_only_as_check_items(protocol, main_round):
    main, _ = main_round
    calibration_turns = set(protocol.round(CLOSED).items.values_list("turn_id", flat=True))
    regular = Assignment.objects.filter(round=main, is_check_item=False)
    assert not regular.filter(turn_id__in=calibration_turns).exists()


def test_main_round_queues_follow_topic_order_check_items_included(main_round):
    main, _ = main_round
    for coder in ("rev-a", "rev-b"):
        queue = Assignment.objects.filter(round=main, coder__username=coder).select_related("turn__conversation")
        topics = [a.turn.conversation.topic for a in queue.order_by("position")]
        assert topics == sorted(topics), coder


def test_check_items_come_from_the_reserved_pool_never_from_what_the_reviewer_saw(protocol, main_round):
    main, summary = main_round
    pool = set(protocol.round(POOL).items.values_list("turn_id", flat=True))
    assert not Assignment.objects.filter(round=protocol.round(POOL), coder__in=protocol.reviewers).exists()
    for reviewer in protocol.reviewers[:2]:
        seen = set(Assignment.objects.filter(round__kind="calibration", coder=reviewer)
                   .values_list("turn__conversation_id", flat=True))
        checks = Assignment.objects.filter(round=main, coder=reviewer, is_check_item=True)
        assert checks.count() == 2
        assert set(checks.values_list("turn_id", flat=True)) <= pool
        assert not set(checks.values_list("turn__conversation_id", flat=True)) & seen
    assert summary["check_conversations_fewest"] == 2


def test_main_round_is_assigned_once(protocol, main_round):
    with pytest.raises(ValidationError, match="already has assignments"):
        calibration_services.main_round_assign(study=protocol.study, by=protocol.admin)
