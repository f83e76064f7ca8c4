"""The reviewer's turn view in real headless Chromium: scoring, span highlighting by mouse, autosave with a
failed save retried, reload, completion, screenshots."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotation import services
from annotation.models import Assignment, Judgment, Span, StudyMember
from annotation.selectors import response_by_handle, response_handle
from benchmark.models import ModelResponse
from tests.browser import ARTIFACTS, another_device, demo_turn_with_text, login, select_text

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

TRICKY = "Ça va? Tu es naïve 😊 — “quoted” <b>not bold</b> & more… 🧠 then: café."


@pytest.fixture
def study_round():
    """The demo study, plus a conversation whose response text has emoji, accents and HTML-like text."""
    round_, reviewer, _turn = demo_turn_with_text(client="I worry <a lot> & often.", gpt=TRICKY,
                                                  others="{model} says: what helps you?")
    return round_, reviewer


def response_on_page(round_, reviewer, position: int, handle: str) -> ModelResponse:
    """The response a ``data-response`` handle names on the reviewer's page (the page never shows its id)."""
    turn = Assignment.objects.get(round=round_, coder=reviewer, position=position).turn
    response = response_by_handle(study=round_.study, coder_id=reviewer.pk, turn=turn, handle=handle)
    assert response is not None, handle
    return response


def score_all(page, value_for) -> None:
    for form in page.locator("form.attr").all():
        code = form.get_attribute("data-code")
        form.locator(f'input[name="score"][value="{value_for(code)}"]').check()


def wait_saved(page) -> None:
    # A selector wait, not wait_for_function: the page's CSP forbids the eval that the latter needs.
    page.wait_for_selector("#global-state[data-state='saved']", timeout=20000)


def test_reviewer_scores_highlights_reloads_and_finds_everything_saved(browser_page, live_server, study_round):
    page = browser_page
    round_, reviewer = study_round
    login(page, live_server, "demo-reviewer")
    page.click("a.resume")
    page.wait_for_url(re.compile(r"/rounds/\d+/turns/1/$"))
    assert page.locator(".response-card").count() == 5
    assert "GPT" not in page.locator(".response-card h3").all_inner_texts()[0], "model names are hidden by default"

    # Score every attribute: flags 0, everything else 1; the first user-level attribute by keyboard.
    page.locator("form.attr").first.focus()
    page.keyboard.press("2")
    score_all(page, lambda code: "0" if code.startswith("F") else ("2" if code == "U1" else "1"))
    wait_saved(page)

    # Highlight a span with the mouse in the first response.
    first = page.locator(".response-card").first
    handle = first.get_attribute("data-response")
    response = response_on_page(round_, reviewer, 1, handle)
    text = response.text
    word = re.search(r"[A-Za-z]{6,}", text).group(0)
    select_text(page, handle, word)
    page.locator("#palette").wait_for(state="visible")
    page.click('#palette button.sub[data-sub="assumes"]')
    wait_saved(page)
    form = page.locator(f"#r{handle}-AUR")
    assert form.locator('input[name="instance_count"]').input_value() == "1", "count follows the spans"

    page.screenshot(path=str(ARTIFACTS / "turn-desktop.png"), full_page=True)
    page.set_viewport_size({"width": 1024, "height": 768})
    page.screenshot(path=str(ARTIFACTS / "turn-narrow-laptop.png"), full_page=False)

    page.reload()
    assert page.locator("form.attr input[name=score]:checked").count() == page.locator("form.attr").count()
    assert page.locator("#t-U1 input[name=score][value='2']").is_checked()
    assert page.locator(f"#r{handle}-AUR .state-saved").count() == 1
    assert word in page.locator(f'.span-list[data-response="{handle}"]').inner_text()
    span = Span.objects.get(judgment__response=response, judgment__coder=reviewer)
    assert text[span.start:span.end] == word and span.subcategory.slug == "assumes"
    assert Judgment.objects.filter(round=round_, coder=reviewer, score__isnull=False).count() == 80
    assert not page.console_errors, page.console_errors


