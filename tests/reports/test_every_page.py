"""Every dashboard page and every download of a small synthetic study (a main round, multi-turn trajectories, spans,
coupling), after a metric run has succeeded, answers a researcher with 200, the right content type and a body (the
three demo studies, ``load_demo --care --lc8``, are swept the same way on the README's default configuration:
tests/integration/test_default_configuration.py). The URLs come from the product (tests/reports/pages.py), so a
page or download added later is swept too, or this fails naming the URL pattern that neither the synthetic study
nor a demo study reaches."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse

from annotation.demo import DEMO_STUDY
from annotation.models import Study
from care.demo import CARE_DEMO_STUDY
from lc8.demo import LC8_DEMO_STUDY
from metrics import selectors as metrics_selectors
from tests.reports import pages

pytestmark = pytest.mark.django_db
SYNTHETIC = "every-page-syn"
STUDIES = (DEMO_STUDY, CARE_DEMO_STUDY, LC8_DEMO_STUDY, SYNTHETIC)


@pytest.fixture(scope="module")
def studies(shared_state):
    """The three demo studies and a small synthetic one, each with a succeeded metric run (computed in-process)."""
    with shared_state():
        call_command("load_demo", "--care", "--lc8", "--quiet")
        call_command("generate_synthetic", "--conversations", "8", "--models", "3", "--reviewers", "3",
                     "--experts", "2", "--calibration-turns", "2", "--multi-share", "0.5", "--seed", "4",
                     "--slug", SYNTHETIC, stdout=io.StringIO())
        for slug in STUDIES:
            pages.run_metrics(Study.objects.get(slug=slug))
        yield STUDIES


@pytest.mark.slow(40)
@pytest.mark.parametrize("slug", [SYNTHETIC])
def test_every_page_and_download_answers(studies, researcher, settings, slug):
    # A cache of its own, so that every figure is drawn here (not served from an earlier session's run of that pk).
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache",
                                   "LOCATION": f"every-page-{slug}"}}
    study = Study.objects.get(slug=slug)
    urls = pages.report_urls(study)
    fetched: list[str] = []
    failures = pages.fetch_all(pages.staff_client(researcher.username), urls, fetched=fetched)
    assert not failures, f"{len(failures)} of {len(fetched)} URLs of {slug} failed:\n" + "\n".join(map(str, failures))
    linked_only = sorted({pages.url_name(url) for url in fetched} - {pages.url_name(url) for url in urls})
    assert not linked_only, f"{slug}'s pages link {linked_only}, which pages.report_urls does not list"


def test_every_dashboard_url_pattern_is_swept(studies):
    urls = [url for slug in STUDIES for url in pages.report_urls(Study.objects.get(slug=slug))]
    assert not pages.uncovered(urls), f"no study's pages.report_urls reaches {pages.uncovered(urls)}"


# Every download, one URL each (the URL names of ``pages.download_url_names``): those the sweep lists are taken from
# it, the others built here. The API's copies are fetched with a bearer token; the rest signed in as STAFF_OF.
SWEPT_DOWNLOADS = {"export-judgments", "export-items", "export-report", "export-index-table", "reports-bundle",
                   "reports-file", "reports-lc8-file"}
API_DOWNLOADS = {"api-export-judgments", "api-export-report", "api-export-index-table", "api-metric-run-bundle"}
OTHER_DOWNLOADS = {"memo", "coding-parts", "schema-spans-css"}


def _download_url(name: str) -> tuple[str, str]:
    """(a URL of the download ``name`` on the studies, the account that fetches it)."""
    if name in SWEPT_DOWNLOADS:
        for slug in (DEMO_STUDY, LC8_DEMO_STUDY, SYNTHETIC):
            found = [url for url in pages.report_urls(Study.objects.get(slug=slug), common_filters=False)
                     if pages.url_name(url) == name]
            if found:
                return found[0], "demo-researcher"
        raise AssertionError(f"no study's sweep lists {name}")
    demo = Study.objects.get(slug=DEMO_STUDY)
    run = metrics_selectors.metric_run_latest_succeeded(study=Study.objects.get(slug=SYNTHETIC))
    assert run is not None
    calibration = demo.rounds.get(kind="calibration", number=1)
    args = {"api-export-judgments": [DEMO_STUDY, "jsonl"], "api-export-report": [DEMO_STUDY],
            "api-export-index-table": [SYNTHETIC, next(iter(metrics_selectors.index_tables(result=run.result)))],
            "api-metric-run-bundle": [run.pk], "memo": [calibration.pk, "md"], "coding-parts": [calibration.pk],
            "schema-spans-css": [demo.schema.slug]}[name]
    return reverse(name, args=args), "demo-reviewer" if name == "coding-parts" else "demo-admin"


def test_the_download_list_is_every_download_of_the_project():
    assert pages.download_url_names() == SWEPT_DOWNLOADS | API_DOWNLOADS | OTHER_DOWNLOADS


@pytest.mark.parametrize("name", sorted(SWEPT_DOWNLOADS | API_DOWNLOADS | OTHER_DOWNLOADS))
def test_every_download_answers_head_as_get_without_a_body(studies, client, as_token, name):
    """A ``HEAD`` of a download (a link checker, a download manager sizing the file, ``curl -I``) is answered as its
    ``GET`` is — the status and the headers: type, file name, length, ETag, provenance — without the body, not
    with 405."""
    url, username = _download_url(name)
    user = get_user_model().objects.get(username=username)
    if name in API_DOWNLOADS:
        client = as_token(user)
    else:
        client.force_login(user)
    head = client.head(url)
    got = client.get(url)
    assert got.status_code == 200, (url, got.status_code)
    assert head.status_code == 200, (url, head.status_code, head.headers.get("Allow"))
    assert pages._body(head) == b"" and pages._body(got) != b""
    assert set(head.headers) == set(got.headers), url
    for header in ("Content-Type", "Content-Disposition", "Content-Length", "ETag"):
        assert head.headers.get(header) == got.headers.get(header), (url, header)
