"""Rating a LongCounsel-8 session in real headless Chromium (docs/lc8-rating.md#rating-sessions): the
eight PHQ items by mouse and by keyboard, the derived total updating as they change, everything there after a reload
and in the database as session judgments (the total never one); no console error, no CSP violation, no serious
accessibility violation."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import Assignment, Judgment, Study
from tests.browser import ARTIFACTS, login
from tests.factories import UserFactory
from tests.functional.test_turn_page import wait_saved
from tests.functional.test_turn_workspace import axe_violations
from tests.lc8.test_rating_pages import client_text, lc8_study, rater_round, trajectory_sessions

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

MOUSE = {"PHQ1": 2, "PHQ2": 3, "PHQ3": 0, "PHQ4": 1}
KEYS = {"PHQ5": 2, "PHQ6": 1, "PHQ7": 3, "PHQ8": 0}


def test_a_rater_rates_a_session_by_mouse_and_keyboard_sees_the_total_and_finds_it_saved(browser_page, live_server):
    study = lc8_study(session_order=Study.SessionOrder.IN_ORDER, session_history=Study.SessionHistory.SHOWN)
    rater = UserFactory(username="lc8-rater", password="cab-demo")
    round_ = rater_round(study, rater)
    session = trajectory_sessions(study)[1]  # session 2 of the first trajectory
    position = Assignment.objects.get(round=round_, coder=rater, turn__session=session).position
    url = f"{live_server.url}/rounds/{round_.pk}/turns/{position}/"

    page = browser_page
    login(page, live_server, "lc8-rater")
    page.goto(url)
    expect(page.locator("#h-session")).to_contain_text("Session 2 of 5")
    expect(page.locator(".lc8-transcript")).to_contain_text(client_text(1, 2, 1))
    earlier = page.locator("details.lc8-earlier")
    expect(earlier).to_have_count(1)
    earlier.locator("summary").click()
    expect(earlier.locator(".line.counselor").first).to_be_visible()
    total = page.locator("#lc8-total")
    expect(total).to_have_text("–")

    # Four items by mouse: a click on the value's label.
    for code, value in MOUSE.items():
        page.locator(f"#s-{code} .scale label").nth(value).click()
    expect(total).to_have_text("–")  # not every item set yet
    # Four by keyboard: Tab to a value of the item's radio group, then the digit.
    for code, value in KEYS.items():
        page.locator(f"#s-{code} input[name=score]").first.focus()
        page.keyboard.press(str(value))
        expect(page.locator(f"#s-{code} input[value='{value}']")).to_be_checked()
    expected = sum(MOUSE.values()) + sum(KEYS.values())
    expect(total).to_have_text(str(expected))
    # A change moves the total at once; a cleared item takes it back to "–".
    page.locator("#s-PHQ1 input[name=score]").first.focus()
    page.keyboard.press("0")
    expect(total).to_have_text(str(expected - MOUSE["PHQ1"]))
    page.keyboard.press("Delete")
    expect(total).to_have_text("–")
    page.keyboard.press(str(MOUSE["PHQ1"]))
    expect(total).to_have_text(str(expected))
    wait_saved(page)
    expect(page.locator("#turn-progress")).to_have_text("8 / 8 scored")
    page.screenshot(path=str(ARTIFACTS / "lc8-session.png"), full_page=True)
    assert axe_violations(page, live_server) == []

    page.reload()
    for code, value in {**MOUSE, **KEYS}.items():
        expect(page.locator(f"#s-{code} input[value='{value}']")).to_be_checked()
    expect(total).to_have_text(str(expected))

    mine = {(j.attribute.code, j.session_id, j.turn_id, j.response_id): j.score
            for j in Judgment.objects.filter(round=round_, coder=rater).select_related("attribute")}
    assert mine == {(code, session.pk, None, None): value for code, value in {**MOUSE, **KEYS}.items()}

    # Completing the session moves on to the next one in the queue.
    page.locator("#complete-turn").click()
    page.wait_for_url(f"{live_server.url}/rounds/{round_.pk}/turns/{position + 1}/")
    assert Assignment.objects.get(round=round_, coder=rater, position=position).completed_at is not None
    assert page.console_errors == [], page.console_errors  # a CSP violation is reported as a console error
