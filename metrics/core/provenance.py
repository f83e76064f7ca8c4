"""The fingerprint of a report's input: a SHA-256 over the judgment and span rows it read, so two reports can be told
apart and a figure traced to its data (docs/metrics.md#provenance).

It hashes what the rows say, not how they were handed over, as the report itself does:
- a text column counts by its values, whether it came as a ``Categorical`` (codes into categories in the database's
  order) or as a plain array, and categories no row uses do not count; numbers count by value (binary64; every NaN
  alike, -0.0 as 0.0);
- row order does not count (the report does not depend on it): each row gets a 64-bit hash of its canonical values
  (SplitMix64 mixing, vectorised), the row hashes are sorted, and the SHA-256 covers each column's distinct values
  and the sorted row hashes. Sorting 64-bit hashes costs a few tens of milliseconds at paper scale, where sorting
  the rows themselves (``np.lexsort`` over nine columns) took half a second.
The section of a study kind reads more rows than the judgments (its sessions, labels and judgments as the section
sees them, in the kind's core: ``<kind>.core.rows``); ``fingerprint_rows`` folds them into the
fingerprint, in their order (a later judgment replaces an earlier one there), and leaves a study without them (the
default kind) with the judgments' fingerprint unchanged.
Written by hand because the fingerprint has to be this exact canonical form, which no library defines for our
tables; two different inputs get one fingerprint only if their row hashes collide (64 bits a row).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from common.cells import csv_stream

from .tables import Categorical, JudgmentTable, SpanTable

PREFIX = "sha256:"
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def fingerprint(judgments: JudgmentTable, spans: SpanTable | None = None) -> str:
    """``sha256:<hex>`` of the judgment rows and the span rows (None: no span rows)."""
    digest = hashlib.sha256(b"cab-input-v1\n")
    for name, table in (("judgments", judgments), ("spans", spans)):
        rows = 0 if table is None else len(table)
        digest.update(f"{name} {rows}\n".encode())
        if table is None or not rows:
            continue
        row_hash = np.zeros(rows, dtype=np.uint64)
        for number, field in enumerate(dataclasses.fields(table)):
            values, codes = _canonical(getattr(table, field.name))
            head = json.dumps([field.name, values], ensure_ascii=False).encode()
            digest.update(len(head).to_bytes(8, "little") + head)
            salt = np.uint64((number + 1) * int(_GOLDEN) % 2**64)  # a different mix for each column
            row_hash = _mix(row_hash ^ (codes + salt))
        digest.update(np.sort(row_hash).astype("<u8").tobytes())
    return PREFIX + digest.hexdigest()


KindRows = tuple[Mapping[str, Any], Mapping[str, tuple[Sequence[str], Iterable[Sequence[Any]]]]]


def fingerprint_rows(base: str, rows: KindRows | None) -> str:
    """``base`` (the judgments' fingerprint) with the rows a kind's section reads: (run.json's blocks of the kind,
    its tables as path -> (header, rows)), the bytes the study bundle writes for them, tables in path order and rows
    in their order. ``base`` itself when there are none (a study of the default kind)."""
    if rows is None or not (rows[0] or rows[1]):
        return base
    blocks, tables = rows
    digest = hashlib.sha256(b"cab-input-rows-v1\n" + base.encode() + b"\n")
    for name in sorted(blocks):
        digest.update(json.dumps([name, blocks[name]], ensure_ascii=False, sort_keys=True).encode() + b"\n")
    for path in sorted(tables):
        header, body = tables[path]
        digest.update(f"{path}\n".encode())
        for chunk in csv_stream(header, body):
            digest.update(chunk.encode())
    return PREFIX + digest.hexdigest()


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's step, elementwise and in place (uint64 arithmetic wraps, as the algorithm wants)."""
    x += _GOLDEN
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


def _canonical(column: Any) -> tuple[list[str] | str, np.ndarray]:
    """A column as (its distinct values sorted, each row's index into them) for text, or ("number", each row's
    binary64 bits) for numbers; both as uint64."""
    if isinstance(column, Categorical):
        codes = np.asarray(column.codes, dtype=np.int64)
        used = np.flatnonzero(np.bincount(codes, minlength=len(column.categories)))  # O(n), no sort
        values, remap = _text([str(column.categories[code]) for code in used.tolist()], np.arange(len(used)))
        lookup = np.zeros(len(column.categories), dtype=np.uint64)
        lookup[used] = remap
        return values, lookup[codes]
    array = np.asarray(column)
    if array.dtype.kind in "biuf":
        numbers = array.astype(np.float64) + 0.0  # -0.0 + 0.0 is 0.0
        numbers[np.isnan(numbers)] = np.nan  # one NaN, whatever its bits
        return "number", numbers.view(np.uint64)
    distinct, index = np.unique(array.astype(str), return_inverse=True)
    return _text(distinct.tolist(), index)


def _text(values: list[str], index: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Rows indexing ``values`` (distinct codes, any order, possibly equal strings) as rows indexing the sorted
    distinct strings."""
    merged = sorted(set(values))
    rank = {value: position for position, value in enumerate(merged)}
    remap = np.array([rank[value] for value in values] or [0], dtype=np.uint64)
    return merged, remap[np.asarray(index, dtype=np.int64).reshape(-1)]
