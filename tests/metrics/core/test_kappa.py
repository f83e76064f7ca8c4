"""κ and α: library parity, the vectorised κ held to scikit-learn, published α reference values, edge cases."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

from metrics.core.kappa import (
    confusion_counts,
    kappa_from_confusion,
    krippendorff_alpha,
    landis_koch_band,
    quadratic_kappa,
)

# Krippendorff (2011) "Computing Krippendorff's Alpha-Reliability", example C: 4 observers x 12 units, values
# 1-5, missing data. The paper reports α_nominal = 0.743, α_ordinal = 0.815, α_interval = 0.849, α_ratio = 0.797.
NAN = np.nan
PAPER_DATA = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
)


@pytest.mark.parametrize(
    ("level", "published"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)]
)
def test_alpha_matches_krippendorff_2011_published_values(level: str, published: float) -> None:
    value = krippendorff_alpha(PAPER_DATA, level, [1, 2, 3, 4, 5])
    assert value is not None
    assert round(value, 3) == published


def _nominal_alpha_by_hand(data: np.ndarray) -> float:
    """Coincidence-matrix α for nominal data, written from the paper's formulas (independent of the library)."""
    values = sorted(set(data[np.isfinite(data)].tolist()))
    index = {v: i for i, v in enumerate(values)}
    o = np.zeros((len(values), len(values)))
    for unit in data.T:
        coded = [index[v] for v in unit[np.isfinite(unit)].tolist()]
        m = len(coded)
        if m < 2:
            continue
        for a in range(m):
            for b in range(m):
                if a != b:
                    o[coded[a], coded[b]] += 1.0 / (m - 1)
    n_c = o.sum(axis=1)
    n = n_c.sum()
    observed = o.sum() - np.trace(o)
    expected = (n * n - (n_c**2).sum()) / (n - 1)
    return 1.0 - observed / expected


def test_nominal_alpha_by_hand_agrees_with_the_paper_and_library() -> None:
    by_hand = _nominal_alpha_by_hand(PAPER_DATA)
    assert round(by_hand, 3) == 0.743
    assert krippendorff_alpha(PAPER_DATA, "nominal", [1, 2, 3, 4, 5]) == pytest.approx(by_hand, abs=1e-12)


def test_alpha_level_is_passed_not_left_to_the_interval_default() -> None:
    nominal = krippendorff_alpha(PAPER_DATA, "nominal", [1, 2, 3, 4, 5])
    interval = krippendorff_alpha(PAPER_DATA, "interval", [1, 2, 3, 4, 5])
    assert nominal != pytest.approx(interval)


@settings(database=None, max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(["nominal", "ordinal"]))
def test_alpha_parity_with_library_on_random_panels(seed: int, level: str) -> None:
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 3, (5, 30)).astype(float)
    data[rng.random(data.shape) < 0.3] = np.nan
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level, value_domain=[0, 1, 2])
    got = krippendorff_alpha(data, level, (0, 1, 2))
    if math.isfinite(expected):
        assert got == pytest.approx(expected, abs=1e-12)
        if level == "nominal":
            assert got == pytest.approx(_nominal_alpha_by_hand(data), abs=1e-12)
    else:
        assert got is None


def test_alpha_undefined_cases_are_none() -> None:
    assert krippendorff_alpha(np.array([[1.0, NAN], [NAN, 1.0]]), "nominal", [0, 1]) is None  # nothing pairable
    assert krippendorff_alpha(np.ones((3, 4)), "nominal", [0, 1]) is None  # no variation at all
    assert krippendorff_alpha(np.zeros((0, 0)), "ordinal", [0, 1, 2]) is None


def test_kappa_matches_sklearn_on_a_worked_example() -> None:
    # [0,1,2] vs [0,1,1]: ΣwO = 1, rows (1,1,1), cols (1,2,0) -> ΣwE = (1·2 + 1·1 + 4·1 + 1·2)/3 = 3 -> 2/3
    assert quadratic_kappa([0, 1, 2], [0, 1, 1], [0, 1, 2]) == pytest.approx(2 / 3, abs=1e-15)


def test_kappa_edge_cases_follow_the_spec() -> None:
    assert quadratic_kappa([1, 1, 1], [1, 1, 1], [0, 1, 2]) is None  # both constant, same value
    assert quadratic_kappa([], [], [0, 1, 2]) is None  # no unit
    assert quadratic_kappa([1, 1, 1], [2, 2, 2], [0, 1, 2]) == 0.0  # constant at different values
    assert quadratic_kappa([2], [2], [0, 1, 2]) is None  # a single item agreeing is undefined
    assert quadratic_kappa([0, 0, 0], [0, 1, 2], [0, 1, 2]) == 0.0  # a constant rater against a varying gold


