"""What ``manage.py``'s commands do with the files they are given (``common.command_files``, the rule ``cab``
follows too): a file they cannot use is a ``CommandError`` of exit status ``EXIT_USAGE`` (2), before anything is read
or written; a file read and refused stays a plain ``CommandError`` (1)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from common import command_files, file_formats


def usage_error(message: str) -> CommandError:
    return CommandError(message, returncode=command_files.EXIT_USAGE)


def _usable(check: Callable[[Any], Path], path: str | Path) -> Path:
    """``check(path)`` (a rule of ``command_files``), its refusal the usage error in its words."""
    try:
        return check(path)
    except command_files.FileUnusable as problem:
        raise usage_error(str(problem)) from None


def input_file(path: Path) -> Path:
    """``path``, a file to read (``command_files.input_file``), or the usage error saying why it is none."""
    return _usable(command_files.input_file, path)


def input_format(path: Path, given: str | None) -> str:
    """The long format's ``csv`` or ``jsonl`` of the file to import (``file_formats.file_format``: ``--format``, else
    its name), or the usage error saying to give ``--format``."""
    try:
        return file_formats.file_format(str(path), given=given, say="--format csv|jsonl")
    except file_formats.FormatUnknown as problem:
        raise usage_error(str(problem)) from None


def output_folder(target: str | Path) -> Path:
    """``target``, a file to write, when its folder exists (``command_files.output_folder``), else the usage
    error naming the folder."""
    return _usable(command_files.output_folder, target)


def output_file(target: str | Path) -> Path:
    """``target``, a file to write under that very name (``command_files.output_file``), or the usage error saying
    why it cannot be."""
    return _usable(command_files.output_file, target)


class Utf8Out:
    """A command's standard output as the UTF-8 bytes of the text written to it, whatever the encoding of the
    terminal or locale it runs in (a Latin-1 shell's, ``PYTHONIOENCODING``): a file a command writes there
    (``export_judgments``, ``export_study``) is the download's bytes, which the importers read. Standard output
    replaced by a text stream (``call_command(stdout=StringIO())``) is written as text."""

    def __init__(self, command: BaseCommand) -> None:
        out: Any = command.stdout._out
        self._text = command.stdout
        self._binary = getattr(out, "buffer", None)
        if self._binary is not None:
            out.flush()  # what the text layer holds goes first

    def write(self, text: str) -> int:
        if self._binary is None:
            self._text.write(text, ending="")
        else:
            self._binary.write(text.encode("utf-8"))
        return len(text)

    def flush(self) -> None:
        if self._binary is not None:
            self._binary.flush()


def study_missing(slug: str) -> CommandError:
    """The refusal of every command given a study's slug that no study has, in one wording (exit status 1: the
    database was read, and holds none)."""
    return CommandError(f"no study with slug {slug!r}")
