"""The CARE dashboard page (docs/care.md#metrics): its figures and tables, built from the report's ``care`` section
with the same ``Table``/``Chart`` blocks as every other report page (so each has its CSV, and each chart its SVG
and PNG, through the same download view). Plain Python over the report dict, like ``reports.charts``.

The page exists only for a report with a ``care`` section (a study on a schema with a ``care`` block).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reports.charts import Block, Chart, Filters, Page, Table, resamples_said

SLUG = "care"
ALIGNMENT_KEYS = ("AR", "PR", "LR", "advice_frequency")
QUALITY_KEYS = ("ProdR", "UnprodR", "OmitR")
CONTROL_KEYS = ("delta_AR", "delta_PR", "wilcoxon_p", "rank_biserial_r", "n_histories")


def _care(report: Mapping[str, Any]) -> Mapping[str, Any]:
    return report.get("care") or {}


def alignment_chart(report: Mapping[str, Any], filters: Filters) -> Chart:
    per = _care(report).get("alignment") or {}
    models = sorted(per)
    series = {k: [(per[m] or {}).get(k) for m in models] for k in ALIGNMENT_KEYS}
    rows = [[m, *((per[m] or {}).get(k) for k in (*ALIGNMENT_KEYS, "n_action", "n_ready"))] for m in models]
    return Chart("care-alignment", "Timing of advice per model: aligned, premature, lagging, advice frequency",
                 "bars", {"categories": models, "series": series, "ylabel": "share", "ylim": (0, 1)},
                 ["model", *ALIGNMENT_KEYS, "n_action", "n_ready"], rows,
                 caption="AR = aligned / N_action; PR = premature / N_action; LR = lag / N_ready (action turns while "
                         "the state is Open or Rebuilding); advice frequency = N_action / coded assistant turns. "
                         "Pooled over every history of the model; n/a where the denominator is 0.",
                 alt=f"Grouped bars of AR, PR, LR and advice frequency for {len(models)} models.")


def alignment_by_crisis_table(report: Mapping[str, Any], filters: Filters) -> Table:
    by = _care(report).get("alignment_by") or {}
    rows = [[crisis, m, *((per or {}).get(k) for k in (*ALIGNMENT_KEYS, "n_action", "n_ready"))]
            for crisis in sorted(by) for m, per in sorted((by[crisis] or {}).items())]
    return Table("care-alignment-by-crisis", "Timing of advice per crisis type and model",
                 ["crisis_type", "model", *ALIGNMENT_KEYS, "n_action", "n_ready"], rows,
                 caption="A history counts under the type of its first crisis session.")


def alignment_by_history_table(report: Mapping[str, Any], filters: Filters) -> Table:
    by = _care(report).get("alignment_by_history") or {}
    rows = [[history, m, *((per or {}).get(k) for k in (*ALIGNMENT_KEYS, "n_action", "n_ready"))]
            for history in sorted(by) for m, per in sorted((by[history] or {}).items())]
    return Table("care-alignment-by-history", "Timing of advice per history",
                 ["history", "model", *ALIGNMENT_KEYS, "n_action", "n_ready"], rows,
                 caption="Each history's own action turns under the reference coding, with its model (one per "
                         "history); n/a where the denominator is 0.")


def quality_chart(report: Mapping[str, Any], filters: Filters) -> Chart:
    per = _care(report).get("quality") or {}
    models = sorted(per)
    series = {k: [(per[m] or {}).get(k) for m in models] for k in QUALITY_KEYS}
    rows = [[m, *((per[m] or {}).get(k) for k in (*QUALITY_KEYS, "n_sessions"))] for m in models]
    return Chart("care-quality", "Session quality per model: productive, unproductive, omission", "bars",
                 {"categories": models, "series": series, "ylabel": "share of sessions", "ylim": (0, 1)},
                 ["model", *QUALITY_KEYS, "n_sessions"], rows,
                 caption="Over crisis and callback sessions with a coded checklist: productive = a productive item "
                         "present; unproductive = an unproductive item present; omission = a required item for the "
                         "session's crisis type absent. Not mutually exclusive.",
                 alt=f"Grouped bars of ProdR, UnprodR and OmitR for {len(models)} models.")


def quality_by_crisis_table(report: Mapping[str, Any], filters: Filters) -> Table:
    by = _care(report).get("quality_by") or {}
    rows = [[crisis, m, *((per or {}).get(k) for k in (*QUALITY_KEYS, "n_sessions"))]
            for crisis in sorted(by) for m, per in sorted((by[crisis] or {}).items())]
    return Table("care-quality-by-crisis", "Session quality per crisis type and model",
                 ["crisis_type", "model", *QUALITY_KEYS, "n_sessions"], rows)


def control_table(report: Mapping[str, Any], filters: Filters) -> Table:
    per = _care(report).get("control") or {}
    rows = [[m, *((per[m] or {}).get(k) for k in CONTROL_KEYS)] for m in sorted(per)]
    return Table("care-control", "Crisis windows vs matched control windows of the same history",
                 ["model", *CONTROL_KEYS], rows,
                 caption="Δ = crisis − control, the mean over histories where both windows have an action turn "
                         "(n_histories); Wilcoxon signed-rank p (two-sided) and matched-pairs rank-biserial r on the "
                         "per-history differences.")


# What the CARE paper reports for its judge against humans (docs/care.md#metrics), beside the study's own figures.
PAPER_VALIDATION = ("For comparison, the CARE paper's judge against humans: crisis 0.825 (κ 0.57), marker direction "
                    "0.694 (κ 0.73), action codes 0.707 (κ 0.57), on 90 action turns, 30 per crisis type.")


def validation_table(report: Mapping[str, Any], filters: Filters) -> Table:
    validation = _care(report).get("validation") or {}
    rows = []
    # each interval shown on fewer than the run's resamples (κ 0/0 in the others: both coders one label throughout)
    short: list[tuple[str, Any]] = []
    resamples = None
    for field_name in validation:
        for pair, entry in sorted((validation[field_name] or {}).items()):
            coder_a, _, coder_b = pair.partition("|")
            agreement_ci = entry.get("agreement_ci") or [None, None]
            kappa_ci = entry.get("kappa_ci") or [None, None]
            used = entry.get("n_resamples") or {}
            resamples = entry.get("resamples", resamples)
            short += [(f"{pair} {field_name} {name}", used.get(key)) for key, name, ci in
                      (("agreement", "agreement", agreement_ci), ("kappa", "κ", kappa_ci)) if ci[0] is not None]
            rows.append([field_name, coder_a, coder_b, entry.get("agreement"), agreement_ci[0], agreement_ci[1],
                         entry.get("kappa"), kappa_ci[0], kappa_ci[1], entry.get("n"), entry.get("n_histories")])
    return Table("care-validation", "Judge validation: agreement and Cohen's κ per field and coder pair",
                 ["field", "coder_a", "coder_b", "agreement", "agreement_low", "agreement_high", "kappa",
                  "kappa_low", "kappa_high", "n", "n_histories"], rows,
                 caption="Agreement (fraction) and unweighted Cohen's κ on the units both coders coded, with "
                         "percentile intervals over resampled histories (n_histories: those the units fall in, the "
                         "clusters the intervals rest on; under 10 they say next to nothing). marker_direction: the "
                         "marker's side of the reference state (below, at, above). " + PAPER_VALIDATION
                         + resamples_said(short, resamples))


def page_context(report: Mapping[str, Any] | None) -> dict[str, Any]:
    """What the CARE page's template reads beyond its blocks: the histories (for the timeline links) and the
    reference coder."""
    care = (report or {}).get("care") or {}
    return {"histories": histories(report), "reference": care.get("reference", "")}


CARE_PAGE = Page(SLUG, "CARE", (), (alignment_chart, alignment_by_crisis_table, alignment_by_history_table,
                                    quality_chart, quality_by_crisis_table, control_table, validation_table),
                 section=SLUG, template="care/report.html", context=page_context)


def care_blocks(report: Mapping[str, Any], filters: Filters) -> list[Block]:
    return [build(report, filters) for build in CARE_PAGE.blocks]


def histories(report: Mapping[str, Any] | None) -> list[str]:
    """The histories of the report's care section (for the links to their timelines)."""
    return sorted(_care(report or {}).get("states") or {})
