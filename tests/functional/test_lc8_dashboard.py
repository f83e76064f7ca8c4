"""The LongCounsel-8 dashboard page in real headless Chromium, on the small LC8 study of
tests/lc8/test_inputs.py with a succeeded metric run: reached from the report navigation, its figures load
as pictures, the rank reversal is in the text, choosing another trajectory replots it (the URL says which), a CSV
and an SVG download, no console error and no CSP violation."""

from __future__ import annotations

import time

import pytest

from access import roles
from access.services import user_ensure
from lc8.demo import lc8_demo_load
from metrics import runs as metric_runs
from metrics import services as metric_services
from tests.browser import ARTIFACTS, login, sign_in_as
from tests.lc8.test_inputs import build_lc8_study


@pytest.fixture
def lc8_study(db):
    study = build_lc8_study()
    run = metric_services.metric_run_request(study=study, by=None, bootstrap=20)
    metric_runs.metric_run_execute(run_id=run.pk)
    return study


def _pictures_loaded(page) -> list[int]:
    """Each chart's natural width once loaded (-1: still loading after 15 s); polled, since after an htmx swap
    the page's load state says nothing of the new pictures (and the CSP forbids wait_for_function's eval)."""
    images = page.locator("img.chart")
    for i in range(images.count()):
        images.nth(i).scroll_into_view_if_needed()
    page.wait_for_load_state("networkidle")
    deadline = time.monotonic() + 15
    while True:
        widths = page.eval_on_selector_all("img.chart", "imgs => imgs.map(i => i.complete ? i.naturalWidth : -1)")
        if all(w >= 0 for w in widths) or time.monotonic() > deadline:
            return widths
        page.wait_for_timeout(200)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_lc8_page_renders_in_chromium(browser_page, live_server, lc8_study, admin_user):
    page = browser_page
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    admin_user.set_password("pw-for-tests")
    admin_user.save()
    login(page, live_server, admin_user.username, "pw-for-tests")

    page.goto(f"{live_server.url}/studies/{lc8_study.slug}/reports/")
    page.locator(".report-nav a", has_text="LongCounsel-8").click()
    page.wait_for_load_state("networkidle")
    assert page.locator("img.chart").count() == 2  # magnitude vs direction, and the trajectory
    widths = _pictures_loaded(page)
    assert all(w > 100 for w in widths), widths
    assert page.locator("#lc8-reversals li", has_text="m-alpha has the lower change MAE").count() == 1
    assert page.locator("#lc8-coders td", has_text="m-beta").count() == 1
    assert page.locator("#lc8-trajectory-name").inner_text() == "lc8-a"
    page.screenshot(path=str(ARTIFACTS / "reports-lc8.png"), full_page=True)

    page.select_option("#id_trajectory", "lc8-b")  # htmx swaps the body in and pushes the URL
    page.locator("#lc8-trajectory-name", has_text="lc8-b").wait_for()
    assert "trajectory=lc8-b" in page.url
    widths = _pictures_loaded(page)
    assert all(w > 100 for w in widths), widths
    assert page.locator("#lc8-trajectory-values td", has_text="worsening").count() >= 1
    page.screenshot(path=str(ARTIFACTS / "reports-lc8-trajectory.png"), full_page=True)

    with page.expect_download() as download:
        page.locator("#lc8-coders .downloads a", has_text="data (CSV)").click()
    content = open(download.value.path(), "rb").read()  # noqa: SIM115 - Playwright's temporary file
    assert content.startswith(b"coder,role,current_mae,current_mae_low"), content[:60]  # the coders table
    with page.expect_download() as download:
        page.locator("#lc8-trajectory .downloads a", has_text="SVG").click()
    svg = open(download.value.path(), "rb").read()  # noqa: SIM115 - Playwright's temporary file
    assert b"<svg" in svg and b"lc8-b" in svg
    assert not page.console_errors, page.console_errors
    assert not violations, violations


@pytest.fixture
def lc8_demo(db):
    result = lc8_demo_load(admin=user_ensure(username="demo-admin", role=roles.ADMIN),
                           reviewer=user_ensure(username="demo-reviewer", role=roles.REVIEWER),
                           expert=user_ensure(username="demo-expert", role=roles.EXPERT))
    run = metric_services.metric_run_request(study=result.study, by=None, bootstrap=20)
    metric_runs.metric_run_execute(run_id=run.pk)
    return result.study


@pytest.mark.browser
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_coders_table_fits_a_1300_px_window_without_scrolling(browser_page, live_server, lc8_demo, admin_user):
    """The coders' table of the LC8 demo (every column: three figures with their intervals and the trajectories
    behind them, trend agreement and three counts) fits a 1300 px wide window: no scrolling sideways in its own
    region, every column at least as wide as its longest word, and each short header names its column in full
    (its ``title``)."""
    page = browser_page
    page.set_viewport_size({"width": 1300, "height": 900})
    sign_in_as(page, live_server, admin_user)
    page.goto(f"{live_server.url}/studies/{lc8_demo.slug}/reports/lc8/")
    table = page.locator("#lc8-coders table")
    assert table.locator("tbody tr").count() >= 2  # the two illustrative methods at least
    fit = page.evaluate("""() => {
        const region = document.querySelector("#lc8-coders .table-scroll");
        const cells = [...region.querySelectorAll("th, td")];
        // a cell whose words do not fit its width overflows it (a word is never broken)
        const cut = cells.filter(c => c.scrollWidth > c.clientWidth + 1).map(c => c.textContent.trim());
        return {scroll: region.scrollWidth, client: region.clientWidth, page: document.documentElement.scrollWidth,
                window: window.innerWidth, cut};
    }""")
    page.locator("#lc8-coders").screenshot(path=str(ARTIFACTS / "reports-lc8-coders-1300.png"))
    assert fit["scroll"] <= fit["client"], fit
    assert fit["page"] <= fit["window"], fit
    assert not fit["cut"], fit
    headers = table.locator("thead th")
    assert headers.count() == 12  # coder, role, three figures each with its trajectories, trend, three counts
    short = table.locator("thead th[aria-label]")
    assert short.count() == 3
    for i in range(short.count()):
        header = short.nth(i)
        assert header.inner_text() == "Traj. behind"
        assert header.get_attribute("aria-label").startswith("Trajectories behind the ")
        assert header.get_attribute("title").startswith(header.get_attribute("aria-label") + " (report key ")
    assert not page.console_errors, page.console_errors
