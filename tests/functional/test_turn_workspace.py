"""The reviewer's workspace in real headless Chromium: nothing lost when the session ends, refusals said where they
happen, undo/redo, clearing a score, the item's comment and flags, a turn completed by keyboard alone, and an
accessibility scan (axe-core) of the pages a reviewer sees."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from access import roles
from access.services import user_ensure
from annotation import services
from annotation.models import Assignment, Judgment, Round, Span
from tests import scenarios
from tests.browser import ARTIFACTS, login
from tests.functional.test_turn_page import response_on_page, study_round, wait_saved  # noqa: F401  (a fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def scores(reviewer, *codes):
    return dict(Judgment.objects.filter(coder=reviewer, attribute__code__in=codes, response__isnull=True)
                .values_list("attribute__code", "score"))


def sign_in_again(page):
    page.locator("#relogin").wait_for(state="visible")
    expect(page.locator("#relogin-password")).to_be_focused()
    page.fill("#relogin-password", "cab-demo")
    page.click("#relogin-form button[type=submit]")
    page.locator("#relogin").wait_for(state="hidden")
    wait_saved(page)


def test_changes_made_after_the_session_ended_are_kept_and_saved_after_signing_in(browser_page, live_server,
                                                                                   study_round):  # noqa: F811
    page = browser_page
    round_, reviewer = study_round
    login(page, live_server, "demo-reviewer")
    page.goto(f"{live_server.url}/rounds/{round_.pk}/turns/1/")

    # The session expired: its cookie is gone.
    page.context.clear_cookies(name="sessionid")
    page.locator("#t-U1 input[name=score][value='2']").check()
    page.locator("#relogin").wait_for(state="visible")
    expect(page.locator("#relogin-why")).to_have_text("Your session has ended: sign in again.")
    assert page.locator("#global-state").get_attribute("data-state") == "auth"
    assert "sign in again" in page.locator("#t-U1 .save").inner_text()
    page.keyboard.press("Escape")  # closed without signing in: the change still waits, and so does the next
    page.locator("#t-U2 input[name=score][value='1']").check()
    assert page.locator("#global-state").get_attribute("data-state") == "auth"
    assert not Judgment.objects.filter(coder=reviewer).exists()
    sign_in_again(page)
    assert scores(reviewer, "U1", "U2") == {"U1": 2, "U2": 1}

    # Signed out in another tab: the next change asks to sign in again, and is saved afterwards.
    other = page.context.new_page()
    other.goto(f"{live_server.url}/")
    with other.expect_navigation():
        other.click(".topbar form button")
    other.close()
    page.locator("#t-U3 input[name=score][value='1']").check()
    sign_in_again(page)
    assert scores(reviewer, "U1", "U2", "U3") == {"U1": 2, "U2": 1, "U3": 1}

    # Another account with the same item at the same place (a calibration set) signed in in another tab, and the
    # page is told to "save again": its change is never that account's. It waits for the page's own account (named
    # in the dialog) to sign in again, and is saved as the page's.
    second = user_ensure(username="second-reviewer", role=roles.REVIEWER, password="pw-second")  # noqa: S106
    services.study_member_add(study=round_.study, user=second, role="reviewer", by=None)
    Round.objects.filter(pk=round_.pk).update(status="draft")
    services.assignments_ensure(round=round_, coder=second, turns=[Assignment.objects.get(
        round=round_, coder=reviewer, position=1).turn], by=None)
    Round.objects.filter(pk=round_.pk).update(status="open")
    other = page.context.new_page()
    other.goto(f"{live_server.url}/")
    with other.expect_navigation():
        other.click(".topbar form button")
    login(other, live_server, "second-reviewer", "pw-second")
    other.close()
    page.locator("#t-U4 input[name=score][value='1']").check()
    page.locator("#relogin").wait_for(state="visible")
    expect(page.locator("#relogin-username")).to_have_value("demo-reviewer")
    page.click("#relogin-retry")  # "signed in in a new tab, save again", but the new tab's account is another one
    expect(page.locator("#t-U4 .save")).to_contain_text("sign in again")
    page.locator("#relogin").wait_for(state="visible")
    expect(page.locator("#relogin-why")).to_have_text(
        "This page was opened by another account: sign in again as that account to save.")
    page.screenshot(path=str(ARTIFACTS / "relogin-another-account.png"))
    assert not Judgment.objects.filter(coder=second).exists()
    sign_in_again(page)
    assert scores(reviewer, "U1", "U2", "U3", "U4") == {"U1": 2, "U2": 1, "U3": 1, "U4": 1}
    assert not Judgment.objects.filter(coder=second).exists()
    # The CSRF token changed at sign-in and the page took the new one: htmx requests work too.
    page.click("#complete-turn")
    page.wait_for_selector("#complete-result .check.missing")
    assert all("Failed to load resource" in e for e in page.console_errors), page.console_errors


def test_save_again_clicked_before_signing_in_elsewhere_keeps_the_change_until_signed_in(browser_page, live_server,
                                                                                          study_round):  # noqa: F811
    """The dialog's "sign in in a new tab, then save again", its button clicked before that sign-in was done: the
    second 401 was taken for a sign-in that had not helped, and the change was dropped as "refused even after signing
    in", never sent again once the reviewer had signed in. Each "save again" sends the change and asks again."""
    page = browser_page
    round_, reviewer = study_round
    login(page, live_server, "demo-reviewer")
    page.goto(f"{live_server.url}/rounds/{round_.pk}/turns/1/")
    page.context.clear_cookies(name="sessionid")  # the session ended
    page.locator("#t-U1 input[name=score][value='2']").check()
    page.locator("#relogin").wait_for(state="visible")
    for _ in range(3):
        with page.expect_response(re.compile(r".*/save$")):
            page.click("#relogin-retry")
        page.locator("#relogin").wait_for(state="visible")
        expect(page.locator("#t-U1 .save")).to_contain_text("sign in again")
        assert page.locator("#global-state").get_attribute("data-state") == "auth"
    other = page.context.new_page()
    login(other, live_server, "demo-reviewer")
    other.close()
    page.click("#relogin-retry")
    page.locator("#relogin").wait_for(state="hidden")
    wait_saved(page)
    assert scores(reviewer, "U1") == {"U1": 2}


