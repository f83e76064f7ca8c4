"""The home page (annotation/views.py ``home``) of an expert — their gold-panel work by round, and the consensus
screens of closed calibration rounds when the study lets experts see them — next to a reviewer's, which is as it
was; and the study setting that allows it (``Study.experts_see_consensus``, on the study's creation and settings
forms)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import Schema, Study
from audit.models import AuditEvent
from tests.factories import AssignmentFactory, RoundFactory, StudyFactory, StudyMemberFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def study(reviewer, expert):
    """Calibration round 1 closed, round 2 open: the reviewer and the expert each have its two turns, one done."""
    study = StudyFactory(name="Gold study", status="open")
    StudyMemberFactory(study=study, user=reviewer, role="reviewer")
    StudyMemberFactory(study=study, user=expert, role="expert")
    closed = RoundFactory(study=study, number=1, status="closed")
    open_ = RoundFactory(study=study, number=2, status="open")
    for coder in (reviewer, expert):
        AssignmentFactory(round=closed, coder=coder, position=1, completed_at="2026-01-01T00:00Z")
        AssignmentFactory(round=open_, coder=coder, position=1, completed_at="2026-01-01T00:00Z")
        AssignmentFactory(round=open_, coder=coder, position=2)
    return study


def home(client, user) -> str:
    client.force_login(user)
    response = client.get(reverse("home"))
    assert response.status_code == 200
    return response.content.decode()


def rounds(study) -> tuple[int, int]:
    return (study.rounds.get(number=1).pk, study.rounds.get(number=2).pk)


def test_an_expert_sees_what_to_code_by_round_with_progress_and_the_queue(client, study, expert):
    _, open_ = rounds(study)
    page = home(client, expert)
    assert "Your work on the gold panel" in page and "Gold study" in page
    assert "<td>calibration-2</td>" in page and "<td>1 / 2 turns</td>" in page
    assert f'href="/rounds/{open_}/turns/2/">Resume</a>' in page
    assert f'href="/rounds/{open_}/">Queue</a>' in page


def test_an_expert_gets_consensus_links_only_when_the_study_allows_it(client, study, expert):
    closed, open_ = rounds(study)
    page = home(client, expert)
    assert "/consensus/" not in page
    assert "has not opened the consensus screens to experts" in page
    Study.objects.filter(pk=study.pk).update(experts_see_consensus=True)
    page = home(client, expert)
    assert f'href="{reverse("consensus", args=[closed])}">calibration-1</a>' in page
    assert reverse("consensus", args=[open_]) not in page, "an open round's consensus is not linked"


def test_an_expert_is_shown_no_gold_bearing_admin_action(client, study, expert):
    Study.objects.filter(pk=study.pk).update(experts_see_consensus=True)
    page = home(client, expert)
    closed, _ = rounds(study)
    for admin_only in (reverse("study-dashboard", args=[study.slug]), reverse("gold-record", args=[closed]),
                       reverse("workshop", args=[closed]), reverse("panel", args=[study.slug]),
                       reverse("feedback", args=[closed]), reverse("study-create")):
        assert admin_only not in page, admin_only


def test_the_reviewers_home_is_unchanged(client, study, reviewer):
    Study.objects.filter(pk=study.pk).update(experts_see_consensus=True)
    closed, open_ = rounds(study)
    page = home(client, reviewer)
    assert "<h1>Your work</h1>" in page and "gold panel" not in page
    assert ("<td>Gold study</td>\n      <td>calibration-2</td>\n      <td>1 / 2 turns</td>\n"
            f'      <td><a class="resume" href="/rounds/{open_}/turns/2/">Resume</a> · '
            f'<a href="/rounds/{open_}/">Queue</a></td>') in page
    assert f'<li><a href="/rounds/{closed}/feedback/">Gold study · calibration-1</a></li>' in page
    assert "/consensus/" not in page, "reviewers never see the consensus"


def test_someone_expert_in_one_study_and_reviewer_in_another_sees_both(client, study, expert):
    other = StudyFactory(name="Other study", status="open")
    StudyMemberFactory(study=other, user=expert, role="reviewer")
    round_ = RoundFactory(study=other, number=1, status="open")
    AssignmentFactory(round=round_, coder=expert, position=1)
    page = home(client, expert)
    work, gold = page.split("Your work on the gold panel")
    assert "<td>Other study</td>" in work and "Gold study" not in work
    assert "Gold study" in gold and "Other study" not in gold.split("<h2>Studies</h2>")[0]


def test_an_expert_with_nothing_open_still_gets_the_consensus(client, study, expert):
    study.rounds.filter(number=2).update(status="closed")
    Study.objects.filter(pk=study.pk).update(experts_see_consensus=True)
    page = home(client, expert)
    assert "Nothing to code in this study right now." in page
    assert page.count('class="consensus-link"') == 2


# --- the study setting ---------------------------------------------------------------------------------------------


def test_the_study_form_offers_the_setting_with_its_explanation(client, admin_user):
    client.force_login(admin_user)
    page = client.get(reverse("study-create")).content.decode()
    assert 'name="experts_see_consensus"' in page
    assert "experts see the consensus" in page and "Reviewers never see it." in page
    created = client.post(reverse("study-create"), {
        "slug": "with-consensus", "name": "With consensus", "schema": Schema.objects.get(slug="cab-v1").pk,
        "model_slots_text": "GPT, Claude", "check_threshold": "0.7", "check_min_items": "20",
        "experts_see_consensus": "on"})
    assert created.status_code == 302
    assert Study.objects.get(slug="with-consensus").experts_see_consensus is True


def queries_of_home(client, user) -> int:
    client.force_login(user)
    client.get(reverse("home"))  # the first request after signing in does more (the session, the sign-in record)
    with CaptureQueriesContext(connection) as queries:
        assert client.get(reverse("home")).status_code == 200
    return len(queries)


def expert_in(expert, studies: range) -> None:
    for number in studies:
        study = StudyFactory(name=f"Study {number}", status="open", experts_see_consensus=True)
        StudyMemberFactory(study=study, user=expert, role="expert")
        for round_number in (1, 2):
            RoundFactory(study=study, number=round_number, status="closed")
        AssignmentFactory(round=RoundFactory(study=study, number=3, status="open"), coder=expert, position=1)


def test_the_experts_home_needs_one_query_more_than_a_reviewers_at_any_size(client, expert, reviewer):
    """Whatever the session costs (tests/annotation/test_list_queries.py pins the reviewer's home): the expert's
    memberships are one query for everyone, their closed calibration rounds one more, however many studies."""
    expert_in(expert, range(1))
    one_study = queries_of_home(client, expert)
    expert_in(expert, range(1, 4))
    assert queries_of_home(client, expert) == one_study
    assert client.get(reverse("home")).content.decode().count('class="consensus-link"') == 2 * 4
    StudyMemberFactory(study=Study.objects.get(name="Study 0"), user=reviewer, role="reviewer")
    assert queries_of_home(client, reviewer) == one_study - 1


def test_an_admin_lets_the_experts_of_an_existing_study_see_the_consensus(client, study, admin_user, expert):
    client.force_login(admin_user)
    page = client.get(reverse("study-settings", args=[study.slug])).content.decode()
    assert 'name="experts_see_consensus"' in page and 'name="slug"' not in page and 'name="schema"' not in page
    saved = client.post(reverse("study-settings", args=[study.slug]), {
        "name": study.name, "check_threshold": "0.7", "check_min_items": "20", "experts_see_consensus": "on",
        "show_therapist_reference": "on", "slug": "renamed"}, follow=True)
    assert "Settings of study-" in saved.content.decode() and "changed: experts see the consensus." in \
        saved.content.decode()
    study.refresh_from_db()
    assert study.experts_see_consensus is True and study.slug != "renamed"
    event = AuditEvent.objects.get(action="study.settings", study_slug=study.slug)
    assert event.data["changed"] == {"experts_see_consensus": True}
    assert reverse("consensus", args=[rounds(study)[0]]) in home(client, expert)


def test_only_study_admins_change_a_studys_settings(client, study, expert, reviewer):
    for user in (expert, reviewer):
        client.force_login(user)
        assert client.get(reverse("study-settings", args=[study.slug])).status_code == 403
        assert client.post(reverse("study-settings", args=[study.slug]), {
            "name": "x", "check_threshold": "0.7", "check_min_items": "20", "experts_see_consensus": "on"},
        ).status_code == 403
    study.refresh_from_db()
    assert study.experts_see_consensus is False


def test_an_admin_shows_or_blinds_the_automated_coders_labels_on_the_settings_page(client, study, admin_user):
    client.force_login(admin_user)
    url = reverse("study-settings", args=[study.slug])
    assert 'name="method_labels"' in client.get(url).content.decode()
    base = {"name": study.name, "check_threshold": "0.7", "check_min_items": "20"}
    saved = client.post(url, {**base, "method_labels": "shown"}, follow=True)
    assert "changed: automated coders" in saved.content.decode()  # the message names the setting
    study.refresh_from_db()
    assert study.method_labels == Study.MethodLabels.SHOWN
    event = AuditEvent.objects.filter(action="study.settings", study_slug=study.slug).latest("pk")
    assert event.data["changed"]["method_labels"] == "shown"
    refused = client.post(url, {**base, "method_labels": "sometimes"})
    assert refused.status_code == 200 and "Select a valid choice" in refused.content.decode()
    client.post(url, base)  # a page from before the setting existed keeps it as it is
    study.refresh_from_db()
    assert study.method_labels == Study.MethodLabels.SHOWN
