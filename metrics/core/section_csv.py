"""Reading a section's CSV from a study bundle (each kind's core ``rows`` module): the rows as dicts, each with its file
and line for the error that names them; a missing column is refused before any row is read."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence


def csv_rows(csv_text: str, name: str, required: Sequence[str]) -> Iterable[tuple[tuple[str, int], dict[str, str]]]:
    """``((name, line), row)`` for each row of ``csv_text`` (the file ``name``); ValueError naming the file and the
    columns when one of ``required`` is missing."""
    reader = csv.DictReader(io.StringIO(csv_text, newline=""))
    missing = [column for column in required if column not in (reader.fieldnames or [])]
    if missing:
        raise ValueError(f"{name}: no column {', '.join(missing)}")
    for row in reader:
        yield (name, reader.line_num), row
