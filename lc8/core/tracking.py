"""LongCounsel-8 tracking metrics (docs/lc8-metrics.md#definitions): current and change MAE, direction accuracy,
trajectory types, trend agreement, label fidelity, per seed then the mean over seeds, with paired trajectory-bootstrap
CIs, and the method ranking with its change-MAE-versus-direction rank reversals.

Pure numpy/scipy: arrays in, plain JSON-ready data out. Rows are trajectories, columns sessions 1..S; NaN marks a
missing value. The Django side loads `SessionLabel` rows into these arrays. Every reading choice is listed in
docs/lc8-metrics.md (L1..L14 there); `lc8_naive` is an independent slow implementation the tests compare with.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from metrics.core.bootstrap import percentile_interval
from metrics.core.tables import ReportParams

TYPES: tuple[str, ...] = ("improving", "worsening", "fluctuating", "stable")
CI_METRICS: tuple[str, ...] = ("current_mae", "change_mae", "direction_accuracy")
SEED_METRICS: tuple[str, ...] = ("current_mae", "change_mae", "direction_accuracy", "trend_agreement")
FIDELITY_METRICS: tuple[str, ...] = (
    "item_exact",
    "item_mae",
    "total_bias",
    "pearson",
    "spearman",
    "screening_agreement",
    "severe_tail_mae",
)
# how many sessions the fidelity figures cover: the totals' figures, the item figures, the severe tail (L7)
FIDELITY_COUNTS: tuple[str, ...] = ("n_sessions", "n_item_sessions", "n_severe_sessions")


@dataclass(frozen=True)
class Lc8Rules:
    """The thresholds of the schema's `lc8` block (`Lc8Rules.from_block(schema.definition["lc8"])`)."""

    sessions: int = 5
    large_change: float = 5
    screening_cutoff: float = 10
    severe_above: float = 15

    @classmethod
    def from_block(cls, block: dict) -> Lc8Rules:
        """Rules from a schema's `lc8` block; keys missing there keep the defaults above."""
        defaults = cls()
        return cls(
            sessions=int(block.get("sessions", defaults.sessions)),
            large_change=float(block.get("large_change", defaults.large_change)),
            screening_cutoff=float(block.get("screening_cutoff", defaults.screening_cutoff)),
            severe_above=float(block.get("severe_above", defaults.severe_above)),
        )


@dataclass(frozen=True)
class CoderLabels:
    """One coder's labels. `totals`: seed (None: no seed, e.g. a human rater) -> (n, S) float totals, NaN = missing.
    `items`: seed -> (n, S, K) float items (K = the schema's item count), NaN = missing; optional, and a seed may
    be absent from it (that seed then has no item fidelity)."""

    totals: dict[int | None, np.ndarray]
    items: dict[int | None, np.ndarray] | None = None


@dataclass(frozen=True)
class Lc8Study:
    """A study's arrays: the reference (n, S) totals and optional (n, S, K) items, and every coder's labels, all in
    the row order of `trajectories` (keys, e.g. conversation ids). `methods` names the coders that are methods, the
    ones the ranking orders (L10); None: every coder is ranked."""

    trajectories: tuple[str, ...]
    reference: np.ndarray
    reference_items: np.ndarray | None
    coders: dict[str, CoderLabels]
    rules: Lc8Rules = field(default_factory=Lc8Rules)
    methods: tuple[str, ...] | None = None


def _check_rules(rules: Lc8Rules) -> None:
    if rules.sessions < 2:
        raise ValueError(f"lc8 rules: sessions must be at least 2, got {rules.sessions}")
    if not rules.large_change > 0:
        raise ValueError(f"lc8 rules: large_change must be positive, got {rules.large_change}")


def trajectory_types(totals: np.ndarray, rules: Lc8Rules = Lc8Rules()) -> np.ndarray:  # noqa: B008
    """Vectorised `trajectory_type` over the rows of an (n, S) array: an object array of type names or None."""
    _check_rules(rules)
    y = np.asarray(totals, dtype=float)
    if y.ndim != 2 or y.shape[1] != rules.sessions:
        raise ValueError(f"trajectory totals must have shape (n, {rules.sessions}), got {y.shape}")
    out = np.full(y.shape[0], None, dtype=object)
    complete = np.isfinite(y).all(axis=1)
    if not complete.any():
        return out
    full = y[complete]
    net = full[:, -1] - full[:, 0]
    spread = full.max(axis=1) - full.min(axis=1)
    large = rules.large_change
    names = np.select(
        [net <= -large, net >= large, spread >= large],
        [TYPES[0], TYPES[1], TYPES[2]],
        default=TYPES[3],
    )
    out[complete] = names.astype(object)
    return out


