"""Cluster bootstrap without a Python loop over resamples x items.

A resample of n clusters (turns or conversations) drawn with replacement is fully described by how many
times each cluster was drawn. Any statistic that is a ratio of per-cluster sums (agreement = matches /
valid items; a model's mean ARI = sum / count over its responses; a confusion matrix) is then a matrix
product: (B x n) draw counts @ (n x cells) per-cluster sums. That is exact, not an approximation.

Resamples are drawn in chunks of ``CHUNK``, chunk i from its own seed stream (``SeedSequence(seed,
spawn_key=(i,))``): a chunk's draws depend only on (seed, i), never on how many chunks there are or which
worker computes them, so a report split over workers is the single-worker report bit for bit. A report's
bootstraps are requested as data (``Resampling``) while its sections are built and computed afterwards, all
of one chunk at a time (``Bootstrap``); each section's callback then fills its entries from the samples.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .common import safe_divide

CHUNK = 100  # resamples per seed stream; fixed, so the draws never depend on how the work is split


def chunk_count(resamples: int) -> int:
    return -(-resamples // CHUNK)


def chunk_picks(n_clusters: int, resamples: int, seed: int, chunk: int) -> np.ndarray:
    """(rows x n_clusters) cluster indices drawn with replacement for the resamples of one chunk."""
    rows = min(CHUNK, resamples - chunk * CHUNK)
    if not 0 <= chunk < chunk_count(resamples):
        raise ValueError(f"chunk {chunk} is outside the {chunk_count(resamples)} chunks of {resamples} resamples")
    if n_clusters == 0:
        return np.zeros((rows, 0), dtype=np.int64)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(chunk,)))
    return rng.integers(0, n_clusters, size=(rows, n_clusters))


def resample_picks(n_clusters: int, resamples: int, seed: int) -> np.ndarray:
    """(resamples x n_clusters) drawn cluster indices of every resample: the chunks' draws, stacked. A naive loop
    over these rows replays the report's resamples exactly."""
    if resamples == 0:
        return np.zeros((0, n_clusters), dtype=np.int64)
    return np.vstack([chunk_picks(n_clusters, resamples, seed, c) for c in range(chunk_count(resamples))])


def counts_of(picks: np.ndarray, n_clusters: int) -> np.ndarray:
    """(rows x n_clusters) times each cluster is drawn in each row of picks."""
    rows = picks.shape[0]
    if n_clusters == 0 or rows == 0:
        return np.zeros((rows, n_clusters), dtype=float)
    offsets = (np.arange(rows, dtype=np.int64) * n_clusters)[:, None]
    counts = np.bincount((picks + offsets).ravel(), minlength=rows * n_clusters)
    return counts.reshape(rows, n_clusters).astype(float)


