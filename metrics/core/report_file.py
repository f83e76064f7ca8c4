"""The ``report.json`` file: a report led by the run it came from (docs/metrics.md#provenance), as the exports page,
the API, a study bundle and the bundle's recompute all write it, so the same report is the same bytes wherever it
was computed (docs/bundle.md#recompute).

A stored report comes back from PostgreSQL's ``jsonb``, which keeps the values but not the writer's key order (it
orders an object's keys by length, then byte by byte) and keeps numbers as decimals (a ``-0.0`` comes back as
``0.0``, a float written with an exponent such as ``1e+16`` as the integer it equals). A report computed elsewhere
is put in that same canonical form here, so both sides write identical text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def _key(name: str) -> tuple[int, bytes]:
    encoded = name.encode("utf-8")
    return len(encoded), encoded


def canonical(value: Any) -> Any:
    """The value as a ``jsonb`` column gives it back: object keys in jsonb's order, ``-0.0`` as ``0.0``, a float
    that JSON writes with a positive exponent as its integer; tuples as lists."""
    if isinstance(value, Mapping):
        return {str(name): canonical(value[name]) for name in sorted(value, key=lambda n: _key(str(n)))}
    if isinstance(value, list | tuple):
        return [canonical(item) for item in value]
    if isinstance(value, float):
        if value == 0.0:
            return 0.0
        if "e+" in repr(value):
            return int(value)
    return value


def report_file_text(run: Mapping[str, Any], report: Mapping[str, Any]) -> str:
    """The file: ``{"run": …, **report}``, keys in canonical order within, one space of indent, UTF-8 text as it is
    (``ensure_ascii=False``)."""
    if "run" in report:
        raise ValueError("the report already has a run block: pass the stored report, not a report file")
    return json.dumps({"run": canonical(run), **canonical(report)}, ensure_ascii=False, indent=1)
