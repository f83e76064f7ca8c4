"""Cluster bootstrap without a Python loop over resamples x items.

A resample of n clusters (turns or conversations) drawn with replacement is fully described by how many
times each cluster was drawn. Any statistic that is a ratio of per-cluster sums (agreement = matches /
valid items; a model's mean ARI = sum / count over its responses; a confusion matrix) is then a matrix
product: (B x n) draw counts @ (n x cells) per-cluster sums. That is exact, not an approximation.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from .common import safe_divide


def draw_counts(n_clusters: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(resamples x n_clusters) times each cluster is drawn when n of n are drawn with replacement.

    Drawn as explicit indices (rather than a multinomial) so that a naive loop over
    `rng.integers(0, n, (B, n))` reproduces the very same resamples; the first b rows do not depend on B.
    """
    if n_clusters == 0 or resamples == 0:
        return np.zeros((resamples, n_clusters), dtype=float)
    picks = rng.integers(0, n_clusters, size=(resamples, n_clusters))
    offsets = (np.arange(resamples, dtype=np.int64) * n_clusters)[:, None]
    counts = np.bincount((picks + offsets).ravel(), minlength=resamples * n_clusters)
    return counts.reshape(resamples, n_clusters).astype(float)


def resampled_ratio(counts: np.ndarray, numerators: np.ndarray, denominators: np.ndarray) -> np.ndarray:
    """(B x cells) ratio of resampled sums; NaN where a resample has an empty denominator."""
    return safe_divide(counts @ numerators, counts @ denominators)


def top_k_shares(scores: np.ndarray, ks: Sequence[int]) -> dict[int, np.ndarray]:
    """Share of resamples in which each column is in the top k, for every k.

    SPEC §4: in the top k when fewer than k others score strictly higher; a NaN score (no valid item in
    that resample) is in no top k and higher than no one — NaN comparisons are False, which gives exactly
    that. Ties are exact because equal rationals divide to the same double.
    """
    scores = np.asarray(scores, dtype=float)
    if scores.shape[0] == 0:
        return {k: np.full(scores.shape[1], np.nan) for k in ks}
    higher = (scores[:, :, None] > scores[:, None, :]).sum(axis=1)  # [b, j] = # i with s_i > s_j
    defined = np.isfinite(scores)
    return {k: np.mean(defined & (higher < k), axis=0) for k in ks}


def percentile_interval(samples: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval per column over the defined (finite) resamples; NaN where none is defined."""
    samples = np.asarray(samples, dtype=float)
    tail = (1.0 - level) / 2.0
    if samples.size == 0:  # no resamples, or nothing to estimate
        return np.full(samples.shape[1:], np.nan), np.full(samples.shape[1:], np.nan)
    samples = np.where(np.isfinite(samples), samples, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN column -> NaN, which is what we want
        low, high = np.nanquantile(samples, [tail, 1.0 - tail], axis=0)
    return low, high
