"""The coding page's words about saving against what the server has, in real headless Chromium: each state a form
and the header show while changes wait behind a save on its way, are refused, or answered stale. Requests are only
held back with ``page.route`` (never answered by the test); nothing of the page's scripts is replaced."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from annotation import services
from annotation.models import Assignment, Judgment
from calibration import services as calibration_services
from tests.browser import another_device
from tests.functional.test_turn_page import study_round, wait_saved  # noqa: F401  (a fixture)
from tests.functional.test_turn_save_races import NOTE, SAVE, Held, open_turn

EDITING = "Editing… not saved yet"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_a_comment_typed_back_to_its_saved_text_is_not_sent(browser_page, live_server, study_round):  # noqa: F811
    page = browser_page
    round_, reviewer = study_round
    assignment = Assignment.objects.get(round=round_, coder=reviewer, position=1)
    Assignment.objects.filter(pk=assignment.pk).update(comment="Response A")
    open_turn(page, live_server, round_)
    sent: list[str] = []
    page.on("request", lambda request: sent.append(request.post_data) if NOTE.match(request.url) else None)
    # Another tab saves a newer comment after this page was loaded.
    services.assignment_note_save(assignment=assignment, by=reviewer, comment="Response A, and B too", flags=[],
                                  base=("Response A", []))
    comment = page.locator("#note-comment")
    comment.click()
    comment.press("End")
    comment.press_sequentially(" x")
    expect(page.locator("#global-state")).to_have_text(EDITING)
    comment.press("Backspace")
    comment.press("Backspace")
    # Typed back to the text the page had from the server: nothing to save, and said so at once (no "Editing…"
    # until a typing pause ends, then a save of no change refused as stale: "not saved" for a change never made).
    expect(page.locator("#global-state")).to_have_text("All changes saved")
    expect(page.locator("#global-state")).to_have_attribute("data-state", "saved")
    assert page.locator("#item-note .state-editing, #item-note .state-stale").count() == 0
    comment.press("Tab")
    # A flag ticked now is a change, sent on the note the page had: refused as stale, the newer comment shown.
    # (A click, not check(): the refusal's answer unticks the box again, maybe before check() looks at it.)
    page.locator("#item-note input[name=flags]").first.click()
    expect(page.locator("#item-note .state-stale")).to_be_visible()
    expect(page.locator("#item-note input[name=flags]").first).not_to_be_checked()
    expect(comment).to_have_value("Response A, and B too")
    assert len(sent) == 1 and "flags=" in sent[0], sent
    assignment.refresh_from_db()
    assert (assignment.comment, assignment.flags) == ("Response A, and B too", [])


def test_a_comment_typed_while_its_note_is_refused_as_stale_stays_quoted(browser_page, live_server,
                                                                         study_round):  # noqa: F811
    page = browser_page
    round_, reviewer = study_round
    page.clock.install()  # the comment's typing pause ends when the test says, not after a sleep
    open_turn(page, live_server, round_)
    sent: list[str] = []
    page.on("request", lambda request: sent.append(request.post_data) if NOTE.match(request.url) else None)
    comment = page.locator("#note-comment")
    held = Held(page, NOTE)
    comment.fill("Response A repeats itself")
    comment.press("Tab")  # left: sent, and held on its way
    expect(page.locator("#item-note .save")).to_have_text("Saving…")
    # Another tab saves a note meanwhile; here the comment is typed on, its typing pause not over.
    assignment = Assignment.objects.get(round=round_, coder=reviewer, position=1)
    services.assignment_note_save(assignment=assignment, by=reviewer, comment="Both are fine.", flags=[],
                                  base=("", []))
    comment.click()
    comment.press("End")
    comment.press_sequentially(", twice.")
    held.release()
    # Refused as stale: the newer note shown, the comment typed here quoted.
    state = page.locator("#item-note .save")
    expect(state).to_contain_text("your comment was: “Response A repeats itself, twice.”")
    expect(comment).to_have_value("Both are fine.")
    # The typing pause ends: the comment it was for is the one quoted, refused; nothing more is sent, and the quote
    # stays (before, the newer note was sent as the pause's change, and "Saved" took the quote's place).
    page.clock.run_for(5000)
    expect(state).to_contain_text("your comment was: “Response A repeats itself, twice.”")
    expect(page.locator("#global-state")).to_have_attribute("data-state", "error")
    assert len(sent) == 1, sent
    assignment.refresh_from_db()
    assert assignment.comment == "Both are fine."


def test_the_flags_ticked_while_a_note_is_refused_as_stale_are_quoted(browser_page, live_server,
                                                                      study_round):  # noqa: F811
    """A note refused as stale shows the newer note; the flags this page had ticked are said in the message by their
    labels, as its comment is. Before, they were unticked without a word (only the comment was quoted)."""
    page = browser_page
    round_, reviewer = study_round
    open_turn(page, live_server, round_)
    held = Held(page, NOTE)
    boxes = page.locator("#item-note input[name=flags]")
    boxes.nth(0).click()
    expect(page.locator("#item-note .save")).to_have_text("Saving…")
    label = boxes.nth(0).locator("xpath=..").text_content().strip()
    # Another device saves a note with a comment and no flag meanwhile.
    assignment = Assignment.objects.get(round=round_, coder=reviewer, position=1)
    services.assignment_note_save(assignment=assignment, by=reviewer, comment="Both are fine.", flags=[],
                                  base=("", []))
    held.release()
    state = page.locator("#item-note .save")
    expect(state).to_contain_text(f"(your flags were: {label})")
    expect(boxes.nth(0)).not_to_be_checked()
    expect(page.locator("#note-comment")).to_have_value("Both are fine.")
    assignment.refresh_from_db()
    assert (assignment.comment, assignment.flags) == ("Both are fine.", [])


@pytest.mark.parametrize("refusal", ["stale", "locked"])
def test_a_count_typed_while_its_attribute_is_refused_stays_quoted(
        browser_page, live_server, study_round, refusal):  # noqa: F811
    """An instance count typed, its field not left (no change event yet), while a save of its attribute is on its way
    that comes back refused as stale (another tab saved first) or locked (the round closed): the form shows the
    server's value, and the count typed here is quoted in the refusal; before, it was replaced without a word."""
    page = browser_page
    round_, reviewer = study_round
    handle = open_turn(page, live_server, round_)
    sent: list[str] = []
    page.on("request", lambda request: sent.append(request.post_data) if SAVE.match(request.url) else None)
    aur = page.locator(f"#r{handle}-AUR")
    count = aur.locator("input[name=instance_count]")
    other = page.context.new_page()
    other.goto(page.url)
    held = Held(page, SAVE)
    aur.locator("input[name=score][value='1']").check()
    expect(aur.locator(".save")).to_have_text("Saving…")
    count.click()
    count.press_sequentially("3")  # typed while the score's save is on its way, the field not left
    if refusal == "stale":  # another tab saves the attribute first
        other.locator(f"#r{handle}-AUR input[name=score][value='2']").check()
        other.locator(f"#r{handle}-AUR input[name=instance_count]").fill("5")
        other.locator(f"#r{handle}-AUR input[name=instance_count]").press("Tab")
        wait_saved(other)
    else:
        calibration_services.round_close(round=round_, by=get_user_model().objects.get(username="demo-admin"))
    other.close()
    held.release()
    message = aur.locator(f".state-{refusal}")
    expect(message).to_contain_text("your instance count was: “3”")
    expect(count).to_have_value("5" if refusal == "stale" else "")
    expect(page.locator("#global-state")).to_have_attribute("data-state", "error")
    # The field left now: the count it holds is the server's, no change; nothing is sent, and the quote stays.
    count.press("Tab")
    page.locator("#t-U1 input[name=score][value='1']").check()  # a save after it, to know none was sent before
    expect(page.locator(f"#t-U1 .state-{'locked' if refusal == 'locked' else 'saved'}")).to_be_visible()
    assert len(sent) == 2 and "attribute=U1" in sent[1], sent
    expect(message).to_contain_text("your instance count was: “3”")
    judgment = Judgment.objects.filter(coder=reviewer, attribute__code="AUR", response__isnull=False).first()
    if refusal == "stale":
        assert (judgment.score, judgment.instance_count) == (2, 5)
    else:
        assert judgment is None

