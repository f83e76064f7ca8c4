"""The calibration protocol's pages (calibration/views.py): admins only, forms call the services, errors are shown —
on a synthetic study with two closed calibration rounds and a metric run, built once for the module.
(tests/functional/test_calibration_pages.py drives the workshop and panel pages in Chromium.)"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse

from annotation.models import Assignment, Judgment, Round, Study, StudyMember, WorkshopNote
from audit.models import AuditEvent
from tests import scenarios

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def synthetic_study_id(shared_state):
    with shared_state():
        yield scenarios.synthetic_calibrated_study().pk


@pytest.fixture
def synthetic(db, synthetic_study_id):
    """``syn`` (tests/scenarios.py): two closed calibration rounds, a main round, a metric run, no panel yet."""
    return Study.objects.get(pk=synthetic_study_id)


def test_calibration_pages_are_for_study_admins_only(client, synthetic, reviewer, researcher):
    round_ = synthetic.rounds.get(kind="calibration", number=1)
    urls = [reverse("study-dashboard", args=["syn"]), reverse("panel", args=["syn"]),
            reverse("consensus", args=[round_.pk]), reverse("workshop", args=[round_.pk]),
            reverse("memo", args=[round_.pk, "md"])]
    for user in (reviewer, researcher):
        client.force_login(user)
        for url in urls:
            assert client.get(url).status_code == 403, (user, url)
        response = client.post(reverse("round-create", args=["syn"]), {"number": "3"})
        assert response.status_code == 403
    assert not Round.objects.filter(study=synthetic, number=3).exists()


def test_study_dashboard_lists_the_rounds_and_time_on_task(client, synthetic, admin_user):
    client.force_login(admin_user)
    assignment = Assignment.objects.filter(round__study=synthetic, round__kind="main").first()
    Assignment.objects.filter(pk=assignment.pk).update(active_seconds=150, completed_at="2026-01-01T00:00Z")
    dashboard = client.get(reverse("study-dashboard", args=["syn"])).content.decode()
    assert "calibration-2" in dashboard
    assert f"<td>main</td><td>{assignment.coder.username}</td>" in dashboard and "<td>2.5</td>" in dashboard


def test_workshop_page_shows_differences_from_gold_with_the_reviewers_spans(client, synthetic, admin_user):
    client.force_login(admin_user)
    round_ = synthetic.rounds.get(kind="calibration", number=1)
    workshop = client.get(reverse("workshop", args=[round_.pk]) + "?attribute=AUR")
    assert workshop.status_code == 200 and b"AUR" in workshop.content and b"differ from gold" in workshop.content
    assert b'class="seg hl hl-' in workshop.content, "reviewers' spans are overlaid on the response text"


def test_a_workshop_note_is_saved_and_appears_in_the_memo(client, synthetic, admin_user):
    client.force_login(admin_user)
    round_ = synthetic.rounds.get(kind="calibration", number=1)
    item = Judgment.objects.filter(round=round_, is_gold=True, attribute__code="AUR").first()
    response = client.post(reverse("workshop-note", args=[round_.pk]), {
        "attribute": "AUR", "turn": item.turn_id, "response": item.response_id, "text": "Anchor 1 = hedged."})
    assert response.status_code == 200 and WorkshopNote.objects.get(round=round_).text == "Anchor 1 = hedged."
    memo = client.get(reverse("memo", args=[round_.pk, "md"]))
    assert memo["Content-Disposition"].startswith("attachment") and "Anchor 1 = hedged." in memo.content.decode()
    assert b"Anchor 1 = hedged." in client.get(reverse("memo", args=[round_.pk, "html"])).content


def test_panel_page_ranks_every_reviewer_with_the_bootstrap_top_k(client, synthetic, admin_user):
    client.force_login(admin_user)
    panel = client.get(reverse("panel", args=["syn"]))
    assert panel.status_code == 200 and b"Top-4 / 5 / 6" in panel.content
    ranking = [line for line in panel.content.decode().splitlines() if 'name="retain"' in line]
    assert len(ranking) == 7


def test_retaining_anything_but_the_top_k_needs_a_reason_shown_on_the_page(client, synthetic, admin_user):
    client.force_login(admin_user)
    response = client.post(reverse("panel-retain", args=["syn"]), {"retain": ["syn-r01"], "k": "3"}, follow=True)
    assert "give the reason" in response.content.decode()
    assert not StudyMember.objects.filter(study=synthetic, retained=True).exists(), "nothing changes"
    response = client.post(reverse("panel-retain", args=["syn"]), {"retain": ["syn-r01"], "k": "3",
                                                             "reason": "only one reviewer is available"}, follow=True)
    assert "Retained panel saved" in response.content.decode()
    assert AuditEvent.objects.filter(study_slug="syn", action="panel.retain", data__overridden=True).exists()


def test_consensus_page_records_gold_and_reports_bad_values(client, admin_user, expert):
    call_command("load_demo", "--quiet")
    round_ = Round.objects.get(study__slug="demo", kind="calibration")
    client.force_login(admin_user)
    page = client.get(reverse("consensus", args=[round_.pk]) + "?show=all")
    assert page.status_code == 200 and b"demo-expert" in page.content
    turn = round_.items.first().turn
    url = reverse("gold-record", args=[round_.pk])
    response = client.post(url, {"attribute": "U1", "turn": turn.pk, "score": "9", "agreed": ["demo-expert"]},
                           follow=True)
    assert "U1: score 9 is outside the scale 0–2" in response.content.decode()
    client.post(url, {"attribute": "U1", "turn": turn.pk, "score": "2", "agreed": ["demo-expert"], "note": "clear"})
    gold = Judgment.objects.get(round=round_, is_gold=True, attribute__code="U1", turn=turn)
    assert gold.score == 2 and gold.note == "clear" and [u.username for u in gold.agreed_by.all()] == ["demo-expert"]


def test_reviewer_feedback_page_shows_own_agreement_only_after_close(client, synthetic):
    user = get_user_model().objects.get(username="syn-r01")
    client.force_login(user)
    round_2 = synthetic.rounds.get(kind="calibration", number=2)
    page = client.get(reverse("feedback", args=[round_2.pk])).content.decode()
    assert "Agreement with gold over" in page and "Change since calibration-1" in page
    assert "syn-r02" not in page, "other reviewers are never named"
    main = synthetic.rounds.get(kind="main")
    assert "once the round is closed" in client.get(reverse("feedback", args=[main.pk])).content.decode()


def test_dashboard_forms_answer_bad_input_specifically_and_change_nothing(client, synthetic, admin_user):
    client.force_login(admin_user)
    draft = Round.objects.create(study=synthetic, kind="calibration", number=3)
    closed = synthetic.rounds.get(number=1, kind="calibration")
    cases = [
        ("round-sample", draft, {"n": "ten"}, "set size: Enter a whole number."),
        ("round-sample", draft, {"n": "9000"}, "were asked for"),
        ("round-refs", draft, {"refs": "nonsense\nSynthetic single-turn/nope#1"},
         "is not DATASET/CONVERSATION_ID#TURN"),
        ("round-open", draft, {}, "has no calibration set yet"),
        ("round-reopen", closed, {"reason": ""}, "say why the round is reopened"),
    ]
    for name, round_, data, message in cases:
        url = reverse(name, args=["syn", round_.pk])
        page = client.post(url, data, follow=True).content.decode()
        assert message in page.replace("&#x27;", "'"), (data, message)
    assert client.post(f"/studies/syn/rounds/{draft.pk}/explode").status_code == 404, "one URL per action"
    assert not draft.items.exists() and draft.status == "draft"
    assert synthetic.rounds.get(number=1, kind="calibration").status == "closed"
    main_url = reverse("main-round-assign", args=["syn"])
    assert "double-coded share: Enter a number." in client.post(main_url, {"overlap": "lots"},
                                                                follow=True).content.decode()
    assert "double-coded share: Ensure this value is less than or equal to 1" in client.post(
        main_url, {"overlap": "2"}, follow=True).content.decode()
    assert "select the retained panel first" in client.post(main_url, {"overlap": "0.1"}, follow=True).content.decode()
