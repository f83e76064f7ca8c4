"""The CARE dashboard page and a history's timeline in real headless Chromium, on the CARE demo study with a
succeeded metric run: every figure loads as a picture, the timeline's sessions fold and unfold, a CSV download, no
console error and no CSP violation."""

from __future__ import annotations

import pytest

from access import roles
from access.services import user_ensure
from care.demo import care_demo_load
from metrics import runs as metric_runs
from metrics import services as metric_services
from tests.browser import ARTIFACTS, login


@pytest.fixture
def care_study(db):
    result = care_demo_load(admin=user_ensure(username="demo-admin", role=roles.ADMIN),
                            reviewer=user_ensure(username="demo-reviewer", role=roles.REVIEWER),
                            expert=user_ensure(username="demo-expert", role=roles.EXPERT))
    run = metric_services.metric_run_request(study=result.study, by=None, bootstrap=20)
    metric_runs.metric_run_execute(run_id=run.pk)
    return result.study


@pytest.mark.browser
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_care_page_and_a_timeline_render_in_chromium(browser_page, live_server, care_study, admin_user):
    page = browser_page
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    admin_user.set_password("pw-for-tests")
    admin_user.save()
    login(page, live_server, admin_user.username, "pw-for-tests")

    page.goto(f"{live_server.url}/studies/{care_study.slug}/reports/")
    page.locator(".report-nav a", has_text="CARE").click()
    page.wait_for_load_state("networkidle")
    images = page.locator("img.chart")
    assert images.count() == 2
    for i in range(images.count()):
        images.nth(i).scroll_into_view_if_needed()
    page.wait_for_load_state("networkidle")
    widths = page.eval_on_selector_all("img.chart", "imgs => imgs.map(i => i.complete ? i.naturalWidth : -1)")
    assert all(w > 100 for w in widths), widths
    assert page.locator("#care-alignment-by-crisis td", has_text="0.667").count() == 1
    page.screenshot(path=str(ARTIFACTS / "reports-care.png"), full_page=True)
    with page.expect_download() as download:
        page.locator("#care-alignment .downloads a", has_text="data (CSV)").click()
    content = open(download.value.path(), "rb").read()  # noqa: SIM115 - Playwright's temporary file
    assert content.startswith(b"model,AR,PR,LR,advice_frequency"), content[:60]

    page.locator("#care-timelines a", has_text="care-demo-1").click()
    page.wait_for_load_state("networkidle")
    assert page.locator("#turn-8").get_attribute("data-state") == "Settling"
    assert page.locator("#turn-13 .care-label-aligned").is_visible()
    assert not page.locator("#turn-2").is_visible()  # an earlier chat session starts folded
    page.locator("#session-1 summary").click()
    assert page.locator("#turn-2").is_visible()
    page.screenshot(path=str(ARTIFACTS / "reports-care-timeline.png"), full_page=True)
    assert not page.console_errors, page.console_errors
    assert not violations, violations
