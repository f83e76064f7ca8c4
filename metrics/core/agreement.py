"""Score agreement between coders (docs/metrics.md#reliability-calibration-rounds): exact/bucketed agreement, pairwise
agreement, bias, plurality.

Inputs are integer code arrays where MISSING marks "this coder did not score this item"; a pair of codes counts only
where both sides scored (docs/metrics.md#items-and-reviewers: an item is valid where both the reviewer and gold scored
it). Codes are whatever the caller compares: scale indices for exact agreement, bucket indices for bucketed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

MISSING = -1


def both_scored(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return (np.asarray(x) != MISSING) & (np.asarray(y) != MISSING)


def agreement_rate(x: np.ndarray, y: np.ndarray) -> float | None:
    """Share of jointly scored items on which x and y agree; None when they share no item."""
    x = np.asarray(x)
    y = np.asarray(y)
    valid = both_scored(x, y)
    n = int(valid.sum())
    if n == 0:
        return None
    return int((x[valid] == y[valid]).sum()) / n


def pairwise_agreement(codes: np.ndarray, names: Sequence[str]) -> dict[str, float | None]:
    """Agreement for every pair of coders (columns of an items x coders code matrix), keyed "A|B" with A < B.

    Done as one boolean tensor per pair of columns; panels are small (<= tens of coders), items are not.
    """
    order = sorted(range(len(names)), key=lambda i: names[i])
    out: dict[str, float | None] = {}
    for pos, i in enumerate(order):
        for j in order[pos + 1 :]:
            out[f"{names[i]}|{names[j]}"] = agreement_rate(codes[:, i], codes[:, j])
    return out


def mean_difference(x: np.ndarray, y: np.ndarray) -> float | None:
    """Mean of x - y over entries where both are finite (bias of a reviewer against gold); None if none."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    valid = np.isfinite(x) & np.isfinite(y)
    if not valid.any():
        return None
    return float(np.mean(x[valid] - y[valid]))


def gold_in_plurality(gold: np.ndarray, reviewers: np.ndarray) -> float | None:
    """Share of items whose gold code is among the most frequent reviewer codes (ties included).

    Items count when gold scored them and at least one reviewer did (docs/metrics.md#gold-within-plurality). Counting by
    bincount over (item, code) avoids a Python loop over items.
    """
    gold = np.asarray(gold, dtype=np.int64)
    reviewers = np.asarray(reviewers, dtype=np.int64).reshape(len(gold), -1)
    scored = reviewers != MISSING
    eligible = (gold != MISSING) & scored.any(axis=1)
    if not eligible.any():
        return None
    n_codes = int(max(gold.max(initial=0), reviewers.max(initial=0))) + 1
    item_idx = np.broadcast_to(np.arange(len(gold))[:, None], reviewers.shape)[scored]
    counts = np.bincount(item_idx * n_codes + reviewers[scored], minlength=len(gold) * n_codes)
    counts = counts.reshape(len(gold), n_codes)
    rows = np.flatnonzero(eligible)
    return float(np.mean(counts[rows, gold[rows]] == counts[rows].max(axis=1)))
