"""A slow, independent LongCounsel-8 implementation for the tests: plain Python loops over trajectories and
sessions, its own Pearson, Spearman and percentile, and nothing shared with `lc8` but the input dataclasses.

`naive_points(study)` gives the point estimates of `lc8_report` (everything but the intervals), the ranking
included;
`naive_intervals(study, picks)` replays a bootstrap from a given draw matrix (`lc8.trajectory_draws`), one draw
at a time. Only for small studies.
"""

from __future__ import annotations

import math

import numpy as np

from .tracking import Lc8Rules, Lc8Study

NAIVE_TYPES = ("improving", "worsening", "fluctuating", "stable")


def _missing(value: float) -> bool:
    return math.isnan(value)


def naive_type(series: list[float], large: float) -> str | None:
    for value in series:
        if _missing(value):
            return None
    net = series[-1] - series[0]
    if net <= -large:
        return "improving"
    if net >= large:
        return "worsening"
    if max(series) - min(series) >= large:
        return "fluctuating"
    return "stable"


def _sign(x: float) -> int:
    if x > 0:
        return 1
    if x < 0:
        return -1
    return 0


def _rows(array: np.ndarray) -> list[list[float]]:
    return [[float(v) for v in row] for row in array]


def _trajectory_counts(pred: list[float], ref: list[float], large: float) -> dict[str, float]:
    """The sums and counts one trajectory adds to each ratio."""
    out = {"cur": 0.0, "cur_n": 0.0, "chg": 0.0, "chg_n": 0.0, "ok": 0.0, "big_n": 0.0}
    for t in range(len(ref)):
        if not _missing(pred[t]) and not _missing(ref[t]):
            out["cur"] += abs(pred[t] - ref[t])
            out["cur_n"] += 1
    for t in range(1, len(ref)):
        values = (pred[t], pred[t - 1], ref[t], ref[t - 1])
        if any(_missing(v) for v in values):
            continue
        d_pred = pred[t] - pred[t - 1]
        d_ref = ref[t] - ref[t - 1]
        out["chg"] += abs(d_pred - d_ref)
        out["chg_n"] += 1
        if abs(d_ref) >= large:
            out["big_n"] += 1
            if d_pred != 0 and _sign(d_pred) == _sign(d_ref):
                out["ok"] += 1
    return out


def _divide(num: float, den: float) -> float | None:
    if den == 0:
        return None
    return num / den


