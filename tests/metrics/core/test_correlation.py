"""Spearman cells and BH q-values: parity with scipy, undefined cells left out of the family."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import false_discovery_control, spearmanr

from metrics.core.correlation import bh_qvalues, coupling_table, spearman


@settings(database=None, max_examples=50, deadline=None)
@given(st.integers(0, 100_000))
def test_spearman_parity_with_scipy_on_tied_ordinal_data(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 3, 40).astype(float)
    y = np.clip(x + rng.integers(-1, 2, 40), 0, 2).astype(float)
    result = spearman(x, y)
    expected = spearmanr(x, y)
    if np.isnan(expected.statistic):
        assert result is None
    else:
        assert result is not None
        assert result[0] == pytest.approx(expected.statistic, abs=1e-12)
        assert result[1] == pytest.approx(expected.pvalue, abs=1e-12)
        assert result[2] == 40


def test_spearman_undefined_for_constant_or_tiny_samples() -> None:
    assert spearman(np.ones(10), np.arange(10.0)) is None
    assert spearman(np.array([1.0, 2.0]), np.array([2.0, 1.0])) is None
    assert spearman(np.array([1.0, np.nan, 3.0, 4.0]), np.array([1.0, 2.0, np.nan, 3.0])) is None  # 2 pairs


def test_bh_family_is_the_defined_tests_only() -> None:
    p = [0.01, None, 0.04, 0.03, None]
    q = bh_qvalues(p)
    expected = false_discovery_control([0.01, 0.04, 0.03], method="bh")
    assert q[1] is None and q[4] is None
    assert [q[0], q[2], q[3]] == pytest.approx(expected.tolist(), abs=1e-15)
    # by hand: sorted 0.01, 0.03, 0.04 (m = 3): 0.01*3/1 = 0.03, 0.03*3/2 = 0.045, 0.04*3/3 = 0.04 -> monotone
    assert [q[0], q[3], q[2]] == pytest.approx([0.03, 0.04, 0.04], abs=1e-15)


def _table_oracle(inputs: dict, outputs: dict) -> dict:
    cells = [(a, b) for a in inputs for b in outputs]
    results = {}
    for a, b in cells:
        x, y = inputs[a], outputs[b]
        both = np.isfinite(x) & np.isfinite(y)
        res = spearmanr(x[both], y[both])
        results[(a, b)] = (float(res.statistic), float(res.pvalue)) if np.isfinite(res.statistic) else None
    defined = [c for c in cells if results[c] is not None]
    q = false_discovery_control([results[c][1] for c in defined], method="bh") if defined else []
    return {c: (results[c][0], results[c][1], qv) for c, qv in zip(defined, q, strict=True)}


@pytest.mark.filterwarnings("ignore::scipy.stats.ConstantInputWarning")  # the oracle meets the constant UC
@pytest.mark.parametrize("with_missing", [False, True])
def test_coupling_table_matches_per_cell_scipy_and_bh(with_missing: bool) -> None:
    rng = np.random.default_rng(5)
    n = 120
    u = rng.integers(0, 3, (n, 3)).astype(float)
    inputs = {"U1": u[:, 0], "U2": u[:, 1], "UC": np.ones(n)}  # UC is constant -> undefined cells
    outputs = {
        "A": np.clip(u[:, 0] + rng.integers(-1, 2, n), 0, 2).astype(float),
        "B": rng.integers(0, 3, n).astype(float),
        "C": np.clip(2 - u[:, 1] + rng.integers(-1, 2, n), 0, 2).astype(float),
    }
    if with_missing:
        outputs["B"][rng.random(n) < 0.2] = np.nan
    table = coupling_table(inputs, outputs, min_abs_rho=0.2, max_q=0.05)
    oracle = _table_oracle(inputs, outputs)
    assert len(oracle) == 6  # the UC row drops out of the family
    for (a, b), (rho, p, q) in oracle.items():
        cell = table[a][b]
        assert cell["rho"] == pytest.approx(rho, abs=1e-12)
        assert cell["p"] == pytest.approx(p, abs=1e-12)
        assert cell["q"] == pytest.approx(q, abs=1e-12)
        assert cell["significant"] == (abs(rho) >= 0.2 and q < 0.05)
    assert table["UC"]["A"] == {"rho": None, "p": None, "q": None, "significant": None, "n": n}
    assert table["U1"]["A"]["significant"] is True
    assert table["U2"]["C"]["rho"] < 0


def test_coupling_with_a_constant_first_column_still_defines_the_others() -> None:
    # scipy's matrix call returns NaN for everything when its first column is constant
    rng = np.random.default_rng(9)
    x = rng.integers(0, 3, 50).astype(float)
    y = x + rng.normal(0, 1, 50)
    table = coupling_table({"K": np.zeros(50), "X": x}, {"Y": y}, min_abs_rho=0.2, max_q=0.05)
    assert table["K"]["Y"]["rho"] is None
    assert table["X"]["Y"]["rho"] == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)
    assert table["X"]["Y"]["q"] == pytest.approx(table["X"]["Y"]["p"], abs=1e-15)  # a family of one


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(3, 60), st.integers(2, 6), st.sampled_from([2, 3, 5, 1000]))
def test_the_matrix_is_scipys_spearmanr_to_the_last_bit(seed: int, n: int, k: int, levels: int) -> None:
    """The coupling ranks every column in one call and applies spearmanr's own formulas: the same floats as
    spearmanr's matrix (ties, few pairs and near-perfect correlations included)."""
    from metrics.core.correlation import _spearman_matrix

    rng = np.random.default_rng(seed)
    columns = [rng.integers(0, levels, n).astype(float) / 2 for _ in range(k)]
    columns.append(columns[0] * 2 + 1)  # a perfect correlation: ρ = 1, p = 0
    if any(np.all(c == c[0]) for c in columns):
        return  # constant columns never reach the matrix (coupling_table leaves them out)
    rho, p = _spearman_matrix(columns)
    expected = spearmanr(np.column_stack(columns))
    np.testing.assert_array_equal(rho, expected.statistic)
    np.testing.assert_array_equal(p, expected.pvalue)
