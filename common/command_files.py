"""The files a command is given, and its exit status: the one rule of every command that reads a file (``manage.py
import_judgments``, ``import_session_labels``, ``import_conversations``, ``import_study``, ``install_schema``,
``cab import``, ``cab ingest``) or writes one into a folder (``manage.py export_bundle``, ``cab download``) or as
a file (``manage.py export_study -o``), and how a file a command writes is never left cut (``written_whole``:
``manage.py export_judgments --output``).

A file to read that is missing, a folder, or unreadable, and a file to write into a folder that does not exist, are
usage errors: the command is refused before it reads or writes anything, with the same words on every path
(``PATH: no such file``), and exits ``EXIT_USAGE``, as a wrong argument does (argparse's own status). A file that was
read and refused (a wrong row, a study it cannot be imported into, the server's refusal) and a database or server
that cannot be reached exit ``EXIT_REFUSED``. docs/api.md#the-researcher-cli, README "Data and commands". Pure (no
Django): the researcher CLI reads it too."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

EXIT_DONE = 0
EXIT_REFUSED = 1  # read and refused (a row, the study, the server said no), or the database or server unreachable
EXIT_USAGE = 2  # not what the command needs: an argument, a file to read, a folder to write into


class FileUnusable(ValueError):
    """The file a command was given cannot be used as given; the message names it and says why."""


def input_file(path: Path) -> Path:
    """``path`` when it is a file this process can read; else ``FileUnusable`` (``PATH: no such file``, ``PATH: a
    folder, not a file``, ``PATH: cannot be read (why)``)."""
    if path.is_dir():
        raise FileUnusable(f"{path}: a folder, not a file")
    try:
        with path.open("rb"):
            pass
    except FileNotFoundError:
        raise FileUnusable(f"{path}: no such file") from None
    except OSError as problem:
        raise FileUnusable(f"{path}: cannot be read ({problem.strerror or problem})") from None
    return path


def output_folder(output: str | Path) -> Path:
    """The file to write, ``output``, when the folder it is to be written into exists; else ``FileUnusable`` naming
    that folder. ``OUT/`` (a final separator) names a folder, never a file named ``OUT``, which the next write into
    ``OUT/`` would write over: refused when it is not a folder yet."""
    text = str(output)
    target = Path(output)
    if text.endswith(tuple(sep for sep in (os.sep, os.altsep) if sep)) and not target.is_dir():
        raise FileUnusable(f"{text} is not a folder: make it first, or name a file without the final {text[-1]}")
    folder = target.parent
    if not folder.is_dir():
        raise FileUnusable(f"{folder}: no such folder" if not folder.exists() else f"{folder}: not a folder")
    return target


def output_file(output: str | Path) -> Path:
    """The file to write, ``output``, for a command that writes a file of the name given, never one into a folder
    (``manage.py export_study -o``): refused when it names a folder (``PATH: a folder, not a file``), else as
    ``output_folder`` refuses it."""
    if Path(output).is_dir():
        raise FileUnusable(f"{output}: a folder, not a file")
    return output_folder(output)


@contextlib.contextmanager
def written_whole(target: Path) -> Iterator[BinaryIO]:
    """A binary file whose bytes become ``target`` once the block ends without an error: a temporary file beside it
    (``TARGET.XXXX.partial``, in the same folder, so the rename is atomic), renamed onto ``target`` then, and removed
    when the block raises (a failure halfway, an interrupt). A command that stops halfway so never leaves a cut file
    under the name it was given, nor touches a file already there. The file gets a new file's permissions (0666
    less the umask), as a shell's ``> TARGET`` would give it."""
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f"{target.name}.", suffix=".partial")
    try:
        with os.fdopen(handle, "wb") as out:
            yield out
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