def trajectory_type(series: np.ndarray | list[float], rules: Lc8Rules = Lc8Rules()) -> str | None:  # noqa: B008
    """The ordered rule on one S-session series: y_S - y_1 <= -large improving; >= +large worsening; else
    max - min >= large fluctuating; else stable. None when any session is missing (NaN)."""
    y = np.asarray(series, dtype=float)
    if y.ndim != 1:
        raise ValueError(f"a trajectory series must be one-dimensional, got shape {y.shape}")
    value = trajectory_types(y[None, :], rules)[0]
    return None if value is None else str(value)


DRAW_CHUNK = 250  # resamples per block of the bootstrap; bounds memory at (DRAW_CHUNK x n) counts


def _draw_chunks(n_trajectories: int, resamples: int, seed: int) -> Iterator[np.ndarray]:
    """The draw matrix in blocks of rows, all from one `default_rng(seed)` stream in order (L12)."""
    rng = np.random.default_rng(seed)
    done = 0
    while done < resamples:
        rows = min(DRAW_CHUNK, resamples - done)
        yield rng.integers(0, n_trajectories, size=(rows, n_trajectories))
        done += rows


def trajectory_draws(n_trajectories: int, resamples: int, seed: int) -> np.ndarray:
    """(resamples x n) trajectory indices drawn with replacement from `default_rng(seed)` (blocks of DRAW_CHUNK
    rows from the one stream). One matrix shared by every coder and seed of a report (the paired bootstrap);
    `lc8_naive` replays it."""
    if resamples < 0 or n_trajectories < 0:
        raise ValueError("resamples and the number of trajectories must not be negative")
    if resamples == 0 or n_trajectories == 0:
        return np.zeros((resamples, n_trajectories), dtype=np.int64)
    return np.vstack(list(_draw_chunks(n_trajectories, resamples, seed)))


# --- input checks ----------------------------------------------------------------------------------------------


def _as_values(array: np.ndarray, shape: tuple[int, ...], what: str) -> np.ndarray:
    values = np.asarray(array, dtype=float)
    if values.shape != shape:
        raise ValueError(f"{what}: expected shape {shape}, got {values.shape}")
    if np.isinf(values).any():
        raise ValueError(f"{what}: infinite values are not labels (use NaN for a missing value)")
    return values


def _seed_key(seed: int | None) -> str:
    return "none" if seed is None else str(seed)


def _seed_order(seeds: list[int | None]) -> list[int | None]:
    return sorted(seeds, key=lambda s: (s is not None, s if s is not None else 0))


@dataclass(frozen=True)
class _Checked:
    reference: np.ndarray
    reference_items: np.ndarray | None
    coders: dict[str, list[tuple[int | None, np.ndarray, np.ndarray | None]]]
    methods: tuple[str, ...]


def _check(study: Lc8Study) -> _Checked:
    rules = study.rules
    _check_rules(rules)
    reference = np.asarray(study.reference, dtype=float)
    if reference.ndim != 2:
        raise ValueError(f"reference: expected an (n, S) array, got shape {reference.shape}")
    n = len(study.trajectories)
    shape = (n, rules.sessions)
    reference = _as_values(reference, shape, "reference")
    if len(set(study.trajectories)) != n:
        raise ValueError("trajectories: keys must be unique")
    ref_items = None
    if study.reference_items is not None:
        raw = np.asarray(study.reference_items, dtype=float)
        if raw.ndim != 3:
            raise ValueError(f"reference_items: expected an (n, S, K) array, got shape {raw.shape}")
        ref_items = _as_values(raw, (*shape, raw.shape[2]), "reference_items")
    coders: dict[str, list[tuple[int | None, np.ndarray, np.ndarray | None]]] = {}
    for name, labels in study.coders.items():
        if not labels.totals:
            raise ValueError(f"coder {name!r}: no seeds with totals")
        extra = set(labels.items or {}) - set(labels.totals)
        if extra:
            raise ValueError(f"coder {name!r}: items for seeds without totals: {sorted(map(_seed_key, extra))}")
        entries = []
        for seed in _seed_order(list(labels.totals)):
            what = f"coder {name!r} seed {_seed_key(seed)}"
            totals = _as_values(labels.totals[seed], shape, f"{what} totals")
            items = None
            if labels.items is not None and seed in labels.items:
                raw = np.asarray(labels.items[seed], dtype=float)
                k = ref_items.shape[2] if ref_items is not None else (raw.shape[2] if raw.ndim == 3 else 0)
                items = _as_values(raw, (*shape, k), f"{what} items")
            entries.append((seed, totals, items))
        coders[name] = entries
    methods = tuple(study.coders) if study.methods is None else tuple(study.methods)
    unknown = sorted(set(methods) - set(study.coders))
    if unknown:
        raise ValueError(f"methods: {unknown} are not coders of the study")
    return _Checked(reference, ref_items, coders, methods)


