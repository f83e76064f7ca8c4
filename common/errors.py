"""Row-level validation errors shared by every importer and ingestion endpoint: which row, which field, why."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import IO, Any

# Text PostgreSQL cannot store (NUL; lone surrogates, which JSON escapes can make), refused by every importer before
# any query, in these words.
UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
UNSTORABLE_MESSAGE = "contains a NUL or lone surrogate character"


@dataclass(frozen=True, order=True)
class RowError:
    row: int  # 1-based line number of a file, or 0-based index of a request item (the caller says which)
    field: str
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"row": self.row, "field": self.field, "message": self.message}


class RowErrors(Exception):
    """Raised when input fails validation; nothing has been written."""

    def __init__(self, errors: Iterable[RowError], *, row_label: str = "line"):
        self.errors = sorted(errors)
        self.row_label = row_label
        super().__init__(self.summary())

    def summary(self, limit: int = 50) -> str:
        lines = [f"{self.row_label} {e.row}: {e.field}: {e.message}" for e in self.errors[:limit]]
        if len(self.errors) > limit:
            lines.append(f"… and {len(self.errors) - limit} more errors")
        return f"{len(self.errors)} error(s), nothing was changed:\n" + "\n".join(lines)


class RowConflicts(RowErrors):
    """Every problem is a clash with data that must not change (e.g. new text for a judged response); nothing
    was written. APIs answer it with 409 and ``conflict_detail`` instead of 400."""

    conflict_detail = "{n} item(s) conflict with stored data; nothing was changed."


def flatten_serializer_errors(detail: Any, prefix: str = "") -> list[tuple[str, str]]:
    """DRF's nested error structure as (dotted.field[path], message) pairs."""
    pairs: list[tuple[str, str]] = []
    if isinstance(detail, Mapping):
        for key, value in detail.items():
            if isinstance(key, int):  # list serializers report items by index
                pairs += flatten_serializer_errors(value, f"{prefix}[{key}]")
                continue
            name = "" if key == "non_field_errors" else str(key)
            path = f"{prefix}.{name}" if prefix and name else (prefix or name)
            pairs += flatten_serializer_errors(value, path)
    elif isinstance(detail, list) and detail and all(isinstance(item, Mapping | list) for item in detail):
        for index, value in enumerate(detail):
            if value:
                pairs += flatten_serializer_errors(value, f"{prefix}[{index}]")
    elif isinstance(detail, list):
        pairs += [(prefix or "record", str(message)) for message in detail]
    else:
        pairs.append((prefix or "record", str(detail)))
    return pairs


def not_utf8(data: bytes | Iterable[bytes]) -> RowError:
    """The first line of ``data`` (bytes, or a binary file's lines) that is not UTF-8 text, as a row error (a file's
    reader only knows the byte offset in the chunk it was decoding)."""
    for number, line in enumerate(data.split(b"\n") if isinstance(data, bytes) else data, start=1):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as error:
            return RowError(number, "line", f"not UTF-8 text ({error.reason} at byte {error.start + 1} of the line)")
    return RowError(1, "file", "not UTF-8 text")


def json_line(number: int, line: str, *, field: str = "line") -> Any:
    """A JSON Lines line as the value it holds, or the RowError (on ``field``) saying why it holds none: the one
    wording of every path that reads JSON Lines (the imports of conversations, judgments and session labels, the
    API's bulk bodies), so that one bad line is said alike whichever path it came by."""
    try:
        return json.loads(line)
    except json.JSONDecodeError as error:
        return RowError(number, field, f"not valid JSON ({error.msg} at column {error.colno})")
    except RecursionError:
        return RowError(number, field, "not valid JSON (nested too deeply)")
    except ValueError:  # Python's own limit: an integer of more than 4,300 digits
        return RowError(number, field, "not valid JSON (a number too long)")


def json_unstorable(value: Any) -> str | None:
    """Why a value read from JSON cannot go into a PostgreSQL column, None when it can: a text or key that holds NUL
    or a lone surrogate (``UNSTORABLE``), or NaN or Infinity, which Python's json reads and jsonb refuses."""
    pending = [value]
    while pending:  # not recursive: json.loads reads nesting as deep as its own stack allows
        item = pending.pop()
        if isinstance(item, str) and UNSTORABLE.search(item):
            return UNSTORABLE_MESSAGE
        if isinstance(item, float) and not math.isfinite(item):
            return "holds NaN or Infinity, which JSON has no number for"
        if isinstance(item, dict):
            pending += [*item, *item.values()]
        elif isinstance(item, list):
            pending += item
    return None


# A JSON Lines file's lines end at "\n" only (a "\r" is JSON's whitespace, as in "\r\n"): the API's bodies and the
# upload pages split there, and the commands open their files with it, so a line is the same line on every path.
JSON_LINES_NEWLINE = "\n"


def text_newline(fmt: str) -> str:
    """The ``newline`` to open an import file of format ``fmt`` ("csv" or "jsonl") with: "" for CSV, as the csv
    module asks (a quoted cell may hold a line break), JSON_LINES_NEWLINE for JSON Lines."""
    return "" if fmt == "csv" else JSON_LINES_NEWLINE


def jsonl_rows(stream: IO[str] | Iterable[str]) -> Iterator[tuple[int, Any]]:
    """(line number, value) for every line of a JSON Lines file that is not blank; a line that is not JSON gives
    its RowError in place of a value (``json_line``). A file is opened with ``newline=JSON_LINES_NEWLINE``."""
    for number, line in enumerate(stream, start=1):
        if line.strip():
            yield number, json_line(number, line)
