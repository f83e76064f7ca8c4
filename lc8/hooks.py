"""LongCounsel-8's hooks (docs/architecture.md#study-kinds): its session pages in place of the turn page, its
session assignment, its session labels, its check of an ingested trajectory, its report section, its dashboard tab
and legend, and its demo, registered with the interfaces of the layers below when Django starts
(``Lc8Config.ready``)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from annotation.kinds import CodingPage, KindDemo, register_kind
from benchmark.models import Conversation
from lc8 import assign, inputs, schema, selectors
from lc8.charts import LC8_PAGE, SLUG
from lc8.kind import BOOTSTRAP, DEMO_STUDY, LC8
from metrics.kind_sections import ReportSection, register_section
from reports import kind_pages, labels

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from annotation.models import AttributeDefinition
    from annotation.selectors import TurnView

# The display names of the section's columns (docs/lc8-metrics.md#definitions).
COLUMNS = {
    "coder": "Coder", "role": "Role", "current_mae": "Current-score MAE", "change_mae": "Change MAE",
    "direction_accuracy": "Direction accuracy", "trend_agreement": "Trend agreement",
    "n_trajectories": "Trajectories", "n_large_changes": "Large changes", "n_seeds": "Seeds", "type": "Type",
    "trajectories": "Trajectories", "share": "Share", "item_exact": "Item exact match", "item_mae": "Item MAE",
    "total_bias": "Total bias", "pearson": "Pearson r", "spearman": "Spearman ρ",
    "screening_agreement": "Screening agreement", "severe_tail_mae": "Severe-tail MAE",
    "n_item_sessions": "Sessions with items", "n_severe_sessions": "Severe sessions", "seed": "Seed",
    "by_current_mae": "By current-score MAE", "by_change_mae": "By change MAE",
    "by_direction_accuracy": "By direction accuracy",
    "current_mae_ci_trajectories": "Trajectories behind the current-score MAE interval",
    "change_mae_ci_trajectories": "Trajectories behind the change MAE interval",
    "direction_accuracy_ci_trajectories": "Trajectories behind the direction accuracy interval",
}
# The coders' table has twelve columns: the counts beside its intervals get short headers, so that it fits a
# 1300 px window (its intervals sit under their values there: lc8/static/css/lc8/report.css).
SHORT_COLUMNS = {f"{key}_ci_trajectories": "Traj. behind" for key in ("current_mae", "change_mae",
                                                                       "direction_accuracy")}

# The fixed terms of the LongCounsel-8 page's legend.
TERMS = (
    ("PHQ-8", "the eight-item Patient Health Questionnaire depression scale; its total runs 0–24"),
    ("MAE", "mean absolute error against the reference"),
    ("Current-score MAE", "of each session's total"),
    ("Change MAE", "of the change between adjacent sessions"),
    ("Direction accuracy", "share of the reference's large changes whose direction the coder got right"),
    ("[low–high]", "95 % percentile interval over resampled trajectories"),
    ("Traj. behind", "the trajectories the interval before it rests on (those with a term of its figure)"),
)

# The rows of the section in a study bundle (docs/bundle.md#what-each-kind-gets): its files and its own columns.
BUNDLE_FILES = {
    "data/lc8_sessions.csv": "The LongCounsel-8 section's sessions: those of the study's longitudinal conversations, "
                             "in trajectory order; lc8_labels.csv and lc8_judgments.csv point to them by row.",
    "data/lc8_labels.csv": "Every session label of the study as the LongCounsel-8 section reads it (the same labels "
                           "as the judgments' rows without a round, in the section's terms).",
    "data/lc8_judgments.csv": "Every judgment of the study's rounds as the LongCounsel-8 section reads it, in judgment "
                              "order (a later one replaces an earlier one of the same session and item), unscored "
                              "ones too (counted as left out).",
}
BUNDLE_COLUMNS = {
    "conversation_id": ("string", "the trajectory's name: its conversation id, or DATASET/ID when two trajectories "
                                  "of the study share the id (docs/lc8-metrics.md#in-the-report)"),
    "session_index": ("integer", "the session's position in the history, from 1"),
    "kind": ("string", "counseling"),
    "attribute": ("string", "the attribute's code in the study's schema (an item or the total; empty for any "
                            "other)"),
    "session": ("integer", "the session: its row of lc8_sessions.csv, from 1; 0 for a session of no trajectory; "
                           "empty when the judgment is on no session"),
    "value": ("number", "the label's value (Python's repr of the binary64: read back exactly)"),
}


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


def conversation_problems(block: dict[str, Any], record: dict[str, Any]) -> list[tuple[str, str]]:
    """A trajectory ingested into the study has at most the block's ``sessions`` (five): the section places session
    i in column i, so a sixth would make it unavailable for the whole study
    (docs/lc8.md#trajectories-conversations-json-lines). Fewer are taken: the sessions not sent yet are missing
    values."""
    sessions = record.get("sessions")
    most = int(block["sessions"])
    if record.get("kind") != Conversation.Kind.LONGITUDINAL or sessions is None or len(sessions) <= most:
        return []
    return [(f"sessions[{most}]", f"a LongCounsel-8 trajectory has at most {most} sessions (the sessions of "
                                  f"the schema's lc8 block); this one has {len(sessions)}")]


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
        conversation_problems=conversation_problems,
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
                                   bundle_rows=inputs.lc8_bundle_rows, files=BUNDLE_FILES, columns=BUNDLE_COLUMNS,
                                   bootstrap=BOOTSTRAP))
    # Its own page alone: every attribute is session-level, read by its section only (the main report's core reads
    # none of them, so the six pages of the default kind would be empty by design).
    kind_pages.register_pages(LC8.slug, kind_pages.KindPages(tabs=(LC8_PAGE,), legend=SLUG))
    labels.register_columns(COLUMNS, SHORT_COLUMNS)
    labels.register_terms(SLUG, TERMS)
