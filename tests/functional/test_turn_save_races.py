"""The coding page's saves against the network's timing, in real headless Chromium: a change made while an earlier
save is on its way, a page left or a turn completed with a change still being typed, sent or refused, a save written
whose answer was lost, one answered only after signing in again, a highlight's popover open across an undo. Requests
are held back, failed or cut with ``page.route`` when the test says; nothing of the page's scripts is replaced."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotation.models import Assignment, Judgment
from tests.browser import login
from tests.functional.test_turn_page import study_round, wait_saved  # noqa: F401  (a fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

SAVE = re.compile(r".*/save$")
NOTE = re.compile(r".*/note$")


class Held:
    """The requests to one URL pattern, held back while ``holding``; ``release`` lets the oldest go on."""

    def __init__(self, page, pattern):
        self.page, self.pattern, self.holding, self.routes = page, pattern, True, []
        page.route(pattern, self._route)

    def _route(self, route):
        if self.holding:
            self.routes.append(route)
        else:
            route.continue_()

    def release(self):
        """Let the held requests go on, and wait for their answers."""
        self.holding = False
        while self.routes:
            with self.page.expect_response(self.pattern):
                self.routes.pop(0).continue_()


def open_turn(page, live_server, round_) -> str:
    login(page, live_server, "demo-reviewer")
    page.goto(f"{live_server.url}/rounds/{round_.pk}/turns/1/")
    return page.locator(".response-card").first.get_attribute("data-response")


def test_a_count_refused_while_an_earlier_save_is_on_its_way_is_not_shown_saved(browser_page, live_server,
                                                                                  study_round):  # noqa: F811
    page = browser_page
    round_, reviewer = study_round
    handle = open_turn(page, live_server, round_)
    aur = page.locator(f"#r{handle}-AUR")
    held = Held(page, SAVE)
    aur.locator("input[name=score][value='1']").check()
    expect(aur.locator(".state-saving")).to_be_visible()
    count = aur.locator("input[name=instance_count]")
    count.fill("99999999999")
    count.press("Tab")
    # The score's save is answered "saved" after the count was refused: the refusal stays, in the form and the header.
    held.release()
    expect(aur.locator(".state-refused")).to_contain_text("whole number from 0 to 2147483647")
    expect(page.locator("#global-state")).to_have_attribute("data-state", "error")
    judgment = Judgment.objects.get(coder=reviewer, attribute__code="AUR", response__isnull=False)
    assert (judgment.score, judgment.instance_count) == (1, None)
    # Put right, the count is saved on the version the score's save made.
    count.fill("2")
    count.press("Tab")
    wait_saved(page)
    judgment.refresh_from_db()
    assert (judgment.score, judgment.instance_count, judgment.version) == (1, 2, 2)


def test_a_count_refused_after_a_failed_save_is_never_sent(browser_page, live_server, study_round):  # noqa: F811
    page = browser_page
    round_, reviewer = study_round
    handle = open_turn(page, live_server, round_)
    aur = page.locator(f"#r{handle}-AUR")
    sent: list[str] = []
    page.on("request", lambda request: sent.append(request.post_data) if SAVE.match(request.url) else None)
    held = Held(page, SAVE)
    aur.locator("input[name=score][value='1']").check()
    count = aur.locator("input[name=instance_count]")
    count.fill("-1")
    count.press("Tab")
    held.holding = False
    with page.expect_response(SAVE):
        held.routes.pop(0).fulfill(status=503, headers={"Retry-After": "1"}, body="busy")
    expect(aur.locator(".state-refused")).to_contain_text("whole number from 0 to 2147483647", timeout=3000)
    page.wait_for_timeout(1500)  # past the first retry's second
    assert len(sent) == 1 and "instance_count=-1" not in sent[0]
    expect(aur.locator(".state-refused")).to_be_visible()
    assert not Judgment.objects.filter(coder=reviewer).exists()


@pytest.mark.parametrize("field", ["count", "comment"])
def test_leaving_with_a_change_still_being_typed_warns_and_sends_it(browser_page, live_server,
                                                                    study_round, field):  # noqa: F811
    page = browser_page
    round_, reviewer = study_round
    handle = open_turn(page, live_server, round_)
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.type), dialog.dismiss()))
    # Typed, the field not left: no change event yet (a count), or within the comment's typing pause.
    if field == "count":
        page.locator(f"#r{handle}-AUR input[name=instance_count]").fill("4")
    else:
        page.fill("#note-comment", "Response A repeats itself.")
    page.close(run_before_unload=True)  # closing the tab (or going back): the field is never left
    page.wait_for_timeout(500)
    assert dialogs == ["beforeunload"]
    # Stayed on the page: the change was sent meanwhile.
    wait_saved(page)
    if field == "count":
        judgment = Judgment.objects.get(coder=reviewer, attribute__code="AUR", response__isnull=False)
        assert judgment.instance_count == 4
    else:
        assert Assignment.objects.get(round=round_, coder=reviewer, position=1).comment == "Response A repeats itself."


EDITING = "Editing… not saved yet"


def test_a_count_typed_but_not_left_is_not_shown_saved(browser_page, live_server, study_round):  # noqa: F811
    page = browser_page
    round_, reviewer = study_round
    handle = open_turn(page, live_server, round_)
    sent: list[str] = []
    page.on("request", lambda request: sent.append(request.post_data) if SAVE.match(request.url) else None)
    header = page.locator("#global-state")
    aur = page.locator(f"#r{handle}-AUR")
    count = aur.locator("input[name=instance_count]")
    held = Held(page, SAVE)
    aur.locator("input[name=score][value='1']").check()
    count.press_sequentially("12")  # typed while the score's save is on its way, the field not left
    held.release()
    # The score's save is answered "saved": the count is still on the page only, and both the form and the header
    # say so, never "All changes saved".
    expect(aur).to_have_attribute("data-state", "saved")
    expect(header).to_have_text(EDITING)
    expect(header).to_have_attribute("data-state", "editing")
    expect(aur.locator(".save")).to_have_text(EDITING)
    judgment = Judgment.objects.get(coder=reviewer, attribute__code="AUR", response__isnull=False)
    assert (judgment.score, judgment.instance_count) == (1, None)
    assert len(sent) == 1, "no save for each key typed"
    count.press("Tab")  # left: saved
    expect(header).to_have_text("All changes saved")
    expect(aur.locator(".save")).to_have_text("Saved")
    judgment.refresh_from_db()
    assert (judgment.score, judgment.instance_count, judgment.version) == (1, 12, 2)
    assert len(sent) == 2
    # Typed, then typed back to the saved count before leaving: nothing to save, and none sent.
    count.fill("7")
    expect(header).to_have_text(EDITING)
    count.fill("12")
    expect(header).to_have_text("All changes saved")
    expect(aur.locator(".save")).to_have_text("Saved")
    count.press("Tab")
    page.locator("#t-U1 input[name=score][value='1']").check()  # a save after it, to know none was sent before
    wait_saved(page)
    assert len(sent) == 3 and "attribute=U1" in sent[2]
    judgment.refresh_from_db()
    assert judgment.version == 2


def test_a_comment_within_its_typing_pause_is_not_shown_saved(browser_page, live_server, study_round):  # noqa: F811
    page = browser_page
    round_, reviewer = study_round
    open_turn(page, live_server, round_)
    sent: list[str] = []
    page.on("request", lambda request: sent.append(request.url) if NOTE.match(request.url) else None)
    header = page.locator("#global-state")
    page.locator("#note-comment").press_sequentially("Response A")
    # Within the typing pause (1.2 s after the last key): on the page only.
    expect(header).to_have_text(EDITING)
    expect(header).to_have_attribute("data-state", "editing")
    expect(page.locator("#item-note .save")).to_have_text(EDITING)
    assert Assignment.objects.get(round=round_, coder=reviewer, position=1).comment == ""
    # Sent once typing pauses, and only then "All changes saved".
    wait_saved(page)
    expect(header).to_have_text("All changes saved")
    expect(page.locator("#item-note .save")).to_have_text("Saved")
    assert Assignment.objects.get(round=round_, coder=reviewer, position=1).comment == "Response A"
    assert len(sent) == 1, "no save for each key typed"


def test_completing_waits_for_the_comment_on_its_way(browser_page, live_server, study_round):  # noqa: F811
    page = browser_page
    round_, reviewer = study_round
    open_turn(page, live_server, round_)
    held = Held(page, NOTE)
    page.fill("#note-comment", "Response B stops mid-sentence.")
    page.locator("#note-comment").press("Tab")  # left: sent
    page.click("#complete-turn")
    expect(page.locator("#complete-result")).to_contain_text("Not yet: 1 change(s) are not saved")
    assert page.locator("#complete-result .check").count() == 0
    held.release()
    wait_saved(page)
    page.click("#complete-turn")
    page.locator("#complete-result .check.missing").wait_for()
    assert Assignment.objects.get(round=round_, coder=reviewer, position=1).comment == "Response B stops mid-sentence."


def test_a_save_written_but_its_answer_lost_is_not_taken_for_another_tabs(browser_page, live_server,
                                                                           study_round):  # noqa: F811
    page = browser_page
    round_, reviewer = study_round
    open_turn(page, live_server, round_)
    lost = {"U1", "U2"}

    def answer_lost(route):
        # The server writes the save, the connection drops before its answer (a flaky network, a 504).
        code = re.search(r"attribute=(\w+)", route.request.post_data).group(1)
        if code in lost:
            lost.discard(code)
            route.fetch()
            route.abort()
        else:
            route.continue_()

    page.route(SAVE, answer_lost)
    with page.expect_event("requestfailed"):
        page.locator("#t-U1 input[name=score][value='1']").check()
    # Changed again before the retry: sent on the version the page saw, refused as stale, the newer value its own.
    page.locator("#t-U1 input[name=score][value='2']").check()
    with page.expect_event("requestfailed"):
        page.locator("#t-U2 input[name=score][value='1']").check()
    # U2's retry, after a second, finds its own value written.
    expect(page.locator("#global-state")).to_have_attribute("data-state", "saved", timeout=10000)
    expect(page.locator("#t-U1 input[name=score][value='2']")).to_be_checked()
    assert page.locator(".state-stale").count() == 0
    assert {code: (score, version) for code, score, version in Judgment.objects.filter(coder=reviewer).values_list(
        "attribute__code", "score", "version")} == {"U1": (2, 2), "U2": (1, 1)}


def test_a_refused_change_holds_completing_back_and_leaving_warns(browser_page, live_server,
                                                                   study_round):  # noqa: F811
    page = browser_page
    round_, reviewer = study_round
    handle = open_turn(page, live_server, round_)
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.type), dialog.dismiss()))
    count = page.locator(f"#r{handle}-AUR input[name=instance_count]")
    count.fill("1.5")
    count.press("Tab")
    page.locator(f"#r{handle}-AUR .state-refused").wait_for()
    # The server has no count: completing now would complete the turn without the one shown.
    page.click("#complete-turn")
    expect(page.locator("#complete-result")).to_contain_text("Not yet: 1 change(s) are not saved")
    page.close(run_before_unload=True)
    page.wait_for_timeout(500)
    assert dialogs == ["beforeunload"]
    count.fill("1")
    count.press("Tab")
    wait_saved(page)
    page.click("#complete-turn")
    page.locator("#complete-result .check.missing").wait_for()
    assert Judgment.objects.get(coder=reviewer, attribute__code="AUR", response__isnull=False).instance_count == 1


def test_a_highlights_popover_open_across_an_undo_removes_the_highlight_it_shows(browser_page, live_server,
                                                                                 study_round):  # noqa: F811
    page = browser_page
    round_, reviewer = study_round
    handle = open_turn(page, live_server, round_)
    text = page.locator(f'.response-text[data-response="{handle}"]')
    for length in (6, 12):  # two highlights of one attribute, the first inside the second
        text.focus()
        for _ in range(length):
            page.keyboard.press("Shift+ArrowRight")
        page.keyboard.press("h")
        page.keyboard.press("1")
    wait_saved(page)
    judgment = Judgment.objects.filter(coder=reviewer, response__isnull=False, spans__isnull=False).distinct().get()
    short, long = sorted((s.start, s.end) for s in judgment.spans.all())
    card = page.locator(".response-card").first
    card.locator(".span-list .remove-span").first.click()  # the short one
    wait_saved(page)
    card.locator(".seg.hl").first.click()  # the long one's popover
    page.locator("#span-popover").wait_for(state="visible")
    page.keyboard.press("Control+z")  # the short one is back
    expect(card.locator(".span-list .chip")).to_have_count(2)
    page.locator("#span-popover button.danger").click()  # the popover's Remove: the long one, as it says
    wait_saved(page)
    assert [(s.start, s.end) for s in judgment.spans.all()] == [short]
    expect(card.locator(".span-list .chip")).to_have_count(1)


def test_a_save_sent_before_signing_in_and_answered_after_is_sent_again(browser_page, live_server,
                                                                         study_round):  # noqa: F811
    page = browser_page
    round_, reviewer = study_round
    open_turn(page, live_server, round_)
    page.context.clear_cookies(name="sessionid")  # the session ended
    held = Held(page, SAVE)
    page.locator("#t-U1 input[name=score][value='1']").check()
    page.locator("#t-U2 input[name=score][value='2']").check()
    with page.expect_response(SAVE):
        held.routes.pop(0).continue_()
    page.locator("#relogin").wait_for(state="visible")
    page.fill("#relogin-password", "cab-demo")
    page.click("#relogin-form button[type=submit]")
    page.locator("#relogin").wait_for(state="hidden")
    # U2's save, sent with the ended session, is answered 401 only now: sent again, no second sign-in asked for.
    held.release()
    wait_saved(page)
    expect(page.locator("#relogin")).to_be_hidden()
    assert dict(Judgment.objects.filter(coder=reviewer).values_list("attribute__code", "score")) == {"U1": 1, "U2": 2}