# --- per-trajectory sums ----------------------------------------------------------------------------------------

# columns of one (coder, seed) block of per-trajectory sums: each CI metric is a ratio of two of them
_CUR_SUM, _CUR_N, _CHG_SUM, _CHG_N, _DIR_OK, _DIR_N = range(6)
_BLOCK = 6


def _trajectory_sums(pred: np.ndarray, ref: np.ndarray, large: float) -> tuple[np.ndarray, np.ndarray]:
    """(n, 6) per-trajectory sums and counts of one seed, and the (n, S-1) mask of its scored large transitions."""
    both = np.isfinite(pred) & np.isfinite(ref)
    err = np.where(both, np.abs(pred - ref), 0.0)
    d_pred = np.diff(pred, axis=1)
    d_ref = np.diff(ref, axis=1)
    pair = np.isfinite(d_pred) & np.isfinite(d_ref)
    change_err = np.where(pair, np.abs(d_pred - d_ref), 0.0)
    big = pair & (np.abs(np.where(pair, d_ref, 0.0)) >= large)
    right = big & (np.sign(np.where(big, d_pred, 0.0)) == np.sign(np.where(big, d_ref, 0.0)))
    sums = np.column_stack(
        [
            err.sum(axis=1),
            both.sum(axis=1),
            change_err.sum(axis=1),
            pair.sum(axis=1),
            right.sum(axis=1),
            big.sum(axis=1),
        ]
    ).astype(float)
    return sums, big


def _ratio(num: float, den: float) -> float | None:
    return float(num / den) if den > 0 else None


def _mean_defined(values: list[float | None]) -> float | None:
    defined = [v for v in values if v is not None]
    return float(np.mean(defined)) if defined else None


def _seed_figures(pred: np.ndarray, ref_types: np.ndarray, sums: np.ndarray, rules: Lc8Rules) -> dict[str, object]:
    total = sums.sum(axis=0)
    pred_types = trajectory_types(pred, rules)
    scored = np.array([a is not None and b is not None for a, b in zip(pred_types, ref_types, strict=True)], bool)
    agree = np.array([a == b for a, b in zip(pred_types, ref_types, strict=True)], bool) & scored
    by_type = {}
    for name in TYPES:
        rows = ref_types == name
        by_type[name] = _ratio(sums[rows, _CUR_SUM].sum(), sums[rows, _CUR_N].sum())
    return {
        "current_mae": _ratio(total[_CUR_SUM], total[_CUR_N]),
        "change_mae": _ratio(total[_CHG_SUM], total[_CHG_N]),
        "direction_accuracy": _ratio(total[_DIR_OK], total[_DIR_N]),
        "trend_agreement": _ratio(float(agree.sum()), float(scored.sum())),
        "mae_by_type": by_type,
    }


# --- fidelity -----------------------------------------------------------------------------------------------------


def _correlation(kind: str, x: np.ndarray, y: np.ndarray) -> float | None:
    if x.size < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    result = stats.pearsonr(x, y) if kind == "pearson" else stats.spearmanr(x, y)
    value = float(result.statistic)
    return value if np.isfinite(value) else None


def _seed_fidelity(
    pred: np.ndarray,
    ref: np.ndarray,
    items: np.ndarray | None,
    ref_items: np.ndarray | None,
    rules: Lc8Rules,
    covered: np.ndarray,
) -> dict[str, float | None]:
    """One seed's fidelity figures. Adds the sessions each kind of figure uses to `covered` ((3, n, S) booleans:
    the totals' sessions, the item sessions, the severe-tail sessions), for the counts over all seeds."""
    both = np.isfinite(pred) & np.isfinite(ref)
    p, r = pred[both], ref[both]
    out: dict[str, float | None] = {"item_exact": None, "item_mae": None}
    if items is not None and ref_items is not None:
        have = np.isfinite(items) & np.isfinite(ref_items)
        if have.any():
            out["item_exact"] = float(np.mean(items[have] == ref_items[have]))
            out["item_mae"] = float(np.mean(np.abs(items[have] - ref_items[have])))
            covered[1] |= have.any(axis=2)
    covered[0] |= both
    covered[2] |= both & (ref > rules.severe_above)
    severe = r > rules.severe_above
    out.update(
        total_bias=float(np.mean(p - r)) if p.size else None,
        pearson=_correlation("pearson", p, r),
        spearman=_correlation("spearman", p, r),
        screening_agreement=(
            float(np.mean((p >= rules.screening_cutoff) == (r >= rules.screening_cutoff))) if p.size else None
        ),
        severe_tail_mae=float(np.mean(np.abs(p[severe] - r[severe]))) if severe.any() else None,
    )
    return out


