"""The workshop, panel-selection, consensus and feedback pages in real headless Chromium, on a synthetic study: a
workshop note saved by htmx, gold recorded on the second page of the consensus list (the page comes back to the
item), and screenshots of each page."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from annotation.models import WorkshopNote
from calibration.views import PAGE_SIZE
from tests import scenarios
from tests.browser import ARTIFACTS, sign_in_as


@pytest.fixture
def synthetic(db):
    return scenarios.synthetic_calibrated_study()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_workshop_and_panel_screenshots(browser_page, live_server, synthetic, admin_user):
    page = browser_page
    sign_in_as(page, live_server, admin_user)
    round_ = synthetic.rounds.get(kind="calibration", number=2)
    page.goto(f"{live_server.url}/rounds/{round_.pk}/workshop/")
    assert page.locator(".workshop-item").count() > 0
    first = page.locator(".workshop-item").first
    first.locator("textarea").fill("Agreed: a hedge without a question is 1.")
    first.locator("button").click()
    first.locator(".state-saved").wait_for()
    page.screenshot(path=str(ARTIFACTS / "workshop.png"), full_page=False)
    page.goto(f"{live_server.url}/studies/syn/panel/")
    assert page.locator("table.panel tbody tr").count() == 7
    page.screenshot(path=str(ARTIFACTS / "panel-selection.png"), full_page=True)
    assert WorkshopNote.objects.filter(round=round_).count() == 1
    assert not page.console_errors, page.console_errors


@pytest.mark.browser
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_consensus_and_feedback_pages_are_paged_and_come_back_to_the_item(browser_page, live_server, synthetic,
                                                                         admin_user):
    page = browser_page
    sign_in_as(page, live_server, admin_user)
    round_ = synthetic.rounds.get(kind="calibration", number=1)
    page.goto(f"{live_server.url}/rounds/{round_.pk}/consensus/?show=all")
    assert page.locator(".consensus tbody tr").count() == PAGE_SIZE
    page.locator("a[rel=next]").first.click()
    page.wait_for_url("**page=2")
    row = page.locator(".consensus tbody tr").nth(3)
    anchor = row.get_attribute("id")
    row.locator("input[type=radio]").first.check()
    row.locator("input[name=reason]").fill("read again in the workshop")
    row.locator("button[type=submit]").click()
    page.wait_for_url(f"**/consensus/?show=all&page=2#{anchor}")
    assert "recorded for" in page.locator(".messages").inner_text()
    page.screenshot(path=str(ARTIFACTS / "consensus.png"), full_page=False)
    assert page.evaluate("document.documentElement.scrollHeight") < 6000, "a page of compact rows"

    page.context.clear_cookies()
    sign_in_as(page, live_server, get_user_model().objects.get(username="syn-r01"))
    page.goto(f"{live_server.url}/rounds/{round_.pk}/feedback/")
    assert f"differences · showing 1–{PAGE_SIZE}, page 1 of" in page.locator(".pager-count").first.inner_text()
    assert page.locator("tbody.difference").count() == PAGE_SIZE
    page.locator("tbody.difference details").first.locator("summary").click()
    page.screenshot(path=str(ARTIFACTS / "feedback.png"), full_page=False)
    assert page.evaluate("document.documentElement.scrollHeight") < 6000
    assert not page.console_errors, page.console_errors
