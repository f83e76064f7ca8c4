"""Highlights made with the real mouse in headless Chromium name exactly the passage the reviewer selected, in the
stored response text (text[start:end], offsets in code points as Python counts them): over text a browser shows
otherwise than it stores or counts otherwise than Python (a CRLF line break, decomposed and composed accents,
emoji joined by zero-width joiners, a flag, right-to-left text, HTML-like text, a zero-width space, a tab and
double spaces, a character beyond the Basic Multilingual Plane, a passage across lines and paragraphs), and with
the gestures that select more than the text (a triple click on the last paragraph, a drag that runs past the
text's end or starts above it). A selection whose ends fall inside a character the reader sees (a letter and its
accent, an emoji sequence, a CRLF) highlights the whole characters."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import Assignment, Span
from annotation.selectors import response_handle
from benchmark.models import ModelResponse
from tests.browser import demo_turn_with_text, login
from tests.passages import FAMILY, LAST, NFD, PASSAGES, TEXT

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

# Where a passage is on the screen: from its first box's left edge to its last box's right edge, one pixel inside.
# A right-to-left passage is dragged across so too, from its visual left to its visual right.
PLACE = """([handle, passage]) => {
    const el = document.querySelector(`.response-text[data-response="${handle}"]`);
    el.scrollIntoView({block: "center"});
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    let whole = "", nodes = [];
    while (walker.nextNode()) { nodes.push([walker.currentNode, whole.length]); whole += walker.currentNode.data; }
    const at = whole.indexOf(passage);
    if (at < 0) throw new Error("not found: " + passage);
    function point(index) {
        for (const [node, base] of nodes) if (index <= base + node.data.length) return [node, index - base];
    }
    const range = document.createRange();
    range.setStart(...point(at));
    range.setEnd(...point(at + passage.length));
    const rects = Array.from(range.getClientRects()).filter(r => r.width > 0);
    const a = rects[0], b = rects[rects.length - 1];
    return {x1: a.left + 1, y1: a.top + a.height / 2, x2: b.right - 1, y2: b.top + b.height / 2};
}"""


@pytest.fixture
def tricky(live_server):
    """The demo study's reviewer, assigned a turn whose first response has TEXT; the reviewer's page shows it."""
    round_, reviewer, turn = demo_turn_with_text(client="Hello.", gpt=TEXT, others="{model} says hello.")
    position = Assignment.objects.get(round=round_, coder=reviewer, turn=turn).position
    response = ModelResponse.objects.get(turn=turn, model_slot="GPT")
    handle = response_handle(study=round_.study, coder_id=reviewer.pk, turn_id=turn.pk, response_id=response.pk)
    return f"{live_server.url}/rounds/{round_.pk}/turns/{position}/", response, handle


def highlight(page, response: ModelResponse) -> list[str]:
    """Picks the first subcategory for the selection made and waits for the save: the passages of the spans it
    added, as the stored text has them."""
    before = set(Span.objects.filter(judgment__response=response).values_list("start", "end"))
    page.locator("#palette").wait_for(state="visible")
    page.click('#palette button.sub[data-sub="assumes"]')
    page.wait_for_selector("#global-state[data-state='saved']", timeout=20000)
    after = set(Span.objects.filter(judgment__response=response).values_list("start", "end"))
    return [response.text[start:end] for start, end in sorted(after - before)]


def drag(page, start: tuple[float, float], end: tuple[float, float]) -> None:
    page.mouse.move(*start)
    page.mouse.down()
    page.mouse.move((start[0] + end[0]) / 2, end[1], steps=4)
    page.mouse.move(*end, steps=4)
    page.mouse.up()


def test_a_dragged_highlight_is_the_passage_selected_in_the_stored_text(browser_page, live_server, tricky):
    page = browser_page
    url, response, handle = tricky
    login(page, live_server, "demo-reviewer")
    page.goto(url)
    for passage in PASSAGES:
        box = page.evaluate(PLACE, [handle, passage])
        drag(page, (box["x1"], box["y1"]), (box["x2"], box["y2"]))
        assert page.evaluate("() => window.getSelection().toString()") == passage, "the browser selected it"
        assert highlight(page, response) == [passage]
    assert not page.console_errors, page.console_errors


def test_a_selection_reaching_past_the_text_highlights_the_part_of_it_in_the_text(browser_page, live_server, tricky):
    page = browser_page
    url, response, handle = tricky
    login(page, live_server, "demo-reviewer")
    page.goto(url)
    text = page.locator(f'.response-text[data-response="{handle}"]')

    # A triple click on the last paragraph selects it and runs on into what follows the text.
    box = page.evaluate(PLACE, [handle, "Last paragraph"])
    page.mouse.click(box["x1"] + 5, box["y1"], click_count=3)
    assert highlight(page, response) == [LAST]
    # Its chip shows the passage's first 57 characters, the emoji the 57th whole (never half of its UTF-16 pair).
    chip = page.locator(f'.span-list[data-response="{handle}"] .chip').last.inner_text()
    assert chip.startswith(f"AUR Assumes: \u201c{LAST[:57]}\u2026\u201d"), chip

    # A drag from a word to below the text's box.
    box = page.evaluate(PLACE, [handle, "Hebrew"])
    bottom = text.bounding_box()
    drag(page, (box["x1"], box["y1"]), (bottom["x"] + bottom["width"] - 20, bottom["y"] + bottom["height"] + 8))
    assert highlight(page, response) == [TEXT[TEXT.index("Hebrew"):]]

    # A drag from above the text's box (the response's heading) to the end of a word.
    box = page.evaluate(PLACE, [handle, "First line"])
    drag(page, (box["x1"], text.bounding_box()["y"] - 10), (box["x2"], box["y2"]))
    assert highlight(page, response) == ["First line"]
    assert not page.console_errors, page.console_errors


# The page's selection from one UTF-16 index of the text to another, as a script (or a browser's own selection) may
# set it: anywhere, even between a letter and its combining accent or inside an emoji sequence.
SELECT = """([handle, start, end]) => {
    const el = document.querySelector(`.response-text[data-response="${handle}"]`);
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    let whole = 0, nodes = [];
    while (walker.nextNode()) { nodes.push([walker.currentNode, whole]); whole += walker.currentNode.data.length; }
    function point(index) {
        for (const [node, base] of nodes) if (index <= base + node.data.length) return [node, index - base];
    }
    const range = document.createRange();
    range.setStart(...point(start));
    range.setEnd(...point(end));
    window.getSelection().removeAllRanges();
    window.getSelection().addRange(range);
}"""


def utf16(index: int) -> int:
    """Where code point ``index`` of TEXT is in UTF-16 units, as the page's DOM counts."""
    return len(TEXT[:index].encode("utf-16-le")) // 2