# --- bootstrap ----------------------------------------------------------------------------------------------------


def _intervals(sums: np.ndarray, seeds_of: list[int], n_coders: int, resamples: int,
               seed: int, level: float) -> tuple[np.ndarray, np.ndarray]:
    """(n_coders, 3, 2) percentile intervals at ``level`` (NaN where no draw defines one) of the three CI metrics,
    and (n_coders, 3) the resamples each rests on: those where its figure is defined (both
    ``metrics.core.bootstrap.percentile_interval``, the one rule of every interval of the report).

    `sums` is (n, 6 * blocks), one block per (coder, seed); `seeds_of[j]` is the coder of block j. Every block is
    resampled by the same draws: a block of draws is one (rows x n) count matrix, times `sums`, in one product.
    """
    n = sums.shape[0]
    blocks = len(seeds_of)
    samples = np.full((resamples, n_coders, 3), np.nan)
    if n == 0 or resamples == 0 or blocks == 0:
        return np.full((n_coders, 3, 2), np.nan), np.zeros((n_coders, 3), dtype=np.int64)
    owner = np.zeros((blocks, n_coders))
    owner[np.arange(blocks), seeds_of] = 1.0
    start = 0
    for picks in _draw_chunks(n, resamples, seed):
        rows = picks.shape[0]
        offsets = (np.arange(rows, dtype=np.int64) * n)[:, None]
        counts = np.bincount((picks + offsets).ravel(), minlength=rows * n).reshape(rows, n).astype(float)
        drawn = (counts @ sums).reshape(rows, blocks, _BLOCK)
        num = drawn[:, :, [_CUR_SUM, _CHG_SUM, _DIR_OK]]
        den = drawn[:, :, [_CUR_N, _CHG_N, _DIR_N]]
        ratio = np.divide(num, den, out=np.zeros_like(num), where=den > 0)
        defined = (den > 0).astype(float)
        # per seed, then the mean over the seeds defined in this draw (L13)
        total = np.einsum("rbm,bc->rcm", ratio, owner)
        count = np.einsum("rbm,bc->rcm", defined, owner)
        samples[start : start + rows] = np.divide(total, count, out=np.full_like(total, np.nan), where=count > 0)
        start += rows
    low, high, used = percentile_interval(samples, level)
    return np.stack([low, high], axis=-1), used


def _pair(interval: np.ndarray) -> list[float | None]:
    return [float(v) if np.isfinite(v) else None for v in interval]


# --- ranking ------------------------------------------------------------------------------------------------------


def _ranking(coders: dict[str, dict], methods: tuple[str, ...]) -> dict[str, list]:
    """The methods by current MAE and change MAE (ascending) and by direction accuracy (descending), each leaving
    out the methods whose figure is undefined, ties by name; `reversals` lists [a, b] where a has the strictly lower
    change MAE and b the strictly higher direction accuracy, in the order of `by_change_mae` (L10)."""

    def defined(metric: str) -> dict[str, float]:
        return {c: coders[c][metric] for c in methods if coders[c][metric] is not None}

    current, change, direction = defined("current_mae"), defined("change_mae"), defined("direction_accuracy")
    by_current = sorted(current, key=lambda c: (current[c], c))
    by_change = sorted(change, key=lambda c: (change[c], c))
    by_direction = sorted(direction, key=lambda c: (-direction[c], c))
    reversals = [
        [a, b]
        for i, a in enumerate(by_change)
        for b in by_change[i + 1 :]
        if a in direction and b in direction and change[a] < change[b] and direction[b] > direction[a]
    ]
    return {
        "by_current_mae": by_current,
        "by_change_mae": by_change,
        "by_direction_accuracy": by_direction,
        "reversals": reversals,
    }


