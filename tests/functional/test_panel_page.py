"""Panel selection in real headless Chromium, on a synthetic study: untick a suggested reviewer, read on the
confirmation page who changes and why a reason is needed, give it, confirm; screenshots of both pages."""

from __future__ import annotations

import pytest

from annotation.models import StudyMember
from tests import scenarios
from tests.browser import ARTIFACTS, login


@pytest.fixture
def synthetic(db):
    return scenarios.synthetic_calibrated_study()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_panel_selection_is_confirmed_after_saying_who_changes(browser_page, live_server, synthetic, admin_user):
    page = browser_page
    admin_user.set_password("pw-for-tests")
    admin_user.save()
    login(page, live_server, admin_user.username, "pw-for-tests")
    page.goto(f"{live_server.url}/studies/syn/panel/")
    rows = page.locator("table.panel tbody tr")
    assert rows.count() == 7
    last_suggested = page.locator("table.panel tbody tr.suggested").last
    name = last_suggested.get_attribute("data-reviewer")
    last_suggested.locator('input[name="retain"]').uncheck()
    page.get_by_role("button", name="Review the change…").click()
    page.wait_for_url("**/panel/retain")
    assert page.locator("tr.becomes-retained td").inner_text().count(",") == 4  # five of the top six
    assert name in page.locator(".override").inner_text()
    page.screenshot(path=str(ARTIFACTS / "panel-confirm.png"), full_page=True)
    assert not StudyMember.objects.filter(study=synthetic, retained=True).exists(), "nothing changed yet"
    page.locator('input[name="reason"]').fill(f"{name} is away for the main round")
    page.get_by_role("button", name="Retain 5 reviewers").click()
    page.wait_for_url("**/studies/syn/panel/")
    assert "Retained panel saved" in page.locator(".messages").inner_text()
    assert page.locator('td.retained-now:text-is("yes")').count() == 5
    assert StudyMember.objects.filter(study=synthetic, retained=True).count() == 5
    page.screenshot(path=str(ARTIFACTS / "panel-saved.png"), full_page=True)
    assert not page.console_errors, page.console_errors