def _mean(values: list[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    if not kept:
        return None
    return sum(kept) / len(kept)


def _seed_points(pred: list[list[float]], ref: list[list[float]], large: float) -> dict:
    totals = {"cur": 0.0, "cur_n": 0.0, "chg": 0.0, "chg_n": 0.0, "ok": 0.0, "big_n": 0.0}
    by_type = {name: [0.0, 0.0] for name in NAIVE_TYPES}
    agree = 0
    both_typed = 0
    for i in range(len(ref)):
        counts = _trajectory_counts(pred[i], ref[i], large)
        for key in totals:
            totals[key] += counts[key]
        ref_type = naive_type(ref[i], large)
        pred_type = naive_type(pred[i], large)
        if ref_type is not None:
            by_type[ref_type][0] += counts["cur"]
            by_type[ref_type][1] += counts["cur_n"]
        if ref_type is not None and pred_type is not None:
            both_typed += 1
            if ref_type == pred_type:
                agree += 1
    return {
        "current_mae": _divide(totals["cur"], totals["cur_n"]),
        "change_mae": _divide(totals["chg"], totals["chg_n"]),
        "direction_accuracy": _divide(totals["ok"], totals["big_n"]),
        "trend_agreement": _divide(agree, both_typed),
        "mae_by_type": {name: _divide(s, c) for name, (s, c) in by_type.items()},
    }


def _pearson(x: list[float], y: list[float]) -> float | None:
    n = len(x)
    if n < 2:
        return None
    mx = sum(x) / n
    my = sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    if sxx == 0 or syy == 0 or len(set(x)) == 1 or len(set(y)) == 1:
        return None
    return sxy / math.sqrt(sxx * syy)


def _ranks(x: list[float]) -> list[float]:
    """Average ranks (ties share the mean of their positions), 1-based."""
    order = sorted(range(len(x)), key=lambda i: x[i])
    ranks = [0.0] * len(x)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and x[order[j + 1]] == x[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def _seed_fidelity(
    pred: list[list[float]],
    ref: list[list[float]],
    pred_items: list | None,
    ref_items: list | None,
    rules: Lc8Rules,
    seen: dict[str, set[tuple[int, int]]],
) -> dict:
    """One seed's figures; adds the (trajectory, session) pairs each kind of figure used to `seen`."""
    xs: list[float] = []
    ys: list[float] = []
    for i in range(len(ref)):
        for t in range(len(ref[i])):
            if not _missing(pred[i][t]) and not _missing(ref[i][t]):
                xs.append(pred[i][t])
                ys.append(ref[i][t])
                seen["n_sessions"].add((i, t))
                if ref[i][t] > rules.severe_above:
                    seen["n_severe_sessions"].add((i, t))
    out: dict[str, float | None] = {"item_exact": None, "item_mae": None}
    if pred_items is not None and ref_items is not None:
        same = 0
        err = 0.0
        count = 0
        for i in range(len(ref_items)):
            for t in range(len(ref_items[i])):
                for k in range(len(ref_items[i][t])):
                    a = float(pred_items[i][t][k])
                    b = float(ref_items[i][t][k])
                    if _missing(a) or _missing(b):
                        continue
                    seen["n_item_sessions"].add((i, t))
                    count += 1
                    err += abs(a - b)
                    if a == b:
                        same += 1
        out["item_exact"] = _divide(same, count)
        out["item_mae"] = _divide(err, count)
    n = len(xs)
    out["total_bias"] = _divide(sum(a - b for a, b in zip(xs, ys, strict=True)), n)
    out["pearson"] = _pearson(xs, ys)
    out["spearman"] = _pearson(_ranks(xs), _ranks(ys)) if len(set(xs)) > 1 and len(set(ys)) > 1 else None
    cutoff = rules.screening_cutoff
    out["screening_agreement"] = _divide(sum((a >= cutoff) == (b >= cutoff) for a, b in zip(xs, ys, strict=True)), n)
    tail = [abs(a - b) for a, b in zip(xs, ys, strict=True) if b > rules.severe_above]
    out["severe_tail_mae"] = _divide(sum(tail), len(tail))
    return out


def _seed_name(seed: int | None) -> str:
    return "none" if seed is None else str(seed)


def _seeds(study: Lc8Study, coder: str) -> list[int | None]:
    seeds = list(study.coders[coder].totals)
    unseeded = [s for s in seeds if s is None]
    return unseeded + sorted(s for s in seeds if s is not None)


def _better(a: str, b: str, values: dict[str, float], lower: bool) -> bool:
    """Whether a comes before b: the better value, else the smaller name."""
    if values[a] != values[b]:
        return values[a] < values[b] if lower else values[a] > values[b]
    return a < b


def _ordered(values: dict[str, float], lower: bool) -> list[str]:
    """The names by their value: each one's place is how many others come before it."""
    names = list(values)
    places = {a: sum(1 for b in names if b != a and _better(b, a, values, lower)) for a in names}
    return sorted(names, key=lambda a: places[a])


def naive_ranking(coders: dict[str, dict], methods: list[str]) -> dict:
    """The ranking of the methods: by current MAE, by change MAE, by direction accuracy, and every pair ordered
    one way by change MAE and the other way by direction accuracy (strictly on both)."""
    figures = {}
    for metric in ("current_mae", "change_mae", "direction_accuracy"):
        figures[metric] = {m: coders[m][metric] for m in methods if coders[m][metric] is not None}
    change, direction = figures["change_mae"], figures["direction_accuracy"]
    by_change = _ordered(change, True)
    pairs = []
    for a in change:
        for b in change:
            if a in direction and b in direction and change[a] < change[b] and direction[a] < direction[b]:
                pairs.append((by_change.index(a), by_change.index(b), [a, b]))
    return {
        "by_current_mae": _ordered(figures["current_mae"], True),
        "by_change_mae": by_change,
        "by_direction_accuracy": _ordered(direction, False),
        "reversals": [pair for _, _, pair in sorted(pairs)],
    }


def naive_points(study: Lc8Study) -> dict:
    """`lc8_report` without `ci`, `resamples` and `seed`."""
    rules = study.rules
    large = rules.large_change
    ref = _rows(study.reference)
    ref_items = None if study.reference_items is None else study.reference_items.tolist()
    coders: dict[str, dict] = {}
    fidelity: dict[str, dict] = {}
    for name, labels in study.coders.items():
        per_seed: dict[str, dict] = {}
        fid: list[dict] = []
        seen: dict[str, set[tuple[int, int]]] = {"n_sessions": set(), "n_item_sessions": set(),
                                                 "n_severe_sessions": set()}
        rows_scored: set[int] = set()
        changes_scored: set[int] = set()  # trajectories with a scored change (change MAE's terms)
        large_scored: set[tuple[int, int]] = set()
        for seed in _seeds(study, name):
            pred = _rows(labels.totals[seed])
            per_seed[_seed_name(seed)] = _seed_points(pred, ref, large)
            for i in range(len(ref)):
                for t in range(len(ref[i])):
                    if not _missing(pred[i][t]) and not _missing(ref[i][t]):
                        rows_scored.add(i)
                    if t == 0:
                        continue
                    if any(_missing(v) for v in (pred[i][t], pred[i][t - 1], ref[i][t], ref[i][t - 1])):
                        continue
                    changes_scored.add(i)
                    if abs(ref[i][t] - ref[i][t - 1]) >= large:
                        large_scored.add((i, t))
            items = None
            if labels.items is not None and seed in labels.items:
                items = labels.items[seed].tolist()
            fid.append(_seed_fidelity(pred, ref, items, ref_items, rules, seen))
        metrics = ("current_mae", "change_mae", "direction_accuracy", "trend_agreement")
        entry: dict = {m: _mean([s[m] for s in per_seed.values()]) for m in metrics}
        entry["n_trajectories"] = len(rows_scored)
        entry["n_large_changes"] = len(large_scored)
        entry["ci_trajectories"] = {"current_mae": len(rows_scored), "change_mae": len(changes_scored),
                                    "direction_accuracy": len({i for i, _ in large_scored})}
        entry["mae_by_type"] = {t: _mean([s["mae_by_type"][t] for s in per_seed.values()]) for t in NAIVE_TYPES}
        entry["n_seeds"] = len(per_seed)
        entry["per_seed"] = {k: {m: s[m] for m in metrics} for k, s in per_seed.items()}
        coders[name] = entry
        fidelity[name] = {k: _mean([f[k] for f in fid]) for k in fid[0]}
        fidelity[name].update({k: len(v) for k, v in seen.items()})
    reference_types = dict.fromkeys(NAIVE_TYPES, 0)
    for series in ref:
        kind = naive_type(series, large)
        if kind is not None:
            reference_types[kind] += 1
    methods = list(study.coders) if study.methods is None else list(study.methods)
    return {"coders": coders, "reference_types": reference_types, "fidelity": fidelity,
            "ranking": naive_ranking(coders, methods)}


def _percentile(values: list[float], q: float) -> float:
    """Linear interpolation between the closest ranks (numpy's default method)."""
    ordered = sorted(values)
    position = q / 100 * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def naive_intervals(study: Lc8Study, picks: np.ndarray,
                    level: float = 0.95) -> dict[str, dict[str, list[float | None]]]:
    """coder -> {current_mae, change_mae, direction_accuracy} -> [lo, hi] from the draws in `picks` (B x n), the
    percentile interval at `level`."""
    tail = 100 * (1 - level) / 2
    return {name: {metric: [_percentile(v, tail), _percentile(v, 100 - tail)] if v else [None, None]
                   for metric, v in samples.items()} for name, samples in _naive_samples(study, picks).items()}


def naive_interval_resamples(study: Lc8Study, picks: np.ndarray) -> dict[str, dict[str, int]]:
    """coder -> {current_mae, change_mae, direction_accuracy} -> the draws of `picks` where the figure is defined:
    those its interval rests on (the report's ``ci_resamples``)."""
    return {name: {metric: len(v) for metric, v in samples.items()}
            for name, samples in _naive_samples(study, picks).items()}


def _naive_samples(study: Lc8Study, picks: np.ndarray) -> dict[str, dict[str, list[float]]]:
    """coder -> figure -> its value in each draw of `picks` where it is defined, in draw order."""
    large = study.rules.large_change
    ref = _rows(study.reference)
    keys = (("current_mae", "cur", "cur_n"), ("change_mae", "chg", "chg_n"), ("direction_accuracy", "ok", "big_n"))
    out: dict[str, dict[str, list[float]]] = {}
    for name, labels in study.coders.items():
        per_seed_counts = []
        for seed in _seeds(study, name):
            pred = _rows(labels.totals[seed])
            per_seed_counts.append([_trajectory_counts(pred[i], ref[i], large) for i in range(len(ref))])
        samples: dict[str, list[float]] = {metric: [] for metric, _, _ in keys}
        for draw in picks:
            for metric, num_key, den_key in keys:
                values = []
                for counts in per_seed_counts:
                    num = sum(counts[int(i)][num_key] for i in draw)
                    den = sum(counts[int(i)][den_key] for i in draw)
                    values.append(_divide(num, den))
                value = _mean(values)
                if value is not None:
                    samples[metric].append(value)
        out[name] = samples
    return out
