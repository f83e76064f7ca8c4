"""Which dashboard pages a study shows, by its kind (docs/architecture.md#dashboard-pages-of-each-kind): the one place
that decides it. The report navigation, the page views and their downloads, the study bundle's figures and tables
and the sweeps of the tests all ask ``pages_of``; a page the study's kind does not have is a 404.

The pages of ``reports.charts.PAGES`` are built on the ``cab-v1`` design (the calibration rounds' agreement, the
UIRI's user attributes, the D/E/R/F clusters with their risk encodings, spans): the default kind shows the six. A
kind registers its tabs when Django starts (``register_pages`` in its ``AppConfig.ready``): those of the six whose
report parts its schema can fill, by slug, and pages of its own; a kind that registers none shows the six.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from annotation.kinds import kind_of
from reports import charts

if TYPE_CHECKING:
    from annotation.models import Schema, Study


@dataclass(frozen=True)
class KindPages:
    """A kind's tabs, in the navigation's order: a slug names one of ``charts.PAGES`` (looked up when asked, so
    that a page is the one its module holds now), a ``Page`` is the kind's own. ``legend`` names the fixed terms
    its pages explain (``reports.labels.TERMS``; the bundle's printable report uses them), ``value_codes`` the
    attribute of its block whose values the legend explains (a code, from the schema's kind block), if any."""

    tabs: tuple[str | charts.Page, ...]
    legend: str = "main"
    value_codes: Callable[[dict[str, Any]], str | None] | None = None


_PAGES: dict[str, KindPages] = {}


def register_pages(kind: str, pages: KindPages) -> None:
    """The tabs of a kind (its slug), refused when it has them already."""
    if kind in _PAGES:
        raise ValueError(f"the study kind {kind!r} has its pages already")
    _PAGES[kind] = pages


def _of(subject: Study | Schema) -> KindPages | None:
    return _PAGES.get(kind_of(subject).slug)


def pages_of(subject: Study | Schema) -> list[charts.Page]:
    """The dashboard pages of a study (or of a schema's studies), in the navigation's order."""
    found = _of(subject)
    tabs: Sequence[str | charts.Page] = found.tabs if found is not None else tuple(charts.PAGES)
    return [charts.PAGES[tab] if isinstance(tab, str) else tab for tab in tabs]


def page_of(subject: Study | Schema, slug: str) -> charts.Page | None:
    """The study's page of that slug, or None when its kind has no such page."""
    return next((page for page in pages_of(subject) if page.slug == slug), None)


def legend_of(subject: Study | Schema) -> str:
    """The fixed terms the study's kind's pages explain (``main`` for the default kind)."""
    found = _of(subject)
    return found.legend if found is not None else "main"


def value_codes_of(study: Study) -> str | None:
    """The attribute whose values the legend of the study's kind explains (None: none)."""
    found = _of(study)
    kind = kind_of(study)
    if found is None or found.value_codes is None or kind.block is None:
        return None
    return found.value_codes(kind.block)