def test_kappa_uses_the_full_scale_not_the_observed_labels() -> None:
    # on a 0-3 scale with 1 never used, inferred labels would space 0, 2, 3 as positions 0, 1, 2
    a, b = [0, 2, 3, 3, 0], [2, 2, 3, 0, 0]
    full = quadratic_kappa(a, b, [0, 1, 2, 3])
    assert full == pytest.approx(cohen_kappa_score(a, b, labels=[0, 1, 2, 3], weights="quadratic"), abs=1e-15)
    assert full != pytest.approx(cohen_kappa_score(a, b, weights="quadratic"), abs=1e-6)


def _random_pairs(seed: int, n_cells: int, n_labels: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    cell = rng.integers(0, n_cells, n)
    a = rng.integers(0, n_labels, n)
    b = np.where(rng.random(n) < 0.6, a, rng.integers(0, n_labels, n))
    return cell, a, b


@settings(database=None, max_examples=60, deadline=None)
@given(st.integers(0, 100_000), st.integers(2, 4))
def test_vectorised_kappa_equals_sklearn_to_1e12(seed: int, n_labels: int) -> None:
    cell, a, b = _random_pairs(seed, 5, n_labels)
    kappas = kappa_from_confusion(confusion_counts(cell, a, b, 5, n_labels))
    for c in range(5):
        in_cell = cell == c
        expected = quadratic_kappa(a[in_cell], b[in_cell], list(range(n_labels)))
        if expected is None:
            assert math.isnan(kappas[c])
        else:
            assert abs(kappas[c] - expected) <= 1e-12


def test_padding_to_a_longer_scale_does_not_change_kappa() -> None:
    cell, a, b = _random_pairs(3, 1, 2)
    binary = kappa_from_confusion(confusion_counts(cell, a, b, 1, 2))
    padded = kappa_from_confusion(confusion_counts(cell, a, b, 1, 3))
    assert padded[0] == pytest.approx(binary[0], abs=1e-15)


@settings(database=None, max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=1, max_size=40))
def test_kappa_is_symmetric(pairs: list[tuple[int, int]]) -> None:
    a = [p[0] for p in pairs]
    b = [p[1] for p in pairs]
    ab, ba = quadratic_kappa(a, b, [0, 1, 2]), quadratic_kappa(b, a, [0, 1, 2])
    assert (ab is None) == (ba is None)
    if ab is not None:
        assert ab == pytest.approx(ba, abs=1e-12)
        assert -1.0 - 1e-12 <= ab <= 1.0 + 1e-12


@pytest.mark.parametrize(
    ("kappa", "band"),
    [
        (-0.01, "Poor"),
        (0.0, "Slight"),
        (0.20, "Slight"),
        (0.2000001, "Fair"),
        (0.40, "Fair"),
        (0.41, "Moderate"),
        (0.60, "Moderate"),
        (0.61, "Substantial"),
        (0.80, "Substantial"),
        (0.81, "Almost perfect"),
        (1.0, "Almost perfect"),
        (None, None),
    ],
)
def test_landis_koch_band_boundaries(kappa: float | None, band: str | None) -> None:
    assert landis_koch_band(kappa) == band


@settings(database=None, max_examples=60, deadline=None)
@given(st.integers(0, 100_000), st.integers(3, 5))
def test_nominal_cells_get_cohens_unweighted_kappa_and_the_others_stay_quadratic(seed: int, n_labels: int) -> None:
    cell, a, b = _random_pairs(seed, 4, n_labels)
    nominal = np.array([True, False, True, False])
    kappas = kappa_from_confusion(confusion_counts(cell, a, b, 4, n_labels), nominal)
    for c in range(4):
        in_cell = cell == c
        if nominal[c]:
            with np.errstate(all="ignore"):
                expected = cohen_kappa_score(a[in_cell], b[in_cell], labels=list(range(n_labels)),
                                             replace_undefined_by=np.nan) if in_cell.any() else np.nan
            expected = None if not math.isfinite(expected) else float(expected)
        else:
            expected = quadratic_kappa(a[in_cell], b[in_cell], list(range(n_labels)))
        if expected is None:
            assert math.isnan(kappas[c])
        else:
            assert abs(kappas[c] - expected) <= 1e-12


def test_a_near_miss_on_a_nominal_scale_counts_as_a_full_disagreement() -> None:
    # By hand: 4 items, labels 0..2; gold 0,1,2,2 and coder 0,2,2,1 (two near misses). p_o = 2/4; marginals
    # coder (1,1,2)/4, gold (1,1,2)/4 -> p_e = (1+1+4)/16 = 6/16; unweighted κ = (8/16 - 6/16) / (10/16) = 0.2.
    confusion = confusion_counts(np.zeros(4, dtype=int), np.array([0, 2, 2, 1]), np.array([0, 1, 2, 2]), 1, 3)
    assert kappa_from_confusion(confusion, np.array([True]))[0] == pytest.approx(0.2, abs=1e-12)
    # quadratic weights count the same near misses as small: a higher κ. Σw·o = 2 (two misses of weight 1);
    # Σw·r·c/n = (1 + 8 + 1 + 2 + 8 + 2) / 4 = 5.5; κ = 1 - 2/5.5 = 7/11
    assert kappa_from_confusion(confusion)[0] == pytest.approx(7 / 11, abs=1e-12)
