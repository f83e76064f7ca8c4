"""Every round, main included, is opened, closed and reopened from the study page; closing with coders unfinished
asks first and names them; one calibration round is open at a time unless the admin confirms; a closed round's
gold changes only with a recorded reason, and each change starts a new metrics run."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from annotation.models import Assignment, Judgment, Round
from audit.models import AuditEvent
from calibration import services
from metrics.models import MetricRun
from tests.factories import (
    AssignmentFactory,
    RoundFactory,
    RoundItemFactory,
    StudyFactory,
    StudyMemberFactory,
    attribute,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def study(reviewer):
    study = StudyFactory(slug="life", status="open")
    StudyMemberFactory(study=study, user=reviewer, role="reviewer")
    return study


def _dashboard(client) -> str:
    return client.get(reverse("study-dashboard", args=["life"])).content.decode()


def test_the_main_round_opens_from_the_study_page_once_assigned(client, admin_user, reviewer, study):
    main = RoundFactory(study=study, kind="main", number=1, status="draft")
    client.force_login(admin_user)
    assert "Assign it to the retained panel below, then open it." in _dashboard(client)
    page = client.post(reverse("round-open", args=["life", main.pk]), follow=True).content.decode()
    assert "main has no assignments yet" in page and Round.objects.get(pk=main.pk).status == "draft"
    AssignmentFactory(round=main, coder=reviewer)
    assert "Open the main round (1 assignments)" in _dashboard(client)
    page = client.post(reverse("round-open", args=["life", main.pk]), follow=True).content.decode()
    assert "main is open: the retained panel sees its queues." in page
    assert Round.objects.get(pk=main.pk).status == "open"
    assert AuditEvent.objects.filter(action="round.open", actor=admin_user, target="round:main").exists()


def test_closing_with_coders_unfinished_names_them_and_waits_for_confirmation(client, admin_user, reviewer, study):
    main = RoundFactory(study=study, kind="main", number=1, status="open")
    AssignmentFactory(round=main, coder=reviewer)
    client.force_login(admin_user)
    url = reverse("round-close", args=["life", main.pk])
    page = client.post(url).content.decode()
    assert "These coders have not finished" in page and "<td>reviewer</td><td>0</td><td>1</td>" in page
    assert Round.objects.get(pk=main.pk).status == "open" and not MetricRun.objects.exists()
    page = client.post(url, {"confirm": "1"}, follow=True).content.decode()
    run = MetricRun.objects.get()
    assert f"main closed; metrics run {run.pk} was requested." in page  # handed to the broker after the commit
    assert Round.objects.get(pk=main.pk).status == "closed" and run.trigger == "round-closed"


def test_closing_when_everyone_finished_needs_no_confirmation(client, admin_user, reviewer, study):
    round_ = RoundFactory(study=study, status="open")
    AssignmentFactory(round=round_, coder=reviewer)
    Assignment.objects.update(completed_at="2026-01-01T00:00Z")
    client.force_login(admin_user)
    client.post(reverse("round-close", args=["life", round_.pk]))
    assert Round.objects.get(pk=round_.pk).status == "closed"


def test_one_calibration_round_is_open_at_a_time_unless_confirmed(admin_user, reviewer, study):
    RoundFactory(study=study, number=1, status="open")
    second = RoundFactory(study=study, number=2, status="draft")
    RoundItemFactory(round=second)
    with pytest.raises(ValidationError, match="calibration-1 is still open"):
        services.round_open(round=second, by=admin_user)
    assert Round.objects.get(pk=second.pk).status == "draft"
    services.round_open(round=second, by=admin_user, allow_parallel=True)
    assert Round.objects.get(pk=second.pk).status == "open"
    assert Assignment.objects.filter(round=second, coder=reviewer).count() == 1


def test_a_closed_rounds_gold_changes_only_with_a_reason_and_starts_a_run(admin_user, study):
    item = RoundItemFactory(round=RoundFactory(study=study, status="open"))
    u1 = attribute("U1")
    services.gold_record(round=item.round, by=admin_user, attribute=u1, turn=item.turn, response=None, score=1)
    Round.objects.filter(pk=item.round.pk).update(status="closed")
    item.round.refresh_from_db()
    with pytest.raises(ValidationError, match="its gold is locked"):
        services.gold_record(round=item.round, by=admin_user, attribute=u1, turn=item.turn, response=None, score=2)
    assert Judgment.objects.get(is_gold=True).score == 1 and not MetricRun.objects.exists()
    services.gold_record(round=item.round, by=admin_user, attribute=u1, turn=item.turn, response=None, score=2,
                         reason="the panel re-read anchor 2")
    assert Judgment.objects.get(is_gold=True).score == 2
    assert MetricRun.objects.get().trigger == "gold-changed"
    event = AuditEvent.objects.get(action="gold.change_after_close")
    assert event.data["reason"] == "the panel re-read anchor 2" and event.data["score"] == 2
    with pytest.raises(ValidationError, match="unanimous items are accepted while it is open"):
        services.gold_accept_unanimous(round=item.round, by=admin_user)
