"""Chance-corrected reliability: quadratic weighted Cohen's κ (reviewer vs gold) and Krippendorff's α (panel).

`quadratic_kappa` is scikit-learn's value with the null rule of docs/metrics.md#quadratic-weighted-kappa;
`kappa_from_confusion` is the same statistic computed from bincount confusion matrices for many (reviewer, attribute,
resample) cells at once, which is what makes κ affordable inside the bootstrap. The tests hold the two to 1e-12 of each
other.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import cast

import krippendorff
import numpy as np
from sklearn.metrics import cohen_kappa_score

LANDIS_KOCH = (
    # (upper bound inclusive, band); κ < 0 is "Poor" (docs/metrics.md#landis-koch-bands)
    (0.20, "Slight"),
    (0.40, "Fair"),
    (0.60, "Moderate"),
    (0.80, "Substantial"),
    (1.00, "Almost perfect"),
)


def quadratic_kappa(y1: Sequence[int], y2: Sequence[int], labels: Sequence[int]) -> float | None:
    """scikit-learn's quadratic weighted κ over the full scale; None where docs/metrics.md#quadratic-weighted-kappa
    calls it undefined.

    Undefined = no unit, or zero expected disagreement (both sides one and the same constant value).
    Both sides constant at different values is 0, as scikit-learn computes it.
    """
    if len(y1) == 0:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = cohen_kappa_score(
            list(y1), list(y2), labels=list(labels), weights="quadratic", replace_undefined_by=np.nan
        )
    value = float(value)
    return value if math.isfinite(value) else None


def confusion_counts(
    cell: np.ndarray, first: np.ndarray, second: np.ndarray, n_cells: int, n_labels: int
) -> np.ndarray:
    """(n_cells, n_labels, n_labels) confusion matrices from label indices, one bincount for all cells."""
    flat = (np.asarray(cell, dtype=np.int64) * n_labels + first) * n_labels + second
    counts = np.bincount(flat, minlength=n_cells * n_labels * n_labels)
    return counts.reshape(n_cells, n_labels, n_labels).astype(float)


def kappa_from_confusion(confusion: np.ndarray, nominal: np.ndarray | None = None) -> np.ndarray:
    """Quadratic weighted κ of every confusion matrix in (..., L, L); NaN where undefined. Where ``nominal``
    (booleans broadcast against the leading axes ...) is true, Cohen's unweighted κ instead: a nominal scale's
    labels have no order, so a near miss is as wrong as any other (issue 15: nominal scales, nominal statistics).

    Same formula as scikit-learn (weights (i - j)^2 on label positions, or 1 off the diagonal for nominal
    scales; expected = outer(rows, cols) / n), so padding a smaller scale with empty rows/columns does not
    change the value. Expected disagreement is a sum of non-negative terms, so "undefined" is an exact zero
    test, not a tolerance.
    """
    confusion = np.asarray(confusion, dtype=float)
    n_labels = confusion.shape[-1]
    positions = np.arange(n_labels, dtype=float)
    weights = (positions[:, None] - positions[None, :]) ** 2
    n = confusion.sum(axis=(-2, -1))
    rows = confusion.sum(axis=-1)
    cols = confusion.sum(axis=-2)
    observed = np.einsum("...ij,ij->...", confusion, weights)
    # Σ_ij w_ij r_i c_j / n without materialising the outer product for every cell
    expected = np.einsum("...i,ij,...j->...", rows, weights, cols)
    if nominal is not None and np.any(nominal):
        off_diagonal = 1.0 - np.eye(n_labels)
        nominal = np.broadcast_to(np.asarray(nominal, dtype=bool), observed.shape)
        observed = np.where(nominal, np.einsum("...ij,ij->...", confusion, off_diagonal), observed)
        expected = np.where(nominal, np.einsum("...i,ij,...j->...", rows, off_diagonal, cols), expected)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = np.where(n > 0, expected / np.where(n > 0, n, 1), 0.0)
        kappa = np.where(expected > 0, 1.0 - observed / np.where(expected > 0, expected, 1.0), np.nan)
    return kappa


def landis_koch_band(kappa: float | None) -> str | None:
    """Landis–Koch label (docs/metrics.md#landis-koch-bands): κ < 0 Poor; [0, .20] Slight; (.20, .40] Fair; ..."""
    if kappa is None or not math.isfinite(kappa):
        return None
    if kappa < 0:
        return "Poor"
    for upper, band in LANDIS_KOCH:
        if kappa <= upper + 1e-12:
            return band
    return LANDIS_KOCH[-1][1]


def krippendorff_alpha(reliability_data: np.ndarray, level: str, value_domain: Sequence[int]) -> float | None:
    """Krippendorff's α of a coders x units matrix (NaN = not coded); None when undefined.

    The level is always passed explicitly: the library's default is interval, which would silently
    treat a nominal flag as a number. Undefined = fewer than one pairable unit or no variation at all.
    """
    data = np.asarray(reliability_data, dtype=float)
    if data.ndim != 2 or data.size == 0:
        return None
    pairable = (np.isfinite(data).sum(axis=0) >= 2).any()
    if not pairable or len(value_domain) < 2:
        return None
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            value = krippendorff.alpha(
                # AttributeSpec.validate keeps the level within the library's four names.
                reliability_data=data, level_of_measurement=cast("krippendorff.LevelOfMeasurement", level),
                value_domain=list(value_domain),
            )
        except (ValueError, ZeroDivisionError):
            return None
    value = float(value)
    return value if math.isfinite(value) else None
