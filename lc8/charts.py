"""The LongCounsel-8 dashboard page (docs/lc8-metrics.md#definitions): its tables and figures, built from the report's
``lc8`` section with the same ``Table``/``Chart`` blocks as every other report page (each has its CSV, each chart its
SVG and PNG). Plain Python over the report dict, like ``reports.charts``; ``render`` draws (matplotlib, loaded only
there), adding the one kind of chart the other pages do not need: a labelled scatter with intervals on both axes.
The rankings are the report's (``ranking``), shown and used as it has them, never ranked again here; the paper's
reference ranges are said in the captions of the blocks they compare with (docs/lc8-metrics.md#the-dashboard-page).

The per-trajectory plot is the one block not read from the report: the view loads that ONE trajectory's stored
labels (``lc8.inputs.lc8_inputs(conversation=…)``) and ``trajectory_blocks`` turns them into a chart and
a table.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from metrics.core.report_warnings import MIN_BOOTSTRAP_CLUSTERS
from reports.charts import Block, Chart, Filters, Page, Table, resamples_said

SLUG = "lc8"
TYPES = ("improving", "worsening", "fluctuating", "stable")
CI_KEYS = ("current_mae", "change_mae", "direction_accuracy")
FIDELITY_KEYS = ("item_exact", "item_mae", "total_bias", "pearson", "spearman", "screening_agreement",
                 "severe_tail_mae")
FIDELITY_COUNTS = ("n_sessions", "n_item_sessions", "n_severe_sessions")
# The report's rankings of the methods (ranking.*: docs/lc8-metrics.md#output), in the order the page shows them.
RANKINGS = ("by_current_mae", "by_change_mae", "by_direction_accuracy")
# What the LongCounsel-8 paper reports (docs/lc8-metrics.md#definitions), said in the captions of the blocks whose
# figures they compare with: its methods, and its self-report labels against the controlled state.
PAPER_METHODS = "current-score MAE about 2.6–3.7, change MAE 2.4–3.3, direction accuracy 0.33–0.83"
PAPER_SELF_REPORT = "current-score MAE 0.294–0.541, change MAE 0.311–0.626, trend agreement 0.921–0.954"
PAPER_SEVERE_TAIL = "severe-tail MAE 1.331–3.382"


def _lc8(report: Mapping[str, Any]) -> Mapping[str, Any]:
    section = report.get("lc8") or {}
    return {} if section.get("unavailable") else section


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(
        value) else None


def _ci(entry: Mapping[str, Any], key: str) -> tuple[Any, Any]:
    pair = (entry.get("ci") or {}).get(key) or (None, None)
    return pair[0], pair[1]


def _role(report: Mapping[str, Any], coder: str) -> str:
    return str((_lc8(report).get("roles") or {}).get(coder, ""))


def coders_table(report: Mapping[str, Any], filters: Filters) -> Table:
    coders = _lc8(report).get("coders") or {}
    rows = []
    short: list[tuple[str, Any]] = []  # each interval on fewer than the run's resamples, with its count
    for name in sorted(coders):
        entry = coders[name] or {}
        used = entry.get("ci_resamples") or {}
        short += [(f"{name} {key}", used.get(key)) for key in CI_KEYS if _ci(entry, key)[0] is not None]
        row = [name, _role(report, name)]
        # each interval with the trajectories it rests on beside it (``ci_trajectories``; none from a report stored
        # before the count): the count the warnings read, so a figure they name is seen where its interval is
        behind = entry.get("ci_trajectories") or {}
        for key in CI_KEYS:
            row += [entry.get(key), *_ci(entry, key), behind.get(key)]
        row += [entry.get("trend_agreement"), entry.get("n_trajectories"), entry.get("n_large_changes"),
                entry.get("n_seeds")]
        rows.append(row)
    columns = ["coder", "role"]
    for key in CI_KEYS:
        columns += [key, f"{key}_low", f"{key}_high", f"{key}_ci_trajectories"]
    columns += ["trend_agreement", "n_trajectories", "n_large_changes", "n_seeds"]
    section = _lc8(report)
    return Table("lc8-coders", "Tracking the reference: current-score MAE, change MAE, direction accuracy, trend "
                               "agreement per coder", columns, rows,
                 caption=f"Per seed, then the mean over seeds (n_seeds); low/high: 95 % percentile interval from "
                         f"{section.get('resamples', 'B')} trajectory bootstrap resamples (seed "
                         f"{section.get('seed', '–')}), the same draws for every coder; beside each interval the "
                         f"trajectories it rests on (those with a term of its figure: fewer than "
                         f"{MIN_BOOTSTRAP_CLUSTERS} and the warnings name it). Change MAE over adjacent "
                         f"sessions; direction accuracy over reference changes of at least the large-change "
                         f"threshold (n_large_changes), a predicted change of 0 counting as wrong; trend agreement: "
                         f"share of trajectories whose type from the coder's series is the reference's. Reference: "
                         f"{section.get('reference', '–')}. For comparison, the LongCounsel-8 paper reports for its "
                         f"methods {PAPER_METHODS}; for self-report labels against the controlled state "
                         f"{PAPER_SELF_REPORT}." + resamples_said(short, section.get("resamples")))


def mae_by_type_table(report: Mapping[str, Any], filters: Filters) -> Table:
    coders = _lc8(report).get("coders") or {}
    rows = [[name, _role(report, name), *(((coders[name] or {}).get("mae_by_type") or {}).get(t) for t in TYPES)]
            for name in sorted(coders)]
    return Table("lc8-mae-by-type", "Current-score MAE by the reference trajectory's type",
                 ["coder", "role", *TYPES], rows,
                 caption="Over the trajectories of each type (the reference's series): y5 − y1 ≤ −5 improving; "
                         "≥ +5 worsening; else max − min ≥ 5 fluctuating; else stable. n/a: no trajectory of the "
                         "type.")


def reference_types_table(report: Mapping[str, Any], filters: Filters) -> Table:
    counts = _lc8(report).get("reference_types") or {}
    total = sum(int(counts.get(t) or 0) for t in TYPES)
    rows = [[t, counts.get(t), (int(counts.get(t) or 0) / total) if total else None] for t in TYPES]
    return Table("lc8-reference-types", "Reference trajectory types", ["type", "trajectories", "share"], rows,
                 caption="Types of the reference series; trajectories with a missing reference session have no type "
                         "and are not counted.")


def fidelity_table(report: Mapping[str, Any], filters: Filters) -> Table:
    fidelity = _lc8(report).get("fidelity") or {}
    rows = [[name, _role(report, name), *((fidelity[name] or {}).get(k) for k in FIDELITY_KEYS + FIDELITY_COUNTS)]
            for name in sorted(fidelity)]
    return Table("lc8-fidelity", "Label fidelity against the reference",
                 ["coder", "role", *FIDELITY_KEYS, *FIDELITY_COUNTS], rows,
                 caption="Item exact match and item MAE over the sessions where both have the items "
                         "(n_item_sessions; n/a: the coder sent no items); total bias = mean of label − reference, "
                         "and Pearson and Spearman correlation of the totals, over the sessions both labelled "
                         "(n_sessions); screening agreement at total ≥ the screening cutoff; severe-tail MAE over "
                         "the sessions whose reference total is above the severe threshold (n_severe_sessions). "
                         f"For comparison, the LongCounsel-8 paper reports for self-report labels against the "
                         f"controlled state {PAPER_SEVERE_TAIL}.")


def _plotted(report: Mapping[str, Any]) -> list[str]:
    """The coders on the magnitude-vs-direction figure: the methods, or every coder when there is no method."""
    coders = _lc8(report).get("coders") or {}
    methods = [name for name in sorted(coders) if _role(report, name) == "method"]
    return methods or sorted(coders)


def _rankings(report: Mapping[str, Any]) -> dict[str, list[str]]:
    """The report's rankings (``ranking``: the study's methods only, each list best first), as the report has them."""
    ranking = _lc8(report).get("ranking") or {}
    return {key: [str(name) for name in ranking.get(key) or []] for key in RANKINGS}


def _position(ranked: Sequence[str], name: str) -> int | None:
    """A method's place in one of the report's rankings (1 = best); None for a coder it does not rank."""
    return ranked.index(name) + 1 if name in ranked else None


def rankings_table(report: Mapping[str, Any], filters: Filters) -> Table:
    rankings = _rankings(report)
    depth = max((len(ranked) for ranked in rankings.values()), default=0)
    rows = [[place + 1, *(ranked[place] if place < len(ranked) else None for ranked in rankings.values())]
            for place in range(depth)]
    return Table("lc8-rankings", "Rankings of the methods: by current-score MAE, change MAE and direction accuracy",
                 ["rank", *RANKINGS], rows,
                 caption="The report's rankings of the study's methods (the reference sources and the raters are "
                         "measured, not ranked): by current-score MAE and by change MAE ascending, by direction "
                         "accuracy descending; a method whose figure is undefined is left out of that ranking, ties "
                         "go by name. n/a: no method at that place. For comparison, the LongCounsel-8 paper reports "
                         f"for its methods {PAPER_METHODS}.")


def reversal_sentences(report: Mapping[str, Any]) -> list[str]:
    """The rank reversals of the report (``ranking.reversals``: pairs of methods ordered one way by change MAE and
    the other way by direction accuracy), each said in words with both methods' numbers."""
    section = _lc8(report)
    coders = section.get("coders") or {}
    sentences = []
    for pair in (section.get("ranking") or {}).get("reversals") or []:
        a, b = (str(name) for name in pair[:2])
        ea, eb = coders.get(a) or {}, coders.get(b) or {}
        ma, mb = _num(ea.get("change_mae")), _num(eb.get("change_mae"))
        da, db = _num(ea.get("direction_accuracy")), _num(eb.get("direction_accuracy"))
        if None in (ma, mb, da, db):
            sentences.append(f"{a} and {b} rank in opposite orders by change MAE and direction accuracy.")
            continue
        low, high = (a, b) if ma <= mb else (b, a)  # type: ignore[operator]
        m = {a: ma, b: mb}
        d = {a: da, b: db}
        sentences.append(f"{low} has the lower change MAE ({m[low]:.3f} vs {m[high]:.3f}) but {high} the "
                         f"higher direction accuracy ({d[high]:.3f} vs {d[low]:.3f}).")
    return sentences


