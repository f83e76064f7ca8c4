"""CARE's hooks (docs/architecture.md#study-kinds): what it adds to the turn page, its report section, its dashboard
tabs and legend, and its demo, registered with the interfaces of the layers below when Django starts
(``CareConfig.ready``)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from annotation.kinds import KindDemo, TurnPage, register_kind
from care import demo, inputs, schema, selectors
from care.charts import CARE_PAGE, SLUG
from care.kind import CARE, QUALITY_SCOPE, REFERENCE_CODING
from metrics.kind_sections import ReportSection, register_section
from reports import kind_pages, labels

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from annotation.selectors import TurnView

# The display names of the section's columns (docs/care.md#metrics).
COLUMNS = {
    "crisis_type": "Crisis type", "history": "History", "AR": "Aligned rate (AR)", "PR": "Premature rate (PR)",
    "LR": "Lag rate (LR)", "advice_frequency": "Advice frequency", "n_action": "Action turns", "n_ready": "Ready turns",
    "ProdR": "Productive rate (ProdR)", "UnprodR": "Unproductive rate (UnprodR)", "OmitR": "Omission rate (OmitR)",
    "n_sessions": "Sessions", "delta_AR": "Δ AR, crisis − control", "delta_PR": "Δ PR, crisis − control",
    "wilcoxon_p": "Wilcoxon p", "rank_biserial_r": "Rank-biserial r", "n_histories": "Histories",
    "field": "Field", "coder_a": "Coder A", "coder_b": "Coder B", "agreement": "Agreement", "kappa": "Cohen's κ",
    "n": "Units",
}

# The fixed terms of the CARE page's legend.
TERMS = (
    ("AR", "aligned rate: aligned action turns / action turns"),
    ("PR", "premature rate: premature action turns / action turns"),
    ("LR", "lag rate: action turns lagging while the state is Open or Rebuilding / ready turns"),
    ("ProdR", "productive rate: sessions with a productive checklist item present"),
    ("UnprodR", "unproductive rate: sessions with an unproductive checklist item present"),
    ("OmitR", "omission rate: sessions missing an item required for their crisis type"),
    ("Δ", "crisis window − matched control window of the same history"),
    ("κ", "Cohen's unweighted kappa between two coders"),
    ("[low–high]", "95 % percentile interval over resampled histories"),
)

# The rows of the section in a study bundle (docs/bundle.md#what-each-kind-gets): its files and its own columns.
BUNDLE_FILES = {
    "data/care_sessions.csv": "The CARE section's histories (the study's conversations with sessions), one row per "
                              "session: what its recompute reads (docs/bundle.md#what-each-kind-gets).",
    "data/care_judgments.csv": "Every judgment of the study's rounds as the CARE section reads it, in judgment order "
                               "(a later one replaces an earlier one of the same unit and coder), unscored ones "
                               "too (counted as left out).",
}
BUNDLE_COLUMNS = {
    "conversation_id": ("string", "the history's name: its conversation id, or DATASET/ID when two histories of the "
                                  "study share the id (docs/care.md#history-names); in care_judgments.csv empty for "
                                  "a conversation without sessions (not a history)"),
    "session_index": ("integer", "the session's position in the history, from 1; in care_judgments.csv the session "
                                 "of a session-level code, empty otherwise"),
    "kind": ("string", "chat, crisis or callback"),
    "attribute": ("string", "the attribute's code in the study's schema"),
}


def turn_page(view: TurnView, user: User) -> TurnPage | None:
    """The history around a turn of a history with sessions (folded before the current episode), its styles and
    scripts, and the session checklist at the end of a crisis or callback session; None for a turn without a
    session."""
    history = selectors.care_history(view=view, user=user)
    if history is None:
        return None
    return TurnPage(head="care/coding.html#head", history="care/coding.html#history",
                    checklist="care/coding.html#checklist", context={"care": history})


def register() -> None:
    register_kind(replace(
        CARE, block_problems=schema.block_problems, session_checklist=selectors.session_checklist,
        turn_page=turn_page, settings=(QUALITY_SCOPE, REFERENCE_CODING), turn_missing=selectors.turn_missing,
        demo=KindDemo(study=demo.CARE_DEMO_STUDY, label="CARE",
                      option_help="Also load the CARE demo study (care-demo: one synthetic history of sessions on "
                                  "care-v1, with an illustrative LLM judge's labels).",
                      said="one SYNTHETIC history of five sessions (a crisis and a callback) on care-v1, with the "
                           "labels of demo-care-judge (a method).",
                      load=demo.care_demo_load)))
    register_section(ReportSection(slug=SLUG, help_text="a CARE study's section (docs/care.md)",
                                   section_and_rows=inputs.care_section_and_rows,
                                   bundle_rows=inputs.care_bundle_rows, files=BUNDLE_FILES, columns=BUNDLE_COLUMNS))
    kind_pages.register_pages(CARE.slug, kind_pages.KindPages(
        # Reliability: its turn- and response-level codes go through the calibration rounds like any schema's; the
        # schema has no UIRI attributes, no clusters, no risk encodings and no spans, so the other five pages of
        # the default kind would be empty by design.
        tabs=("reliability", CARE_PAGE), legend=SLUG,
        value_codes=lambda block: str(block["crisis"]) if block.get("crisis") else None))  # crisis types
    labels.register_columns(COLUMNS)
    labels.register_terms(SLUG, TERMS)