# Every text the save states of the forms and the note show, in order, by form (a MutationObserver the test adds:
# the page's own scripts are untouched).
RECORD = """() => {
    window.seenStates = [];
    new MutationObserver((records) => records.forEach((r) => {
        if (r.target.nodeType !== 1 || !r.target.matches('form .save')) return;
        // The state put in (each state is a new element: its text then is its text now), or none.
        const shown = Array.from(r.addedNodes).map((node) => node.textContent).join('');
        window.seenStates.push([r.target.closest('form').id, shown]);
    })).observe(document.body, {subtree: true, childList: true});
}"""


def test_a_change_waiting_behind_a_save_on_its_way_is_never_shown_saved(browser_page, live_server,
                                                                         study_round):  # noqa: F811
    page = browser_page
    round_, reviewer = study_round
    handle = open_turn(page, live_server, round_)
    page.evaluate(RECORD)
    saves, notes = Held(page, SAVE), Held(page, NOTE)
    # Each a change, and a newer one made while the first's save is held on its way.
    u1 = page.locator("#t-U1")
    u1.locator("input[name=score][value='1']").check()
    u1.locator("input[name=score][value='2']").check()
    aur = page.locator(f"#r{handle}-AUR")
    aur.locator("input[name=score][value='1']").check()
    aur.locator("input[name=instance_count]").fill("3")
    aur.locator("input[name=instance_count]").press("Tab")
    aur.locator(".clear").click()
    aur.locator("input[name=score][value='2']").check()
    page.fill("#note-comment", "Response A repeats itself.")
    page.locator("#note-comment").press("Tab")
    page.locator("#item-note input[name=flags]").first.check()
    expect(page.locator("#global-state")).to_have_text("Saving…")
    saves.release()
    notes.release()
    wait_saved(page)
    # "Saved" is said once per form, after the answer to its last save: never while its newer change waited.
    seen = page.evaluate("() => window.seenStates")
    for form in ("t-U1", f"r{handle}-AUR", "item-note"):
        texts = [text for shown, text in seen if shown == form]
        assert texts[-1] == "Saved" and "Saved" not in texts[:-1], (form, texts)
    judgment = Judgment.objects.get(coder=reviewer, attribute__code="AUR", response__isnull=False)
    assert (judgment.score, judgment.instance_count) == (2, None)
    assert Judgment.objects.get(coder=reviewer, attribute__code="U1").score == 2
    assignment = Assignment.objects.get(round=round_, coder=reviewer, position=1)
    assert assignment.comment == "Response A repeats itself." and len(assignment.flags) == 1