def magnitude_direction_chart(report: Mapping[str, Any], filters: Filters) -> Chart:
    section = _lc8(report)
    coders = section.get("coders") or {}
    names = _plotted(report)
    mae = {n: _num((coders[n] or {}).get("change_mae")) for n in names}
    accuracy = {n: _num((coders[n] or {}).get("direction_accuracy")) for n in names}
    rankings = _rankings(report)
    points, rows = [], []
    for n in names:
        entry = coders[n] or {}
        x_ci, y_ci = _ci(entry, "change_mae"), _ci(entry, "direction_accuracy")
        rows.append([n, _role(report, n), mae[n], *x_ci, accuracy[n], *y_ci,
                     _position(rankings["by_change_mae"], n), _position(rankings["by_direction_accuracy"], n)])
        if mae[n] is not None and accuracy[n] is not None:
            points.append({"name": n, "x": mae[n], "y": accuracy[n], "x_ci": [_num(v) for v in x_ci],
                           "y_ci": [_num(v) for v in y_ci]})
    sentences = reversal_sentences(report)
    who = "methods" if any(_role(report, n) == "method" for n in names) else "coders"
    return Chart("lc8-magnitude-direction", f"Magnitude vs direction: change MAE and direction accuracy of "
                                            f"the {who}", "scatter",
                 {"points": points, "xlabel": "change MAE over adjacent sessions (lower is better)",
                  "ylabel": "direction accuracy of large changes (higher is better)", "ylim": (0, 1.05)},
                 ["coder", "role", "change_mae", "change_mae_low", "change_mae_high", "direction_accuracy",
                  "direction_accuracy_low", "direction_accuracy_high", "rank_by_change_mae",
                  "rank_by_direction_accuracy"], rows,
                 caption=("Rank reversals: " + " ".join(sentences) if sentences else
                          "No rank reversal: the order of the methods by change MAE is their order by direction "
                          "accuracy.")
                 + " Whiskers: 95 % bootstrap intervals on both axes; ranks: the places in the report's rankings "
                   "(1 = best; the methods alone are ranked). For comparison, the LongCounsel-8 paper reports for "
                   f"its methods {PAPER_METHODS}.",
                 alt=f"Scatter of {len(points)} {who}: change MAE across, direction accuracy up, each point "
                     f"named. " + " ".join(sentences))