def test_spans_in_non_ascii_text_are_code_point_offsets(browser_page, live_server, study_round):
    page = browser_page
    round_, reviewer = study_round
    login(page, live_server, "demo-reviewer")
    position = Assignment.objects.get(round=round_, coder=reviewer, turn__conversation__external_id="tricky").position
    page.goto(f"{live_server.url}/rounds/{round_.pk}/turns/{position}/")
    response = ModelResponse.objects.get(model_slot="GPT", turn__conversation__external_id="tricky")
    handle = response_handle(study=round_.study, coder_id=reviewer.pk, turn_id=response.turn_id,
                             response_id=response.pk)
    assert page.locator(f'.response-text[data-response="{handle}"]').inner_text() == TRICKY
    for needle, slug in (("naïve 😊", "assumes"), ("<b>not bold</b>", "directive"), ("🧠 then", "explores")):
        select_text(page, handle, needle)
        page.locator("#palette").wait_for(state="visible")
        page.click(f'#palette button.sub[data-sub="{slug}"]')
        wait_saved(page)
    got = {s.subcategory.slug: TRICKY[s.start:s.end] for s in Span.objects.filter(judgment__response=response)}
    assert got == {"assumes": "naïve 😊", "directive": "<b>not bold</b>", "explores": "🧠 then"}
    # Overlapping spans are allowed; clicking a highlight lets the reviewer change or remove it.
    select_text(page, handle, "naïve")
    page.click('#palette button.sub[data-sub="explores"]')
    wait_saved(page)
    page.locator(f'.response-text[data-response="{handle}"] .seg.overlap').first.click()
    page.locator("#span-popover").wait_for(state="visible")
    page.locator("#span-popover .pop-row", has_text="Explores").first.locator("button.danger").click()
    wait_saved(page)
    assert Span.objects.filter(judgment__response=response).count() == 3
    assert not page.console_errors, page.console_errors


def test_a_failed_save_is_shown_and_retried_until_it_lands(browser_page, live_server, study_round):
    page = browser_page
    round_, reviewer = study_round
    login(page, live_server, "demo-reviewer")
    page.goto(f"{live_server.url}/rounds/{round_.pk}/turns/1/")
    failures = {"left": 2}

    def flaky(route):
        if failures["left"] > 0:
            failures["left"] -= 1
            route.abort("connectionfailed")
        else:
            route.continue_()

    page.route(re.compile(r".*/save$"), flaky)
    page.locator("#t-U3 input[name=score][value='1']").check()
    page.wait_for_selector("#t-U3 .state-failed", timeout=10000)
    assert "retrying" in page.locator("#global-state").inner_text()
    assert re.search(r"\(\d+ tr(y|ies)\)", page.locator("#t-U3 .save").inner_text()), "the tries are counted"
    page.wait_for_selector("#t-U3 .state-saved", timeout=20000)
    assert failures["left"] == 0
    judgment = Judgment.objects.get(round=round_, coder=reviewer, attribute__code="U3")
    assert judgment.score == 1 and judgment.version == 1
    page.screenshot(path=str(ARTIFACTS / "turn-after-retry.png"))


def test_a_change_made_offline_is_held_from_completing_and_sent_once_back_online(browser_page, live_server,
                                                                                 study_round):
    """The network gone mid-coding: the change is said not saved and retried, Complete waits for it; back online, it
    was sent only at the end of its back-off (up to 30 s of "Not saved" with the network back). It is sent at once."""
    page = browser_page
    round_, reviewer = study_round
    login(page, live_server, "demo-reviewer")
    page.goto(f"{live_server.url}/rounds/{round_.pk}/turns/1/")
    page.context.set_offline(True)
    page.locator("#t-U3 input[name=score][value='1']").check()
    expect(page.locator("#t-U3 .state-failed")).to_contain_text("no connection")
    page.click("#complete-turn")
    expect(page.locator("#complete-result")).to_contain_text("Not yet: 1 change(s) are not saved")
    # The third try failed: the next is 4 s away.
    expect(page.locator("#t-U3 .state-failed")).to_contain_text("(3 tries) — retrying in 4 s", timeout=10000)
    page.context.set_offline(False)
    expect(page.locator("#global-state")).to_have_attribute("data-state", "saved", timeout=2500)
    assert Judgment.objects.get(round=round_, coder=reviewer, attribute__code="U3").score == 1
    page.click("#complete-turn")
    page.wait_for_selector("#complete-result .check.missing")


def test_an_edit_in_another_tab_is_never_silently_overwritten(browser_page, live_server, study_round):
    page = browser_page
    round_, reviewer = study_round
    login(page, live_server, "demo-reviewer")
    url = f"{live_server.url}/rounds/{round_.pk}/turns/1/"
    page.goto(url)
    other = another_device(page, live_server)  # a tab of the same browser is told at once (test_turn_tabs.py)
    other.goto(url)
    page.locator("#t-U1 input[name=score][value='1']").check()
    page.wait_for_selector("#t-U1 .state-saved")
    # click, not check: the refusal can come back and put the newer value in place before check() would look
    other.locator("#t-U1 input[name=score][value='0']").click()
    other.wait_for_selector("#t-U1 .state-stale")
    assert other.locator("#t-U1 input[name=score][value='1']").is_checked(), "the second tab is shown the newer value"
    assert other.locator("#global-state").get_attribute("data-state") == "error", "a stale change is not saved"
    assert "Not saved" in other.locator("#t-U1 .save").inner_text()
    assert Judgment.objects.get(round=round_, coder=reviewer, attribute__code="U1").score == 1
    # Rapid changes in one tab are sequential saves, never conflicts with itself.
    for value in ("2", "0", "1", "2"):
        page.locator(f"#t-U1 input[name=score][value='{value}']").check()
    wait_saved(page)
    assert Judgment.objects.get(round=round_, coder=reviewer, attribute__code="U1").score == 2


