"""The vectorised bootstrap is the naive resampling loop, exactly; top-k follows the tie rule of
docs/metrics.md#bootstrap-selection-stability."""

from __future__ import annotations

import numpy as np
import pytest

from metrics.core.bootstrap import draw_counts, percentile_interval, resampled_ratio, top_k_shares


def test_draw_counts_are_the_counts_of_drawn_indices() -> None:
    counts = draw_counts(7, 50, np.random.default_rng(3))
    picks = np.random.default_rng(3).integers(0, 7, size=(50, 7))
    for b in range(50):
        assert counts[b].tolist() == np.bincount(picks[b], minlength=7).tolist()
    assert (counts.sum(axis=1) == 7).all()


def test_first_resamples_do_not_depend_on_how_many_are_drawn() -> None:
    few = draw_counts(9, 5, np.random.default_rng(0))
    many = draw_counts(9, 500, np.random.default_rng(0))
    assert np.array_equal(few, many[:5])


def test_resampled_ratio_equals_a_loop_over_resamples_and_items() -> None:
    rng = np.random.default_rng(1)
    n_turns, n_items = 6, 40
    turn_of_item = rng.integers(0, n_turns, n_items)
    valid = rng.random((n_items, 3)) < 0.8
    match = valid & (rng.random((n_items, 3)) < 0.7)
    per_turn_match = np.zeros((n_turns, 3))
    per_turn_valid = np.zeros((n_turns, 3))
    np.add.at(per_turn_match, turn_of_item, match)
    np.add.at(per_turn_valid, turn_of_item, valid)
    counts = draw_counts(n_turns, 25, np.random.default_rng(2))
    fast = resampled_ratio(counts, per_turn_match, per_turn_valid)
    picks = np.random.default_rng(2).integers(0, n_turns, size=(25, n_turns))
    for b in range(25):
        for r in range(3):
            hits = total = 0
            for t in picks[b]:
                for i in range(n_items):
                    if turn_of_item[i] == t and valid[i, r]:
                        total += 1
                        hits += int(match[i, r])
            expected = hits / total if total else np.nan
            assert fast[b, r] == pytest.approx(expected, abs=1e-15, nan_ok=True)


def test_top_k_counts_strictly_higher_others_and_keeps_ties() -> None:
    scores = np.array(
        [
            [0.9, 0.8, 0.8, 0.7],  # ties at 0.8 share rank 2
            [0.5, np.nan, 0.5, 0.9],  # NaN is in no top-k and higher than no one
        ]
    )
    shares = top_k_shares(scores, (1, 2, 3))
    assert shares[1].tolist() == [0.5, 0.0, 0.0, 0.5]
    assert shares[2].tolist() == [1.0, 0.5, 1.0, 0.5]  # row 2: 0.5, 0.5 both have one higher (0.9)
    assert shares[3].tolist() == [1.0, 0.5, 1.0, 0.5]  # row 1: 0.7 has three higher


def test_top_k_with_no_resamples_is_undefined() -> None:
    shares = top_k_shares(np.zeros((0, 3)), (4,))
    assert np.isnan(shares[4]).all()


def test_percentile_interval_ignores_undefined_resamples() -> None:
    samples = np.array([[0.1, np.nan], [0.2, np.nan], [0.3, np.nan], [np.nan, np.nan], [0.4, np.nan]])
    low, high, used = percentile_interval(samples, 0.5)
    assert low[0] == pytest.approx(np.quantile([0.1, 0.2, 0.3, 0.4], 0.25))
    assert high[0] == pytest.approx(np.quantile([0.1, 0.2, 0.3, 0.4], 0.75))
    assert np.isnan(low[1]) and np.isnan(high[1])
    assert used.tolist() == [4, 0]  # the interval says how many resamples it rests on: 4 of 5, and none
    assert percentile_interval(np.zeros((0, 2)), 0.95)[2].tolist() == [0, 0]
