"""Double clicks and double key presses on what saves or completes, in real headless Chromium, with the first save's
answer held back so that the second comes while it is on its way: a score (by mouse and by its digit), Clear, a
note's flag, a highlight's palette, its ✕ and its popover, Complete. Each unit ends with the last value and no
refusal shown as another tab's change; a ✕ clicked twice removes its highlight alone."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotation.models import Assignment, Judgment
from tests.browser import login
from tests.functional.pages import coding_page
from tests.functional.test_turn_page import wait_saved
from tests.functional.test_turn_save_races import NOTE, SAVE, Held

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


@pytest.mark.parametrize("kind", ["turn", "response", "care", "lc8"])
def test_scores_clicked_and_typed_twice_while_the_first_is_on_its_way_end_with_the_last(browser_page, live_server,
                                                                                       kind):
    page = browser_page
    coding = coding_page(live_server, kind)
    login(page, live_server, "demo-reviewer")
    page.goto(coding.url)
    form = page.locator(coding.form)
    first, second = coding.scores
    held = Held(page, SAVE)
    form.locator(f"input[name=score][value='{first}']").dblclick()
    form.locator(f"input[name=score][value='{first}']").focus()
    page.keyboard.press(second)
    page.keyboard.press(second)
    held.release()
    wait_saved(page)
    judgment = coding.judgment()
    assert str(judgment.score) == second
    # Clear twice, then the digit twice: the judgment is the last value, every step on the version before it.
    held = Held(page, SAVE)
    form.locator("button.clear").dblclick()
    form.locator(f"input[name=score][value='{first}']").focus()
    page.keyboard.press(first)
    page.keyboard.press(first)
    held.release()
    wait_saved(page)
    judgment.refresh_from_db()
    assert str(judgment.score) == first
    expect(form.locator(f"input[name=score][value='{first}']")).to_be_checked()
    assert page.locator(".state-stale, .state-refused").count() == 0
    page.reload()
    expect(page.locator(coding.form).locator(f"input[name=score][value='{first}']")).to_be_checked()
    assert not page.console_errors, page.console_errors


@pytest.mark.parametrize("kind", ["turn", "lc8"])
def test_a_flag_clicked_twice_while_the_first_is_on_its_way_ends_unticked(browser_page, live_server, kind):
    page = browser_page
    coding = coding_page(live_server, kind)
    login(page, live_server, "demo-reviewer")
    page.goto(coding.url)
    held = Held(page, NOTE)
    page.locator("#item-note input[value=unsure]").dblclick()
    page.locator("#item-note input[value=discuss]").click()
    held.release()
    wait_saved(page)
    assignment = Assignment.objects.get(pk=coding.assignment.pk)
    assert assignment.flags == ["discuss"]
    assert page.locator("#item-note .state-stale").count() == 0


def two_highlights(page) -> tuple[str, Judgment]:
    """Two highlights of one attribute in the first response, by keyboard, each from the text's start (the first
    inside the second; the blanks at a selection's end are left out)."""
    card = page.locator(".response-card").first
    handle = card.get_attribute("data-response")
    text = page.locator(f'.response-text[data-response="{handle}"]')
    for length in (6, 12):
        text.focus()
        for _ in range(length):
            page.keyboard.press("Shift+ArrowRight")
        page.keyboard.press("h")
        page.keyboard.press("1")
        page.keyboard.press("1")  # pressed twice: the palette is closed by then
    wait_saved(page)
    judgment = Judgment.objects.filter(spans__isnull=False, coder__username="demo-reviewer").distinct().get()
    return handle, judgment


def test_a_palette_pick_twice_adds_one_highlight_and_a_remove_clicked_twice_removes_its_own(browser_page,
                                                                                            live_server):
    page = browser_page
    coding = coding_page(live_server, "turn")
    login(page, live_server, "demo-reviewer")
    page.goto(coding.url)
    handle, judgment = two_highlights(page)
    short, long = sorted(judgment.spans.values_list("start", "end"))  # two: the second 1 added no third
    assert judgment.score is None, "the second 1 scored nothing"
    held = Held(page, SAVE)
    chips = page.locator(f'.span-list[data-response="{handle}"] .chip')
    chips.first.locator(".remove-span").dblclick()
    held.release()
    wait_saved(page)
    assert list(judgment.spans.values_list("start", "end")) == [long]
    expect(chips).to_have_count(1)


def test_a_popovers_change_clicked_twice_changes_the_highlight_once(browser_page, live_server):
    page = browser_page
    coding = coding_page(live_server, "turn")
    login(page, live_server, "demo-reviewer")
    page.goto(coding.url)
    handle, judgment = two_highlights(page)
    before = {(s.start, s.end): s.subcategory.name for s in judgment.spans.select_related("subcategory")}
    chips = page.locator(f'.span-list[data-response="{handle}"] .chip')
    chips.nth(1).locator(".change-span").click()
    change = page.locator("#span-popover button", has_text=re.compile("^Change to"))
    target = change.first.inner_text().removeprefix("Change to ")
    held = Held(page, SAVE)
    change.first.dblclick()
    held.release()
    wait_saved(page)
    after = {(s.start, s.end): s.subcategory.name for s in judgment.spans.select_related("subcategory")}
    changed = sorted(before)[1]  # the second chip's: the chips are in the order of their passages
    assert after.keys() == before.keys() and after[changed] == target, (before, after, target)
    assert [key for key in before if before[key] != after[key]] == [changed]
    expect(chips).to_have_count(2)


def test_complete_clicked_twice_completes_once_and_moves_on(browser_page, live_server):
    page = browser_page
    coding = coding_page(live_server, "lc8")
    login(page, live_server, "demo-reviewer")
    page.goto(coding.url)
    for form in page.locator(".lc8-items > .attrs form.attr").all():
        form.locator("input[name=score][value='1']").check()
    wait_saved(page)
    held = Held(page, re.compile(r".*/complete/?$"))
    page.locator("#complete-turn").dblclick()
    page.keyboard.press("c")
    held.holding = False
    while held.routes:
        held.routes.pop(0).continue_()
    page.wait_for_url(re.compile(rf"/turns/{coding.assignment.position + 1}/$"))
    assert Assignment.objects.get(pk=coding.assignment.pk).completed_at is not None
    assert not page.console_errors, page.console_errors


def test_a_remove_clicked_twice_beside_a_chip_of_the_same_width_removes_its_own(browser_page, live_server):
    page = browser_page
    coding = coding_page(live_server, "turn")
    login(page, live_server, "demo-reviewer")
    page.goto(coding.url)
    card = page.locator(".response-card").first
    handle = card.get_attribute("data-response")
    text = page.locator(f'.response-text[data-response="{handle}"]')
    for digit in ("3", "4"):  # TD Tentative and TD Directive, on one passage: chips of (nearly) one width
        text.focus()
        for _ in range(6):
            page.keyboard.press("Shift+ArrowRight")
        page.keyboard.press("h")
        page.keyboard.press(digit)
    wait_saved(page)
    chips = page.locator(f'.span-list[data-response="{handle}"] .chip')
    chips.first.locator(".remove-span").dblclick()
    wait_saved(page)
    judgment = Judgment.objects.filter(spans__isnull=False, coder__username="demo-reviewer").distinct().get()
    assert judgment.spans.count() == 1
    expect(chips).to_have_count(1)