def _on_turn_1_then_signed_out_and_in_in_another_tab(page, live_server, round_) -> None:
    """The reviewer's coding page of turn 1 open, then a sign-out and a sign-in in another tab (a new CSRF token)."""
    login(page, live_server, "demo-reviewer")
    page.goto(f"{live_server.url}/rounds/{round_.pk}/turns/1/")
    other = page.context.new_page()
    other.goto(f"{live_server.url}/")
    with other.expect_navigation():
        other.click(".topbar form button")
    login(other, live_server, "demo-reviewer")
    other.close()


def test_a_token_renewed_by_a_sign_in_in_another_tab_is_taken_without_asking_to_sign_in(browser_page, live_server,
                                                                                         study_round):  # noqa: F811
    """Signed out and in again in another tab: the session is the page's account's, but the CSRF token changed at that
    sign-in, and the page's saves were refused (403) with "Your session has ended: sign in again". The page takes the
    token the server has now and sends the change again; Complete (htmx) takes it too."""
    page = browser_page
    round_, reviewer = study_round
    _on_turn_1_then_signed_out_and_in_in_another_tab(page, live_server, round_)
    page.locator("#t-U1 input[name=score][value='2']").check()
    page.locator("#item-note input[value=unsure]").check()
    expect(page.locator("#global-state")).to_have_attribute("data-state", "saved", timeout=10000)
    expect(page.locator("#relogin")).to_be_hidden()
    assert scores(reviewer, "U1") == {"U1": 2}
    assert Assignment.objects.get(round=round_, coder=reviewer, position=1).flags == ["unsure"]
    page.click("#complete-turn")
    page.wait_for_selector("#complete-result .check.missing")


