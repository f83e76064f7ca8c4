"""Trajectory statistics per series, worked by hand and checked against numpy's OLS."""

from __future__ import annotations

import numpy as np
import pytest

from metrics.core.trajectories import series_statistics, slope_class, summarise, summarise_by_group


def test_series_statistics_by_hand() -> None:
    # series 0: turns 1,2,3 values 0, 0.25, 1 (given out of order); series 1: one point; series 2: empty
    series = np.array([0, 1, 0, 0])
    turn = np.array([3, 1, 1, 2])
    value = np.array([1.0, 0.4, 0.0, 0.25])
    stats = series_statistics(series, turn, value, 3)
    assert stats.n_points.tolist() == [3, 1, 0]
    assert stats.open[0] == 0.0 and stats.peak[0] == 1.0 and stats.delta[0] == 1.0
    assert stats.mean[0] == pytest.approx(1.25 / 3)
    m = 1.25 / 3
    assert stats.sd[0] == pytest.approx(np.sqrt(((0 - m) ** 2 + (0.25 - m) ** 2 + (1 - m) ** 2) / 2))
    # x̄ = 2: Sxy = (-1)(0 - m) + (1)(1 - m) = 1, Sxx = 2
    assert stats.slope[0] == pytest.approx(0.5)
    assert stats.open[1] == 0.4 and stats.peak[1] == 0.4
    assert np.isnan(stats.delta[1]) and np.isnan(stats.sd[1]) and np.isnan(stats.slope[1])
    assert np.isnan(stats.open[2])
    assert stats.change_from_open.tolist() == pytest.approx([1.0, 0.0, 0.0, 0.25])


def test_slope_matches_numpy_polyfit() -> None:
    rng = np.random.default_rng(0)
    series = np.repeat(np.arange(20), 12)
    turn = np.tile(np.arange(1, 13), 20)
    value = rng.random(len(series))
    stats = series_statistics(series, turn, value, 20)
    for s in range(20):
        expected = np.polyfit(turn[series == s], value[series == s], 1)[0]
        assert stats.slope[s] == pytest.approx(expected, abs=1e-12)
        assert stats.sd[s] == pytest.approx(np.std(value[series == s], ddof=1), abs=1e-12)


def test_slope_classes_with_an_inclusive_flat_band() -> None:
    labels = slope_class(np.array([0.005, -0.005, 0.0051, -0.0051, 0.1 + 0.2 - 0.3, np.nan]), 0.005)
    assert labels.tolist() == ["flat", "flat", "escalating", "de-escalating", "flat", ""]


def test_summary_means_over_conversations_and_change_from_turn1() -> None:
    # signal 0 has two conversations: (0, .5, 1) rising and (1, 1) flat
    series = np.array([0, 0, 0, 1, 1])
    turn = np.array([1, 2, 3, 1, 2])
    value = np.array([0.0, 0.5, 1.0, 1.0, 1.0])
    stats = series_statistics(series, turn, value, 2)
    (summary,) = summarise(stats, np.array([0, 0]), 1, series, turn, 0.005)
    assert summary["n_conversations"] == 2
    assert summary["open"] == pytest.approx(0.5)
    assert summary["peak"] == pytest.approx(1.0)
    assert summary["delta"] == pytest.approx(0.5)
    assert summary["slope"] == pytest.approx(0.25)
    assert summary["classes"] == {"escalating": 0.5, "flat": 0.5, "de-escalating": 0.0}
    assert summary["change_from_turn1"] == pytest.approx({"1": 0.0, "2": 0.25, "3": 1.0})


def test_each_summary_carries_the_count_each_of_its_means_is_over() -> None:
    """Open, peak and mean average over every conversation with a coded turn (``n_conversations``); Δ, σ and the
    slope need two turns, so they (and the class shares) average over those with two or more (``n_classified``)."""
    # conversation 0 rises over three turns (0, .5, 1); conversation 1 has turn 1 coded only (.6)
    series = np.array([0, 0, 0, 1])
    turn = np.array([1, 2, 3, 1])
    value = np.array([0.0, 0.5, 1.0, 0.6])
    stats = series_statistics(series, turn, value, 2)
    (summary,) = summarise(stats, np.array([0, 0]), 1, series, turn, 0.005)
    assert (summary["n_conversations"], summary["n_classified"]) == (2, 1)
    assert summary["open"] == pytest.approx((0.0 + 0.6) / 2) and summary["peak"] == pytest.approx((1.0 + 0.6) / 2)
    assert summary["mean"] == pytest.approx((0.5 + 0.6) / 2)
    assert summary["delta"] == pytest.approx(1.0) and summary["slope"] == pytest.approx(0.5)
    assert summary["sd"] == pytest.approx(0.5)


def test_summary_by_group_keeps_each_groups_conversations_apart() -> None:
    # signal 0: series 0 (group 0) rises 0 -> .5 -> 1, series 1 (group 1) falls 1 -> .8; series 2 (group 1)
    # stays at .4 over turns 1-2. Signal 1: series 3 (group 0) only, one point.
    series = np.array([0, 0, 0, 1, 1, 2, 2, 3])
    turn = np.array([1, 2, 3, 1, 2, 1, 2, 1])
    value = np.array([0.0, 0.5, 1.0, 1.0, 0.8, 0.4, 0.4, 0.3])
    stats = series_statistics(series, turn, value, 4)
    groups = summarise_by_group(stats, np.array([0, 0, 0, 1]), 2, np.array([0, 1, 1, 0]), 2, series, turn, 0.005)
    (g0_s0, g0_s1), (g1_s0, g1_s1) = groups
    assert g0_s0["n_conversations"] == 1 and g0_s0["slope"] == pytest.approx(0.5)
    assert g0_s0["peak"] == 1.0 and g0_s0["delta"] == 1.0
    assert g0_s0["change_from_turn1"] == pytest.approx({"1": 0.0, "2": 0.5, "3": 1.0})
    assert g0_s0["classes"] == {"escalating": 1.0, "flat": 0.0, "de-escalating": 0.0}
    # group 1: means over its two series: open (1 + .4)/2, delta (-.2 + 0)/2, slope (-.2 + 0)/2
    assert g1_s0["n_conversations"] == 2
    assert g1_s0["open"] == pytest.approx(0.7) and g1_s0["delta"] == pytest.approx(-0.1)
    assert g1_s0["slope"] == pytest.approx(-0.1) and g1_s0["peak"] == pytest.approx(0.7)
    assert g1_s0["classes"] == {"escalating": 0.0, "flat": 0.5, "de-escalating": 0.5}
    assert g1_s0["change_from_turn1"] == pytest.approx({"1": 0.0, "2": -0.1})
    # signal 1 exists in group 0 only: one point, no slope; in group 1 nothing at all
    assert g0_s1["n_conversations"] == 1 and g0_s1["open"] == pytest.approx(0.3) and g0_s1["n_classified"] == 0
    assert g1_s1["n_conversations"] == 0 and np.isnan(g1_s1["open"]) and g1_s1["change_from_turn1"] == {}
    # all groups together are summarise() itself
    (whole, _) = summarise(stats, np.array([0, 0, 0, 1]), 2, series, turn, 0.005)
    assert whole["n_conversations"] == 3 and whole["slope"] == pytest.approx((0.5 - 0.2 + 0.0) / 3)
