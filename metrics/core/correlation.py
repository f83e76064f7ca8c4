"""Input→response coupling (docs/metrics.md#input-response-coupling): Spearman ρ per cell, Benjamini–Hochberg q over the
defined cells."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
from scipy.special import stdtr
from scipy.stats import false_discovery_control, rankdata, spearmanr


def spearman(x: np.ndarray, y: np.ndarray) -> tuple[float, float, int] | None:
    """(ρ, two-sided p, n) over pairs where both are finite; None when undefined.

    Undefined = a variable is constant over the pairs (zero variance), or too few pairs for a p-value
    (scipy gives NaN for n < 3). Returning None rather than NaN keeps the cell out of the BH family.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    both = np.isfinite(x) & np.isfinite(y)
    n = int(both.sum())
    if n < 3:
        return None
    xs, ys = x[both], y[both]
    if np.all(xs == xs[0]) or np.all(ys == ys[0]):
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = spearmanr(xs, ys)
    rho, p = float(result.statistic), float(result.pvalue)
    if not (math.isfinite(rho) and math.isfinite(p)):
        return None
    return rho, p, n


def bh_qvalues(pvalues: Sequence[float | None]) -> list[float | None]:
    """Benjamini–Hochberg q for the defined p-values; m = number of defined tests, None stays None."""
    defined = [i for i, p in enumerate(pvalues) if p is not None]
    out: list[float | None] = [None] * len(pvalues)
    if not defined:
        return out
    q = false_discovery_control(np.array([pvalues[i] for i in defined], dtype=float), method="bh")
    for i, value in zip(defined, q, strict=True):
        out[i] = float(value)
    return out


def _spearman_matrix(columns: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """ρ and p for every pair of columns observed on the same rows, as ``scipy.stats.spearmanr`` computes them
    (the correlation matrix of average ranks; two-sided p from Student's t with n - 2 degrees of freedom), but
    with every column ranked in one vectorised call: spearmanr ranks column by column in Python, which was most
    of the coupling's time once the report repeats it per dataset and conversation kind. The tests compare
    each cell with spearmanr."""
    data = np.column_stack(columns)
    ranks = rankdata(data, axis=0)
    dof = data.shape[0] - 2
    with np.errstate(all="ignore"):
        rho = np.corrcoef(ranks, rowvar=False)
        t = rho * np.sqrt((dof / ((rho + 1.0) * (1.0 - rho))).clip(0))
        p = 2 * stdtr(dof, -np.abs(t))
    return rho, p


def coupling_table(
    inputs: Mapping[str, np.ndarray],
    outputs: Mapping[str, np.ndarray],
    *,
    min_abs_rho: float,
    max_q: float,
) -> dict[str, dict[str, dict[str, object]]]:
    """Every (input, output) cell over the same responses: {input: {output: {rho, p, q, significant, n}}}.

    One BH family per table (per model and per coding: raw or risk-recoded), as docs/metrics.md#input-response-coupling
    says. Significant when |ρ| >= min_abs_rho and q < max_q; None for an undefined cell. When every variable is observed
    on the same rows (the usual case) all cells come from one scipy call; otherwise each cell uses its own
    pairwise-complete rows.
    """
    names_in, names_out = list(inputs), list(outputs)
    columns = [np.asarray(inputs[k], dtype=float) for k in names_in] + [
        np.asarray(outputs[k], dtype=float) for k in names_out
    ]
    results: dict[tuple[str, str], tuple[float, float, int] | None] = {}
    n_pairs: dict[tuple[str, str], int] = {}
    masks = [np.isfinite(c) for c in columns]
    shared = bool(columns) and all(np.array_equal(m, masks[0]) for m in masks)
    if shared and names_in and names_out:
        rows = masks[0]
        n = int(rows.sum())
        # scipy answers NaN for the whole matrix when its first or second column is constant, so constant
        # (undefined) variables are left out of the call rather than passed through
        varying = [i for i, c in enumerate(columns) if n >= 3 and not np.all(c[rows] == c[rows][0])]
        rho, p = _spearman_matrix([columns[i][rows] for i in varying]) if len(varying) >= 2 else (None, None)
        where = {column: position for position, column in enumerate(varying)}
        for i, a in enumerate(names_in):
            for j, b in enumerate(names_out):
                k = len(names_in) + j
                n_pairs[(a, b)] = n
                results[(a, b)] = None
                if rho is not None and p is not None and i in where and k in where:
                    r, pv = float(rho[where[i], where[k]]), float(p[where[i], where[k]])
                    if math.isfinite(r) and math.isfinite(pv):
                        results[(a, b)] = (r, pv, n)
    else:
        for a in names_in:
            for b in names_out:
                x, y = np.asarray(inputs[a], dtype=float), np.asarray(outputs[b], dtype=float)
                n_pairs[(a, b)] = int((np.isfinite(x) & np.isfinite(y)).sum())
                results[(a, b)] = spearman(x, y)

    cells = [(a, b) for a in names_in for b in names_out]
    qs = bh_qvalues([res[1] if (res := results[c]) is not None else None for c in cells])
    table: dict[str, dict[str, dict[str, object]]] = {a: {} for a in names_in}
    for (a, b), q in zip(cells, qs, strict=True):
        result = results[(a, b)]
        if result is None or q is None:
            table[a][b] = {"rho": None, "p": None, "q": None, "significant": None, "n": n_pairs[(a, b)]}
            continue
        rho_ab, p_ab, n_ab = result
        table[a][b] = {
            "rho": rho_ab,
            "p": p_ab,
            "q": q,
            "significant": bool(abs(rho_ab) >= min_abs_rho and q < max_q),
            "n": n_ab,
        }
    return table
