"""The toy kind's hooks: a banner and its own part on the turn page, a report section that tallies its one
attribute per model, and a dashboard tab that shows the tally."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from django.contrib.auth.models import User

from annotation.kinds import StudyKind, TurnPage, block_of, register_kind
from annotation.models import Judgment, Study
from annotation.selectors import TurnView
from metrics.core.provenance import KindRows
from metrics.kind_sections import ReportSection, register_section
from reports import kind_pages, labels
from reports.charts import Filters, Page, Table

SLUG = "toy"
TOY = StudyKind(slug=SLUG, name="Toy")


def turn_page(view: TurnView, user: User) -> TurnPage:
    block = block_of(view.study, TOY) or {}
    return TurnPage(history="toykind/turn.html#banner", context={"toy_tally": block.get("tally", "")})


def section_and_rows(*, study: Study, seed: int = 0, resamples: int = 0) -> tuple[dict, KindRows] | None:
    """How many responses each model got a 1 on the tallied attribute for, over every non-gold judgment."""
    block = block_of(study, TOY)
    if block is None:
        return None
    ones: dict[str, int] = {}
    for slot, score in Judgment.objects.filter(round__study=study, is_gold=False, attribute__code=block["tally"],
                                               response__isnull=False).values_list("response__model_slot", "score"):
        ones[slot] = ones.get(slot, 0) + (score == 1)
    return {"tally": block["tally"], "ones": dict(sorted(ones.items()))}, ({}, {})


def bundle_rows(study: Study) -> Callable[[], KindRows]:
    return lambda: ({}, {})


def tally_table(report: Mapping[str, Any], filters: Filters) -> Table:
    toy = report.get(SLUG) or {}
    return Table("tally", f"Responses coded 1 on {toy.get('tally', '')}", ["model", "ones"],
                 [[model, count] for model, count in (toy.get("ones") or {}).items()])


TOY_PAGE = Page(SLUG, "Toy tally", (), (tally_table,), section=SLUG)


def register() -> None:
    register_kind(replace(TOY, turn_page=turn_page))
    register_section(ReportSection(slug=SLUG, help_text="a toy study's tally (tests/toykind)",
                                   section_and_rows=section_and_rows, bundle_rows=bundle_rows))
    kind_pages.register_pages(SLUG, kind_pages.KindPages(tabs=("reliability", TOY_PAGE), legend=SLUG))
    labels.register_terms(SLUG, (("ones", "responses coded 1 on the tallied attribute"),))
