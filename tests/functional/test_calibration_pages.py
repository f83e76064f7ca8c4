"""The workshop and panel-selection pages in real headless Chromium, on a synthetic study: a workshop note saved
by htmx, and screenshots of both pages."""

from __future__ import annotations

import pytest

from annotation.models import WorkshopNote
from tests import scenarios
from tests.browser import ARTIFACTS, login


@pytest.fixture
def synthetic(db):
    return scenarios.synthetic_calibrated_study()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_workshop_and_panel_screenshots(browser_page, live_server, synthetic, admin_user):
    page = browser_page
    admin_user.set_password("pw-for-tests")
    admin_user.save()
    login(page, live_server, admin_user.username, "pw-for-tests")
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
