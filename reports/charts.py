"""Every figure and table of the researcher dashboards, built from a stored metrics report (docs/metrics.md#report-keys)
and the page's filters. Plain Python over the report dict: no Django, no drawing (``reports.figures`` draws a Chart), so
each figure's numbers, the table on the page and its CSV download come from one function.

A page is a list of blocks; a block is a ``Table`` (shown as HTML) or a ``Chart`` (shown as a picture); both
carry the rows behind them, which is what the CSV download serves.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from common.rounds import calibration_number
from metrics.core.report_warnings import MIN_BOOTSTRAP_CLUSTERS

LANDIS_KOCH = ("κ < 0 Poor; 0–0.20 Slight; 0.21–0.40 Fair; 0.41–0.60 Moderate; 0.61–0.80 Substantial; "
               "0.81–1 Almost perfect")
CLUSTERS = ("D", "E", "R", "F", "ARI")
HIGHEST, LOWEST = "▲", "▼"


@dataclass(frozen=True)
class Filters:
    """The page's filters, as they appear in its URL. Empty means "the default" (first or all)."""

    round: str = ""
    model: str = ""
    dataset: str = ""
    scale: str = "risk"
    signal: str = "ARI"
    kind: str = ""  # "", "single" or "multi": conversations of that kind only (risk, coupling, spans)


@dataclass
class Table:
    name: str
    title: str
    columns: list[str]
    rows: list[list[Any]]
    caption: str = ""
    # (row, column) -> a marker shown after the value: ▲ highest / ▼ lowest of its column.
    marks: dict[tuple[int, int], str] = field(default_factory=dict)

    is_chart = False

    def marked_rows(self) -> list[list[tuple[Any, str]]]:
        """Each cell with its marker ("" for none), for the page's table."""
        return [[(value, self.marks.get((r, c), "")) for c, value in enumerate(row)] for r, row in enumerate(self.rows)]


@dataclass
class Chart:
    name: str
    title: str
    kind: str  # bars | heatmap | lines | intervals (see reports.figures)
    spec: dict[str, Any]
    columns: list[str]
    rows: list[list[Any]]
    caption: str = ""
    alt: str = ""

    is_chart = True


Block = Table | Chart


@dataclass(frozen=True)
class Choices:
    """The values each filter may take in this report (for the filter form)."""

    rounds: list[str]
    models: list[str]
    datasets: list[str]
    signals: list[str]


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not (
        isinstance(value, float) and math.isnan(value)) else None


def _in_number_order(rounds: Iterable[str]) -> list[str]:
    """Calibration rounds' names by number (calibration-10 after calibration-2), wherever a page lists them."""
    return sorted(rounds, key=lambda name: (calibration_number(name) or 0, name))


def choices(report: Mapping[str, Any]) -> Choices:
    calibration = report.get("calibration") or {}
    indices = report.get("indices") or {}
    # Every calibration round the report has figures of: the reviewers' rounds and the experts' (a reserved gold
    # pool has the experts' alone, ``expert_only_rounds``), by number (calibration-10 after calibration-2).
    rounds = _in_number_order({r for per in (calibration.get("reviewers") or {}).values() for r in per
                               if r != "delta_pp"} | set(calibration.get("experts") or {}))
    models = sorted(indices.get("ari") or {})
    datasets = sorted(set((indices.get("uiri") or {}).get("by_dataset") or {}) | set(indices.get("by_dataset") or {}))
    trajectories = indices.get("trajectories") or {}
    signals = sorted({s for per in (trajectories.get("models") or {}).values() for s in per}
                     | set(trajectories.get("user") or {}))
    return Choices(rounds=rounds, models=models, datasets=datasets, signals=signals)


def _round(report: Mapping[str, Any], filters: Filters) -> str:
    rounds = choices(report).rounds
    if filters.round in rounds:
        return filters.round
    return (report.get("calibration") or {}).get("last_round") or (rounds[-1] if rounds else "")


def _mark_extremes(rows: list[list[Any]], columns: Sequence[int]) -> dict[tuple[int, int], str]:
    """▲ on the highest and ▼ on the lowest defined value of each listed column (ties all marked); nothing when
    the column has fewer than two distinct values."""
    marks: dict[tuple[int, int], str] = {}
    for c in columns:
        values = [(_num(row[c]), r) for r, row in enumerate(rows)]
        defined = [(v, r) for v, r in values if v is not None]
        if len({v for v, _ in defined}) < 2:
            continue
        top, bottom = max(v for v, _ in defined), min(v for v, _ in defined)
        for v, r in defined:
            if v == top:
                marks[(r, c)] = HIGHEST
            elif v == bottom:
                marks[(r, c)] = LOWEST
    return marks


# --- reliability -----------------------------------------------------------------------------------------------


def reviewer_table(report: Mapping[str, Any], filters: Filters) -> Table:
    reviewers = (report.get("calibration") or {}).get("reviewers") or {}
    rows = []
    for name in sorted(reviewers):
        per = reviewers[name]
        for round_name in _in_number_order(r for r in per if r != "delta_pp"):
            cell = per[round_name] or {}
            bands = cell.get("kappa_bands") or {}
            rows.append([
                name, round_name, cell.get("exact"), cell.get("bucketed"), per.get("delta_pp"),
                cell.get("kappa_user"), bands.get("kappa_user", ""), cell.get("kappa_response"),
                bands.get("kappa_response", ""), cell.get("kappa_flags"), bands.get("kappa_flags", ""),
                cell.get("bias"), cell.get("n_items"), cell.get("n_clusters"),
            ])
    columns = ["reviewer", "round", "exact", "bucketed", "delta_pp", "kappa_user", "band_user", "kappa_response",
               "band_response", "kappa_flags", "band_flags", "bias", "n_items", "n_clusters"]
    return Table("reviewers", "Agreement with gold, per reviewer and round", columns, rows,
                 caption=f"Bucketed agreement is the headline gold agreement; Δ in percentage points from the first "
                         f"to the last calibration round. Landis–Koch bands: {LANDIS_KOCH}. Clusters: the turns "
                         f"holding the reviewer's items with gold, which the reviewer's intervals rest on (fewer than "
                         f"{MIN_BOOTSTRAP_CLUSTERS}: named in the warnings).")