def test_complete_after_a_sign_in_in_another_tab_completes_without_asking_to_sign_in(browser_page, live_server,
                                                                                      study_round):  # noqa: F811
    """Every change saved, the reviewer signed out and in again in another tab, then completed the turn here: the
    sign-in had changed the CSRF token, Complete was refused (403) and the page asked to sign in, the turn left as it
    was. Complete is sent again on the token the server has now."""
    page = browser_page
    round_, reviewer = study_round
    _on_turn_1_then_signed_out_and_in_in_another_tab(page, live_server, round_)
    page.click("#complete-turn")
    page.wait_for_selector("#complete-result .check.missing")
    expect(page.locator("#relogin")).to_be_hidden()


def test_refusals_undo_redo_clear_and_the_items_note(browser_page, live_server, study_round):  # noqa: F811
    page = browser_page
    round_, reviewer = study_round
    login(page, live_server, "demo-reviewer")
    page.goto(f"{live_server.url}/rounds/{round_.pk}/turns/1/")
    handle = page.locator(".response-card").first.get_attribute("data-response")
    aur = page.locator(f"#r{handle}-AUR")
    sent: list[str] = []
    page.on("request", lambda request: sent.append(request.url) if request.url.endswith("/save") else None)

    # An instance count the server would refuse is refused on the page, and never sent.
    for bad in ("-1", "1.5", "99999999999"):
        aur.locator("input[name=instance_count]").fill(bad)
        aur.locator("input[name=instance_count]").press("Tab")
        expect(aur.locator(".state-refused")).to_contain_text("whole number from 0 to 2147483647")
        assert page.locator("#global-state").get_attribute("data-state") == "error"
    assert sent == []
    aur.locator("input[name=instance_count]").fill("3")
    aur.locator("input[name=instance_count]").press("Tab")
    wait_saved(page)
    assert Judgment.objects.get(coder=reviewer, attribute__code="AUR", response__isnull=False).instance_count == 3

    # The server refuses (the round closed meanwhile): said in the attribute, never "saved", not retried; the form
    # shows what the round keeps (not coded), not the refused value.
    Round.objects.filter(pk=round_.pk).update(status="closed")
    page.locator("#t-U1 input[name=score][value='1']").click()  # not check(): the page puts the old value back
    expect(page.locator("#t-U1 .state-locked")).to_contain_text("can no longer change")
    expect(page.locator("#t-U1 input[name=score][value='1']")).not_to_be_checked()
    assert page.locator("#global-state").get_attribute("data-state") == "error"
    assert "not saved" in page.locator("#global-state").inner_text()
    Round.objects.filter(pk=round_.pk).update(status="open")
    # A 404 is not retried either.
    page.route(re.compile(r".*/save$"), lambda route: route.fulfill(status=404, body="gone"))
    page.locator("#t-U2 input[name=score][value='1']").check()
    expect(page.locator("#t-U2 .state-refused")).to_contain_text("404")
    page.unroute(re.compile(r".*/save$"))
    for code in ("U1", "U2"):
        page.locator(f"#t-{code} input[name=score][value='0']").check()
    wait_saved(page)
    assert scores(reviewer, "U1", "U2") == {"U1": 0, "U2": 0}

    # Undo and redo go through the same save.
    page.locator("#t-U3 input[name=score][value='1']").check()
    wait_saved(page)
    page.locator("#t-U3 input[name=score][value='0']").check()
    wait_saved(page)
    page.locator("#t-U3").focus()
    page.keyboard.press("Control+z")
    expect(page.locator("#t-U3 input[name=score][value='1']")).to_be_checked()
    wait_saved(page)
    assert scores(reviewer, "U3") == {"U3": 1}
    page.keyboard.press("Control+Shift+z")
    expect(page.locator("#t-U3 input[name=score][value='0']")).to_be_checked()
    wait_saved(page)
    assert scores(reviewer, "U3") == {"U3": 0}

    # Clearing a score saves "no score".
    assert page.locator("#turn-progress").inner_text() == "3 / 80 scored"
    page.click("#t-U3 button.clear")
    wait_saved(page)
    assert scores(reviewer, "U3") == {"U3": None}
    assert page.locator("#t-U3 input[name=score]:checked").count() == 0
    assert page.locator("#turn-progress").inner_text() == "2 / 80 scored"

    # The item's comment and flags.
    page.fill("#note-comment", "Response B stops mid-sentence.")
    page.check("#item-note input[value=truncated]")
    page.locator("#item-note .state-saved").wait_for()
    wait_saved(page)
    assignment = Assignment.objects.get(round=round_, coder=reviewer, position=1)
    assert assignment.comment == "Response B stops mid-sentence." and assignment.flags == ["truncated"]
    page.reload()
    assert page.locator("#note-comment").input_value() == "Response B stops mid-sentence."
    assert page.locator("#item-note input[value=truncated]").is_checked()
    # The browser logs each refused request (422, 404): nothing else.
    assert all("Failed to load resource" in e for e in page.console_errors), page.console_errors


