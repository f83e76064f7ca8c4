"""An archived study's members and judgments stay as they are: nobody is taken off it (nor added, nor given another
role: tests/annotation/test_study_setup.py, tests/annotation/test_admin.py), and a coder's write into it is refused
in the study's words, not a round's ("closed" is what a round says, and an archived study's rounds are all
closed)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.urls import reverse

from annotation import services
from annotation.demo import DEMO_PASSWORD, DEMO_USERS
from annotation.models import Assignment, Judgment, Round, Study, StudyMember
from tests.conftest import sign_in
from tests.factories import attribute
from tests.form_fuzz import fingerprint

pytestmark = pytest.mark.django_db

ARCHIVED = "study &#x27;demo&#x27; is archived: "


@pytest.fixture
def archived(admin_user) -> Round:
    """The demo study with its reviewer's judgment of U1 on the first item of calibration-1, every round closed,
    archived."""
    call_command("load_demo", "--quiet")
    round_ = Round.objects.get(study__slug="demo", kind="calibration", number=1)
    reviewer = get_user_model().objects.get(username=DEMO_USERS["reviewer"])
    services.judgment_save(round=round_, by=reviewer, attribute=attribute("U1"), turn=round_.items.get(position=1).turn,
                           score=1)
    for open_round in round_.study.rounds.filter(status=Round.Status.OPEN):
        services.round_close(round=open_round, by=admin_user)
    services.study_archive(study=round_.study, by=admin_user)
    round_.refresh_from_db()
    return round_


def test_nobody_is_taken_off_an_archived_study(client, archived, admin_user):
    """The service, and the study page, which no longer offers it: the refusal says why, nothing is written.
    Before, the member was taken off (and made a former member) as in a study still running."""
    member = StudyMember.objects.select_related("study", "user").get(study=archived.study,
                                                                     user__username=DEMO_USERS["reviewer"])
    before = fingerprint()
    with pytest.raises(ValidationError, match="study 'demo' is archived: its members no longer change: nobody is "
                                              "added, taken off or given another role"):
        services.study_member_remove(member=member, by=admin_user)
    client.force_login(admin_user)
    dashboard = client.get(reverse("study-dashboard", args=["demo"])).content.decode()
    assert "its members no longer change" in dashboard
    assert reverse("member-remove", args=["demo", member.pk]) not in dashboard
    page = client.post(reverse("member-remove", args=["demo", member.pk]), follow=True)
    assert page.status_code == 200
    assert ARCHIVED + "its members no longer change" in page.content.decode()
    assert fingerprint() == before


def test_a_coders_write_into_an_archived_study_says_the_study_is_archived(client, archived):
    """The autosave (its answer and the service), the item's note, the turn's completion and time on task: each
    refused, in the words the judgments import uses for an archived study; before, each said the round was closed."""
    reviewer = get_user_model().objects.get(username=DEMO_USERS["reviewer"])
    assert sign_in(client, reviewer.username, DEMO_PASSWORD)
    before = fingerprint()
    save = client.post(reverse("judgment-save", args=[archived.pk, 1]),
                       {"attribute": "U1", "score": "2", "version": "1"})
    assert save.status_code == 422
    assert ARCHIVED + "its judgments and labels no longer change" in save.content.decode()
    assert "is closed" not in save.content.decode()
    with pytest.raises(services.ItemLockedError, match="study 'demo' is archived: its judgments and labels no longer "
                                                       "change") as refused:
        services.judgment_save(round=archived, by=reviewer, attribute=attribute("U1"),
                               turn=archived.items.get(position=1).turn, score=2)
    assert refused.value.current is not None and refused.value.current.score == 1
    note = client.post(reverse("turn-note", args=[archived.pk, 1]), {"comment": "too late"})
    assert note.status_code == 422 and ARCHIVED + "its items&#x27; notes no longer change" in note.content.decode()
    assignment = Assignment.objects.get(round=archived, coder=reviewer, position=1)
    with pytest.raises(ValidationError, match="study 'demo' is archived: its turns are no longer completed"):
        services.assignment_complete(assignment=assignment, by=reviewer)
    time = client.post(reverse("turn-time", args=[archived.pk, 1]), {"seconds": "30"})
    assert time.status_code == 409
    assert time.content.decode() == "study 'demo' is archived: time on task is no longer recorded"
    assert fingerprint() == before
    assert Judgment.objects.get(round=archived, coder=reviewer).score == 1


def test_a_closed_round_of_a_study_still_running_says_the_round_is_closed(client, archived):
    """The study's words are for an archived study only: a round closed in a running study says it is closed."""
    Study.objects.filter(pk=archived.study_id).update(status=Study.Status.OPEN)
    reviewer = get_user_model().objects.get(username=DEMO_USERS["reviewer"])
    with pytest.raises(services.ItemLockedError, match="calibration-1 is closed: judgments can no longer change"):
        services.judgment_save(round=archived, by=reviewer, attribute=attribute("U1"),
                               turn=archived.items.get(position=1).turn, score=2)
