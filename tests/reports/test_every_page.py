"""Every dashboard page and every download of a small synthetic study (a main round, multi-turn trajectories, spans,
coupling), after a metric run has succeeded, answers a researcher with 200, the right content type and a body (the
three demo studies, ``load_demo --care --lc8``, are swept the same way on the README's default configuration:
tests/integration/test_default_configuration.py). The URLs come from the product (tests/reports/pages.py), so a
page or download added later is swept too, or this fails naming the URL pattern that neither the synthetic study
nor a demo study reaches."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from annotation.demo import DEMO_STUDY
from annotation.models import Study
from care.demo import CARE_DEMO_STUDY
from lc8.demo import LC8_DEMO_STUDY
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