def test_a_turn_completed_by_keyboard_alone_with_a_span_and_a_subcategory_change(browser_page, live_server,
                                                                                  study_round):  # noqa: F811
    page = browser_page
    round_, reviewer = study_round
    login(page, live_server, "demo-reviewer")
    page.goto(f"{live_server.url}/rounds/{round_.pk}/turns/1/")
    page.keyboard.press("Tab")
    expect(page.locator(".skip-link")).to_be_focused()
    page.keyboard.press("Enter")
    for _ in range(12):  # through the bar's links to the first attribute
        page.keyboard.press("Tab")
        if page.locator("#t-U1").evaluate("form => form.contains(document.activeElement)"):
            break
    forms = page.locator("form.attr")
    codes = [forms.nth(i).get_attribute("data-code") for i in range(forms.count())]
    for n, code in enumerate(codes):
        page.keyboard.press("0" if code.startswith("F") else "1")
        if n + 1 < len(codes):
            page.keyboard.press("ArrowDown")
    wait_saved(page)
    assert Judgment.objects.filter(coder=reviewer, score__isnull=False).count() == 80

    # To the last response's text, select six characters, highlight with the palette's digit.
    page.keyboard.press("t")
    text_box = page.locator(".response-text").last
    expect(text_box).to_be_focused()
    response = response_on_page(round_, reviewer, 1, text_box.get_attribute("data-response"))
    for _ in range(6):
        page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("h")
    page.locator("#palette").wait_for(state="visible")
    first = page.locator("#palette button.sub").first
    first_sub, first_code = first.get_attribute("data-sub"), first.get_attribute("data-code")
    page.keyboard.press("1")
    expect(text_box).to_be_focused()
    wait_saved(page)
    span = Span.objects.get(judgment__response=response, judgment__coder=reviewer)
    assert span.subcategory.slug == first_sub and response.text[span.start:span.end] == response.text[:6].strip()

    # Change its subcategory: Tab to the highlight's Change button, Enter, Enter on "Change to …".
    page.keyboard.press("Tab")
    expect(page.locator(".span-list .change-span").last).to_be_focused()
    page.keyboard.press("Enter")
    page.locator("#span-popover").wait_for(state="visible")
    page.keyboard.press("Enter")
    wait_saved(page)
    span = Span.objects.get(judgment__response=response, judgment__coder=reviewer)
    assert span.subcategory.slug != first_sub and span.subcategory.attribute.code == first_code
    expect(page.locator(".span-list .change-span").last).to_be_focused()

    # c: the warnings come with focus on Confirm; Enter completes and moves on.
    page.keyboard.press("c")
    expect(page.locator("#confirm-complete")).to_be_focused()
    assert page.locator("#complete-result .where-list a").count() > 0, "each item links to its attribute"
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/turns/2/$"))
    assert Assignment.objects.get(round=round_, coder=reviewer, position=1).completed_at is not None
    assert not page.console_errors, page.console_errors


AXE_RUN = """async () => {
    const result = await axe.run(document, {resultTypes: ["violations"]});
    return result.violations.filter(v => v.impact === "serious" || v.impact === "critical")
        .map(v => v.id + ": " + v.nodes.map(n => n.target.join(" ")).slice(0, 3).join(" | "));
}"""


def axe_violations(page, live_server) -> list[str]:
    page.add_script_tag(url=f"{live_server.url}/static/vendor/axe.min.js")
    return page.evaluate(AXE_RUN)


