"""Agreement primitives: hand-checked cases and properties (bounds, bucketed >= exact, order invariance)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics.core.agreement import (
    MISSING,
    agreement_rate,
    gold_in_plurality,
    mean_difference,
    pairwise_agreement,
)

M = MISSING


def test_agreement_counts_only_jointly_scored_items() -> None:
    assert agreement_rate(np.array([0, 1, M, 2]), np.array([0, 2, 1, M])) == 1 / 2
    assert agreement_rate(np.array([M, M]), np.array([1, 1])) is None
    assert agreement_rate(np.array([], dtype=int), np.array([], dtype=int)) is None


def test_pairwise_keys_are_alphabetical_and_undefined_pairs_are_none() -> None:
    codes = np.array([[1, 1, M], [0, 1, M], [2, 2, 0]])
    out = pairwise_agreement(codes, ["zoe", "amy", "kim"])
    assert list(out) == ["amy|kim", "amy|zoe", "kim|zoe"]
    assert out["amy|zoe"] == pytest.approx(2 / 3)
    assert out["amy|kim"] == 0.0  # only the third item is shared: 2 vs 0
    assert out["kim|zoe"] == 0.0


def test_bias_is_mean_signed_difference() -> None:
    assert mean_difference(np.array([2.0, 1.0, np.nan]), np.array([1.0, 1.0, 0.0])) == 0.5
    assert mean_difference(np.array([np.nan]), np.array([1.0])) is None


def test_gold_in_plurality_includes_ties_and_skips_unscored_items() -> None:
    gold = np.array([0, 1, 1, M, 0])
    reviewers = np.array(
        [
            [0, 0, 1],  # mode 0 -> in
            [0, 0, 1],  # mode 0, gold 1 -> out
            [0, 1, M],  # tie 0/1 -> in
            [1, 1, 1],  # no gold -> not counted
            [M, M, M],  # no reviewer -> not counted
        ]
    )
    assert gold_in_plurality(gold, reviewers) == pytest.approx(2 / 3)
    assert gold_in_plurality(np.array([M]), np.array([[1]])) is None


scores = st.lists(st.tuples(st.integers(-1, 2), st.integers(-1, 2)), min_size=0, max_size=50)


@settings(database=None, max_examples=200, deadline=None)
@given(scores, st.sampled_from([{0: 0, 1: 1, 2: 1}, {0: 0, 1: 0, 2: 2}, {0: 0, 1: 1, 2: 2}]))
def test_agreement_is_a_share_and_bucketing_never_lowers_it(pairs: list[tuple[int, int]], bucket: dict) -> None:
    a = np.array([p[0] for p in pairs], dtype=int)
    b = np.array([p[1] for p in pairs], dtype=int)

    def bucketed(x: np.ndarray) -> np.ndarray:
        return np.array([M if v == M else bucket[v] for v in x.tolist()], dtype=int)

    exact = agreement_rate(a, b)
    relaxed = agreement_rate(bucketed(a), bucketed(b))
    assert (exact is None) == (relaxed is None)
    if exact is not None:
        assert 0.0 <= exact <= relaxed <= 1.0


@settings(database=None, max_examples=100, deadline=None)
@given(scores, st.randoms(use_true_random=False))
def test_agreement_does_not_depend_on_item_order(pairs: list[tuple[int, int]], rnd) -> None:
    shuffled = list(pairs)
    rnd.shuffle(shuffled)
    a, b = np.array([p[0] for p in pairs], dtype=int), np.array([p[1] for p in pairs], dtype=int)
    c, d = np.array([p[0] for p in shuffled], dtype=int), np.array([p[1] for p in shuffled], dtype=int)
    assert agreement_rate(a, b) == agreement_rate(c, d)
