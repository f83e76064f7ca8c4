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


# Distinct values remembered per stream, forgotten all at once when full: rows come grouped (by reviewer, by
# conversation), so the values in use are remembered again at once, and memory stays the same at any size.
_CACHED_CELLS = 4096


def csv_field(value: Any) -> str:
    """One cell as the csv module writes it inside a row (quoted only where needed): formula-neutralised by
    ``csv_cell``, then written beside a second cell, which keeps an empty cell empty as it is in any row of more
    than one column."""
    buffer = io.StringIO()
    csv.writer(buffer).writerow([csv_cell(value), ""])
    return buffer.getvalue()[:-3]  # the "," and "\r\n" after it


def csv_stream(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> Iterator[str]:
    """The rows as CSV text (the csv module's dialect: quoted where needed, "\r\n" line ends), in chunks.

    Most cells repeat (a study's name, a reviewer, a conversation, a code, a score), so each distinct value is
    formatted once and its text reused: the bytes are those of ``csv.writer`` over ``csv_cell``, several times
    faster. Lists and dicts (unhashable) are formatted each time."""
    buffer = io.StringIO()
    csv.writer(buffer).writerow([csv_cell(name) for name in header])
    parts = [buffer.getvalue()]
    size = len(parts[0])
    cache: dict[tuple[type, Any], str] = {}
    for row in rows:
        cells = []
        for value in row:
            try:
                key = (value.__class__, value)
                if value.__class__ is float and not value:  # 0.0 == -0.0 (same hash): keep their texts apart
                    key = (float, repr(value))
                text = cache.get(key)
            except TypeError:  # unhashable: a list or a dict
                key, text = None, None
            if text is None:
                text = csv_field(value)
                if key is not None:
                    if len(cache) >= _CACHED_CELLS:
                        cache.clear()
                    cache[key] = text
            cells.append(text)
        line = (",".join(cells) if len(cells) != 1 or cells[0] else '""') + "\r\n"
        parts.append(line)
        size += len(line)
        if size >= CHUNK:
            yield "".join(parts)
            parts, size = [], 0
    yield "".join(parts)


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
