"""The comparison of a report section with an independent oracle's (tests/care/test_report_oracle.py,
tests/lc8/test_report_oracle.py): every key of either, floats to 1e-9 relative, lists of floats item by item."""

from __future__ import annotations

import math
from typing import Any


def differences_of(got: Any, expected: Any, path: str, differences: list[str]) -> None:
    """Append to ``differences`` each place where the report (``got``) and the oracle (``expected``) part, by path."""
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            differences.append(f"{path}: {got!r} is not a mapping")
            return
        for key in sorted(set(expected) | set(got), key=str):
            if key not in got or key not in expected:
                differences.append(f"{path}.{key}: only in {'the oracle' if key in expected else 'the report'}")
            else:
                differences_of(got[key], expected[key], f"{path}.{key}", differences)
    elif isinstance(expected, list) and expected and isinstance(expected[0], float):
        if not isinstance(got, list) or len(got) != len(expected):
            differences.append(f"{path}: report {got!r}, oracle {expected!r}")
        else:
            for i, (g, e) in enumerate(zip(got, expected, strict=True)):
                differences_of(g, e, f"{path}[{i}]", differences)
    elif isinstance(expected, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        if not math.isclose(got, expected, rel_tol=1e-9, abs_tol=1e-12):
            differences.append(f"{path}: report {got!r}, oracle {expected!r}")
    elif got != expected:
        differences.append(f"{path}: report {got!r}, oracle {expected!r}")
