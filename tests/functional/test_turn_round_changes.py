"""The coding page while an admin changes the round or the study under the reviewer's hands, in real headless
Chromium: the round closed with a change on its way, then reopened. The server's state is changed between the
browser's steps with the services the study page calls; nothing of the page's scripts is replaced."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from annotation import services as annotation_services
from annotation.models import Assignment, Judgment, Round
from calibration import services
from tests.browser import ARTIFACTS
from tests.functional.test_turn_page import study_round, wait_saved  # noqa: F401  (a fixture)
from tests.functional.test_turn_save_races import SAVE, Held, open_turn

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def admin():
    return get_user_model().objects.get(username="demo-admin")


def test_a_change_refused_by_a_closed_round_shows_the_saved_value_and_is_saved_again_after_reopening(
        browser_page, live_server, study_round):  # noqa: F811
    page = browser_page
    round_, reviewer = study_round
    open_turn(page, live_server, round_)
    u1 = page.locator("#t-U1")
    u1.locator("input[name=score][value='1']").check()
    wait_saved(page)
    sent: list[str] = []
    page.on("request", lambda request: sent.append(request.post_data) if SAVE.match(request.url) else None)
    held = Held(page, SAVE)
    u1.locator("input[name=score][value='2']").check()
    services.round_close(round=round_, by=admin())  # while the save is on its way
    held.release()
    # Said in the attribute and the header; the form shows what the round keeps, never the refused value as if it
    # were recorded; not sent again.
    expect(u1.locator(".state-locked")).to_contain_text("calibration-1 is closed")
    expect(u1.locator(".state-locked")).to_contain_text("showing the value saved before")
    expect(u1.locator("input[name=score][value='1']")).to_be_checked()
    expect(page.locator("#global-state")).to_have_attribute("data-state", "error")
    u1.screenshot(path=str(ARTIFACTS / "turn-round-closed.png"))  # as the reviewer sees it
    page.wait_for_timeout(1500)
    assert len(sent) == 1
    assert Judgment.objects.get(coder=reviewer, attribute__code="U1").score == 1
    # Reopened as a main round is (no feedback lock): the change typed again is saved.
    round_.refresh_from_db()
    annotation_services.round_reopen(round=round_, by=admin(), reason="one more day")
    u1.locator("input[name=score][value='2']").check()
    wait_saved(page)
    assert Judgment.objects.get(coder=reviewer, attribute__code="U1").score == 2


def test_time_refused_while_the_round_is_closed_is_not_counted_after_it_reopens(browser_page, live_server,
                                                                                  study_round):  # noqa: F811
    """The page reports its active seconds every 15 s. A report the round refuses (409: closed) is dropped: before,
    its seconds were added back and sent again with every later report, refused each time, and counted (up to the
    two minutes a report may add) once the round was open again."""
    page = browser_page
    round_, reviewer = study_round
    open_turn(page, live_server, round_)
    with page.expect_response(lambda answer: "/time" in answer.url, timeout=30000) as first:
        page.mouse.move(10, 10)
    assert first.value.status == 204
    Round.objects.filter(pk=round_.pk).update(status=Round.Status.CLOSED)
    with page.expect_response(lambda answer: "/time" in answer.url, timeout=30000) as refused:
        page.mouse.move(20, 20)
    assert refused.value.status == 409
    Round.objects.filter(pk=round_.pk).update(status=Round.Status.OPEN)
    with page.expect_request(lambda request: "/time" in request.url, timeout=30000) as reported:
        page.mouse.move(30, 30)
    seconds = int(reported.value.post_data_buffer.split(b'name="seconds"\r\n\r\n')[1].split(b"\r\n")[0])
    assert 10 <= seconds <= 16, f"the report after reopening carried {seconds} s: the refused ones again"
    page.wait_for_timeout(1000)  # its answer
    position = page.locator(".turn-page").get_attribute("data-time-url").rstrip("/").split("/")[-2]
    assert Assignment.objects.get(round=round_, coder=reviewer, position=int(position)).active_seconds <= 33