def test_a_save_refused_as_stale_with_the_value_it_sent_is_shown_saved(browser_page, live_server,
                                                                        study_round):  # noqa: F811
    page = browser_page
    round_, reviewer = study_round
    open_turn(page, live_server, round_)
    other = page.context.new_page()
    other.goto(page.url)
    held = Held(page, SAVE)
    page.locator("#t-U1 input[name=score][value='2']").check()
    expect(page.locator("#t-U1 .save")).to_have_text("Saving…")
    # Another tab saves the same score first: this page's save, on the version it had, is refused as stale.
    other.locator("#t-U1 input[name=score][value='2']").check()
    wait_saved(other)
    held.release()
    # The server has the score this page shows: saved, not "changed in another tab", nor a change not saved.
    expect(page.locator("#t-U1 .save")).to_have_text("Saved")
    expect(page.locator("#global-state")).to_have_text("All changes saved")
    expect(page.locator("#t-U1 input[name=score][value='2']")).to_be_checked()
    # And its version taken: the next change is saved on it, not refused as stale.
    page.locator("#t-U1 input[name=score][value='1']").check()
    wait_saved(page)
    expect(page.locator("#t-U1 .save")).to_have_text("Saved")
    judgment = Judgment.objects.get(coder=reviewer, attribute__code="U1")
    assert (judgment.score, judgment.version) == (1, 2)


def test_a_change_made_while_its_save_met_the_same_value_from_another_device_is_saved(browser_page, live_server,
                                                                                      study_round):  # noqa: F811
    """A save refused as stale whose newer value is the very value it sent (another device saved the same first) is
    taken as saved, and the change made meanwhile is sent on the newer version. Before, only the value the page
    shows was compared: the page said "changed in another tab", showed the other device's value and dropped the
    reviewer's later change."""
    page = browser_page
    round_, reviewer = study_round
    open_turn(page, live_server, round_)
    held = Held(page, SAVE)
    page.locator("#t-U1 input[name=score][value='2']").check()
    expect(page.locator("#t-U1 .save")).to_have_text("Saving…")
    page.locator("#t-U1 input[name=score][value='1']").check()  # waits behind the save on its way
    other = another_device(page, live_server)
    other.goto(page.url)
    other.locator("#t-U1 input[name=score][value='2']").check()
    wait_saved(other)
    held.release()
    wait_saved(page)
    expect(page.locator("#t-U1 .save")).to_have_text("Saved")
    expect(page.locator("#t-U1 input[name=score][value='1']")).to_be_checked()
    judgment = Judgment.objects.get(coder=reviewer, attribute__code="U1")
    assert (judgment.score, judgment.version) == (1, 2)


def test_a_note_refused_as_stale_with_the_note_the_page_shows_is_shown_saved(browser_page, live_server,
                                                                              study_round):  # noqa: F811
    page = browser_page
    round_, reviewer = study_round
    open_turn(page, live_server, round_)
    held = Held(page, NOTE)
    page.fill("#note-comment", "Response B stops mid-sentence.")
    page.locator("#note-comment").press("Tab")  # sent, held on its way
    page.locator("#item-note input[value=truncated]").check()  # waiting behind it
    # Another tab saves the note this page now shows: this page's save, on the note it had, is refused as stale.
    assignment = Assignment.objects.get(round=round_, coder=reviewer, position=1)
    services.assignment_note_save(assignment=assignment, by=reviewer, comment="Response B stops mid-sentence.",
                                  flags=["truncated"], base=("", []))
    held.release()
    # The server has the note shown here: saved, not "changed in another tab", nor a change not saved.
    expect(page.locator("#item-note .save")).to_have_text("Saved")
    expect(page.locator("#global-state")).to_have_text("All changes saved")
    # The next change is made on that note, not refused as stale.
    page.locator("#item-note input[value=unsure]").check()
    wait_saved(page)
    expect(page.locator("#item-note .save")).to_have_text("Saved")
    assignment.refresh_from_db()
    assert (assignment.comment, assignment.flags) == ("Response B stops mid-sentence.", ["truncated", "unsure"])
