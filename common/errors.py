"""Row-level validation errors shared by every importer and ingestion endpoint: which row, which field, why."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


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


def not_utf8(data: bytes) -> RowError:
    """The first line of ``data`` that is not UTF-8 text, as a row error (a file's reader only knows the byte
    offset in the chunk it was decoding)."""
    for number, line in enumerate(data.split(b"\n"), start=1):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as error:
            return RowError(number, "line", f"not UTF-8 text ({error.reason} at byte {error.start + 1} of the line)")
    return RowError(1, "file", "not UTF-8 text")
