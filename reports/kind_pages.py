"""Which dashboard pages a study shows, by its kind (docs/architecture.md#dashboard-pages-of-each-kind): the one place
that decides it. The report navigation, the page views and their downloads, the study bundle's figures and tables
and the sweeps of the tests all ask ``pages_of``; a page the study's kind does not have is a 404.

The pages of ``reports.charts.PAGES`` are built on the ``cab-v1`` design (the calibration rounds' agreement, the
UIRI's user attributes, the D/E/R/F clusters with their risk encodings, spans); a kind shows those whose report
parts its schema can fill, then its own page:

- the default kind: the six pages;
- CARE: Reliability (its turn- and response-level codes go through the calibration rounds like any schema's; the
  schema has no UIRI attributes, no clusters, no risk encodings and no spans, so the other five are empty by
  design, but for mean scores of nominal user codes, which mean nothing), then the CARE page;
- LongCounsel-8: its own page alone (every attribute is session-level, read by the ``lc8`` section only: the main
  report's core reads none of them, so all six are empty by design; the LC8 page has the coders' fidelity).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from annotation.kinds import CARE, DEFAULT, LC8, kind_of
from reports import care_charts, charts, lc8_charts

if TYPE_CHECKING:
    from annotation.models import Schema, Study

# The slugs of each kind's pages, in the order of the navigation; every registered kind has its entry
# (tests/reports/test_kind_pages.py). Slugs, looked up when asked, so that a page is the one its module holds now.
PAGES_OF_KIND: Mapping[str, tuple[str, ...]] = MappingProxyType({
    DEFAULT.slug: tuple(charts.PAGES),
    CARE.slug: ("reliability", care_charts.SLUG),
    LC8.slug: (lc8_charts.SLUG,),
})


def _every_page() -> dict[str, charts.Page]:
    return {**charts.PAGES, care_charts.SLUG: care_charts.CARE_PAGE, lc8_charts.SLUG: lc8_charts.LC8_PAGE}


def pages_of(subject: Study | Schema) -> list[charts.Page]:
    """The dashboard pages of a study (or of a schema's studies), in the navigation's order."""
    pages = _every_page()
    return [pages[slug] for slug in PAGES_OF_KIND[kind_of(subject).slug]]


def page_of(subject: Study | Schema, slug: str) -> charts.Page | None:
    """The study's page of that slug, or None when its kind has no such page."""
    return next((page for page in pages_of(subject) if page.slug == slug), None)
