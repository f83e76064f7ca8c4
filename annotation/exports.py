"""Streaming CSV and JSON Lines writers for researcher downloads, with spreadsheet-formula neutralisation.

A CSV cell that a spreadsheet would run as a formula (it begins with ``=``, ``+``, ``-``, ``@``, a tab or a
carriage return) is written with a leading single quote. So that the importer can undo exactly that and nothing
else, a cell that already begins with a quote gets one more quote too: ``neutralise`` is then injective, and
``unneutralise(neutralise(x)) == x`` for every string. Numbers are written as they are (a number is not a formula,
and our numeric columns are never negative anyway).

Every writer yields text in chunks of about 64 KiB while it reads rows from a server-side cursor, so memory stays
flat whatever the size of the study.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from annotation import selectors
from annotation.models import Study

FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
_QUOTED = (*FORMULA_TRIGGERS, "'")
_CHUNK = 64 * 1024


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
        if buffer.tell() >= _CHUNK:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def jsonl_stream(rows: Iterable[Any]) -> Iterator[str]:
    parts: list[str] = []
    size = 0
    for row in rows:
        line = json.dumps(row, ensure_ascii=False) + "\n"
        parts.append(line)
        size += len(line)
        if size >= _CHUNK:
            yield "".join(parts)
            parts, size = [], 0
    yield "".join(parts)


def judgments_csv(*, study: Study) -> Iterator[str]:
    """The study's judgments in the SPEC §6 long format as CSV: empty cell for no model, no instance count and
    no spans; spans as a JSON list."""
    from annotation.judgment_import import COLUMNS

    def cells(row: dict) -> list[Any]:
        flat = row | {"model": row["model"] or "",
                      "spans": json.dumps(row["spans"], ensure_ascii=False) if row["spans"] else ""}
        return [flat[column] for column in COLUMNS]

    return csv_stream(COLUMNS, (cells(row) for row in selectors.judgment_rows(study=study)))


def judgments_jsonl(*, study: Study) -> Iterator[str]:
    return jsonl_stream(selectors.judgment_rows(study=study))
