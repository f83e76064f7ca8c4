"""Two tabs of one coding page in one browser, in real headless Chromium: a save landing in one is shown at once in
the other where that attribute (or the note) has no edit of its own there; where it has one, the other tab's save
is met as before, its next save refused as stale and the newer value shown. Nothing of the page's scripts is
replaced; requests are only watched."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import Assignment, Judgment
from tests.browser import another_device
from tests.functional.test_turn_page import study_round, wait_saved  # noqa: F401  (a fixture)
from tests.functional.test_turn_save_races import NOTE, SAVE, open_turn

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_a_save_in_one_tab_is_shown_at_once_in_the_other(browser_page, live_server, study_round):  # noqa: F811
    page = browser_page
    round_, reviewer = study_round
    handle = open_turn(page, live_server, round_)
    other = page.context.new_page()
    other.goto(page.url)
    sent: list[str] = []
    page.on("request", lambda request: sent.append(request.post_data) if SAVE.match(request.url)
            or NOTE.match(request.url) else None)
    # The other tab scores, counts and flags; this tab, untouched, shows each at once, sending nothing.
    other.locator("#t-U1 input[name=score][value='2']").check()
    aur = f"#r{handle}-AUR"
    other.locator(f"{aur} input[name=score][value='1']").check()
    other.locator(f"{aur} input[name=instance_count]").fill("3")
    other.locator(f"{aur} input[name=instance_count]").press("Tab")
    other.locator("#item-note input[value=truncated]").check()
    wait_saved(other)
    expect(page.locator("#t-U1 input[name=score][value='2']")).to_be_checked()
    expect(page.locator(f"{aur} input[name=score][value='1']")).to_be_checked()
    expect(page.locator(f"{aur} input[name=instance_count]")).to_have_value("3")
    expect(page.locator("#item-note input[value=truncated]")).to_be_checked()
    expect(page.locator("#turn-progress")).to_contain_text("2 /")
    expect(page.locator("#global-state")).to_have_text("All changes saved")
    assert sent == []
    # A change made here now is made on the newer value: saved, not refused as stale.
    page.locator("#t-U1 input[name=score][value='1']").check()
    page.locator("#item-note input[value=unsure]").check()
    wait_saved(page)
    expect(page.locator("#t-U1 .save")).to_have_text("Saved")
    expect(page.locator("#item-note .save")).to_have_text("Saved")
    judgment = Judgment.objects.get(coder=reviewer, attribute__code="U1")
    assert (judgment.score, judgment.version) == (1, 2)
    assignment = Assignment.objects.get(round=round_, coder=reviewer, position=1)
    assert sorted(assignment.flags) == ["truncated", "unsure"]
    # And the other tab is told in turn.
    expect(other.locator("#t-U1 input[name=score][value='1']")).to_be_checked()


def test_a_save_in_another_tab_leaves_an_edit_of_its_own_here_to_the_stale_path(browser_page, live_server,
                                                                                  study_round):  # noqa: F811
    page = browser_page
    round_, reviewer = study_round
    handle = open_turn(page, live_server, round_)
    other = page.context.new_page()
    other.goto(page.url)
    aur = f"#r{handle}-AUR"
    count = page.locator(f"{aur} input[name=instance_count]")
    count.click()
    count.press_sequentially("4")  # typed here, the field not left: an edit of this tab's own
    other.locator(f"{aur} input[name=score][value='2']").check()
    other.locator("#t-U1 input[name=score][value='1']").check()  # told after the AUR's save: once shown, both were
    wait_saved(other)
    expect(page.locator("#t-U1 input[name=score][value='1']")).to_be_checked()
    # The typed count stays, and the attribute is not changed under it.
    expect(count).to_have_value("4")
    expect(page.locator(f"{aur} input[name=score][value='2']")).not_to_be_checked()
    count.press("Tab")  # sent on the version this tab had: refused as stale, the newer value shown
    expect(page.locator(f"{aur} .state-stale")).to_be_visible()
    expect(page.locator(f"{aur} input[name=score][value='2']")).to_be_checked()
    judgment = Judgment.objects.get(coder=reviewer, attribute__code="AUR", response__isnull=False)
    assert (judgment.score, judgment.instance_count) == (2, None)


@pytest.mark.parametrize("other_is", ["tab", "device"])
def test_undo_never_puts_back_a_value_over_another_tabs_newer_one(
        browser_page, live_server, study_round, other_is):  # noqa: F811
    """Ctrl+Z takes back the reviewer's last change while the form still shows it. Once the form shows another tab's
    (or device's) newer value instead (told at once, or by a save refused as stale), undo put the value from before
    the reviewer's change back and saved it on the newer version: the other tab's edit overwritten, unasked."""
    page = browser_page
    round_, reviewer = study_round
    open_turn(page, live_server, round_)
    u1 = page.locator("#t-U1")
    u1.locator("input[name=score][value='1']").check()
    wait_saved(page)
    u1.locator("input[name=score][value='2']").check()
    wait_saved(page)
    other = page.context.new_page() if other_is == "tab" else another_device(page, live_server)
    other.goto(page.url)
    other.locator("#t-U1 input[name=score][value='0']").check()
    wait_saved(other)
    if other_is == "tab":
        expect(u1.locator("input[name=score][value='0']")).to_be_checked()  # told at once
    else:
        u1.locator("input[name=score][value='1']").click()  # refused as stale, the newer value shown
        expect(u1.locator(".state-stale")).to_be_visible()
        expect(u1.locator("input[name=score][value='0']")).to_be_checked()
    page.locator("h1, .turn-nav").first.click()  # focus out of the form: Ctrl+Z is the page's undo
    for _ in range(3):
        page.keyboard.press("Control+z")
    page.locator("#t-U2 input[name=score][value='1']").check()  # a save after them, to know none was sent before
    expect(page.locator("#t-U2 .state-saved")).to_be_visible()
    expect(u1.locator("input[name=score][value='0']")).to_be_checked()
    judgment = Judgment.objects.get(coder=reviewer, attribute__code="U1")
    assert judgment.score == 0