def test_a_turn_gone_back_to_shows_what_was_saved_on_it(browser_page, live_server, study_round):
    """Back (or forward) to a turn is the turn as the server has it, not the browser's copy of the page as it was
    first loaded: a score and a highlight saved on it are shown, and a change made there is saved on their version."""
    page = browser_page
    round_, reviewer = study_round
    login(page, live_server, "demo-reviewer")
    page.goto(f"{live_server.url}/rounds/{round_.pk}/turns/1/")
    page.locator("#t-U1 input[name=score][value='1']").check()
    text = page.locator(".response-text").first
    text.focus()
    for _ in range(6):
        page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("h")
    page.keyboard.press("1")
    wait_saved(page)
    page.click("a[rel=next]")
    page.wait_for_url(re.compile(r"/turns/2/$"))
    page.go_back()
    page.wait_for_url(re.compile(r"/turns/1/$"))
    assert page.locator("#turn-progress").inner_text() == "1 / 80 scored"
    assert page.locator(".response-card").first.locator(".span-list .chip").count() == 1
    page.locator("#t-U1 input[name=score][value='2']").click()
    page.wait_for_selector("#t-U1 .state-saved")
    wait_saved(page)
    judgment = Judgment.objects.get(round=round_, coder=reviewer, attribute__code="U1")
    assert (judgment.score, judgment.version) == (2, 2)


def test_a_note_changed_in_another_tab_is_never_silently_overwritten(browser_page, live_server, study_round):
    """The item's comment and flags are one note: a flag ticked in a tab opened before another tab saved a comment
    would send that tab's empty comment with it. It is refused, the newer note shown, and saved once ticked again."""
    page = browser_page
    round_, reviewer = study_round
    login(page, live_server, "demo-reviewer")
    url = f"{live_server.url}/rounds/{round_.pk}/turns/1/"
    page.goto(url)
    other = another_device(page, live_server)  # a tab of the same browser is told at once (test_turn_tabs.py)
    other.goto(url)
    page.fill("#note-comment", "Response B stops mid-sentence.")
    page.locator("#note-comment").press("Tab")
    page.locator("#item-note .state-saved").wait_for()
    other.locator("#item-note input[value=truncated]").click()
    expect(other.locator("#item-note .state-stale")).to_contain_text("changed in another tab")
    expect(other.locator("#note-comment")).to_have_value("Response B stops mid-sentence.")
    expect(other.locator("#item-note input[value=truncated]")).not_to_be_checked()
    assert other.locator("#global-state").get_attribute("data-state") == "error"
    assignment = Assignment.objects.get(round=round_, coder=reviewer, position=1)
    assert (assignment.comment, assignment.flags) == ("Response B stops mid-sentence.", [])
    other.locator("#item-note input[value=truncated]").click()
    other.locator("#item-note .state-saved").wait_for()
    assignment.refresh_from_db()
    assert (assignment.comment, assignment.flags) == ("Response B stops mid-sentence.", ["truncated"])


def test_a_note_gone_back_to_shows_the_servers_note_not_the_fields_as_they_were_left(browser_page, live_server,
                                                                                      study_round):
    """Back to a turn, the browser puts the note's fields back as they were when the page was left, over the note the
    server sent: a note changed since on another device was shown as the older one, and the next flag ticked wrote
    that older comment and flags over it (the page's base was the server's note, so nothing refused it)."""
    page = browser_page
    round_, reviewer = study_round
    login(page, live_server, "demo-reviewer")
    page.goto(f"{live_server.url}/rounds/{round_.pk}/turns/1/")
    page.fill("#note-comment", "Response B stops mid-sentence.")
    page.locator("#item-note input[value=truncated]").check()
    wait_saved(page)
    page.click("a[rel=next]")
    page.wait_for_url(re.compile(r"/turns/2/$"))
    services.assignment_note_save(assignment=Assignment.objects.get(round=round_, coder=reviewer, position=1),
                                  by=reviewer, comment="Both responses are fine.", flags=[])
    page.go_back()
    page.wait_for_url(re.compile(r"/turns/1/$"))
    expect(page.locator("#note-comment")).to_have_value("Both responses are fine.")
    expect(page.locator("#item-note input[value=truncated]")).not_to_be_checked()
    page.locator("#item-note input[value=unsure]").check()
    page.locator("#item-note .state-saved").wait_for()
    assignment = Assignment.objects.get(round=round_, coder=reviewer, position=1)
    assert (assignment.comment, assignment.flags) == ("Both responses are fine.", ["unsure"])


