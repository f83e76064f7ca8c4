"""The researcher dashboards in real headless Chromium, on the demo study and on a synthetic study: every figure
loads as a picture (no empty frame, no console error, no CSP violation), a filter change updates the page and its
URL (shareable), one SVG, PNG and CSV download, and a screenshot of each page for the record."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from annotation.models import Study
from metrics import runs as metric_runs
from metrics import services as metric_services
from tests import scenarios
from tests.browser import ARTIFACTS, login

PAGES = ("Reliability", "User input", "Atrophy risk", "Coupling", "Trajectories", "Span evidence")


@pytest.fixture
def studies(db):
    scenarios.synthetic_calibrated_study()
    call_command("load_demo", "--quiet")
    demo = Study.objects.get(slug="demo")
    run = metric_services.metric_run_request(study=demo, by=None, bootstrap=50)
    metric_runs.metric_run_execute(run_id=run.pk)


def _every_page(page, live_server, slug: str) -> None:
    page.goto(f"{live_server.url}/studies/{slug}/reports/")
    assert page.locator("#runs tbody tr").count() >= 1
    page.screenshot(path=str(ARTIFACTS / f"reports-{slug}-overview.png"), full_page=True)
    for link in PAGES:
        page.locator(".report-nav a", has_text=link).click()
        page.wait_for_load_state("networkidle")
        images = page.locator("img.chart")
        for i in range(images.count()):
            images.nth(i).scroll_into_view_if_needed()
        page.wait_for_load_state("networkidle")
        widths = page.eval_on_selector_all("img.chart", "imgs => imgs.map(i => i.complete ? i.naturalWidth : -1)")
        assert all(w > 100 for w in widths), (slug, link, widths)
        # A block is a picture, a table or says there is nothing to show: never an empty frame.
        blocks = page.locator("section.block").count()
        shown = page.locator("section.block img.chart, section.block table, section.block p.muted, "
                             "section.block ul.span-links").count()
        assert blocks and shown >= blocks, (slug, link)
        page.screenshot(path=str(ARTIFACTS / f"reports-{slug}-{link.lower().replace(' ', '-')}.png"), full_page=True)


def _open(page, link: str, slug: str) -> None:
    """A page of the navigation, loaded before its filters are used (a filter changed while the previous page is
    still shown would be the previous page's)."""
    with page.expect_navigation(url=f"**/reports/{slug}/**"):  # also when it is the page shown now
        page.locator(".report-nav a", has_text=link).click()


@pytest.mark.slow(30)
@pytest.mark.browser
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_dashboards_draw_every_figure_and_keep_filters_in_the_url(browser_page, live_server, studies, researcher):
    page = browser_page
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    researcher.set_password("pw-for-tests")
    researcher.save()
    login(page, live_server, researcher.username, "pw-for-tests")
    _every_page(page, live_server, "demo")
    _every_page(page, live_server, "syn")

    _open(page, "Atrophy risk", "risk")
    page.select_option("select[name=model]", "GPT")
    page.wait_for_url("**model=GPT**")
    page.locator("#ari-table td", has_text="GPT").first.wait_for()
    assert page.locator("#ari-table tbody tr").count() == 1
    # The URL is the view: opened afresh, it shows the same filter.
    page.goto(page.url)
    assert page.locator("#ari-table tbody tr").count() == 1
    assert page.locator("select[name=model]").input_value() == "GPT"

    for label, magic in (("SVG", b"<?xml"), ("PNG", b"\x89PNG"), ("data (CSV)", b"model,cluster,value")):
        with page.expect_download() as download:
            page.locator("#ari .downloads a", has_text=label).click()
        content = open(download.value.path(), "rb").read()  # noqa: SIM115 - Playwright's temporary file
        assert content.startswith(magic), (label, content[:40])

    # The dataset and single/multi-turn filters of the risk, coupling and span-evidence pages: the whole page
    # follows them (titles, tables, pictures, drill-down links) and the URL carries them.
    for link, block, slug in (("Atrophy risk", "ari", "risk"), ("Coupling", "coupling", "coupling"),
                              ("Span evidence", "spans", "spans")):
        _open(page, link, slug)
        page.select_option("select[name=dataset]", "Synthetic multi-turn")
        page.wait_for_url("**dataset=Synthetic*")
        page.select_option("select[name=kind]", "multi")
        page.wait_for_url("**kind=multi*")
        page.locator(f"#{block}-title", has_text="multi-turn conversations").wait_for()
        chart = page.locator(f"#{block} img.chart")
        chart.scroll_into_view_if_needed()
        # the picture of the swapped-in block (the document's network went idle before the swap)
        page.wait_for_function("sel => { const i = document.querySelector(sel); return i && i.complete; }",
                               arg=f"#{block} img.chart")
        assert "kind=multi" in chart.get_attribute("src") and "dataset=Synthetic" in chart.get_attribute("src")
        assert page.eval_on_selector(f"#{block} img.chart", "i => i.complete ? i.naturalWidth : -1") > 100, link
        page.goto(page.url)  # the shared link shows the same view
        assert page.locator("select[name=dataset]").input_value() == "Synthetic multi-turn"
        assert page.locator("select[name=kind]").input_value() == "multi"
        page.screenshot(path=str(ARTIFACTS / f"reports-syn-{block}-multi-turn-dataset.png"), full_page=True)
    drill_down = page.locator("#span-examples a").first.get_attribute("href")
    assert "dataset=Synthetic" in drill_down and "kind=multi" in drill_down
    assert not page.console_errors, page.console_errors
    assert not violations, violations