def agreement_chart(report: Mapping[str, Any], filters: Filters) -> Chart:
    calibration = report.get("calibration") or {}
    round_name = _round(report, filters)
    reviewers = calibration.get("reviewers") or {}
    intervals = (calibration.get("agreement_ci") or {}).get(round_name) or {}
    names = sorted(r for r in reviewers if round_name in reviewers[r])
    values = [(reviewers[n][round_name] or {}).get("bucketed") for n in names]
    ranges = [((intervals.get(n) or {}).get("bucketed") or {}) for n in names]
    pairs = [(r.get("low"), r.get("high")) if r else None for r in ranges]
    rows = [[n, round_name, v, p[0] if p else None, p[1] if p else None] for n, v, p in zip(names, values, pairs,
                                                                                            strict=True)]
    return Chart("agreement", f"Bucketed agreement with gold, {round_name or 'no round'}", "bars",
                 {"categories": names, "series": {"bucketed": values}, "intervals": {"bucketed": pairs},
                  "ylabel": "agreement", "ylim": (0, 1)},
                 ["reviewer", "round", "bucketed", "ci_low", "ci_high"], rows,
                 caption="Bars: bucketed agreement; whiskers: 95 % bootstrap interval over the round's turns."
                         + resamples_said([(n, r.get("n_resamples")) for n, r in zip(names, ranges, strict=True)],
                                          (calibration.get("bootstrap") or {}).get("resamples")),
                 alt=f"Bar chart of {len(names)} reviewers' bucketed agreement with gold in {round_name}.")


def kappa_heatmap(report: Mapping[str, Any], filters: Filters) -> Chart:
    calibration = report.get("calibration") or {}
    round_name = _round(report, filters)
    reviewers = calibration.get("reviewers") or {}
    names = sorted(r for r in reviewers if round_name in reviewers[r])
    codes = [a["code"] for a in report.get("attributes") or []]
    values = [[((reviewers[n][round_name] or {}).get("kappa_by_attribute") or {}).get(c, {}).get("kappa")
               for c in codes] for n in names]
    rows = [[n, c, values[i][j]] for i, n in enumerate(names) for j, c in enumerate(codes)]
    return Chart("kappa", f"Quadratic weighted κ with gold per attribute, {round_name or 'no round'}", "heatmap",
                 {"rows": names, "columns": codes, "values": values, "vmin": -1.0, "vmax": 1.0, "label": "κ"},
                 ["reviewer", "attribute", "kappa"], rows,
                 caption="n/a: κ undefined (no unit, or both sides one and the same value throughout).",
                 alt=f"Heatmap of κ for {len(names)} reviewers × {len(codes)} attributes.")


def pairwise_heatmap(report: Mapping[str, Any], filters: Filters) -> Chart:
    calibration = report.get("calibration") or {}
    round_name = _round(report, filters)
    pairs = (calibration.get("pairwise") or {}).get(round_name) or {}
    names = sorted({n for key in pairs for n in key.split("|")})
    index = {n: i for i, n in enumerate(names)}
    values: list[list[float | None]] = [[None] * len(names) for _ in names]
    rows = []
    for key, cell in sorted(pairs.items()):
        a, b = key.split("|")
        value = (cell or {}).get("bucketed")
        values[index[a]][index[b]] = values[index[b]][index[a]] = value
        rows.append([a, b, (cell or {}).get("exact"), value])
    for i in range(len(names)):
        values[i][i] = 1.0
    return Chart("pairwise", f"Pairwise bucketed agreement between reviewers, {round_name or 'no round'}",
                 "heatmap", {"rows": names, "columns": names, "values": values, "label": "bucketed agreement"},
                 ["reviewer_a", "reviewer_b", "exact", "bucketed"], rows,
                 alt=f"Symmetric heatmap of pairwise agreement between {len(names)} reviewers.")


def stability_chart(report: Mapping[str, Any], filters: Filters) -> Chart:
    """Share of bootstrap resamples in which each reviewer is in the top k, with a 95 % Wilson interval for a
    share estimated from B resamples."""
    bootstrap = (report.get("calibration") or {}).get("bootstrap") or {}
    top_k = bootstrap.get("top_k") or {}
    resamples = int(bootstrap.get("resamples") or 0)
    names = sorted({n for per in top_k.values() for n in per})
    ks = sorted(top_k, key=int)
    series = {f"top {k}": [top_k[k].get(n) for n in names] for k in ks}
    intervals = {f"top {k}": [_wilson(top_k[k].get(n), resamples) for n in names] for k in ks}
    rows = [[n, k, top_k[k].get(n), *(_wilson(top_k[k].get(n), resamples) or (None, None))]
            for k in ks for n in names]
    all_in = [int(k) for k in ks if int(k) >= len(names)]
    note = (f" With {len(names)} reviewers, every one is in any top {min(all_in)} or more: those shares say "
            "nothing (docs/metrics.md#panel-selection)." if names and all_in else "")
    return Chart("stability", f"Panel selection stability ({resamples} bootstrap resamples of "
                              f"{bootstrap.get('round') or 'the last calibration round'})", "bars",
                 {"categories": names, "series": series, "intervals": intervals, "ylabel": "share of resamples",
                  "ylim": (0, 1.05)},
                 ["reviewer", "k", "share", "ci_low", "ci_high"], rows,
                 caption="Share of resamples of the round's turns in which the reviewer ranks in the top k; "
                         "whiskers: 95 % Wilson interval of that share." + note,
                 alt=f"Grouped bars of top-k shares for {len(names)} reviewers.")


