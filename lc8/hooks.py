"""LongCounsel-8's hooks (docs/architecture.md#study-kinds): its session pages in place of the turn page, its
session assignment, its session labels, its report section, its dashboard tab and legend, and its demo, registered
with the interfaces of the layers below when Django starts (``Lc8Config.ready``)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from annotation.kinds import CodingPage, KindDemo, register_kind
from lc8 import assign, inputs, schema, selectors
from lc8.charts import LC8_PAGE, SLUG
from lc8.kind import DEMO_STUDY, LC8
from metrics.kind_sections import ReportSection, register_section
from reports import kind_pages, labels

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from annotation.models import AttributeDefinition
    from annotation.selectors import TurnView

# The fixed terms of the LongCounsel-8 page's legend.
TERMS = (
    ("PHQ-8", "the eight-item Patient Health Questionnaire depression scale; its total runs 0–24"),
    ("MAE", "mean absolute error against the reference"),
    ("Current-score MAE", "of each session's total"),
    ("Change MAE", "of the change between adjacent sessions"),
    ("Direction accuracy", "share of the reference's large changes whose direction the coder got right"),
    ("[low–high]", "95 % percentile interval over resampled trajectories"),
)


def coding_page(view: TurnView, user: User) -> CodingPage | None:
    """The session page of an assignment (its unit is the turn's session), in place of the turn page."""
    page = selectors.session_page(view=view, user=user)
    return CodingPage(template="lc8/rating.html", context={"lc8": page}) if page is not None else None


def labelled_attributes(block: dict[str, Any]) -> set[str]:
    """The attributes a session label may be of: the items and the total."""
    return {*map(str, block.get("items") or []), str(block.get("total") or "")}


def derived_from(attribute: AttributeDefinition, block: dict[str, Any]) -> str | None:
    """A derived attribute (the block's ``derived``, e.g. the PHQ-8 total) is computed from the items, never typed
    or sent as a judgment: the reason, or None for any other attribute."""
    if attribute.code not in (block.get("derived") or []):
        return None
    items = [str(code) for code in block.get("items") or []]
    source = f"{items[0]}–{items[-1]}" if len(items) > 2 else " and ".join(items) or "the items"
    return f"{attribute.code} is derived from {source}: send the items"


def demo_load(**people: User) -> Any:
    """The demo study (``lc8.demo``: numpy, so loaded by the command that asks for it, never by a web process)."""
    from lc8 import demo

    return demo.lc8_demo_load(**people)


def register() -> None:
    register_kind(replace(
        LC8, block_problems=schema.block_problems, session_checklist=selectors.session_checklist,
        coding_page=coding_page,
        assignment_units=assign.session_keys, assignment_rows=assign.session_assignment_rows,
        session_labels=True, labelled_attributes=labelled_attributes, derived_from=derived_from,
        demo=KindDemo(study=DEMO_STUDY, label="LC8",
                      option_help="Also load the LongCounsel-8 demo study (lc8-demo: eight synthetic trajectories of "
                                  "five counseling sessions on lc8-v1, reference PHQ-8 labels and two illustrative "
                                  "methods' predictions).",
                      said="eight SYNTHETIC trajectories of five counseling sessions on lc8-v1 with reference PHQ-8 "
                           "labels and two illustrative methods; demo-reviewer and demo-expert have the sessions "
                           "to rate.",
                      load=demo_load)))
    register_section(ReportSection(slug=SLUG, help_text="a LongCounsel-8 study's section (docs/lc8-metrics.md)",
                                   section_and_rows=inputs.lc8_section_and_rows,
                                   bundle_rows=inputs.lc8_bundle_rows))
    # Its own page alone: every attribute is session-level, read by its section only (the main report's core reads
    # none of them, so the six pages of the default kind would be empty by design).
    kind_pages.register_pages(LC8.slug, kind_pages.KindPages(tabs=(LC8_PAGE,), legend=SLUG))
    labels.register_terms(SLUG, TERMS)
