"""A reviewer's feedback across a reserved gold pool: round 1 coded by everyone, round 2 a gold pool the experts
alone coded, round 3 coded by everyone. The reviewer's change is since the last round they were compared with gold in
(round 1), as the report's Δ counts it, not since the pool, which holds nothing of theirs."""

from __future__ import annotations

import pytest

from calibration import selectors as calibration_selectors
from metrics.models import MetricRun
from tests import scenarios

pytestmark = pytest.mark.django_db


def test_the_change_is_since_the_reviewers_last_round_not_since_a_gold_pool_between():
    protocol = scenarios.protocol_study()
    scenarios.calibration_round_done(protocol, 1)
    scenarios.gold_pool_done(protocol, 2)
    scenarios.calibration_round_done(protocol, 3)
    report = MetricRun.objects.filter(study=protocol.study, status="succeeded").latest("pk").result
    assert report["calibration"]["rounds"] == ["calibration-1", "calibration-3"]
    for reviewer in protocol.reviewers:
        feedback = calibration_selectors.reviewer_feedback(round=protocol.round(3), user=reviewer)
        expected = report["calibration"]["reviewers"][reviewer.username]["delta_pp"]
        assert expected is not None
        assert feedback.previous_round == "calibration-1", reviewer.username
        assert feedback.delta_pp == pytest.approx(expected), reviewer.username