def _wilson(share: Any, n: int) -> tuple[float, float] | None:
    # scipy's binomtest gives the same interval; this is its closed form, to keep the module free of scipy.
    value = _num(share)
    if value is None or n <= 0:
        return None
    z = 1.959963984540054
    centre = (value + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(value * (1 - value) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, min(value, centre - half)), min(1.0, max(value, centre + half))


def alpha_chart(report: Mapping[str, Any], filters: Filters) -> Chart:
    calibration = report.get("calibration") or {}
    round_name = _round(report, filters)
    reviewers_alpha = (calibration.get("alpha") or {}).get(round_name) or {}
    experts_alpha = (((calibration.get("experts") or {}).get(round_name) or {}).get("alpha")) or {}
    codes = [a["code"] for a in report.get("attributes") or [] if a["code"] in reviewers_alpha or
             a["code"] in experts_alpha]
    reviewers = [(reviewers_alpha.get(c) or {}).get("alpha") for c in codes]
    experts = [(experts_alpha.get(c) or {}).get("alpha") for c in codes]
    rows = [[c, (reviewers_alpha.get(c) or {}).get("level"), r, e] for c, r, e in zip(codes, reviewers, experts,
                                                                                        strict=True)]
    series = {"reviewers": reviewers}
    if any(e is not None for e in experts):
        series["expert panel"] = experts
    return Chart("alpha", f"Krippendorff's α per attribute, {round_name or 'no round'}", "bars",
                 {"categories": codes, "series": series, "ylabel": "α", "ylim": (-0.2, 1.0)},
                 ["attribute", "level", "alpha_reviewers", "alpha_expert_panel"], rows,
                 caption="Ordinal α for 0–2 scales, nominal for 0/1; the expert panel's own α beside the reviewers'.",
                 alt=f"Bars of Krippendorff's α for {len(codes)} attributes.")


def experts_table(report: Mapping[str, Any], filters: Filters) -> Table:
    """The expert panel's own agreement: each expert's coding against the consensus (gold) of the chosen round."""
    round_name = _round(report, filters)
    experts = ((((report.get("calibration") or {}).get("experts") or {}).get(round_name) or {}).get("experts")) or {}
    keys = ("exact", "bucketed", "kappa_user", "kappa_response", "kappa_flags", "bias", "n_items")
    rows = [[name, round_name, *((experts[name] or {}).get(k) for k in keys)] for name in sorted(experts)]
    return Table("experts", f"Expert panel's agreement with its consensus, {round_name or 'no round'}",
                 ["expert", "round", *keys], rows,
                 caption="Each expert's own coding against the gold the panel agreed on; agreement between the "
                         "experts is in the panel ranking's caption and beside the reviewers' α.")


def panel_table(report: Mapping[str, Any], filters: Filters) -> Table:
    calibration = report.get("calibration") or {}
    ranking = calibration.get("panel_ranking") or {}
    pairwise = calibration.get("pairwise_mean") or {}
    experts = {r: (v or {}).get("pairwise_mean") or {} for r, v in (calibration.get("experts") or {}).items()}
    retained = (report.get("parameters") or {}).get("panel")
    rows = [[item.get("rank"), item.get("reviewer"), item.get("bucketed"),
             "yes" if (item.get("rank") or 10**9) <= (ranking.get("panel_size") or 0) else "",
             ("not yet chosen" if retained is None else "yes" if item.get("reviewer") in retained else "no")]
            for item in ranking.get("ranking") or []]
    caption = "; ".join(
        f"{r}: reviewers' pairwise mean {_fmt((pairwise.get(r) or {}).get('bucketed'))}, expert panel's "
        f"{_fmt((experts.get(r) or {}).get('bucketed'))}" for r in _in_number_order(set(pairwise) | set(experts)))
    size = ranking.get("panel_size")
    ranked = len(ranking.get("ranking") or [])
    top = f"top {min(size, ranked)} of {ranked}: k = {size} capped" if size and ranked and size > ranked else \
        f"top {size or '–'}"
    return Table("panel", f"Panel ranking on {calibration.get('last_round') or 'the last calibration round'} "
                          f"({top})",
                 ["rank", "reviewer", "bucketed", "in_top_k", "retained_on_panel"], rows,
                 caption=(caption + ". " if caption else "") + "Retained: the panel the admin kept when this run was "
                                                               "computed (main-round figures use only its codings).")


def _fmt(value: Any) -> str:
    number = _num(value)
    return "n/a" if number is None else f"{number:.2f}"


# --- user input ------------------------------------------------------------------------------------------------


def uiri_chart(report: Mapping[str, Any], filters: Filters) -> Chart:
    uiri = (report.get("indices") or {}).get("uiri") or {}
    per = dict(uiri.get("by_dataset_bands") or {})
    if uiri.get("bands"):
        per = {"all datasets": uiri["bands"], **per}
    if filters.dataset:
        per = {k: v for k, v in per.items() if k == filters.dataset}
    names = list(per)
    bands = ("low", "medium", "high")
    series = {band.capitalize(): [(per[n] or {}).get(band) for n in names] for band in bands}
    rows = [[n, band, (per[n] or {}).get(band)] for n in names for band in bands]
    thresholds = uiri.get("thresholds") or {}
    return Chart("uiri", "UIRI bands per dataset (share of main-round turns)", "bars",
                 {"categories": names, "series": series, "ylabel": "share of turns", "ylim": (0, 1)},
                 ["dataset", "band", "share"], rows,
                 caption=f"Low < {thresholds.get('medium', 0.3)}, Medium up to {thresholds.get('high', 0.6)}, "
                         f"High ≥ {thresholds.get('high', 0.6)}.",
                 alt=f"Grouped bars of UIRI band shares for {len(names)} datasets.")


def uiri_table(report: Mapping[str, Any], filters: Filters) -> Table:
    uiri = (report.get("indices") or {}).get("uiri") or {}
    rows = [["all datasets", uiri.get("mean"), uiri.get("n_turns"), uiri.get("peak_mean")]] if uiri else []
    # each dataset's row with its turns and the mean of its multi-turn conversations' peaks, as the whole's
    counts, peaks = uiri.get("by_dataset_n_turns") or {}, uiri.get("peaks") or {}
    for name, value in sorted((uiri.get("by_dataset") or {}).items()):
        if not filters.dataset or name == filters.dataset:
            defined = [p for p in ((peaks.get(name) or {}).values()) if _num(p) is not None]
            rows.append([name, value, counts.get(name), sum(defined) / len(defined) if defined else None])
    return Table("uiri-means", "Mean UIRI", ["dataset", "mean_uiri", "n_turns", "mean_multi_turn_peak"], rows)


def user_scores_chart(report: Mapping[str, Any], filters: Filters) -> Chart:
    scores = ((report.get("indices") or {}).get("uiri") or {}).get("attributes") or {}
    per = {"all datasets": scores.get("all") or {}, **(scores.get("by_dataset") or {})} if scores else {}
    codes = sorted({c for values in per.values() for c in values}, key=_attribute_order(report))
    if filters.dataset:
        per = {k: v for k, v in per.items() if k == filters.dataset}
    series = {name: [(values.get(c) or {}).get("mean") for c in codes] for name, values in per.items()}
    rows = [[name, c, (values.get(c) or {}).get("mean"), (values.get(c) or {}).get("n_turns")]
            for name, values in per.items() for c in codes]
    return Chart("user-scores", "Mean user-input score per attribute", "bars",
                 {"categories": codes, "series": series, "ylabel": "mean score"},
                 ["dataset", "attribute", "mean_score", "n_turns"], rows,
                 caption="Raw scores on each attribute's own scale; each turn counts once (its coders' mean).",
                 alt=f"Grouped bars of mean scores of {len(codes)} user attributes for {len(per)} datasets.")


# --- atrophy risk ----------------------------------------------------------------------------------------------


def _models(report: Mapping[str, Any], filters: Filters) -> list[str]:
    models = sorted(_model_tables(report, filters).get("ari") or {})
    return [m for m in models if m == filters.model] if filters.model else models


def _split(section: Mapping[str, Any], filters: Filters) -> Mapping[str, Any]:
    """The part of a report section (``indices``' model tables, ``coupling``, ``spans``) over the chosen dataset's
    conversations and/or the chosen kind's: ``by_dataset[DATASET]``, ``by_kind[KIND]`` or
    ``by_dataset[DATASET].by_kind[KIND]``; the whole section without those filters, {} when the report has no
    such part (a dataset without responses, or a run computed before the report had the split)."""
    if filters.dataset:
        section = (section.get("by_dataset") or {}).get(filters.dataset) or {}
    if filters.kind in ("single", "multi"):
        section = (section.get("by_kind") or {}).get(filters.kind) or {}
    return section


def _model_tables(report: Mapping[str, Any], filters: Filters) -> Mapping[str, Any]:
    """The per-model tables (flags, ari, attribute_risk, fingerprint, ari_ci) of the whole main round, or of the
    chosen dataset's and/or conversation kind's responses only."""
    return _split(report.get("indices") or {}, filters)


def _split_words(filters: Filters) -> str:
    """The page's dataset and conversation-kind filters in words ("" for all conversations)."""
    kind = {"single": "single-turn conversations", "multi": "multi-turn conversations"}.get(filters.kind, "")
    return ", ".join(part for part in (filters.dataset, kind) if part)


def _kind_said(filters: Filters) -> str:
    """The page's dataset and conversation-kind filters, for titles: " (HOPE, multi-turn conversations)"."""
    words = _split_words(filters)
    return f" ({words})" if words else ""


def split_missing(page: Page, report: Mapping[str, Any], filters: Filters) -> tuple[Filters, list[str]]:
    """A run computed before the report split a page's figures by dataset or conversation kind has no such part:
    the filter is set aside (the page shows all conversations) and the page says so."""
    indices = report.get("indices") or {}
    section = {"risk": indices, "coupling": indices.get("coupling") or {},
               "spans": indices.get("spans") or {}}.get(page.slug)
    if section is None:
        return filters, []
    notes = []
    if filters.dataset and "dataset" in page.filters and "by_dataset" not in section:
        notes.append(f"dataset {filters.dataset!r}: this run was computed before the {page.title} figures were "
                     "split by dataset; showing all datasets (start a new run for per-dataset figures)")
        filters = replace(filters, dataset="")
    if filters.kind and "kind" in page.filters and "by_kind" not in section:
        notes.append(f"conversations {filters.kind!r}: this run was computed before the {page.title} figures were "
                     "split by conversation kind; showing all conversations")
        filters = replace(filters, kind="")
    return filters, notes


def resamples_said(intervals: Sequence[tuple[str, Any]], resamples: Any) -> str:
    """A caption's sentence naming each interval shown that rests on fewer than the run's B resamples (``intervals``:
    (what, its count: ``n_resamples``, or a kind's equivalent) in the order shown), with its count: the resamples where
    its figure is undefined (κ 0/0, none of its items drawn) are left out of it
    (docs/metrics.md#resamples-an-interval-rests-on). "" when none is, for a run without resamples, or from a report
    stored before the counts. An interval on no resample is null, not shown (no whisker), and not named, as the
    warnings name none (``report_warnings.few_resamples``)."""
    if not isinstance(resamples, int) or resamples <= 0:
        return ""
    short = [f"{what} on {used:,}" for what, used in intervals if isinstance(used, int) and 0 < used < resamples]
    if not short:
        return ""
    return (f" Intervals on fewer than the run's {resamples:,} resamples (the figure undefined in the others, which "
            f"are left out): {'; '.join(short)}.")


def _resampled(report: Mapping[str, Any]) -> bool:
    """Whether the run drew bootstrap resamples for the main round's intervals (``indices.ci.resamples``): a run
    with the bootstrap off (B = 0) has none, and its per-model tables no interval; a report without the key is read
    as one with them, as the pages always read it."""
    ci = (report.get("indices") or {}).get("ci") or {}
    return ci.get("resamples") is None or int(ci.get("resamples") or 0) > 0


def _unit(report: Mapping[str, Any]) -> str:
    """What the main round's resamples draw: conversations, or turns when the run resamples turns."""
    return "turn" if ((report.get("indices") or {}).get("ci") or {}).get("resample") == "turn" else "conversation"


def _clusters_said(report: Mapping[str, Any], filters: Filters) -> str:
    """What the intervals of the per-model tables rest on: the clusters the study's resamples draw
    (``indices.ci.n_clusters``), or the chosen conversations' (their ``n_clusters``: each resample restricted to
    them); the count left out when the report has none (a run from before it was kept). A run without resamples
    has no interval to say anything of, whatever its clusters: the caption says there is none, and why."""
    ci = (report.get("indices") or {}).get("ci") or {}
    if not _resampled(report):
        return " No intervals: this run drew no bootstrap resamples (B = 0); start a run with resamples for them."
    unit = _unit(report)
    if not (filters.kind or filters.dataset):
        n = ci.get("n_clusters")
        return f" Intervals resample {n:,} {unit}{'' if n == 1 else 's'}." if isinstance(n, int) else ""
    n = _model_tables(report, filters).get("n_clusters")
    count = (f" ({n:,} {unit}{'' if n == 1 else 's'} of the study's {int(ci.get('n_clusters') or 0):,})"
             if isinstance(n, int) else "")
    return f" Intervals over the chosen conversations: the study's resamples, each restricted to them{count}."


def _model_clusters_said(report: Mapping[str, Any]) -> str:
    """What the table's clusters column counts, when the run has intervals."""
    if not _resampled(report):
        return ""
    return (f" Clusters: the {_unit(report)}s holding a scored response of the model, which its intervals rest on "
            f"(fewer than {MIN_BOOTSTRAP_CLUSTERS}: named in the warnings).")


def _model_clusters(report: Mapping[str, Any], filters: Filters) -> Mapping[str, Any]:
    """The clusters each model's intervals rest on (those holding a response of it), of the whole main round
    (``indices.ci.n_clusters_by_model``) or of the chosen conversations (their ``n_clusters_by_model``); {} from a
    report stored before the count."""
    if filters.kind or filters.dataset:
        return _model_tables(report, filters).get("n_clusters_by_model") or {}
    return ((report.get("indices") or {}).get("ci") or {}).get("n_clusters_by_model") or {}


def ari_table(report: Mapping[str, Any], filters: Filters) -> Table:
    tables = _model_tables(report, filters)
    ari, ci = tables.get("ari") or {}, tables.get("ari_ci") or {}
    clusters = _model_clusters(report, filters)
    rows = []
    for model in _models(report, filters):
        row: list[Any] = [model]
        for cluster in CLUSTERS:
            interval = (ci.get(model) or {}).get(cluster) or {}
            row += [(ari.get(model) or {}).get(cluster), interval.get("low"), interval.get("high")]
        rows.append([*row, (ari.get(model) or {}).get("n_responses"), clusters.get(model)])
    columns = ["model"] + [f"{c}{suffix}" for c in CLUSTERS for suffix in ("", "_ci_low", "_ci_high")]
    interval = ", 95 % bootstrap interval" if _resampled(report) else ""
    return Table("ari-table", f"Atrophy risk per model{_kind_said(filters)}: mean risk in [0, 1]{interval}",
                 [*columns, "n_responses", "n_clusters"], rows,
                 caption=f"{HIGHEST} highest and {LOWEST} lowest model in each column."
                         + _model_clusters_said(report) + _clusters_said(report, filters)
                         + _ari_resamples_said(report, filters),
                 marks=_mark_extremes(rows, [1 + 3 * i for i in range(len(CLUSTERS))]))


def ari_chart(report: Mapping[str, Any], filters: Filters) -> Chart:
    tables = _model_tables(report, filters)
    ari, ci = tables.get("ari") or {}, tables.get("ari_ci") or {}
    models = _models(report, filters)
    series = {c: [(ari.get(m) or {}).get(c) for m in models] for c in CLUSTERS}
    intervals = {c: [_pair((ci.get(m) or {}).get(c)) for m in models] for c in CLUSTERS}
    rows = [[m, c, (ari.get(m) or {}).get(c), *(_pair((ci.get(m) or {}).get(c)) or (None, None))]
            for m in models for c in CLUSTERS]
    return Chart("ari", f"Cluster risks and ARI per model{_kind_said(filters)}", "bars",
                 {"categories": models, "series": series, "intervals": intervals, "ylabel": "mean risk",
                  "ylim": (0, 1)},
                 ["model", "cluster", "value", "ci_low", "ci_high"], rows,
                 caption="D, E, R, F cluster risks and ARI = their mean; "
                         + (f"whiskers: 95 % bootstrap interval over {_unit(report)}s." if _resampled(report) else
                            "no whiskers: this run drew no bootstrap resamples (B = 0).")
                         + _ari_resamples_said(report, filters),
                 alt=f"Grouped bars of D, E, R, F and ARI for {len(models)} models.")


def _ari_resamples_said(report: Mapping[str, Any], filters: Filters) -> str:
    """The per-model intervals shown (the whole main round's, or the chosen conversations') on fewer than B
    resamples: a resample that draws none of a model's responses there leaves its figures undefined."""
    ci = _model_tables(report, filters).get("ari_ci") or {}
    return resamples_said([(f"{model} {cluster}", ((ci.get(model) or {}).get(cluster) or {}).get("n_resamples"))
                           for model in _models(report, filters) for cluster in CLUSTERS],
                          ((report.get("indices") or {}).get("ci") or {}).get("resamples"))


def _pair(interval: Any) -> tuple[float, float] | None:
    if not interval:
        return None
    low, high = _num(interval.get("low")), _num(interval.get("high"))
    return (low, high) if low is not None and high is not None else None


def fingerprint_heatmap(report: Mapping[str, Any], filters: Filters) -> Chart:
    fingerprint = _model_tables(report, filters).get("fingerprint") or {}
    models = _models(report, filters)
    codes = sorted({c for per in fingerprint.values() for c in per}, key=_attribute_order(report))
    values = [[(fingerprint.get(m) or {}).get(c) for c in codes] for m in models]
    rows = [[m, c, values[i][j]] for i, m in enumerate(models) for j, c in enumerate(codes)]
    return Chart("fingerprint", f"Risk fingerprint{_kind_said(filters)}: z-score of each model's mean risk across "
                                "models", "heatmap",
                 {"rows": models, "columns": codes, "values": values, "vmin": -2.5, "vmax": 2.5, "label": "z"},
                 ["model", "attribute", "z"], rows,
                 caption="Positive z: riskier than the other models on that attribute.",
                 alt=f"Heatmap of z-scores for {len(models)} models × {len(codes)} attributes.")


def _attribute_order(report: Mapping[str, Any]) -> Callable[[str], int]:
    order = {a["code"]: i for i, a in enumerate(report.get("attributes") or [])}
    return lambda code: order.get(code, len(order))


def flags_chart(report: Mapping[str, Any], filters: Filters) -> Chart:
    flags = _model_tables(report, filters).get("flags") or {}
    models = _models(report, filters)
    codes = sorted({c for per in flags.values() for c in per}, key=_attribute_order(report))
    series = {m: [(flags.get(m) or {}).get(c) for c in codes] for m in models}
    rows = [[m, c, (flags.get(m) or {}).get(c)] for m in models for c in codes]
    return Chart("flags", f"Flag burden{_kind_said(filters)}: share of each model's responses flagged", "bars",
                 {"categories": codes, "series": series, "ylabel": "share flagged", "ylim": (0, 1)},
                 ["model", "flag", "share"], rows, alt=f"Grouped bars of flag shares for {len(models)} models.")


# --- coupling --------------------------------------------------------------------------------------------------


def coupling_heatmap(report: Mapping[str, Any], filters: Filters) -> Chart:
    coupling = (report.get("indices") or {}).get("coupling") or {}
    scale = filters.scale if filters.scale in ("raw", "risk") else "risk"
    per_model = _split(coupling, filters).get(scale) or {}
    models = sorted(per_model)
    model = filters.model if filters.model in per_model else (models[0] if models else "")
    matrix = per_model.get(model) or {}
    inputs = sorted(matrix, key=_attribute_order(report))
    outputs = sorted({o for per in matrix.values() for o in per}, key=_attribute_order(report))
    values, outlined, rows = [], [], []
    for i, u in enumerate(inputs):
        line = []
        for j, o in enumerate(outputs):
            cell = (matrix.get(u) or {}).get(o) or {}
            line.append(cell.get("rho"))
            if cell.get("significant"):
                outlined.append((i, j))
            rows.append([model, scale, u, o, cell.get("rho"), cell.get("p"), cell.get("q"), cell.get("n"),
                         bool(cell.get("significant"))])
        values.append(line)
    words = _split_words(filters)
    return Chart("coupling", f"Input → response coupling, {model or 'no model'} ({scale} scale"
                             f"{'; ' + words if words else ''}): Spearman ρ",
                 "heatmap", {"rows": inputs, "columns": outputs, "values": values, "outlined": outlined,
                             "vmin": -1.0, "vmax": 1.0, "label": "ρ"},
                 ["model", "scale", "user_attribute", "response_attribute", "rho", "p", "q", "n", "significant"],
                 rows, caption=f"Outlined with *: |ρ| ≥ {coupling.get('min_abs_rho', 0.2)} and Benjamini–Hochberg "
                               f"q < {coupling.get('max_q', 0.05)}; n/a: zero variance (undefined).",
                 alt=f"Heatmap of Spearman correlations for {model}, {len(outlined)} significant cells.")


# --- trajectories ----------------------------------------------------------------------------------------------


def _signal(report: Mapping[str, Any], filters: Filters) -> str:
    signals = choices(report).signals
    if filters.signal in signals:
        return filters.signal
    return "ARI" if "ARI" in signals else (signals[0] if signals else "")


def _signal_series(report: Mapping[str, Any], signal: str, filters: Filters) -> dict[str, Mapping[str, Any]]:
    """The trajectory summary of the signal per model, or (user-level signals) once for all models; over the
    chosen dataset's multi-turn conversations only when the page is filtered by dataset."""
    trajectories = (report.get("indices") or {}).get("trajectories") or {}
    if filters.dataset:
        trajectories = (trajectories.get("by_dataset") or {}).get(filters.dataset) or {}
    if signal in (trajectories.get("user") or {}):
        return {"all models (user-level)": trajectories["user"][signal]}
    return {m: per[signal] for m, per in sorted((trajectories.get("models") or {}).items()) if signal in per}


def trajectory_chart(report: Mapping[str, Any], filters: Filters) -> Chart:
    signal = _signal(report, filters)
    per = _signal_series(report, signal, filters)
    if filters.model:
        per = {m: v for m, v in per.items() if m == filters.model or m.startswith("all models")}
    series = {m: sorted(((int(t), _num(v)) for t, v in (s.get("change_from_turn1") or {}).items()))
              for m, s in per.items()}
    rows = [[m, signal, t, v] for m, points in series.items() for t, v in points]
    return Chart("trajectory", f"Mean change of {signal or 'the signal'} from turn 1, multi-turn conversations"
                               f"{_dataset_said(filters)}",
                 "lines", {"series": series, "xlabel": "turn", "ylabel": f"Δ {signal} from turn 1", "hline": 0.0},
                 ["model", "signal", "turn", "mean_change_from_turn1"], rows,
                 caption="Later turns are reached by fewer conversations; the table below gives each model's n.",
                 alt=f"Line chart of mean change from turn 1 for {len(series)} series.")


MAX_LINES = 300


def uiri_lines_chart(report: Mapping[str, Any], filters: Filters) -> Chart:
    """One UIRI line per multi-turn conversation, styled by its trend class."""
    lines = ((report.get("indices") or {}).get("trajectories") or {}).get("uiri_conversations") or {}
    drawn, rows = [], []
    for dataset, conversations in sorted(lines.items()):
        if filters.dataset and dataset != filters.dataset:
            continue
        for name, line in sorted(conversations.items()):
            points = sorted((int(t), _num(v)) for t, v in (line.get("uiri") or {}).items())
            drawn.append({"name": f"{dataset} / {name}", "class": line.get("class") or "undefined",
                          "points": points})
            rows += [[dataset, name, t, v, line.get("slope"), line.get("class")] for t, v in points]
    shown = drawn[:MAX_LINES]
    counts = {c: sum(1 for d in drawn if d["class"] == c) for c in ("escalating", "flat", "de-escalating")}
    # a conversation with one coded turn has no slope, hence no class: counted, so that the classes add up
    unclassified = len(drawn) - sum(counts.values())
    caption = (f"{len(drawn)} conversations: " + ", ".join(f"{n} {c}" for c, n in counts.items())
               + (f", {unclassified} unclassified (one coded turn: no slope)" if unclassified else "") + ". "
               + (f"The first {MAX_LINES} are drawn; the CSV has all. " if len(drawn) > MAX_LINES else ""))
    return Chart("uiri-lines", "UIRI per turn of each multi-turn conversation, by trend class", "class_lines",
                 {"lines": shown, "xlabel": "turn", "ylabel": "UIRI", "ylim": (0, 1)},
                 ["dataset", "conversation", "turn", "uiri", "slope", "class"], rows,
                 caption=caption + "Line style names the class: solid escalating, dotted flat, dashed de-escalating.",
                 alt=f"Line chart of UIRI over turns for {len(shown)} conversations.")


def trajectory_classes_chart(report: Mapping[str, Any], filters: Filters) -> Chart:
    signal = _signal(report, filters)
    per = _signal_series(report, signal, filters)
    if filters.model:
        per = {m: v for m, v in per.items() if m == filters.model or m.startswith("all models")}
    names = list(per)
    classes = ("escalating", "flat", "de-escalating")
    series = {c: [(per[n].get("classes") or {}).get(c) for n in names] for c in classes}
    rows = [[n, signal, c, (per[n].get("classes") or {}).get(c)] for n in names for c in classes]
    threshold = ((report.get("indices") or {}).get("trajectories") or {}).get("threshold")
    return Chart("trajectory-classes", f"Trend classes of {signal or 'the signal'} per conversation"
                                       f"{_dataset_said(filters)}", "bars",
                 {"categories": names, "series": series, "ylabel": "share of conversations", "ylim": (0, 1)},
                 ["model", "signal", "class", "share"], rows,
                 caption=f"OLS slope per conversation; |slope| ≤ {threshold} per turn is flat.",
                 alt=f"Grouped bars of trend class shares for {len(names)} series.")


def trajectory_table(report: Mapping[str, Any], filters: Filters) -> Table:
    signal = _signal(report, filters)
    keys = ("open", "peak", "mean", "delta", "sd", "slope", "n_conversations", "n_classified")
    per = _signal_series(report, signal, filters)
    if filters.model:
        per = {m: v for m, v in per.items() if m == filters.model or m.startswith("all models")}
    rows = [[m, signal, *(s.get(k) for k in keys)] for m, s in per.items()]
    return Table("trajectory-summary", f"Trajectory summary of {signal or 'the signal'}{_dataset_said(filters)}",
                 ["model", "signal", *keys], rows, marks=_mark_extremes(rows, [2, 3, 4, 5]),
                 caption="Means over conversations of each one's open (first turn), peak, mean, Δ (last − first), "
                         "σ and OLS slope per turn.")


def _dataset_said(filters: Filters) -> str:
    return f" ({filters.dataset})" if filters.dataset else ""


# --- span evidence ---------------------------------------------------------------------------------------------


def spans_chart(report: Mapping[str, Any], filters: Filters) -> Chart:
    spans = (report.get("indices") or {}).get("spans") or {}
    evidence = _split(spans, filters).get("evidence") or {}
    models = [m for m in sorted(evidence) if not filters.model or m == filters.model]
    subcategories = list(spans.get("subcategories") or sorted({s for per in evidence.values() for s in per}))
    series = {m: [((evidence.get(m) or {}).get(s) or {}).get("spans_per_response") for s in subcategories]
              for m in models}
    rows = [[m, s, ((evidence.get(m) or {}).get(s) or {}).get("spans_per_response"),
             ((evidence.get(m) or {}).get(s) or {}).get("tokens_per_response")] for m in models for s in subcategories]
    return Chart("spans", f"Span evidence{_kind_said(filters)}: highlighted spans per response, by subcategory",
                 "bars",
                 {"categories": subcategories, "series": series, "ylabel": "spans per response"},
                 ["model", "subcategory", "spans_per_response", "tokens_per_response"], rows,
                 alt=f"Grouped bars of spans per response for {len(models)} models and {len(subcategories)} "
                     "subcategories.")


def span_ratio_table(report: Mapping[str, Any], filters: Filters) -> Table:
    ratios = _split((report.get("indices") or {}).get("spans") or {}, filters).get("ratios") or {}
    models = [m for m in sorted(ratios) if not filters.model or m == filters.model]
    names = sorted({r for per in ratios.values() for r in per})
    rows = [[m, n, ((ratios.get(m) or {}).get(n) or {}).get("spans"), ((ratios.get(m) or {}).get(n) or {}).get(
        "tokens")] for m in models for n in names]
    return Table("span-ratios", f"Span ratios (e.g. directive : tentative) per model{_kind_said(filters)}",
                 ["model", "ratio", "spans", "tokens"], rows,
                 caption="Ratio of mean spans (and highlighted tokens) per response of the first subcategory to the "
                         "second.")


def span_example_links(report: Mapping[str, Any], filters: Filters) -> list[tuple[str, list[str]]]:
    """(model, subcategories with at least one highlight) for the drill-down links of the span-evidence page."""
    evidence = _split((report.get("indices") or {}).get("spans") or {}, filters).get("evidence") or {}
    return [(m, [s for s, v in sorted(per.items()) if (v or {}).get("spans_per_response")])
            for m, per in sorted(evidence.items()) if not filters.model or m == filters.model]


# --- pages -----------------------------------------------------------------------------------------------------

Builder = Callable[[Mapping[str, Any], Filters], Block]


@dataclass(frozen=True)
class Page:
    """A dashboard page: its blocks, the filters it offers, the report section whose warnings it shows (``main``
    or a kind's section), its template and what its template reads beyond the blocks (a kind's own page)."""

    slug: str
    title: str
    filters: tuple[str, ...]
    blocks: tuple[Builder, ...]
    section: str = "main"
    template: str = "reports/page.html"
    context: Callable[[Mapping[str, Any] | None], dict[str, Any]] | None = None


PAGES: dict[str, Page] = {page.slug: page for page in (
    Page("reliability", "Reliability", ("round",),
         (reviewer_table, agreement_chart, kappa_heatmap, pairwise_heatmap, stability_chart, alpha_chart,
          experts_table, panel_table)),
    Page("user-input", "User input", ("dataset",), (uiri_chart, uiri_table, user_scores_chart)),
    Page("risk", "Atrophy risk", ("model", "dataset", "kind"),
         (ari_table, ari_chart, fingerprint_heatmap, flags_chart)),
    Page("coupling", "Coupling", ("model", "scale", "dataset", "kind"), (coupling_heatmap,)),
    Page("trajectories", "Trajectories", ("model", "signal", "dataset"),
         (uiri_lines_chart, trajectory_chart, trajectory_classes_chart, trajectory_table)),
    Page("spans", "Span evidence", ("model", "dataset", "kind"), (spans_chart, span_ratio_table)),
)}


def page_blocks(page: Page, report: Mapping[str, Any], filters: Filters) -> list[Block]:
    return [build(report, filters) for build in page.blocks]


def block_get(page: Page, name: str, report: Mapping[str, Any], filters: Filters) -> Block | None:
    for block in page_blocks(page, report, filters):
        if block.name == name:
            return block
    return None
