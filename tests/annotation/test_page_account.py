"""A coding page's changes land in the judgments of the account that opened it, or nowhere.

The page names its account with every change it sends (``coder``, its ``data-coder``); when the browser's session
has become another account's since (signed in in another tab), each change is answered 401, which the page turns
into its sign-in dialog, keeping the change, and nothing is written for the other account. A save that expects a
judgment the coder no longer has (purged since) is stale, never a new judgment."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotation import services
from annotation.models import Assignment, Judgment
from tests.factories import AssignmentFactory, attribute

pytestmark = pytest.mark.django_db


@pytest.fixture
def both_assigned(round_, reviewer, other_reviewer, response):
    """The same calibration item at position 1 for both reviewers (as a calibration set gives it)."""
    for user in (reviewer, other_reviewer):
        AssignmentFactory(round=round_, coder=user, turn=response.turn, position=1)
    return round_


def _posts(round_id: int, page_of: int) -> dict[str, tuple[str, dict]]:
    return {
        "autosave": (reverse("judgment-save", args=[round_id, 1]),
                     {"coder": page_of, "form_id": "t-U1", "attribute": "U1", "version": "0", "score": "2"}),
        "comment and flags": (reverse("turn-note", args=[round_id, 1]),
                              {"coder": page_of, "comment": "from the other page", "flags": ["discuss"]}),
        "complete": (reverse("turn-complete", args=[round_id, 1]), {"coder": page_of, "confirm": "1"}),
        "time on task": (reverse("turn-time", args=[round_id, 1]), {"coder": page_of, "seconds": "15"}),
    }


@pytest.mark.parametrize("what", ["autosave", "comment and flags", "complete", "time on task"])
def test_a_change_from_a_page_another_account_opened_lands_nowhere(client, both_assigned, reviewer, other_reviewer,
                                                                   what):
    client.force_login(other_reviewer)  # the reviewer's page is open; another account signed in in another tab
    url, body = _posts(both_assigned.pk, page_of=reviewer.pk)[what]
    answer = client.post(url, body)
    assert answer.status_code == 401
    assert "opened by another account" in answer.content.decode()
    assert not Judgment.objects.filter(coder__in=[reviewer, other_reviewer]).exists()
    for assignment in Assignment.objects.filter(round=both_assigned):
        assert (assignment.comment, assignment.flags, assignment.completed_at, assignment.active_seconds) == \
            ("", [], None, 0)


def test_the_same_change_from_the_accounts_own_page_is_saved(client, both_assigned, other_reviewer):
    client.force_login(other_reviewer)
    url, body = _posts(both_assigned.pk, page_of=other_reviewer.pk)["autosave"]
    assert client.post(url, body).status_code == 200
    assert Judgment.objects.get(coder=other_reviewer).score == 2


def test_the_page_names_its_account_to_its_scripts_and_to_htmx(client, both_assigned, reviewer):
    client.force_login(reviewer)
    page = client.get(reverse("turn", args=[both_assigned.pk, 1])).content.decode()
    tag = re.search(r'<div class="turn-page"[^>]*>', page).group(0)
    assert f'data-coder="{reviewer.pk}"' in tag and f"hx-vals='{{\"coder\": \"{reviewer.pk}\"}}'" in tag


def test_a_save_expecting_a_judgment_the_coder_does_not_have_is_stale(client, both_assigned, reviewer,
                                                                      other_reviewer, response):
    services.judgment_save(round=both_assigned, by=reviewer, attribute=attribute("U1"), turn=response.turn, score=1)
    client.force_login(other_reviewer)
    answer = client.post(reverse("judgment-save", args=[both_assigned.pk, 1]),
                         {"form_id": "t-U1", "attribute": "U1", "version": "1", "score": "0"})  # no coder: an old page
    assert answer.status_code == 409
    text = answer.content.decode()
    assert 'data-state="stale"' in text and 'data-version="0"' in text and "removed since the page was loaded" in text
    assert not Judgment.objects.filter(coder=other_reviewer).exists()
    assert Judgment.objects.get(coder=reviewer).score == 1
