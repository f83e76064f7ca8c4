"""The format of a long-format file to import (judgments, session labels): the one rule of every path that takes
such a file, ``manage.py import_judgments``, the API's form upload (``POST …/judgments/import/``), ``cab import``
and ``manage.py import_session_labels``. The format
is the one said (``--format``, the form's ``format``) when it is said, else the one the file's name ends in
(``.csv``; ``.jsonl`` or ``.ndjson``), else the file is refused, by a message naming it and saying how to say its
format on that path: a file is never read as a format it was not said to be (a CSV named ``.txt`` read as JSON Lines
was refused by its line 1, "not JSON"). Pure (no Django): the researcher CLI reads it too."""

from __future__ import annotations

from pathlib import PurePath

FORMATS = ("csv", "jsonl")
SUFFIXES = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}


class FormatUnknown(ValueError):
    """The file's format was not said and its name does not say it, or what was said is no format."""


def suffix_format(name: str) -> str | None:
    """``csv`` or ``jsonl`` as the file's name ends (in any case), or None when its name says neither."""
    return SUFFIXES.get(PurePath(name).suffix.lower())


def file_format(name: str, *, given: str | None = None, say: str) -> str:
    """``csv`` or ``jsonl``: ``given`` when it is given, else by the name's suffix; else ``FormatUnknown``, whose
    message names the file and ``say``, how this path's caller says the format (``--format csv|jsonl``)."""
    if given is not None:
        if given not in FORMATS:
            raise FormatUnknown(f"csv or jsonl, not {given[:20]!r}")
        return given
    found = suffix_format(name)
    if found is None:
        raise FormatUnknown(f"{name or 'the file'}: its name does not say its format (.csv, .jsonl or .ndjson): say "
                            f"it with {say}")
    return found
