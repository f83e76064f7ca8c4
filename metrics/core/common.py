"""Small array helpers shared by the metric modules: factorising keys, grouped means, JSON-safe output."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from common.rounds import calibration_number

from .tables import Categorical


def factorize(values: Sequence[Any] | np.ndarray | Categorical) -> tuple[list[str], np.ndarray]:
    """Codes of string-like keys, numbered in sorted order of the keys.

    Hashing (set + a C-level map over a dict lookup) instead of np.unique: sorting 10^5-10^6 Python strings is several
    times slower, while the distinct keys (coders, models, conversations) are few and cheap to sort. None becomes "" so
    that a null model and an empty model are one key (the long format accepts both:
    docs/reference.md#long-format-of-judgments). A Categorical column is renumbered with integer operations only (no
    Python object per row).
    """
    if isinstance(values, Categorical):
        return _factorize_categorical(values)
    raw = values if isinstance(values, list) else np.asarray(values).tolist()
    distinct = set(raw)
    normalised = {v: "" if v is None else str(v) for v in distinct}
    uniques = sorted(set(normalised.values()))
    position = {u: i for i, u in enumerate(uniques)}
    code_of = {v: position[n] for v, n in normalised.items()}
    codes = np.fromiter(map(code_of.__getitem__, raw), dtype=np.int64, count=len(raw))
    return uniques, codes


def _factorize_categorical(column: Categorical) -> tuple[list[str], np.ndarray]:
    codes = np.asarray(column.codes, dtype=np.int64)
    names = ["" if v is None else str(v) for v in column.categories]
    used = np.bincount(codes, minlength=len(names)) > 0 if len(codes) else np.zeros(len(names), dtype=bool)
    uniques = sorted({names[i] for i in np.flatnonzero(used).tolist()})
    position = {u: i for i, u in enumerate(uniques)}
    remap = np.array([position.get(n, -1) for n in names] or [-1], dtype=np.int64)
    return uniques, remap[codes] if len(codes) else codes


def factorize_many(parts: Sequence[Sequence[Any] | np.ndarray | Categorical]) -> tuple[list[str], np.ndarray]:
    """``factorize`` of the concatenation of the parts (the same keys and codes), each part factorised alone."""
    factorised = [factorize(part) for part in parts]
    uniques = sorted({u for names, _ in factorised for u in names})
    position = {u: i for i, u in enumerate(uniques)}
    codes = [np.array([position[u] for u in names] or [0], dtype=np.int64)[part_codes] if len(part_codes)
             else part_codes for names, part_codes in factorised]
    return uniques, np.concatenate(codes) if codes else np.zeros(0, dtype=np.int64)


def dense_ids(*columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Number the distinct tuples of small non-negative integer columns; returns (ids, first row of each id).

    Mixed-radix packing into one int64 keeps this to a single np.unique over integers.
    """
    if not columns or len(columns[0]) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    packed = np.zeros(len(columns[0]), dtype=np.int64)
    for col in columns:
        col = np.asarray(col, dtype=np.int64)
        radix = int(col.max()) + 1
        packed = packed * radix + col
    return _number(packed)


def _number(packed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ids, first row) of non-negative integer keys numbered in ascending order, as np.unique's inverse and
    index. Keys within a few times the row count are numbered by a presence table in O(n), not a sort."""
    n, top = len(packed), int(packed.max())
    if top > max(4 * n, 1 << 16):
        _, first, ids = np.unique(packed, return_index=True, return_inverse=True)
        return ids.astype(np.int64), first.astype(np.int64)
    present = np.zeros(top + 1, dtype=bool)
    present[packed] = True
    rank = np.cumsum(present, dtype=np.int64) - 1
    ids = rank[packed]
    first = np.full(int(rank[-1]) + 1, n, dtype=np.int64)
    np.minimum.at(first, ids, np.arange(n, dtype=np.int64))
    return ids, first


def keep_last(keys: np.ndarray) -> np.ndarray:
    """Row indices, in input order, of the last row for every distinct key (a re-coded judgment wins)."""
    if len(keys) == 0:
        return np.zeros(0, dtype=np.int64)
    reversed_keys = np.asarray(keys, dtype=np.int64)[::-1]
    if reversed_keys.min() >= 0:
        _, first_in_reversed = _number(reversed_keys)
    else:
        _, first_in_reversed = np.unique(reversed_keys, return_index=True)
    return np.sort(len(keys) - 1 - first_in_reversed)


def group_sum_count(ids: np.ndarray, values: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Sum and count of the finite values per group; NaN values are treated as absent."""
    values = np.asarray(values, dtype=float)
    ok = np.isfinite(values)
    sums = np.bincount(ids[ok], weights=values[ok], minlength=n_groups)
    counts = np.bincount(ids[ok], minlength=n_groups).astype(float)
    return sums, counts


def group_mean(ids: np.ndarray, values: np.ndarray, n_groups: int) -> np.ndarray:
    """Mean of the finite values per group, NaN for a group with none."""
    sums, counts = group_sum_count(ids, values, n_groups)
    return safe_divide(sums, counts)


def safe_divide(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den with NaN where den is 0, without warnings (an empty denominator means 'undefined')."""
    num = np.asarray(num, dtype=float)
    den = np.asarray(den, dtype=float)
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den != 0)
    return out


def nan_to_none(x: float | np.floating | np.ndarray | None) -> float | None:
    """The report's rule: an undefined number is None, never NaN/inf."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def mean_or_none(values: Iterable[float | None]) -> float | None:
    """Unweighted mean of the defined values; None when none is defined (undefined values are left out)."""
    defined = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    return sum(defined) / len(defined) if defined else None


def ordered_calibration_rounds(names: Iterable[str]) -> list[str]:
    """Calibration round names ordered by their number ("calibration-10" after "calibration-2")."""
    numbered = [(number, name) for name in set(names) if (number := calibration_number(name)) is not None]
    return [name for _, name in sorted(numbered)]


def to_jsonable(obj: Any) -> Any:
    """Recursively turn numpy scalars/arrays into Python values and NaN/inf into None.

    The report contract forbids NaN anywhere (json.dumps(..., allow_nan=False) must succeed); doing it once
    at the end means no metric function can leak a numpy type or a NaN through a forgotten branch.
    """
    kind = type(obj)  # exact types first: the report is mostly plain dicts, strings and floats
    if kind is float:
        return obj if math.isfinite(obj) else None
    if kind is str or kind is int or kind is bool or obj is None:
        return obj
    if kind is dict:
        return {k if type(k) is str else str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [to_jsonable(v) for v in obj.tolist()]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return nan_to_none(obj)
    return obj
