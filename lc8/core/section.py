"""The LongCounsel-8 section's core half (``metrics.core.kind_sections``): the recompute of a study bundle reads
its rows from the bundle's files and computes the section as the server does (``lc8.core.rows``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from metrics.core.grown_sessions import grown_said
from metrics.core.kind_sections import CoreSection
from metrics.core.provenance import KindRows
from metrics.core.report_warnings import MIN_BOOTSTRAP_CLUSTERS, plural, reasons_said

from .rows import JUDGMENTS_FILE, LABELS_FILE, SESSIONS_FILE, lc8_kind_rows, lc8_rows_read, lc8_section_from_rows
from .tracking import CI_METRICS

FILES = (SESSIONS_FILE, LABELS_FILE, JUDGMENTS_FILE)  # what lc8_kind_rows writes, in lc8_rows_read's order

GROWN_ANCHOR = "docs/lc8-metrics.md#a-session-that-grew-after-it-was-rated"
# why a row was left out, in words (the keys of the section's ``dropped`` counts)
LABEL_REASONS = {
    "not_an_item": "of an attribute that is neither an lc8 item nor the total",
    "other_coder": "of a member who is neither a reference nor a method",
    "not_a_trajectory": "on a session of no trajectory (a longitudinal conversation of the study)",
    "reference_seed": "of a reference coder under a second seed (a reference has one series: its seedless labels, "
                      "else its lowest seed's)",
}
JUDGMENT_REASONS = {
    "unscored": "without a score",
    "gold": "gold (the section reads none)",
    "not_a_session": "not on a session",
    "not_an_item": "of an attribute that is not an lc8 item",
    "method": "of a method member (its predictions are its session labels)",
    "not_a_trajectory": "on a session of no trajectory (a longitudinal conversation of the study)",
    "recoded": "replaced by a later judgment of the same session and item",
}


def _compute(block: Mapping[str, Any], texts: Sequence[str], *, seed: int, resamples: int) -> tuple[dict, KindRows]:
    rows = lc8_rows_read(block, *texts)
    return lc8_section_from_rows(rows, seed=seed, resamples=resamples), lc8_kind_rows(rows)


def warning(section: Mapping[str, Any]) -> str | None:
    """What the report's warnings say of the section: unavailable or empty although the study has labels or
    judgments (``_unused``), the sessions that took a reply after their first rating (``lc8.input.grown_after_rating``)
    and the coders' intervals that rest on fewer than MIN_BOOTSTRAP_CLUSTERS trajectories (``_few_trajectories``)."""
    counts = section.get("input")
    grown = grown_said(counts, code="LongCounsel-8 rating",
                       anchor=GROWN_ANCHOR) if isinstance(counts, Mapping) else None
    said = [found for found in (_unused(section), grown, _few_trajectories(section)) if found]
    return " ".join(said) or None


def _few_trajectories(section: Mapping[str, Any]) -> str | None:
    """The coders whose intervals over trajectories (``coders[CODER].ci``) rest on fewer than
    MIN_BOOTSTRAP_CLUSTERS trajectories (``ci_trajectories``: those with a term of the figure; a resample draws every
    trajectory, but the others move nothing), by coder and figure: with so few clusters an interval covers well below
    its level (docs/metrics.md#bootstrap-selection-stability). A figure without an interval (no resamples, no term)
    or a coder from before the count was kept says nothing."""
    coders = section.get("coders")
    if not isinstance(coders, Mapping):
        return None
    named = []
    for coder, entry in sorted(coders.items()):
        counts = entry.get("ci_trajectories") if isinstance(entry, Mapping) else None
        if not isinstance(counts, Mapping):
            continue
        by_n: dict[int, list[str]] = {}
        # The figures in the section's order, whatever order the report's keys come in (a stored report's are jsonb's).
        for figure in [*(m for m in CI_METRICS if m in counts), *sorted(set(counts) - set(CI_METRICS))]:
            count = counts[figure]
            interval = (entry.get("ci") or {}).get(figure) or []
            if isinstance(count, int) and 0 < count < MIN_BOOTSTRAP_CLUSTERS and any(v is not None for v in interval):
                by_n.setdefault(count, []).append(figure)
        if by_n:
            named.append(f"{coder} on " + ", ".join(
                f"{', '.join(figures)} ({n} {'trajectory' if n == 1 else 'trajectories'})"
                for n, figures in sorted(by_n.items())))
    if not named:
        return None
    return (f"The LongCounsel-8 intervals (coders' ci) rest on fewer than {MIN_BOOTSTRAP_CLUSTERS} trajectories for "
            f"{'; '.join(named)}: each resample draws every trajectory, but only those carry the figure, so these "
            f"intervals say next to nothing (with fewer than {MIN_BOOTSTRAP_CLUSTERS} clusters an interval covers well "
            "below its level).")


def _unused(section: Mapping[str, Any]) -> str | None:
    counts = section.get("input")
    if not isinstance(counts, Mapping):
        return None
    labels, judgments = int(counts.get("labels") or 0), int(counts.get("judgments") or 0)
    if labels + judgments == 0:
        return None
    has = f"{plural(labels, 'session label')} and {plural(judgments, 'judgment')}"
    if section.get("unavailable"):
        return f"The LongCounsel-8 section is unavailable although the study has {has}: {section['unavailable']}."
    if int(counts.get("labels_used") or 0) + int(counts.get("used") or 0) > 0:
        return None
    reasons = (reasons_said(counts.get("labels_dropped") or {}, LABEL_REASONS, "label")
               + reasons_said(counts.get("dropped") or {}, JUDGMENT_REASONS, "judgment"))
    if not counts.get("trajectories"):
        reasons.insert(0, "the study has no trajectory (a longitudinal conversation of the study with sessions)")
    return (f"The LongCounsel-8 section is empty although the study has {has}: none could be used "
            f"({'; '.join(reasons) or 'no reason counted'}).")


SECTION = CoreSection(files=FILES, compute=_compute, warning=warning)
