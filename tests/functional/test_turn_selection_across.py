"""Highlights from mouse selections that leave their response in real headless Chromium: a drag from one response's
text into another's is refused in words at the selection and stores nothing; one from the client's message or from
the conversation's earlier turns into a response's text highlights its part in that text (the rule the README
states for a selection that runs past the text), with offsets into that response's stored text and no other."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from annotation.models import Assignment, Round, Span
from annotation.selectors import response_handle
from benchmark.models import ModelResponse
from tests.browser import demo_turn_with_text, login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

# Where the first (``end`` false) or last character of ``needle`` is on the screen, inside the element ``selector``
# names: one pixel inside it, halfway down its line.
POINT = """([selector, needle, end]) => {
    const el = document.querySelector(selector);
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    let whole = "", nodes = [];
    while (walker.nextNode()) { nodes.push([walker.currentNode, whole.length]); whole += walker.currentNode.data; }
    const at = whole.indexOf(needle);
    if (at < 0) throw new Error("not found: " + needle);
    const index = end ? at + needle.length - 1 : at;
    for (const [node, base] of nodes) {
        if (index >= base && index < base + node.data.length) {
            const range = document.createRange();
            range.setStart(node, index - base);
            range.setEnd(node, index - base + 1);
            const r = range.getClientRects()[0];
            return {x: end ? r.right - 1 : r.left + 1, y: r.top + r.height / 2};
        }
    }
}"""


def drag(page, start: tuple[str, str], end: tuple[str, str]) -> None:
    """A mouse drag from the first character of one needle (a selector and the text in it) to the last of another,
    the page scrolled so that the lower one's unit starts below the middle of the window (the text columns are
    sticky: the unit above keeps its text in view just above it)."""
    page.evaluate("""(selectors) => {
        const tops = selectors.map(s => document.querySelector(s).closest(".unit").getBoundingClientRect().top);
        window.scrollTo(0, Math.max(...tops) + window.scrollY - window.innerHeight * 0.6);
    }""", [start[0], end[0]])
    a = page.evaluate(POINT, [start[0], start[1], False])
    b = page.evaluate(POINT, [end[0], end[1], True])
    height = page.viewport_size["height"]
    assert 0 < a["y"] < height and 0 < b["y"] < height, (a, b)
    page.mouse.move(a["x"], a["y"])
    page.mouse.down()
    page.mouse.move((a["x"] + b["x"]) / 2, (a["y"] + b["y"]) / 2, steps=6)
    page.mouse.move(b["x"], b["y"], steps=6)
    page.mouse.up()


def text_of(handle: str) -> str:
    return f'.response-text[data-response="{handle}"]'


@pytest.fixture
def two_responses(live_server):
    """The demo reviewer's page of a turn whose responses are short and distinct, and the first two cards' handles
    with their responses (as the page orders them)."""
    round_, reviewer, turn = demo_turn_with_text(client="I cannot sleep before exams.",
                                                 gpt="Alpha reply about sleep.", others="{model} reply about rest.")
    position = Assignment.objects.get(round=round_, coder=reviewer, turn=turn).position
    by_handle = {response_handle(study=round_.study, coder_id=reviewer.pk, turn_id=turn.pk, response_id=r.pk): r
                 for r in ModelResponse.objects.filter(turn=turn)}
    return f"{live_server.url}/rounds/{round_.pk}/turns/{position}/", by_handle, reviewer


def test_a_drag_from_one_response_into_another_is_refused_in_words_and_stores_nothing(browser_page, live_server,
                                                                                       two_responses):
    page = browser_page
    url, by_handle, reviewer = two_responses
    login(page, live_server, "demo-reviewer")
    page.goto(url)
    first, second = [page.locator(".response-card").nth(i).get_attribute("data-response") for i in (0, 1)]
    drag(page, (text_of(first), "reply"), (text_of(second), "about"))
    selected = page.evaluate("() => window.getSelection().toString()")
    assert selected.startswith("reply") and selected.endswith("about"), selected  # the browser selected across both
    note = page.locator("#selection-note")
    expect(note).to_be_visible()
    expect(note).to_contain_text("within one response")
    expect(page.locator("#palette")).to_be_hidden()
    # Backwards, from the second into the first, the same; by the keyboard's h too.
    page.mouse.click(5, 5)
    expect(note).to_be_hidden()
    drag(page, (text_of(second), "about"), (text_of(first), "reply"))
    expect(note).to_be_visible()
    page.keyboard.press("Escape")
    expect(note).to_be_hidden()
    page.keyboard.press("h")
    expect(note).to_be_visible()
    expect(page.locator("#palette")).to_be_hidden()
    assert not Span.objects.filter(judgment__coder=reviewer).exists()
    assert not page.console_errors, page.console_errors


def test_a_drag_from_the_clients_message_into_a_response_highlights_its_part_in_that_response(
        browser_page, live_server, two_responses):
    page = browser_page
    url, by_handle, reviewer = two_responses
    login(page, live_server, "demo-reviewer")
    page.goto(url)
    handle = page.locator(".response-card").first.get_attribute("data-response")
    response = by_handle[handle]
    word = response.text.split()[1]  # "reply"
    drag(page, (".line.client.current p", "sleep"), (text_of(handle), word))
    page.locator("#palette").wait_for(state="visible")
    page.click('#palette button.sub[data-sub="assumes"]')
    page.wait_for_selector("#global-state[data-state='saved']", timeout=20000)
    spans = list(Span.objects.filter(judgment__coder=reviewer).values_list("judgment__response_id", "start", "end"))
    end = response.text.index(word) + len(word)
    assert spans == [(response.pk, 0, end)], spans
    assert not page.console_errors, page.console_errors


def test_a_drag_from_the_earlier_turns_into_a_response_highlights_its_part_in_that_response(browser_page,
                                                                                            live_server):
    call_command("load_demo", "--quiet")
    round_ = Round.objects.get(study__slug="demo", kind="calibration", number=1)
    assignment = Assignment.objects.filter(round=round_, coder__username="demo-reviewer",
                                           turn__index__gt=1).select_related("turn").first()
    page = browser_page
    login(page, live_server, "demo-reviewer")
    page.goto(f"{live_server.url}/rounds/{round_.pk}/turns/{assignment.position}/")
    page.locator("details.earlier summary").click()
    earlier = assignment.turn.conversation.turns.get(index=1).client_text
    handle = page.locator(".response-card").first.get_attribute("data-response")
    response = next(r for r in assignment.turn.responses.all()
                    if response_handle(study=round_.study, coder_id=assignment.coder_id, turn_id=assignment.turn_id,
                                       response_id=r.pk) == handle)
    word = response.text.split()[2]
    drag(page, ("details.earlier .line.client p", earlier.split()[0]), (text_of(handle), word))
    page.locator("#palette").wait_for(state="visible")
    page.click('#palette button.sub[data-sub="assumes"]')
    page.wait_for_selector("#global-state[data-state='saved']", timeout=20000)
    spans = list(Span.objects.filter(judgment__coder=assignment.coder).values_list(
        "judgment__response_id", "start", "end"))
    end = response.text.index(word) + len(word)
    assert spans == [(response.pk, 0, end)], spans
    assert not page.console_errors, page.console_errors
