"""Every dashboard page of a study of each kind (CAB, CARE, LongCounsel-8) in real headless Chromium, scanned by
axe-core: no serious or critical violation (issue 32). The pages are those ``tests.reports.pages.report_urls``
lists, each kind of page once (a page shown with other filters, another trajectory or another history is the
same template); the panel-selection page of the CAB study too. On each page: the run line, every table header a
human name with its report key in its title, every table in a labelled region that takes the keyboard's focus
(so a table wider than its card scrolls by keyboard too), and a legend of the page's codes."""

from __future__ import annotations

import pytest
from django.urls import reverse

from access import roles
from access.services import user_ensure
from care.demo import care_demo_load
from metrics import runs as metric_runs
from metrics import services as metric_services
from reports import charts, kind_pages
from tests import scenarios
from tests.browser import ARTIFACTS, login
from tests.functional.test_turn_workspace import axe_violations
from tests.lc8.test_inputs import build_lc8_study
from tests.reports.pages import report_urls, url_name

SCREENSHOTS = {"reports-page:risk": "dashboards-risk.png", "reports-page:reliability": "dashboards-reliability.png",
               "reports-page:care": "dashboards-care.png"}


@pytest.fixture
def studies(db):
    cab = scenarios.synthetic_calibrated_study()
    care = care_demo_load(admin=user_ensure(username="demo-admin", role=roles.ADMIN),
                          reviewer=user_ensure(username="demo-reviewer", role=roles.REVIEWER),
                          expert=user_ensure(username="demo-expert", role=roles.EXPERT)).study
    lc8 = build_lc8_study()
    for study in (care, lc8):
        run = metric_services.metric_run_request(study=study, by=None, bootstrap=20)
        metric_runs.metric_run_execute(run_id=run.pk)
    return cab, care, lc8


def page_kinds(study) -> dict[str, str]:
    """One URL per kind of dashboard page of the study (its first in ``report_urls``): name -> URL."""
    kinds: dict[str, str] = {}
    for url in report_urls(study, common_filters=False):
        name = url_name(url)
        if "." in url.split("?")[0].rsplit("/", 1)[-1] or name == "reports-runs":  # a download, a partial
            continue
        page = url.split("/reports/", 1)[-1].split("/", 1)[0] if name == "reports-page" else ""
        kinds.setdefault(f"{name}:{page}" if page else str(name), url)
    return kinds


PAGE_CHECKS = """() => ({
    runLine: document.querySelectorAll("p.run-line").length,
    headers: [...document.querySelectorAll(".report-table th")].map(th => [th.textContent.trim(), th.dataset.key || "",
                                                                          th.title]),
    regions: [...document.querySelectorAll(".table-scroll")].map(r => [r.tabIndex, r.getAttribute("role"),
                                                                        r.getAttribute("aria-label") || ""]),
    legend: document.querySelectorAll("#legend dt").length,
})"""


def page_problems(where: str, kind: str, state: dict) -> list[str]:
    """What a page lacks: its run line (a dashboard page), human headers with their report keys, focusable
    labelled table regions, a legend (a report page)."""
    problems = []
    if kind not in ("exports", "panel") and state["runLine"] != 1:
        problems.append(f"{where}: {state['runLine']} run lines")
    for text, key, title in state["headers"]:
        if not key or key not in title or "_" in text:
            problems.append(f"{where}: header {text!r} (key {key!r}, title {title!r})")
    for tabindex, role, label in state["regions"]:
        if (tabindex, role) != (0, "region") or not label:
            problems.append(f"{where}: a table region {(tabindex, role, label)}")
    if kind.startswith(("reports-page:", "reports-lc8")) and not state["legend"]:
        problems.append(f"{where}: no legend")
    return problems


@pytest.mark.slow(60)
@pytest.mark.browser
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_every_dashboard_page_of_each_kind_of_study_passes_axe(browser_page, live_server, studies, admin_user):
    page = browser_page
    admin_user.set_password("pw-for-tests")
    admin_user.save()
    login(page, live_server, admin_user.username, "pw-for-tests")
    cab = studies[0]
    found: dict[str, list[str]] = {}
    problems: list[str] = []
    walked = []
    for study in studies:
        kinds = page_kinds(study)
        if study is cab:
            kinds["panel"] = reverse("panel", args=[study.slug])
        for kind, url in kinds.items():
            page.goto(f"{live_server.url}{url}")
            walked.append(f"{study.slug} {kind}")
            violations = axe_violations(page, live_server)
            if violations:
                found[f"{study.slug} {kind} {url}"] = violations
            problems += page_problems(f"{study.slug} {kind}", kind, page.evaluate(PAGE_CHECKS))
            if kind in SCREENSHOTS and (study is cab or kind == "reports-page:care"):
                images = page.locator("img.chart")  # drawn lazily: in view, so that the record shows them
                for i in range(images.count()):
                    images.nth(i).scroll_into_view_if_needed()
                page.wait_for_load_state("networkidle")
                page.screenshot(path=str(ARTIFACTS / SCREENSHOTS[kind]), full_page=True)
    # Every report page of each study's kind, the drill-down and a CARE timeline were among them.
    care, lc8 = studies[1].slug, studies[2].slug
    expected = {f"{study.slug} reports-page:{p.slug}" for study in studies for p in kind_pages.pages_of(study)
                if p.slug in charts.PAGES}
    expected |= {f"{care} reports-page:care", f"{care} reports-care-timeline", f"{lc8} reports-lc8",
                 "syn reports-span-examples", "syn reports", "syn panel"}
    assert expected <= set(walked), sorted(expected - set(walked))
    assert found == {}, found
    assert problems == [], problems
    assert not page.console_errors, page.console_errors
