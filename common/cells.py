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


def csv_stream(header: Sequence[str], rows: Iterable[Sequence[Any]], *, with_header: bool = True) -> Iterator[str]:
    """The rows as CSV text (the csv module's dialect: quoted where needed, "\r\n" line ends), in chunks, after
    the header line unless ``with_header`` is false.

    Most cells repeat (a study's name, a reviewer, a conversation, a code, a score), so each distinct value is
    formatted once and its text reused: the bytes are those of ``csv.writer`` over ``csv_cell``, several times
    faster. Lists and dicts (unhashable) are formatted each time."""
    buffer = io.StringIO()
    csv.writer(buffer).writerow([csv_cell(name) for name in header])
    parts = [buffer.getvalue()] if with_header else []
    size = sum(map(len, parts))
    # Text and int values, the most common, looked up as they are (a str never equals an int; bool, float and the
    # rest go by _cache_key, as True == 1 == 1.0).
    strings: dict[str | int, str] = {}
    cache: dict[tuple[type, Any], str] = {}
    for row in rows:
        cells = []
        for value in row:
            cls = value.__class__
            if cls is str or cls is int:
                text = strings.get(value)
                if text is None:
                    text = _remember(strings, value, csv_field(value))
                cells.append(text)
                continue
            if value is None:
                cells.append("")
                continue
            key = _cache_key(value)
            text = cache.get(key) if key is not None else None
            if text is None:
                text = csv_field(value)
                if key is not None:
                    _remember(cache, key, text)
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


def jsonl_stream(rows: Iterable[Any], keys: Sequence[str] | None = None) -> Iterator[str]:
    """The rows as JSON Lines (``json.dumps`` of each, ``ensure_ascii=False``), in chunks.

    With ``keys``, each row is a sequence of the values of the first len(row) keys, and its line is exactly
    ``jsonl_line(dict(zip(keys, row)))``: each distinct value of a key is encoded once, as ``"key": value``, and
    its text reused (lists and dicts, unhashable, are encoded each time), several times faster than a dict per
    row."""
    if keys is None:
        yield from _chunks(jsonl_line(row) for row in rows)
        return
    yield from _chunks(_jsonl_lines(rows, keys))


def _jsonl_lines(rows: Iterable[Sequence[Any]], keys: Sequence[str]) -> Iterator[str]:
    prefixes = [json.dumps(key, ensure_ascii=False) + ": " for key in keys]
    nulls = [prefix + "null" for prefix in prefixes]
    empties = [prefix + "[]" for prefix in prefixes]
    # Text and int values, the most common, looked up as they are (a str never equals an int; bool, float and the
    # rest go by _cache_key, as True == 1 == 1.0).
    plain: list[dict[str | int, str]] = [{} for _ in keys]
    others: list[dict[tuple[type, Any], str]] = [{} for _ in keys]
    for row in rows:
        fragments = []
        for prefix, null, empty, strings, cache, value in zip(prefixes, nulls, empties, plain, others, row,
                                                              strict=False):
            cls = value.__class__
            if cls is str or cls is int:
                text = strings.get(value)
                if text is None:
                    text = _remember(strings, value, prefix + json.dumps(value, ensure_ascii=False))
                fragments.append(text)
                continue
            if value is None:
                fragments.append(null)
                continue
            if cls is list and not value:
                fragments.append(empty)
                continue
            key = _cache_key(value)
            text = cache.get(key) if key is not None else None
            if text is None:
                text = prefix + json.dumps(value, ensure_ascii=False)
                if key is not None:
                    _remember(cache, key, text)
            fragments.append(text)
        yield "{" + ", ".join(fragments) + "}\n"


def _remember(cache: dict[Any, str], key: Any, text: str) -> str:
    """Keep ``text`` under ``key``; a cache that is full is forgotten at once (memory stays flat however long the
    export)."""
    if len(cache) >= _CACHED_CELLS:
        cache.clear()
    cache[key] = text
    return text


def _cache_key(value: Any) -> tuple[type, Any] | None:
    """What a value's text is remembered under: its class and itself (True and 1, equal, are told apart), but
    -0.0 apart from 0.0 (equal, with the same hash) and an empty list or dict by its class alone; None for one that
    cannot be (a list or dict with items: formatted each time)."""
    if value.__class__ is float and not value:
        return float, repr(value)
    try:
        hash(value)
    except TypeError:
        return (value.__class__, None) if value.__class__ in (list, dict) and not value else None
    return value.__class__, value


def _chunks(lines: Iterable[str]) -> Iterator[str]:
    parts: list[str] = []
    size = 0
    for line in lines:
        parts.append(line)
        size += len(line)
        if size >= CHUNK:
            yield "".join(parts)
            parts, size = [], 0
    yield "".join(parts)
