"""Progress of the long management commands on their standard error, through tqdm: shown on a terminal, silent
when standard error is not one (a pipe, a log, CI) so scripts and logs get only the commands' own lines.
``CAB_PROGRESS=1`` shows it anyway and ``CAB_PROGRESS=0`` never (tests/common/test_progress.py)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any, Self

from tqdm import tqdm


def _disabled() -> bool | None:
    forced = os.environ.get("CAB_PROGRESS", "").strip()
    return {"1": False, "0": True}.get(forced)  # None: tqdm's own rule, off when the stream is no terminal


def bar(*, desc: str, total: float | None = None, unit: str = "it", unit_scale: bool = False) -> tqdm:
    return tqdm(total=total, desc=desc, unit=unit, unit_scale=unit_scale, file=sys.stderr, disable=_disabled(),
                leave=False, dynamic_ncols=True, mininterval=0.5)


def shown() -> bool:
    """Whether a bar would be drawn (a command may then spend a query on its total)."""
    disabled = _disabled()
    return not disabled if disabled is not None else sys.stderr.isatty()


@contextmanager
def fraction_bar(desc: str) -> Iterator[Callable[[float, str], None]]:
    """A bar fed a fraction done and a message, as metric runs report their progress."""
    with bar(desc=desc, total=100, unit="%") as shown_bar:
        def report(fraction: float, message: str) -> None:
            shown_bar.update(round(100 * min(max(fraction, 0.0), 1.0), 1) - shown_bar.n)
            shown_bar.set_postfix_str(message[:60], refresh=False)

        yield report


@contextmanager
def stages(desc: str, names: list[str]) -> Iterator[Callable[[str], None]]:
    """A bar over named stages: call it with each stage's name as it starts."""
    with bar(desc=desc, total=len(names), unit="stage") as shown_bar:
        def start(name: str) -> None:
            if name in names:
                shown_bar.update(names.index(name) + 1 - shown_bar.n)
            shown_bar.set_postfix_str(name, refresh=True)

        yield start


class _Shown:
    """A stream that moves a bar as it is used; everything else is the stream's own."""

    def __init__(self, stream: IO[Any], shown_bar: tqdm) -> None:
        self._stream = stream
        self._bar = shown_bar

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self._bar.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class ReadProgress(_Shown):
    """A file read with a bar of how much of it has been read (characters of a text file against its size in bytes:
    close enough for a bar, and no encoding of every line)."""

    def __init__(self, stream: IO[Any], *, desc: str, size: int) -> None:
        super().__init__(stream, bar(desc=desc, total=size, unit="B", unit_scale=True))

    def read(self, *args: Any) -> Any:
        data = self._stream.read(*args)
        self._bar.update(len(data))
        return data

    def read1(self, *args: Any) -> Any:
        data = self._stream.read1(*args)  # type: ignore[attr-defined]  # a buffered binary file's
        self._bar.update(len(data))
        return data

    def readline(self, *args: Any) -> Any:
        line = self._stream.readline(*args)
        self._bar.update(len(line))
        return line

    def __iter__(self) -> Iterator[Any]:
        for line in self._stream:
            self._bar.update(len(line))
            yield line

    def close(self) -> None:  # a reader wrapped around it (gzip, TextIOWrapper) closes it: the bar, not the file
        self._bar.close()


class WriteProgress(_Shown):
    """A text stream written with a bar counting the lines written (of ``total`` when known)."""

    def __init__(self, stream: IO[str], *, desc: str, total: int | None = None, unit: str = "line") -> None:
        super().__init__(stream, bar(desc=desc, total=total, unit=unit, unit_scale=True))

    def write(self, text: str) -> int:
        self._bar.update(text.count("\n"))
        return self._stream.write(text)
