"""The CARE section's core half (``metrics.core.kind_sections``): the recompute of a study bundle reads its rows
from the bundle's files and computes the section as the server does (``care.core.rows``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from metrics.core.kind_sections import CoreSection
from metrics.core.provenance import KindRows

from .rows import JUDGMENTS_FILE, SESSIONS_FILE, care_kind_rows, care_rows_read, care_section_from_rows

FILES = (SESSIONS_FILE, JUDGMENTS_FILE)  # what care_kind_rows writes, in care_rows_read's order


def _compute(block: Mapping[str, Any], texts: Sequence[str], *, seed: int, resamples: int) -> tuple[dict, KindRows]:
    rows = care_rows_read(block, *texts)
    return care_section_from_rows(rows, seed=seed, resamples=resamples), care_kind_rows(rows)


SECTION = CoreSection(files=FILES, compute=_compute)
