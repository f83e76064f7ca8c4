"""State transitions are compare-and-set: acting on a page that went stale answers "changed meanwhile, reload"
and changes nothing more; acting on an object already in the target state says which state it is in."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from annotation import services
from annotation.models import ReviewerAlert, Round
from annotation.services import ChangedMeanwhile
from audit.models import AuditEvent
from calibration import services as calibration_services
from tests.factories import RoundFactory, RoundItemFactory, StudyFactory, attribute

pytestmark = pytest.mark.django_db


def test_closing_from_a_stale_page_says_changed_meanwhile(admin_user):
    round_ = RoundFactory()
    stale = Round.objects.get(pk=round_.pk)
    services.round_close(round=round_, by=admin_user)
    with pytest.raises(ChangedMeanwhile, match="changed meanwhile; reload"):
        services.round_close(round=stale, by=admin_user)
    assert AuditEvent.objects.filter(action="round.close").count() == 1


def test_closing_a_closed_round_says_it_is_closed(admin_user):
    round_ = RoundFactory(status="closed")
    with pytest.raises(ValidationError, match="calibration-1 is closed, not open"):
        services.round_close(round=round_, by=admin_user)


def test_reopening_is_for_admins_with_a_reason(admin_user, reviewer):
    round_ = RoundFactory(status="closed")
    with pytest.raises(PermissionDenied):
        services.round_reopen(round=round_, by=reviewer, reason="because")
    with pytest.raises(ValidationError, match="say why"):
        services.round_reopen(round=round_, by=admin_user, reason="  ")
    services.round_reopen(round=round_, by=admin_user, reason="lost codings")
    assert Round.objects.get(pk=round_.pk).status == "open"
    assert AuditEvent.objects.get(action="round.reopen").data == {"reason": "lost codings"}


def test_resolving_an_alert_twice_says_changed_meanwhile(admin_user, reviewer):
    alert = ReviewerAlert.objects.create(study=StudyFactory(), reviewer=reviewer, agreement=0.5, threshold=0.7,
                                         n_items=20)
    stale = ReviewerAlert.objects.get(pk=alert.pk)
    services.alert_resolve(alert=alert, by=admin_user)
    with pytest.raises(ChangedMeanwhile):
        services.alert_resolve(alert=stale, by=admin_user)


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
