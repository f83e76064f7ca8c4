"""A study shows only the dashboard pages its kind has (docs/architecture.md#dashboard-pages-of-each-kind,
``reports.kind_pages``): the default kind the six pages, a CARE study Reliability and the CARE page, an LC8 study
the LongCounsel-8 page; the navigation lists those, and a page the kind does not have, its downloads and its
drill-down answer 404."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotation.models import Schema
from care import charts as care_charts
from lc8 import charts as lc8_charts
from reports import charts, kind_pages
from tests.factories import StudyFactory

pytestmark = pytest.mark.django_db
SIX = ["reliability", "user-input", "risk", "coupling", "trajectories", "spans"]


@pytest.fixture
def care(db):
    return StudyFactory(slug="kind-care", name="CARE kind", schema=Schema.objects.get(slug="care-v1"),
                        model_slots=["Assistant"])


@pytest.fixture
def lc8(db):
    return StudyFactory(slug="kind-lc8", name="LC8 kind", schema=Schema.objects.get(slug="lc8-v1"), model_slots=[])


def _tabs(html: str) -> list[str]:
    """The page slugs the report navigation links, in its order (the overview's link left out)."""
    nav = re.search(r'<nav class="report-nav" aria-label="Report pages">(.*?)</nav>', html, re.S)
    assert nav is not None, html[:500]
    return [href.rstrip("/").rsplit("/", 1)[-1] for href in re.findall(r'href="([^"?]+)', nav.group(1))
            if "/reports/" in href and not href.endswith("/reports/")]


def test_every_registered_kind_has_its_pages_and_the_six_pages_are_the_defaults(db):
    assert list(charts.PAGES) == SIX
    assert kind_pages.pages_of(Schema.objects.get(slug="cab-v1")) == list(charts.PAGES.values())
    assert kind_pages.pages_of(Schema.objects.get(slug="care-v1")) == [charts.PAGES["reliability"],
                                                                        care_charts.CARE_PAGE]
    assert kind_pages.pages_of(Schema.objects.get(slug="lc8-v1")) == [lc8_charts.LC8_PAGE]


def test_the_navigation_shows_only_the_tabs_of_the_studys_kind(client, researcher, study, care, lc8):
    client.force_login(researcher)
    for subject, tabs in ((study, SIX), (care, ["reliability", "care"]), (lc8, ["lc8"])):
        assert [p.slug for p in kind_pages.pages_of(subject)] == tabs
        assert _tabs(client.get(reverse("reports", args=[subject.slug])).content.decode()) == tabs, subject.slug
        first = reverse("reports-lc8", args=[subject.slug]) if tabs == ["lc8"] else \
            reverse("reports-page", args=[subject.slug, tabs[0]])
        response = client.get(first)
        assert response.status_code == 200, (subject.slug, first)
        assert _tabs(response.content.decode()) == tabs, subject.slug
    assert _tabs(client.get(reverse("reports-page", args=[care.slug, "care"])).content.decode()) == ["reliability",
                                                                                                      "care"]


def test_a_page_the_studys_kind_has_not_is_a_404_with_its_downloads(client, researcher, study, care, lc8):
    client.force_login(researcher)
    for slug in SIX[1:]:  # the cab-v1 pages a CARE study has not
        assert client.get(reverse("reports-page", args=[care.slug, slug])).status_code == 404, slug
    assert client.get(reverse("reports-file", args=[care.slug, "risk", "ari", "csv"])).status_code == 404
    assert client.get(reverse("reports-file", args=[care.slug, "coupling", "coupling", "svg"])).status_code == 404
    assert client.get(reverse("reports-span-examples", args=[care.slug]),
                      {"model": "Assistant", "subcategory": "assumes"}).status_code == 404
    for slug in [*SIX, "care"]:  # an LC8 study has its own page only
        assert client.get(reverse("reports-page", args=[lc8.slug, slug])).status_code == 404, slug
    assert client.get(reverse("reports-file", args=[lc8.slug, "reliability", "reviewers", "csv"])).status_code == 404
    # the kinds' own pages, for the other kinds
    assert client.get(reverse("reports-page", args=[study.slug, "care"])).status_code == 404
    assert client.get(reverse("reports-lc8", args=[study.slug])).status_code == 404
    assert client.get(reverse("reports-lc8", args=[care.slug])).status_code == 404
    assert client.get(reverse("reports-page", args=[care.slug, "reliability"])).status_code == 200
    for slug in SIX:  # the default kind keeps all six
        assert client.get(reverse("reports-page", args=[study.slug, slug])).status_code == 200, slug
