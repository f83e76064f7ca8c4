"""Coding the demo CARE history in real headless Chromium: a user turn, the assistant's reply and the crisis
session's checklist with real clicks, the judge's label confirmed where the study shows it, everything there after
a reload and in the database; no console error, no CSP violation, no serious accessibility violation."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from playwright.sync_api import expect

from annotation import selectors, services
from annotation.models import Assignment, Judgment, Round, Study
from tests.browser import ARTIFACTS, login
from tests.functional.test_turn_page import wait_saved
from tests.functional.test_turn_workspace import axe_violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

CRISIS_END = 8  # the last turn of the demo history's crisis session (session 3)


def test_a_coder_codes_a_user_turn_a_reply_and_a_session_checklist_of_the_demo_history(browser_page, live_server):
    call_command("load_demo", "--quiet", "--care")
    round_ = Round.objects.select_related("study").get(study__slug="care-demo", kind="main")
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    admin = get_user_model().objects.get(username="demo-admin")
    services.study_method_labels_set(study=round_.study, value=Study.MethodLabels.SHOWN, by=admin)
    judge = dict(Judgment.objects.filter(round=round_, coder__username="demo-care-judge", turn__index=CRISIS_END,
                                         response__isnull=True).values_list("attribute__code", "score"))
    position = Assignment.objects.get(round=round_, coder=reviewer, turn__index=CRISIS_END).position
    url = f"{live_server.url}/rounds/{round_.pk}/turns/{position}/"

    page = browser_page
    login(page, live_server, "demo-reviewer")
    page.goto(url)
    # The history: the two chats before the crisis folded away, the crisis session open as the current episode.
    history = page.locator(".care-history")
    expect(history.locator("details.care-session")).to_have_count(2)
    expect(history.locator("section.care-session.episode.current-session")).to_contain_text(
        "Session 3 · Crisis · Suicidal ideation")
    history.locator("details.care-session summary").first.click()
    expect(history.locator("details.care-session").first.locator(".line.assistant").first).to_be_visible()

    # The user turn: a marker by its label, and the judge's crisis code confirmed.
    page.locator("#t-marker label", has_text="Settling").click()
    crisis = page.locator("#t-crisis")
    expect(crisis.locator(".judge-label")).to_contain_text("Judge demo-care-judge")
    crisis.locator("button.confirm-judge").click()
    page.locator("#t-request label", has_text="Regulate").click()
    # The assistant's reply: its strategy and the safety-critical flag.
    card = page.locator(".response-card").first
    handle = card.get_attribute("data-response")
    page.locator(f"#r{handle}-strategy label", has_text="reflection of feelings").click()
    page.locator(f"#r{handle}-safety_critical label", has_text="present").click()
    # The session checklist: two items present, one absent.
    checklist = page.locator("section.care-checklist")
    expect(checklist).to_contain_text("Checklist of session 3")
    checklist.locator("#s-ask_safety label", has_text="present").click()
    checklist.locator("#s-crisis_resources label", has_text="present").click()
    checklist.locator("#s-minimise label", has_text="absent").click()
    wait_saved(page)
    page.screenshot(path=str(ARTIFACTS / "care-turn.png"), full_page=True)
    assert axe_violations(page, live_server) == []

    page.reload()
    expect(page.locator("#t-marker input[value='2']")).to_be_checked()
    expect(page.locator(f"#t-crisis input[value='{judge['crisis']}']")).to_be_checked()
    expect(page.locator(f"#r{handle}-strategy input[value='2']")).to_be_checked()
    expect(page.locator("#s-ask_safety input[value='1']")).to_be_checked()
    expect(page.locator("#s-minimise input[value='0']")).to_be_checked()

    mine = {(j.attribute.code, j.turn_id is not None, j.response_id is not None, j.session_id is not None): j.score
            for j in Judgment.objects.filter(round=round_, coder=reviewer).select_related("attribute")}
    assert mine == {
        ("marker", True, False, False): 2, ("crisis", True, False, False): judge["crisis"],
        ("request", True, False, False): 1,
        ("strategy", True, True, False): 2, ("safety_critical", True, True, False): 1,
        ("ask_safety", False, False, True): 1, ("crisis_resources", False, False, True): 1,
        ("minimise", False, False, True): 0,
    }
    session_index = {j.session.index for j in Judgment.objects.filter(coder=reviewer, session__isnull=False)}
    assert session_index == {3}

    # Blinded again: nothing of the judge on the page.
    services.study_method_labels_set(study=round_.study, value=Study.MethodLabels.BLINDED, by=admin)
    page.reload()
    expect(page.locator("#t-marker input[value='2']")).to_be_checked()
    expect(page.locator(".judge-label")).to_have_count(0)
    assert "demo-care-judge" not in page.content()
    assert page.console_errors == [], page.console_errors  # a CSP violation is reported as a console error


def test_a_completed_action_turn_given_horizon_none_in_the_browser_says_it_is_no_longer_completed(
        browser_page, live_server):
    """docs/care-data.md#coding-a-history-the-turn-page: the change is saved, and the page says the turn is no
    longer completed with what it wants again, linked to the horizon."""
    call_command("load_demo", "--quiet", "--care")
    round_ = Round.objects.select_related("study").get(study__slug="care-demo", kind="main")
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    assignment = Assignment.objects.get(round=round_, coder=reviewer, turn__index=6)
    view = selectors.turn_view(round_id=round_.pk, user=reviewer, position=assignment.position)
    response = view.turn.responses.get()
    chosen = {"strategy": 5, "horizon": 1}  # providing suggestions, Regulate
    for form in view.all_forms():
        services.judgment_save(round=round_, by=reviewer, attribute=form.attribute,
                               score=chosen.get(form.attribute.code, 0), turn=view.turn,
                               response=response if form.response_handle is not None else None)
    assert services.assignment_complete(assignment=assignment, by=reviewer).completed

    page = browser_page
    login(page, live_server, "demo-reviewer")
    page.goto(f"{live_server.url}/rounds/{round_.pk}/turns/{assignment.position}/")
    handle = page.locator(".response-card").first.get_attribute("data-response")
    page.locator(f"#r{handle}-horizon label", has_text="none").click()
    wait_saved(page)
    result = page.locator("#complete-result .reopened")
    expect(result).to_contain_text("No longer completed: still to code (1)")
    link = result.locator("a", has_text="horizon: the strategy is providing suggestions, which needs a primary horizon")
    expect(link).to_have_attribute("href", f"#r{handle}-horizon")
    assert Assignment.objects.get(pk=assignment.pk).completed_at is None
    assert Judgment.objects.get(round=round_, coder=reviewer, response=response, attribute__code="horizon").score == 0
    assert page.console_errors == [], page.console_errors