def test_a_selection_ending_inside_a_character_highlights_the_whole_characters(browser_page, live_server, tricky):
    page = browser_page
    url, response, handle = tricky
    login(page, live_server, "demo-reviewer")
    page.goto(url)
    # From between the e and its accent to inside the family emoji (after its first emoji): the accented e and the
    # whole family.
    accent, family = TEXT.index(NFD) + len(NFD) - 1, TEXT.index(FAMILY)
    page.evaluate(SELECT, [handle, utf16(accent), utf16(family + 1)])
    page.keyboard.press("h")
    assert highlight(page, response) == [TEXT[accent - 1:family + len(FAMILY)]]
    # From between the CR and the LF of a line break to between the next CR and LF: the line between, the CRLFs left
    # out whole as blanks.
    first = TEXT.index("\r\n")
    second = TEXT.index("\r\n", first + 2)
    page.evaluate(SELECT, [handle, utf16(first + 1), utf16(second + 1)])
    page.keyboard.press("h")
    assert highlight(page, response) == [TEXT[first + 2:second]]
    assert not page.console_errors, page.console_errors


def test_a_selection_changed_while_the_palette_is_open_is_the_passage_highlighted(browser_page, live_server, tricky):
    """The palette, opened by a drag, took the passage selected then: a selection then widened by Shift+arrows (as the
    keys help says) or made again by the keyboard still highlighted the first passage, not the one shown selected
    when the subcategory was picked. The palette follows the selection, and closes when none is left in a text."""
    page = browser_page
    url, response, handle = tricky
    login(page, live_server, "demo-reviewer")
    page.goto(url)
    box = page.evaluate(PLACE, [handle, "First"])
    drag(page, (box["x1"], box["y1"]), (box["x2"], box["y2"]))
    page.locator("#palette").wait_for(state="visible")
    for _ in range(5):
        page.keyboard.press("Shift+ArrowRight")
    assert page.evaluate("() => window.getSelection().toString()") == "First line"
    page.keyboard.press("1")  # the palette's first subcategory, picked by its digit
    page.wait_for_selector("#global-state[data-state='saved']", timeout=20000)
    assert [response.text[s.start:s.end] for s in Span.objects.filter(judgment__response=response)] == ["First line"]
    # Another passage dragged, then the selection collapsed by an arrow: no passage is left, the palette closes and
    # its digit adds nothing (a pick draws its highlight at once).
    box = page.evaluate(PLACE, [handle, "Second"])
    drag(page, (box["x1"], box["y1"]), (box["x2"], box["y2"]))
    page.locator("#palette").wait_for(state="visible")
    page.keyboard.press("ArrowRight")
    expect(page.locator("#palette")).to_be_hidden()
    page.keyboard.press("1")
    expect(page.locator(f'.span-list[data-response="{handle}"] .chip')).to_have_count(1)
    assert Span.objects.filter(judgment__response=response).count() == 1


