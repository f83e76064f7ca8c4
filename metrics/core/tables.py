"""Plain input records of the metrics core: the schema, the judgments and spans as columns, the parameters.

The Django side loads rows into these columnar arrays with one query each; everything downstream is numpy.
Nothing here knows an attribute code: the schema arrives as data (STYLE habit 5).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

GROUPS = ("user", "response", "flag")
UNITS = ("turn", "response", "conversation")
LEVELS = ("nominal", "ordinal", "interval", "ratio")


@dataclass(frozen=True)
class AttributeSpec:
    """One schema attribute, with everything the maths needs to treat it without knowing its code."""

    code: str
    group: str
    cluster: str | None
    scale: tuple[int, ...]
    level: str
    bucket: Mapping[int, int]
    risk: Mapping[int, float] | None
    uiri: bool
    unit: str

    def validate(self) -> None:
        """Refuse a spec that would make a metric silently wrong rather than fail later inside numpy."""
        where = f"attribute {self.code!r}"
        if not self.code:
            raise ValueError("attribute code must be a non-empty string")
        if not self.group:
            raise ValueError(f"{where}: group must be a non-empty string")
        if self.unit not in UNITS:
            raise ValueError(f"{where}: unit must be one of {UNITS}, got {self.unit!r}")
        if self.level not in LEVELS:
            raise ValueError(f"{where}: level must be one of {LEVELS}, got {self.level!r}")
        scale = tuple(self.scale)
        if not scale or any(int(v) != v for v in scale) or list(scale) != sorted(set(scale)):
            raise ValueError(f"{where}: scale must be strictly increasing integers, got {scale!r}")
        unknown = set(self.bucket) - set(scale)
        if unknown:
            raise ValueError(f"{where}: bucket maps values outside the scale: {sorted(unknown)}")
        if self.risk is not None:
            if set(self.risk) != set(scale):
                raise ValueError(f"{where}: risk encoding must cover exactly the scale {scale!r}")
            if any(not (0.0 <= float(v) <= 1.0) for v in self.risk.values()):
                raise ValueError(f"{where}: risk values must lie in [0, 1]")
        if self.uiri and max(scale) <= 0:
            raise ValueError(f"{where}: a UIRI attribute needs a positive scale maximum")


@dataclass(frozen=True, eq=False)
class Categorical:
    """A string column as integer codes into its distinct values (what a database hands over as foreign keys):
    the core factorises it with integer operations instead of hashing one Python string per row. Reads as the
    plain object array it stands for (``np.asarray``), so any column consumer works unchanged."""

    codes: np.ndarray  # int, index into categories
    categories: Sequence[Any]

    def __len__(self) -> int:
        return len(self.codes)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        values = np.empty(len(self.categories), dtype=object)
        values[:] = list(self.categories)
        return values[np.asarray(self.codes, dtype=np.int64)].astype(dtype or object, copy=False)

    def __getitem__(self, index: Any) -> Any:
        return np.asarray(self)[index]

    def tolist(self) -> list[Any]:
        return np.asarray(self).tolist()


Column = np.ndarray | Categorical


@dataclass(frozen=True, eq=False)
class JudgmentTable:
    """One row per judgment; equal-length columns (see the module docstring for why columnar)."""

    round: Column
    coder: Column
    is_gold: np.ndarray
    dataset: Column
    conversation: Column
    turn: np.ndarray
    model: Column
    attribute: Column
    score: np.ndarray

    def __len__(self) -> int:
        return len(self.round)


@dataclass(frozen=True, eq=False)
class SpanTable:
    """One row per highlighted span; key columns as in JudgmentTable, offsets end-exclusive."""

    round: Column
    coder: Column
    is_gold: np.ndarray
    dataset: Column
    conversation: Column
    turn: np.ndarray
    model: Column
    attribute: Column
    start: np.ndarray
    end: np.ndarray
    subcategory: Column

    def __len__(self) -> int:
        return len(self.round)


@dataclass(frozen=True)
class ReportParams:
    """Every study-level choice the report depends on; echoed in the report so a figure can be re-derived.

    The fields after `panel` are the protocol's defaults, which stay configurable (docs/metrics.md).
    """

    seed: int = 0
    bootstrap: int = 1000
    top_k: tuple[int, ...] = (4, 5, 6)
    slope_flat_threshold: float = 0.005
    ci_level: float = 0.95
    # Coders who are gold-panel experts: never reviewers (not in the reviewers' figures, pairs, bootstrap or
    # panel); the calibration section reports them apart.
    experts: tuple[str, ...] = ()
    # Automated coders (members of role method, such as an LLM judge): never reviewers either, and not in the
    # main round's indices; they have no section of their own here (a study kind's section may compare them).
    methods: tuple[str, ...] = ()
    # The study's model slots (``Study.model_slots``; none: the study names none): a slot no reviewer scored a
    # response of has no row in the per-model indices, and the report's warnings name it.
    models: tuple[str, ...] = ()
    panel: tuple[str, ...] | None = None
    panel_size: int = 6  # docs/metrics.md#panel-selection: the admin retains the top k of the last calibration round
    ci_resample: str = "conversation"  # main-round CIs resample "conversation"s or "turn"s
    uiri_bands: tuple[float, float] = (0.30, 0.60)
    coupling_min_abs_rho: float = 0.20
    coupling_max_q: float = 0.05
    coupling_input_group: str = "user"
    coupling_output_groups: tuple[str, ...] = ("response",)

    def validate(self) -> None:
        if self.bootstrap < 0:
            raise ValueError("bootstrap must be >= 0")
        if any(k < 1 for k in self.top_k) or self.panel_size < 1:
            raise ValueError("top_k values and panel_size must be >= 1")
        if not (0.0 < self.ci_level < 1.0):
            raise ValueError("ci_level must lie strictly between 0 and 1")
        if self.ci_resample not in ("conversation", "turn"):
            raise ValueError("ci_resample must be 'conversation' or 'turn'")
        if self.slope_flat_threshold < 0:
            raise ValueError("slope_flat_threshold must be >= 0")
        for name, names, what in (("experts", self.experts, "coder"), ("methods", self.methods, "coder"),
                                  ("models", self.models, "model slot")):
            if isinstance(names, str) or not all(isinstance(one, str) for one in names):
                raise ValueError(f"{name} must be a tuple of {what} names")
        low, high = self.uiri_bands
        if not (0.0 <= low <= high <= 1.0):
            raise ValueError("uiri_bands must be 0 <= low <= high <= 1")

    def as_dict(self) -> dict[str, object]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> ReportParams:
        """The parameters a report echoes (``as_dict`` as JSON gives them back: lists for tuples), as parameters
        again; a key this version does not know is refused by name, a missing one takes its default."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown report parameters: {', '.join(unknown)}")
        given: dict[str, Any] = {name: tuple(value) if isinstance(value, list) else value
                                 for name, value in values.items()}
        return cls(**given)


def check_columns(table: JudgmentTable | SpanTable, name: str) -> None:
    """Columns of unequal length would silently misalign every key; say which one is off."""
    lengths = {f.name: _length(getattr(table, f.name)) for f in fields(table)}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"{name} columns have unequal lengths: {lengths}")


def _length(column: object) -> int:
    return len(column) if isinstance(column, Categorical | np.ndarray) else len(np.asarray(column))
