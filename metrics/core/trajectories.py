"""Multi-turn trajectories (docs/metrics.md#multi-turn-trajectories): per-conversation open/peak/mean/Δ/σ/OLS slope of a
signal M(t).

All series of all signals are processed together with grouped reductions (sort once, reduceat/bincount), so
the cost does not grow with a Python loop over conversations x signals.
A series is the observed turns of one conversation for one signal; "open" is its first observed turn (turn 1
whenever turn 1 was coded) and Δ/change are measured from it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .common import safe_divide

ESCALATING, FLAT, DE_ESCALATING = "escalating", "flat", "de-escalating"


@dataclass(frozen=True)
class SeriesStats:
    """Per-series statistics (arrays indexed by series id); NaN where a statistic is undefined."""

    n_points: np.ndarray
    open: np.ndarray
    peak: np.ndarray
    mean: np.ndarray
    delta: np.ndarray  # last - open, needs >= 2 points
    sd: np.ndarray  # T - 1 denominator, needs >= 2 points
    slope: np.ndarray  # OLS slope per turn, needs >= 2 distinct turns
    change_from_open: np.ndarray  # per point (aligned with the input order): value - open of its series


def series_statistics(series: np.ndarray, turn: np.ndarray, value: np.ndarray, n_series: int) -> SeriesStats:
    series = np.asarray(series, dtype=np.int64)
    turn = np.asarray(turn, dtype=float)
    value = np.asarray(value, dtype=float)
    n_points = np.bincount(series, minlength=n_series)
    nan = np.full(n_series, np.nan)
    if len(series) == 0:
        return SeriesStats(n_points, nan, nan.copy(), nan.copy(), nan.copy(), nan.copy(), nan.copy(), value.copy())
    order = np.lexsort((turn, series))
    s_series, s_turn, s_value = series[order], turn[order], value[order]
    present = n_points > 0
    starts = np.concatenate(([0], np.cumsum(n_points)[:-1]))
    first = np.where(present, starts, 0)
    last = np.where(present, starts + n_points - 1, 0)
    open_ = np.where(present, s_value[first], np.nan)
    close = np.where(present, s_value[last], np.nan)
    peak = nan.copy()
    nonempty_starts = starts[present]
    peak[present] = np.maximum.reduceat(s_value, nonempty_starts)
    mean = safe_divide(np.bincount(s_series, weights=s_value, minlength=n_series), n_points)
    several = n_points >= 2
    squares = np.bincount(s_series, weights=(s_value - mean[s_series]) ** 2, minlength=n_series)
    sd = np.where(several, np.sqrt(safe_divide(squares, n_points - 1)), np.nan)
    delta = np.where(several, close - open_, np.nan)
    turn_mean = safe_divide(np.bincount(s_series, weights=s_turn, minlength=n_series), n_points)
    dx = s_turn - turn_mean[s_series]
    dy = s_value - mean[s_series]
    sxx = np.bincount(s_series, weights=dx * dx, minlength=n_series)
    sxy = np.bincount(s_series, weights=dx * dy, minlength=n_series)
    slope = np.where(sxx > 0, safe_divide(sxy, sxx), np.nan)
    return SeriesStats(n_points, open_, peak, mean, delta, sd, slope, value - open_[series])


def slope_class(slope: np.ndarray, threshold: float) -> np.ndarray:
    """Class label per slope ("" where undefined); |slope| <= threshold is flat.

    Slopes are rounded to 12 decimals first so that a slope of exactly the threshold in exact arithmetic is
    not pushed over it by float noise.
    """
    slope = np.round(np.asarray(slope, dtype=float), 12)
    labels = np.full(slope.shape, "", dtype=object)
    defined = np.isfinite(slope)
    labels[defined & (slope > threshold)] = ESCALATING
    labels[defined & (slope < -threshold)] = DE_ESCALATING
    labels[defined & (np.abs(slope) <= threshold)] = FLAT
    return labels


def summarise(
    stats: SeriesStats,
    series_signal: np.ndarray,
    n_signals: int,
    point_series: np.ndarray,
    point_turn: np.ndarray,
    threshold: float,
) -> list[dict[str, object]]:
    """Per signal: means over its series of each statistic, slope-class shares, mean change per turn index."""
    series_signal = np.asarray(series_signal, dtype=np.int64)
    has_points = stats.n_points > 0

    def mean_over_series(values: np.ndarray) -> np.ndarray:
        ok = np.isfinite(values) & has_points
        return safe_divide(
            np.bincount(series_signal[ok], weights=values[ok], minlength=n_signals),
            np.bincount(series_signal[ok], minlength=n_signals),
        )

    means = {name: mean_over_series(getattr(stats, name)) for name in ("open", "peak", "mean", "delta", "sd", "slope")}
    labels = slope_class(stats.slope, threshold)
    classified = labels != ""
    n_classified = np.bincount(series_signal[classified], minlength=n_signals)
    shares = {
        label: safe_divide(np.bincount(series_signal[labels == label], minlength=n_signals), n_classified)
        for label in (ESCALATING, FLAT, DE_ESCALATING)
    }
    n_series = np.bincount(series_signal[has_points], minlength=n_signals)

    point_signal = series_signal[np.asarray(point_series, dtype=np.int64)]
    point_turn = np.asarray(point_turn, dtype=np.int64)
    changes: list[dict[str, float]] = [{} for _ in range(n_signals)]
    if len(point_signal):
        key = point_signal * (int(point_turn.max()) + 1) + point_turn
        keys, inverse = np.unique(key, return_inverse=True)
        change = safe_divide(
            np.bincount(inverse, weights=stats.change_from_open, minlength=len(keys)),
            np.bincount(inverse, minlength=len(keys)),
        )
        width = int(point_turn.max()) + 1
        for k, c in zip(keys.tolist(), change.tolist(), strict=True):
            changes[k // width][str(k % width)] = c

    out = []
    for s in range(n_signals):
        out.append(
            {
                "n_conversations": int(n_series[s]),
                **{name: values[s] for name, values in means.items()},
                "classes": {label: share[s] for label, share in shares.items()},
                "n_classified": int(n_classified[s]),
                "change_from_turn1": dict(sorted(changes[s].items(), key=lambda kv: int(kv[0]))),
            }
        )
    return out


def summarise_by_group(
    stats: SeriesStats,
    series_signal: np.ndarray,
    n_signals: int,
    series_group: np.ndarray,
    n_groups: int,
    point_series: np.ndarray,
    point_turn: np.ndarray,
    threshold: float,
) -> list[list[dict[str, object]]]:
    """``summarise`` over the series of each group apart (e.g. each conversation's dataset): [group][signal].

    One pass: each (signal, group) pair is a signal of its own, so the statistics of every series are shared.
    """
    combined = np.asarray(series_signal, dtype=np.int64) * n_groups + np.asarray(series_group, dtype=np.int64)
    out = summarise(stats, combined, n_signals * n_groups, point_series, point_turn, threshold)
    return [[out[s * n_groups + g] for s in range(n_signals)] for g in range(n_groups)]
