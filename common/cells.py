"""The one CSV / JSON Lines writer of every export, with spreadsheet-formula neutralisation (pure: no Django).

A CSV cell that a spreadsheet would run as a formula (it begins with ``=``, ``+``, ``-``, ``@``, a tab or a
carriage return) is written with a leading single quote. So that the importer can undo exactly that and nothing
else, a cell that already begins with a quote gets one more quote too: ``neutralise`` is then injective, and
``unneutralise(neutralise(x)) == x`` for every string. Numbers are written as they are (a number is not a formula).

Every writer yields text in chunks of about 64 KiB while it reads its rows, so memory stays flat whatever the
size of the export.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
_QUOTED = (*FORMULA_TRIGGERS, "'")
CHUNK = 64 * 1024


def neutralise(cell: str) -> str:
    return "'" + cell if cell.startswith(_QUOTED) else cell


def unneutralise(cell: str) -> str:
    """The inverse of ``neutralise``: strips one leading quote only where ``neutralise`` would have added it."""
    return cell[1:] if cell.startswith("'") and cell[1:].startswith(_QUOTED) else cell


def csv_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return neutralise(value)
    return neutralise(json.dumps(value, ensure_ascii=False))


def csv_stream(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow([csv_cell(name) for name in header])
    for row in rows:
        writer.writerow([csv_cell(value) for value in row])
        if buffer.tell() >= CHUNK:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def jsonl_line(row: Any) -> str:
    return json.dumps(row, ensure_ascii=False) + "\n"


def jsonl_stream(rows: Iterable[Any]) -> Iterator[str]:
    parts: list[str] = []
    size = 0
    for row in rows:
        line = jsonl_line(row)
        parts.append(line)
        size += len(line)
        if size >= CHUNK:
            yield "".join(parts)
            parts, size = [], 0
    yield "".join(parts)
