"""Deterministic synthetic LongCounsel-8 studies (clearly synthetic: numbers only, no transcripts).

Each trajectory follows one of four designed shapes of a latent severity (falling, rising, a spike or a dip in
between, flat), so every trajectory type of the ordered rule is well represented. The reference PHQ-8 items (0-3)
are the latent severity plus item noise, rounded and clipped to the scale; the reference total is their sum (the
derived `PHQ_TOTAL`). Methods predict totals only, as floats (never rounded or clipped): the reference total,
late by their lag (pred_t = lag * y_{t-1} + (1 - lag) * y_t, pred_1 = y_1: a lagging method calls the turn of a
spike in the wrong direction), plus their bias and Gaussian noise
drawn per seed. Raters (seed None) score items on a share of the trajectories: each item moves one step up or down
with their slip probability; their total is the sum of their items.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from .tracking import CoderLabels, Lc8Rules, Lc8Study

ITEMS = 8
SHAPES: tuple[str, ...] = ("falling", "rising", "spike", "flat")
SHAPE_SHARES: tuple[float, ...] = (0.35, 0.2, 0.15, 0.3)
DEFAULT_METHODS: dict[str, tuple[float, float, float]] = {
    "tracker-direct": (3.4, 0.5, 0.0),
    "tracker-lagged": (1.2, -0.3, 0.75),
    "tracker-biased": (2.2, 2.0, 0.2),
}
DEFAULT_RATERS: dict[str, tuple[float, float]] = {"clinician-a": (0.12, 0.25), "clinician-b": (0.22, 0.25)}


def _latent(rng: np.random.Generator, n: int, sessions: int) -> np.ndarray:
    """(n, S) latent severity per item (0-3 scale) following the designed shapes."""
    shape = rng.choice(len(SHAPES), size=n, p=SHAPE_SHARES)
    x = np.linspace(0.0, 1.0, sessions)[None, :]
    start = rng.uniform(0.9, 2.6, size=(n, 1))
    step = rng.uniform(0.6, 1.4, size=(n, 1))  # x 8 items: a net change of about 5 to 11 points
    peak = np.zeros((1, sessions))
    peak[0, sessions // 2] = 1.0
    falling = start - step * x
    rising = np.clip(start, 0.6, 1.6) + step * x
    spike = start + np.where(rng.random((n, 1)) < 0.5, 1.0, -1.0) * step * peak
    flat = start + rng.normal(0.0, 0.08, size=(n, sessions))
    latent = np.select([shape[:, None] == k for k in range(4)], [falling, rising, spike, flat])
    return np.clip(latent, 0.0, 3.0)


def _totals(items: np.ndarray) -> np.ndarray:
    """The derived total of each session: the sum of its items, NaN when an item is missing."""
    return np.where(np.isnan(items).any(axis=2), np.nan, np.nansum(items, axis=2))


def _sprinkle(rng: np.random.Generator, values: np.ndarray, share: float) -> np.ndarray:
    """A copy of values with about `share` of the sessions (all of a session's items together) set to NaN."""
    out = values.copy()
    if share > 0:
        gone = rng.random(values.shape[:2]) < share
        out[gone] = np.nan
    return out


def synthetic_lc8(
    n_trajectories: int = 7749,
    sessions: int = 5,
    methods: Mapping[str, tuple[float, float, float]] | None = None,
    seeds: Sequence[int] = (0, 1, 2),
    raters: Mapping[str, tuple[float, float]] | None = None,
    rng_seed: int = 0,
    *,
    missing: float = 0.0,
    rules: Lc8Rules | None = None,
) -> Lc8Study:
    """A synthetic study: `methods` name -> (noise_sd, bias, lag in [0, 1)), one prediction set per seed in
    `seeds`; `raters` name -> (slip probability per item, share of trajectories rated). `missing` sets about that
    share of every coder's sessions (and of the reference's) to NaN. The methods are the study's `methods` (the
    ranked coders); the raters are not. Deterministic in `rng_seed`."""
    methods = DEFAULT_METHODS if methods is None else methods
    raters = DEFAULT_RATERS if raters is None else raters
    rules = rules or Lc8Rules(sessions=sessions)
    if rules.sessions != sessions:
        raise ValueError(f"rules.sessions ({rules.sessions}) differs from sessions ({sessions})")
    rng = np.random.default_rng(rng_seed)
    latent = _latent(rng, n_trajectories, sessions)
    item_noise = rng.normal(0.0, 0.45, size=(n_trajectories, sessions, ITEMS))
    items = np.clip(np.rint(latent[:, :, None] + item_noise), 0, 3)
    reference_items = _sprinkle(rng, items, missing)
    reference = _totals(reference_items)
    coders: dict[str, CoderLabels] = {}
    clean_total = items.sum(axis=2)
    for name, (noise_sd, bias, lag) in methods.items():
        if not 0 <= lag < 1:
            raise ValueError(f"method {name!r}: lag must be in [0, 1), got {lag}")
        smooth = clean_total.copy()
        smooth[:, 1:] = lag * clean_total[:, :-1] + (1 - lag) * clean_total[:, 1:]
        totals: dict[int | None, np.ndarray] = {}
        for seed in seeds:
            noise = np.random.default_rng([rng_seed, seed, len(name), sum(map(ord, name))]).normal(
                0.0, noise_sd, size=smooth.shape
            )
            totals[seed] = _sprinkle(rng, smooth + bias + noise, missing)
        coders[name] = CoderLabels(totals=totals)
    for name, (slip, coverage) in raters.items():
        moves = rng.choice([-1.0, 1.0], size=items.shape) * (rng.random(items.shape) < slip)
        rated = np.clip(items + moves, 0, 3)
        rated[rng.random(n_trajectories) >= coverage] = np.nan
        rated = _sprinkle(rng, rated, missing)
        coders[name] = CoderLabels(totals={None: _totals(rated)}, items={None: rated})
    keys = tuple(f"lc8-synthetic-{i:05d}" for i in range(n_trajectories))
    return Lc8Study(trajectories=keys, reference=reference, reference_items=reference_items, coders=coders, rules=rules,
                    methods=tuple(methods))