def test_reviewer_pages_have_no_serious_accessibility_violations(browser_page, live_server,
                                                                 study_round):  # noqa: F811
    page = browser_page
    round_, reviewer = study_round
    found: dict[str, list[str]] = {}
    login(page, live_server, "demo-reviewer")
    found["home"] = axe_violations(page, live_server)
    page.goto(f"{live_server.url}/rounds/{round_.pk}/")
    found["queue"] = axe_violations(page, live_server)

    # A turn mid-coding: some scores, a highlight, a definition open, a refusal; screenshots at two widths.
    page.goto(f"{live_server.url}/rounds/{round_.pk}/turns/1/")
    for code in ("U1", "U2", "U3"):
        page.locator(f"#t-{code} input[name=score][value='1']").check()
    handle = page.locator(".response-card").first.get_attribute("data-response")
    for code in ("AUR", "TD", "FIX", "F1"):
        page.locator(f"#r{handle}-{code} input[name=score][value='1']").check()
    page.locator(".response-text").first.focus()
    for _ in range(12):
        page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("h")
    page.keyboard.press("1")
    page.locator(".response-text").first.focus()
    for _ in range(6):
        page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("h")
    page.keyboard.press("3")
    wait_saved(page)
    page.click(f"#r{handle}-TD .help-toggle")
    assert page.locator(".response-text").first.locator(".overlap").count() > 0, "two highlights overlap"
    page.locator(f"#r{handle}-AUR input[name=instance_count]").fill("-1")
    page.locator(f"#r{handle}-AUR input[name=instance_count]").press("Tab")
    page.locator(f"#r{handle}-AUR .state-refused").wait_for()
    found["turn"] = axe_violations(page, live_server)
    page.locator(f"#r{handle}-TD").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "turn-mid-coding-1400.png"))
    page.set_viewport_size({"width": 1024, "height": 768})
    page.locator(f"#r{handle}-TD").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "turn-mid-coding-1024.png"))
    box_text = page.locator(".response-text").first.bounding_box()
    box_form = page.locator(f"#r{handle}-TD").bounding_box()
    assert box_text["x"] + box_text["width"] <= box_form["x"], "the text is beside its scores at 1024 px"
    assert box_form["y"] < box_text["y"] + box_text["height"], "…level with them"
    page.set_viewport_size({"width": 1400, "height": 900})

    page.keyboard.press("?")
    found["keys help"] = axe_violations(page, live_server)
    page.keyboard.press("Escape")
    page.locator(f"#r{handle}-AUR input[name=instance_count]").fill("2")  # a refusal holds completing back
    page.locator(f"#r{handle}-AUR input[name=instance_count]").press("Tab")
    wait_saved(page)
    page.click("#complete-turn")
    page.locator("#complete-result .check.missing").wait_for()
    found["completion"] = axe_violations(page, live_server)

    # The same turn once the round is closed: read-only, no palette, no clear or remove buttons.
    Round.objects.filter(pk=round_.pk).update(status="closed")
    page.goto(f"{live_server.url}/rounds/{round_.pk}/turns/1/")
    assert page.locator(".turn-page .notice").count() == 1, "read-only"
    assert page.locator(".span-list .chip").count() == 2, "highlights still shown"
    assert page.locator("#palette").count() == 0 and page.locator("button.clear").count() == 0
    assert page.locator(".remove-span, .change-span").count() == 0
    assert page.locator("input[name=score]:enabled").count() == 0
    page.locator(".response-text").first.focus()
    page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("h")
    found["read-only turn"] = axe_violations(page, live_server)

    # Feedback against gold, on a study whose calibration rounds are closed.
    study = scenarios.synthetic_calibrated_study()
    coder = get_user_model().objects.get(username="syn-r01")
    coder.set_password("cab-demo")
    coder.save()
    page.context.clear_cookies()
    login(page, live_server, "syn-r01")
    closed = study.rounds.get(kind="calibration", number=2)
    page.goto(f"{live_server.url}/rounds/{closed.pk}/feedback/")
    page.locator("tbody.difference details").first.locator("summary").click()
    found["feedback"] = axe_violations(page, live_server)
    assert {name: v for name, v in found.items() if v} == {}