def test_complete_turn_lists_missing_codings_then_moves_on_and_resume_follows(browser_page, live_server,
                                                                               study_round):
    page = browser_page
    round_, reviewer = study_round
    login(page, live_server, "demo-reviewer")
    page.goto(f"{live_server.url}/rounds/{round_.pk}/turns/1/")
    page.locator("#t-U1 input[name=score][value='1']").check()
    wait_saved(page)
    page.click("#complete-turn")
    page.wait_for_selector("#complete-result .check.missing")
    assert "U2 · Evocative / Emotional" in page.locator("#complete-result").inner_text()
    score_all(page, lambda code: "0" if code.startswith("F") else "1")
    wait_saved(page)
    page.keyboard.press("Escape")
    page.click("#complete-turn")
    page.wait_for_selector("#complete-result .check.warnings")
    assert "but no highlighted span" in page.locator("#complete-result").inner_text()
    page.click("#complete-result button")
    page.wait_for_url(re.compile(r"/turns/2/$"))
    assert Assignment.objects.get(round=round_, coder=reviewer, position=1).completed_at is not None
    page.goto(f"{live_server.url}/")
    assert page.locator("a.resume").get_attribute("href").endswith("/turns/2/")
    assert StudyMember.objects.filter(user=reviewer).exists()


def test_keyboard_only_scoring_selection_and_help(browser_page, live_server, study_round):
    page = browser_page
    round_, reviewer = study_round
    login(page, live_server, "demo-reviewer")
    page.goto(f"{live_server.url}/rounds/{round_.pk}/turns/1/")
    page.keyboard.press("?")
    assert page.locator("#keys-help").is_visible()
    page.keyboard.press("Escape")
    assert not page.locator("#keys-help").is_visible()
    # Score U1 with a number key, move down with the arrow key and score the next one.
    page.locator("#t-U1").focus()
    page.keyboard.press("1")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("0")
    page.keyboard.press("d")
    assert page.locator("#t-U2 .definition").is_visible()
    wait_saved(page)
    assert dict(Judgment.objects.filter(coder=reviewer).values_list("attribute__code", "score")) == {"U1": 1, "U2": 0}
    # Select the first six characters of a response with Shift+Arrow, open the palette with h, pick with Enter.
    text_box = page.locator(".response-text").first
    response = response_on_page(round_, reviewer, 1, text_box.get_attribute("data-response"))
    text_box.focus()
    for _ in range(6):
        page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("h")
    page.locator("#palette").wait_for(state="visible")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    wait_saved(page)
    span = Span.objects.get(judgment__response=response, judgment__coder=reviewer)
    expected = response.text[:6].strip()
    assert response.text[span.start:span.end] == expected and span.subcategory.slug == "explores"


def test_the_schema_parts_are_fetched_once_and_a_page_without_them_says_so(browser_page, live_server, study_round):
    """The attribute templates, definitions and palette come from a script the browser keeps: the next page of the
    round takes it from the browser's cache; a page whose script cannot load says so instead of showing empty
    forms."""
    page = browser_page
    round_, _ = study_round
    login(page, live_server, "demo-reviewer")
    # Chromium's own account of each request (Playwright's routing would turn the cache off).
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    sent: dict[str, str] = {}
    cached: set[str] = set()
    cdp.on("Network.requestWillBeSent", lambda event: sent.update({event["requestId"]: event["request"]["url"]}))
    cdp.on("Network.requestServedFromCache", lambda event: cached.add(event["requestId"]))
    for position in (1, 2):
        page.goto(f"{live_server.url}/rounds/{round_.pk}/turns/{position}/")
        assert page.locator("form.attr input[name=score]").count() > 0, "the forms are built from the parts"
        assert page.locator("#palette button.sub").count() > 0
    loads = [request for request, url in sent.items() if "/coding-parts.js?" in url]
    assert len({sent[request] for request in loads}) == 1, "every page of the round names the same parts"
    assert len(loads) == 2 and sum(request in cached for request in loads) == 1, "the second page: from the cache"

    page.route(re.compile(r".*/coding-parts\.js\?.*"),
               lambda route: route.fulfill(status=401, body="Your session has ended: sign in again."))
    page.goto(f"{live_server.url}/rounds/{round_.pk}/turns/1/")
    assert page.locator("#global-state").inner_text() == "The attribute forms could not be loaded: reload the page."
    assert page.locator("#global-state").get_attribute("data-state") == "error"
    assert page.locator("form.attr input[name=score]").count() == 0
