"""The LongCounsel-8 section's core half (``metrics.core.kind_sections``): the recompute of a study bundle reads
its rows from the bundle's files and computes the section as the server does (``lc8.core.rows``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from metrics.core.kind_sections import CoreSection
from metrics.core.provenance import KindRows

from .rows import JUDGMENTS_FILE, LABELS_FILE, SESSIONS_FILE, lc8_kind_rows, lc8_rows_read, lc8_section_from_rows

FILES = (SESSIONS_FILE, LABELS_FILE, JUDGMENTS_FILE)  # what lc8_kind_rows writes, in lc8_rows_read's order


def _compute(block: Mapping[str, Any], texts: Sequence[str], *, seed: int, resamples: int) -> tuple[dict, KindRows]:
    rows = lc8_rows_read(block, *texts)
    return lc8_section_from_rows(rows, seed=seed, resamples=resamples), lc8_kind_rows(rows)


SECTION = CoreSection(files=FILES, compute=_compute)