def draw_counts(n_clusters: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(resamples x n_clusters) times each cluster is drawn when n of n are drawn with replacement.

    Drawn as explicit indices (rather than a multinomial) so that a naive loop over
    `rng.integers(0, n, (B, n))` reproduces the very same resamples; the first b rows do not depend on B.
    """
    if n_clusters == 0 or resamples == 0:
        return np.zeros((resamples, n_clusters), dtype=float)
    return counts_of(rng.integers(0, n_clusters, size=(resamples, n_clusters)), n_clusters)


def resampled_ratio(counts: np.ndarray, numerators: np.ndarray, denominators: np.ndarray) -> np.ndarray:
    """(B x cells) ratio of resampled sums; NaN where a resample has an empty denominator."""
    return safe_divide(counts @ numerators, counts @ denominators)


def top_k_shares(scores: np.ndarray, ks: Sequence[int]) -> dict[int, np.ndarray]:
    """Share of resamples in which each column is in the top k, for every k.

    docs/metrics.md#bootstrap-selection-stability: in the top k when fewer than k others score strictly higher; a NaN
    score (no valid item in that resample) is in no top k and higher than no one — NaN comparisons are False, which
    gives exactly that. Ties are exact because equal rationals divide to the same double.
    """
    scores = np.asarray(scores, dtype=float)
    if scores.shape[0] == 0:
        return {k: np.full(scores.shape[1], np.nan) for k in ks}
    higher = (scores[:, :, None] > scores[:, None, :]).sum(axis=1)  # [b, j] = # i with s_i > s_j
    defined = np.isfinite(scores)
    return {k: np.mean(defined & (higher < k), axis=0) for k in ks}


def resamples_used(samples: np.ndarray) -> np.ndarray:
    """Per column, the resamples an interval rests on: those where its statistic is defined (finite). A resample
    where it is undefined (κ or α 0/0, an agreement or a mean with no item of its own drawn) is left out of the
    interval, not counted as 0, so the interval is over these alone; the report keeps their number beside it
    (docs/metrics.md#resamples-an-interval-rests-on) and the warnings name an interval on too few of B."""
    samples = np.asarray(samples, dtype=float)
    return np.isfinite(samples).sum(axis=0).astype(np.int64)


def percentile_interval(samples: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Percentile interval per column over the defined (finite) resamples, NaN where none is defined, and the number
    of those resamples per column (``resamples_used``): an interval is never given without how many it used."""
    samples = np.asarray(samples, dtype=float)
    tail = (1.0 - level) / 2.0
    used = resamples_used(samples)
    if samples.size == 0:  # no resamples, or nothing to estimate
        return np.full(samples.shape[1:], np.nan), np.full(samples.shape[1:], np.nan), used
    samples = np.where(np.isfinite(samples), samples, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN column -> NaN, which is what we want
        low, high = np.nanquantile(samples, [tail, 1.0 - tail], axis=0)
    return low, high, used


def grouped_kappa(kappa: np.ndarray, attribute_group: np.ndarray, n_groups: int) -> np.ndarray:
    """Mean of the defined per-attribute κ per group, over the last axis (..., A) -> (..., G); NaN if none."""
    defined = np.isfinite(kappa)
    onehot = (attribute_group[:, None] == np.arange(n_groups)[None, :]).astype(float)  # A x G
    return safe_divide(np.where(defined, kappa, 0.0) @ onehot, defined.astype(float) @ onehot)


@dataclass(frozen=True, eq=False)
class Resampling:
    """One cluster bootstrap as data, so that any worker can compute any chunk of it.

    ``ratio``: arrays (numerators, denominators), both clusters x cells; a sample is the ratio of the resampled
    sums, shape (cells,). ``grouped_kappa``: arrays (confusions: reviewers x clusters x A·L·L, attribute group
    per attribute, optionally a nominal flag per attribute) and shape (A, L, groups); a sample is each reviewer's
    mean κ per group, (reviewers, groups).
    """

    statistic: str
    arrays: tuple[np.ndarray, ...]
    shape: tuple[int, ...] = ()

    @property
    def n_clusters(self) -> int:
        return int(self.arrays[0].shape[-2])

    @property
    def sample_shape(self) -> tuple[int, ...]:
        if self.statistic == "ratio":
            return (int(self.arrays[0].shape[1]),)
        return (int(self.arrays[0].shape[0]), int(self.shape[2]))

    def samples(self, counts: np.ndarray) -> np.ndarray:
        """(rows, *sample_shape) statistics of the resamples whose draw counts are the rows of ``counts``."""
        if self.statistic == "ratio":
            return resampled_ratio(counts, self.arrays[0], self.arrays[1])
        if self.statistic == "grouped_kappa":
            from .kappa import kappa_from_confusion  # scikit-learn behind it: loaded only when a κ is resampled

            confusions, attribute_group, *rest = self.arrays
            nominal = rest[0].astype(bool) if rest else None  # per attribute: unweighted κ
            n_attributes, n_labels, n_groups = self.shape
            out = np.full((counts.shape[0], confusions.shape[0], n_groups), np.nan)
            for r in range(confusions.shape[0]):
                resampled = (counts @ confusions[r]).reshape(counts.shape[0], n_attributes, n_labels, n_labels)
                out[:, r, :] = grouped_kappa(kappa_from_confusion(resampled, nominal), attribute_group, n_groups)
            return out
        raise ValueError(f"unknown bootstrap statistic {self.statistic!r}")


class Bootstrap:
    """The bootstraps of one report: requested while its sections are built, computed chunk by chunk after.

    ``request`` takes the resamplings a section needs and a callback that receives their samples (every
    resample, in order) and fills the section's entries. ``chunk_samples`` computes one chunk of every
    request (what a worker does), ``finish`` stacks the chunks in order and runs the callbacks, ``run`` does
    both here. Every request of a chunk uses the same draws when it has the same number of clusters, as a
    fresh generator per bootstrap did: a round's CIs and its selection stability come from the same resamples.
    """

    def __init__(self, *, seed: int, resamples: int):
        self.seed, self.resamples = seed, resamples
        self.requests: list[Resampling] = []
        self._callbacks: list[tuple[list[int], Callable[..., None]]] = []

    def request(self, *resamplings: Resampling, then: Callable[..., None]) -> None:
        first = len(self.requests)
        self.requests.extend(resamplings)
        self._callbacks.append((list(range(first, len(self.requests))), then))

    @property
    def chunks(self) -> int:
        return chunk_count(self.resamples)

    @property
    def cells(self) -> int:
        """Size of the work: resamples x clusters x sample cells, summed over the requests."""
        return sum(self.resamples * r.n_clusters * int(np.prod(r.sample_shape)) for r in self.requests)

    def chunk_samples(self, chunk: int) -> list[np.ndarray]:
        counts: dict[int, np.ndarray] = {}
        out = []
        for resampling in self.requests:
            n = resampling.n_clusters
            if n not in counts:
                counts[n] = counts_of(chunk_picks(n, self.resamples, self.seed, chunk), n)
            out.append(resampling.samples(counts[n]))
        return out

    def finish(self, chunks: Sequence[Sequence[np.ndarray]]) -> None:
        if len(chunks) != self.chunks:
            raise ValueError(f"{len(chunks)} chunks given, {self.chunks} expected")
        samples = [
            np.concatenate([chunk[i] for chunk in chunks]) if chunks else np.zeros((0, *r.sample_shape))
            for i, r in enumerate(self.requests)
        ]
        for ids, then in self._callbacks:
            then(*(samples[i] for i in ids))

    def run(self, progress: Callable[[int, int], None] | None = None) -> None:
        chunks = []
        for chunk in range(self.chunks):
            chunks.append(self.chunk_samples(chunk))
            if progress is not None:
                progress(chunk + 1, self.chunks)
        self.finish(chunks)