LC8_PAGE = Page(SLUG, "LongCounsel-8", (), (coders_table, magnitude_direction_chart, rankings_table,
                                              mae_by_type_table, reference_types_table, fidelity_table), section=SLUG,
                template="lc8/report.html")


def report_blocks(report: Mapping[str, Any]) -> list[Block]:
    return [build(report, Filters()) for build in LC8_PAGE.blocks]


# --- one trajectory ------------------------------------------------------------------------------------------------

TRAJECTORY_CHART, TRAJECTORY_TABLE = "lc8-trajectory", "lc8-trajectory-values"


def _values(row: Sequence[float]) -> list[float | None]:
    return [_num(v) for v in row]


def _mean(rows: Sequence[Sequence[float | None]]) -> list[float | None]:
    """The mean over seeds of each session, over the seeds that have it."""
    out: list[float | None] = []
    for column in zip(*rows, strict=True):
        defined = [v for v in column if v is not None]
        out.append(sum(defined) / len(defined) if defined else None)
    return out


def trajectory_blocks(*, trajectory: str, reference: str, reference_row: Sequence[float],
                      coders: Mapping[str, Mapping[int | None, Sequence[float]]], roles: Mapping[str, str],
                      types: Mapping[tuple[str, str], str | None]) -> list[Block]:
    """The chart (reference vs each coder's series over sessions 1..S; a coder with several seeds: the mean over
    them) and the table of every series (each seed its own row, with its trajectory type) of ONE trajectory.
    ``types`` maps (coder, seed label) to the series' type (None: a session missing)."""
    sessions = len(reference_row)
    reference_values = _values(reference_row)
    series: dict[str, list[tuple[int, float | None]]] = {
        f"reference ({reference})": list(enumerate(reference_values, start=1))}
    table_rows: list[list[Any]] = [[reference, "reference", "", types.get((reference, "")), *reference_values]]
    chart_rows: list[list[Any]] = [[trajectory, reference, "reference", "", t, v]
                                   for t, v in enumerate(reference_values, start=1)]
    for name in sorted(coders):
        per_seed = coders[name]
        seeds = sorted(per_seed, key=lambda s: (s is not None, s or 0))
        rows = {seed: _values(per_seed[seed]) for seed in seeds}
        for seed in seeds:
            label = "" if seed is None else str(seed)
            table_rows.append([name, roles.get(name, ""), label, types.get((name, label)), *rows[seed]])
            chart_rows += [[trajectory, name, roles.get(name, ""), label, t, v]
                           for t, v in enumerate(rows[seed], start=1)]
        mean = _mean(list(rows.values()))
        shown = f"{name} (mean of {len(seeds)} seeds)" if len(seeds) > 1 else name
        series[shown] = list(enumerate(mean, start=1))
    chart = Chart(TRAJECTORY_CHART, f"Trajectory {trajectory}: PHQ-8 total per session, reference and coders",
                  "lines", {"series": series, "xlabel": "session", "ylabel": "PHQ-8 total", "sessions": sessions},
                  ["trajectory", "coder", "role", "seed", "session", "total"], chart_rows,
                  caption="The reference is the bold black line (solid, circles); each coder with several seeds is "
                          "drawn as the mean over its seeds (every seed is in the table below and the CSV). Read "
                          "from the stored labels of this one trajectory now, not from the run.",
                  alt=f"Line chart of the PHQ-8 total over {sessions} sessions of trajectory {trajectory}: the "
                      f"reference and {len(coders)} coders.")
    table = Table(TRAJECTORY_TABLE, f"Trajectory {trajectory}: every series, with its type",
                  ["coder", "role", "seed", "type", *(f"session_{t}" for t in range(1, sessions + 1))], table_rows,
                  caption="Type: the trajectory type of the series (n/a where a session is missing).")
    return [chart, table]
