"""Leaving the coding page while a save is on its way, in real headless Chromium: the answer held back in the network
(``page.route``), the reviewer goes to the next or previous turn, follows a link, closes the tab or uses the
browser's Back. The README promises that leaving with a change not yet saved asks first: the page asks, and staying
the change is stored once its answer comes; a save the server has already written (its answer late) is stored even
when the reviewer leaves."""

from __future__ import annotations

import contextlib
import re

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Error, expect

from annotation import services
from annotation.models import Assignment, Span
from calibration import services as calibration_services
from tests.browser import another_device, login
from tests.functional.pages import coding_page
from tests.functional.test_turn_page import study_round, wait_saved  # noqa: F401  (a fixture)
from tests.functional.test_turn_save_races import NOTE, SAVE, Held, open_turn

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def leave(page, how: str) -> None:
    """Tries to leave the page ``how``; the beforeunload dialog (dismissed by the test's handler) keeps it."""
    if how == "close":
        page.close(run_before_unload=True)
    elif how == "back":
        with contextlib.suppress(Error):  # the navigation never happens: the reviewer stayed
            page.go_back(timeout=1500)
    else:
        page.locator({"next": "a[rel=next]", "previous": "a[rel=prev]", "link": ".turn-nav a"}[how]).first.click(
            no_wait_after=True)
    page.wait_for_timeout(500)


@pytest.mark.parametrize(("kind", "how"), [
    ("turn", "next"), ("turn", "back"), ("turn", "close"), ("response", "previous"), ("response", "link"),
    ("care", "back"), ("care", "next"), ("lc8", "close"), ("lc8", "next"),
])
def test_leaving_with_a_score_on_its_way_asks_and_staying_stores_it(browser_page, live_server, kind, how):
    page = browser_page
    coding = coding_page(live_server, kind)
    if how == "previous":
        coding.assignment = Assignment.objects.get(round=coding.round, coder=coding.reviewer, position=2)
        coding.url = coding.url.replace("/turns/1/", "/turns/2/")
    login(page, live_server, "demo-reviewer")
    page.goto(coding.url)
    url = page.url
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.type), dialog.dismiss()))
    held = Held(page, SAVE)
    page.locator(coding.form).locator(f"input[name=score][value='{coding.scores[0]}']").check()
    expect(page.locator("#global-state")).to_have_attribute("data-state", "saving")
    leave(page, how)
    assert dialogs == ["beforeunload"]
    assert page.url == url
    held.release()
    wait_saved(page)
    assert str(coding.judgment().score) == coding.scores[0]


@pytest.mark.parametrize("what", ["highlight", "flag"])
def test_leaving_with_a_highlight_or_a_flag_on_its_way_asks_and_staying_stores_it(browser_page, live_server, what):
    page = browser_page
    coding = coding_page(live_server, "turn")
    login(page, live_server, "demo-reviewer")
    page.goto(coding.url)
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.type), dialog.dismiss()))
    held = Held(page, NOTE if what == "flag" else SAVE)
    if what == "flag":
        page.locator("#item-note input[value=truncated]").check()
    else:
        handle = page.locator(".response-card").first.get_attribute("data-response")
        page.locator(f'.response-text[data-response="{handle}"]').focus()
        for _ in range(5):
            page.keyboard.press("Shift+ArrowRight")
        page.keyboard.press("h")
        page.keyboard.press("1")
    leave(page, "next")
    leave(page, "back")
    assert dialogs == ["beforeunload", "beforeunload"]
    held.release()
    wait_saved(page)
    assignment = Assignment.objects.get(pk=coding.assignment.pk)
    if what == "flag":
        assert assignment.flags == ["truncated"]
    else:
        assert Span.objects.filter(judgment__round=coding.round, judgment__coder=coding.reviewer).count() == 1


def test_a_save_the_server_wrote_but_answers_late_is_stored_when_the_reviewer_leaves(browser_page, live_server):
    page = browser_page
    coding = coding_page(live_server, "lc8")
    login(page, live_server, "demo-reviewer")
    page.goto(coding.url)
    late = []

    def written_answer_held(route):
        late.append(route.fetch())  # the server has it; its answer is kept from the page

    page.route(SAVE, written_answer_held)
    page.on("dialog", lambda dialog: dialog.accept())  # the reviewer leaves all the same
    page.locator(coding.form).locator(f"input[name=score][value='{coding.scores[1]}']").check()
    expect(page.locator("#global-state")).to_have_attribute("data-state", "saving")
    while not late:
        page.wait_for_timeout(100)
    page.locator("a[rel=next]").click()
    page.wait_for_url(re.compile(r"/turns/2/$"))
    assert str(coding.judgment().score) == coding.scores[1]


@pytest.mark.parametrize(("refusal", "then"), [
    ("stale", "dismiss"), ("stale", "change"), ("locked", "dismiss"), ("note", "dismiss"),
])
def test_leaving_after_a_change_refused_as_stale_or_locked_asks_until_the_refusal_is_seen(
        browser_page, live_server, study_round, refusal, then):  # noqa: F811
    """A change refused as stale (another tab saved first) or locked (the round closed) is lost: the page shows the
    server's value and "Not saved: …". Leaving, or completing the turn, asks first until the reviewer dismisses the
    message or changes that attribute again; before, the page was left without a word."""
    page = browser_page
    round_, reviewer = study_round
    open_turn(page, live_server, round_)
    url = page.url
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.type), dialog.dismiss()))
    form = page.locator("#item-note" if refusal == "note" else "#t-U1")
    if refusal == "stale":
        other = another_device(page, live_server)  # another device saves a score first
        other.goto(url)
        other.locator("#t-U1 input[name=score][value='2']").check()
        wait_saved(other)
        other.close()
    elif refusal == "note":
        assignment = Assignment.objects.get(round=round_, coder=reviewer, position=1)
        services.assignment_note_save(assignment=assignment, by=reviewer, comment="Both are fine.", flags=[],
                                      base=("", []))
    else:
        calibration_services.round_close(round=round_, by=get_user_model().objects.get(username="demo-admin"))
    if refusal == "note":
        page.locator("#item-note input[value=truncated]").click()  # a click: the refusal unticks it again
    else:
        form.locator("input[name=score][value='1']").click()
    message = form.locator(".state-locked" if refusal == "locked" else ".state-stale")
    expect(message).to_be_visible()
    leave(page, "next")
    leave(page, "back")
    assert dialogs == ["beforeunload", "beforeunload"]
    assert page.url == url
    page.click("#complete-turn")
    expect(page.locator("#complete-result")).to_contain_text(
        "Not yet: 1 change(s) were not saved (see the red messages): make them again, or dismiss their messages")
    if then == "dismiss":
        message.get_by_role("button", name="Dismiss").click()
        # What the server has, as when the page was loaded: a score (another tab's) or a note saved; no score at all
        # (the round closed before one was saved), no state.
        expect(form.locator(".save")).to_have_text("" if refusal == "locked" else "Saved")
    else:
        form.locator("input[name=score][value='0']").click()  # that attribute changed again: saved
        wait_saved(page)
    expect(page.locator("#global-state")).to_have_text("All changes saved")
    page.locator("a[rel=next]").click()
    page.wait_for_url(re.compile(r"/turns/2/$"))
    assert dialogs == ["beforeunload", "beforeunload"]