def lc8_report(study: Lc8Study, *, resamples: int = 2000, seed: int = 0,
               level: float = ReportParams.ci_level) -> dict:
    """The report's ``lc8`` section, JSON-ready (floats, None where undefined, lists; docs/lc8-metrics.md#output):

    {"coders": {CODER: {current_mae, change_mae, direction_accuracy, trend_agreement, n_trajectories,
                        n_large_changes, mae_by_type: {TYPE: mae}, ci: {current_mae|change_mae|direction_accuracy:
                        [lo, hi]}, ci_trajectories: {the same: trajectories its interval rests on},
                        ci_resamples: {the same: resamples its interval rests on, those where its figure is
                        defined}, n_seeds,
                        per_seed: {SEED: {current_mae, change_mae, direction_accuracy, trend_agreement}}}},
     "reference_types": {TYPE: count}, "fidelity": {CODER: {item_exact, item_mae, total_bias, pearson, spearman,
     screening_agreement, severe_tail_mae, n_sessions, n_item_sessions, n_severe_sessions}},
     "ranking": {"by_current_mae": [METHOD, ...], "by_change_mae": [...], "by_direction_accuracy": [...],
     "reversals": [[a, b], ...]}, "resamples": B, "seed": seed}

    ``ci`` is the percentile interval at ``level`` (the report's ``ci_level``). SEED keys are str(seed), "none" for
    the seed None. Raises ValueError (naming the coder, seed and shape) when
    an array does not match the reference's shape or S != rules.sessions.
    """
    if resamples < 0:
        raise ValueError(f"resamples must not be negative, got {resamples}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie strictly between 0 and 1, got {level}")
    rules = study.rules
    checked = _check(study)
    ref = checked.reference
    ref_types = trajectory_types(ref, rules)
    names = list(checked.coders)
    blocks: list[np.ndarray] = []
    block_owner: list[int] = []
    coders: dict[str, dict] = {}
    fidelity: dict[str, dict] = {}
    for index, name in enumerate(names):
        per_seed: dict[str, dict] = {}
        fid_seeds: list[dict[str, float | None]] = []
        scored_rows = np.zeros(ref.shape[0], dtype=bool)
        # per CI metric, the trajectories with a term of it in some seed: the only ones a resample's draw of them
        # moves, hence the clusters its interval rests on
        carrying = np.zeros((ref.shape[0], len(CI_METRICS)), dtype=bool)
        scored_large = np.zeros((ref.shape[0], rules.sessions - 1), dtype=bool)
        covered = np.zeros((len(FIDELITY_COUNTS), *ref.shape), dtype=bool)
        for seed_value, totals, items in checked.coders[name]:
            sums, big = _trajectory_sums(totals, ref, rules.large_change)
            blocks.append(sums)
            block_owner.append(index)
            scored_rows |= sums[:, _CUR_N] > 0
            carrying |= sums[:, [_CUR_N, _CHG_N, _DIR_N]] > 0
            scored_large |= big
            per_seed[_seed_key(seed_value)] = _seed_figures(totals, ref_types, sums, rules)
            fid_seeds.append(_seed_fidelity(totals, ref, items, checked.reference_items, rules, covered))
        entry: dict[str, object] = {m: _mean_defined([s[m] for s in per_seed.values()]) for m in SEED_METRICS}
        entry["n_trajectories"] = int(scored_rows.sum())
        entry["ci_trajectories"] = {m: int(carrying[:, j].sum()) for j, m in enumerate(CI_METRICS)}
        entry["n_large_changes"] = int(scored_large.sum())
        entry["mae_by_type"] = {t: _mean_defined([s["mae_by_type"][t] for s in per_seed.values()]) for t in TYPES}
        entry["n_seeds"] = len(per_seed)
        entry["per_seed"] = {k: {m: s[m] for m in SEED_METRICS} for k, s in per_seed.items()}
        coders[name] = entry
        fidelity[name] = {m: _mean_defined([f[m] for f in fid_seeds]) for m in FIDELITY_METRICS}
        fidelity[name].update({m: int(covered[j].sum()) for j, m in enumerate(FIDELITY_COUNTS)})
    sums_all = np.hstack(blocks) if blocks else np.zeros((ref.shape[0], 0))
    intervals, used = _intervals(sums_all, block_owner, len(names), resamples, seed, level)
    for index, name in enumerate(names):
        coders[name]["ci"] = {m: _pair(intervals[index, j]) for j, m in enumerate(CI_METRICS)}
        # of the B resamples, those each interval rests on (the others, where its figure is undefined, left out)
        coders[name]["ci_resamples"] = {m: int(used[index, j]) for j, m in enumerate(CI_METRICS)}
    return {
        "coders": coders,
        "reference_types": {t: int(np.sum(ref_types == t)) for t in TYPES},
        "fidelity": fidelity,
        "ranking": _ranking(coders, checked.methods),
        "resamples": resamples,
        "seed": seed,
    }
