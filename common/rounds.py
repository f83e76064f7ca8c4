"""Round names of the interchange format, ``calibration-N`` and ``main`` (pure: no Django).

Every place that writes, parses or routes a round name uses this module: the model's ``name``, the long format,
the report, the API's URL patterns and OpenAPI schema.
"""

from __future__ import annotations

import re

CALIBRATION = "calibration"
MAIN = "main"
# As a URL / OpenAPI pattern (bounded, so a number always fits the database column).
NAME_PATTERN = r"calibration-[1-9][0-9]{0,8}|main"
_NAME = re.compile(rf"(?:{NAME_PATTERN})")  # used with fullmatch: "$" would also match before a final newline
DESCRIPTION = "calibration-N or main"


def round_name(kind: str, number: int) -> str:
    return f"{CALIBRATION}-{number}" if kind == CALIBRATION else MAIN


def round_parse(name: str) -> tuple[str, int] | None:
    """``calibration-N`` -> ("calibration", N), ``main`` -> ("main", 1); None for anything else."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        return None
    if name == MAIN:
        return MAIN, 1
    return CALIBRATION, int(name.partition("-")[2])


def calibration_number(name: str) -> int | None:
    parsed = round_parse(name)
    return parsed[1] if parsed is not None and parsed[0] == CALIBRATION else None