# The selection changed and a key pressed in one task: the key's handler runs before the browser tells the page of
# the change (``selectionchange`` is dispatched later, in a task of its own), as a key pressed right after Shift+arrow
# may on a busy machine.
CHANGED_THEN_KEY = """([extend, key]) => {
  const selection = window.getSelection();
  if (extend) { for (let i = 0; i < extend; i++) selection.modify("extend", "forward", "character"); }
  else { selection.collapseToEnd(); }
  const selected = selection.toString();
  document.body.dispatchEvent(new KeyboardEvent("keydown", { key: key, bubbles: true, cancelable: true }));
  return selected;
}"""


def test_a_digit_pressed_before_the_selections_change_is_told_highlights_the_passage_selected_then(
        browser_page, live_server, tricky):
    """The palette took the passage the last ``selectionchange`` gave it: a digit pressed after Shift+arrow but before
    that event came highlighted the passage as it was a key earlier ("First lin" where "First line" was shown
    selected), and one pressed after the selection collapsed highlighted a passage no longer selected. The pick reads
    the selection as it is when the digit is pressed."""
    page = browser_page
    url, response, handle = tricky
    login(page, live_server, "demo-reviewer")
    page.goto(url)
    box = page.evaluate(PLACE, [handle, "First"])
    drag(page, (box["x1"], box["y1"]), (box["x2"], box["y2"]))
    page.locator("#palette").wait_for(state="visible")
    assert page.evaluate(CHANGED_THEN_KEY, [5, "1"]) == "First line"
    page.wait_for_selector("#global-state[data-state='saved']", timeout=20000)
    assert [response.text[s.start:s.end] for s in Span.objects.filter(judgment__response=response)] == ["First line"]
    box = page.evaluate(PLACE, [handle, "Second"])
    drag(page, (box["x1"], box["y1"]), (box["x2"], box["y2"]))
    page.locator("#palette").wait_for(state="visible")
    assert page.evaluate(CHANGED_THEN_KEY, [0, "1"]) == ""
    expect(page.locator("#palette")).to_be_hidden()
    expect(page.locator(f'.span-list[data-response="{handle}"] .chip')).to_have_count(1)
    assert Span.objects.filter(judgment__response=response).count() == 1
    assert not page.console_errors, page.console_errors
