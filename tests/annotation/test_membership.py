"""A reviewer removed from a study loses its pages and saves at once; their judgments stay."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation.models import Judgment, Round, StudyMember
from tests.conftest import sign_in

pytestmark = pytest.mark.django_db


@pytest.fixture
def removed(client):
    call_command("load_demo", "--quiet")
    round_ = Round.objects.get(study__slug="demo", kind="calibration", number=1)
    assert sign_in(client, "demo-reviewer", "cab-demo")
    save = client.post(reverse("judgment-save", args=[round_.pk, 1]), {"attribute": "U1", "score": "1"})
    assert save.status_code == 200
    StudyMember.objects.filter(study=round_.study, user__username="demo-reviewer").delete()
    return round_


def test_a_removed_reviewer_no_longer_sees_the_round(client, removed):
    assert f"/rounds/{removed.pk}/" not in client.get(reverse("home")).content.decode()
    assert client.get(reverse("queue", args=[removed.pk])).status_code == 404
    assert client.get(reverse("turn", args=[removed.pk, 1])).status_code == 404


def test_a_removed_reviewer_can_no_longer_save_complete_or_report_time(client, removed):
    assert client.post(reverse("judgment-save", args=[removed.pk, 1]),
                       {"attribute": "U1", "score": "2", "version": "1"}).status_code == 404
    assert client.post(reverse("turn-complete", args=[removed.pk, 1])).status_code == 404
    assert client.post(reverse("turn-time", args=[removed.pk, 1]), {"seconds": "30"}).status_code == 404
    kept = Judgment.objects.get(round=removed, coder__username="demo-reviewer")
    assert kept.score == 1, "the judgments made before the removal stay as they were"


def test_the_save_service_refuses_someone_who_is_not_a_member(removed):
    from django.contrib.auth import get_user_model
    from django.core.exceptions import PermissionDenied

    from annotation import services
    from tests.factories import attribute

    reviewer = get_user_model().objects.get(username="demo-reviewer")
    turn = removed.items.get(position=1).turn
    with pytest.raises(PermissionDenied, match="not a member of this study"):
        services.judgment_save(round=removed, by=reviewer, attribute=attribute("U1"), turn=turn, score=2)
    assert Judgment.objects.get(round=removed, coder=reviewer).score == 1
