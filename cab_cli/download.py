"""Downloading a file that may be large over a connection that may break: written to ``NAME.part`` beside the
target, with the server's ETag in ``NAME.part.etag``; an interrupted download (a dropped connection now, or an
earlier run of the command) asks only for the bytes it misses (``Range``) and gets them only if the file on the
server is still the one it began (``If-Range``: the server sends the whole file again otherwise). The finished
file's SHA-256 is checked against the ETag before it takes the target's name (docs/api.md#resuming-a-download).
An answer that says the server could not take the request just then (a 503 while its database is away, a 429,
a proxy's 502 or 504: ``cab_cli.retry.UNAVAILABLE``) is asked again like a dropped connection, as late as its
Retry-After asks (``cab_cli.retry.pause``), and touches neither the part nor the target.

The finished file takes the name the server gives it (``Content-Disposition: attachment; filename="…"``) where it
gives one and the caller named no file of its own (``server_name``): the name a browser or ``curl -OJ`` saves the same
download under; the part keeps the name the caller expected until then.

Downloads stream into the file: memory stays flat at any size. What the server says of the file's provenance (its
``CAB-*`` and ``Repr-Digest`` headers: docs/metrics.md#provenance) comes back with it (``Downloaded.provenance``),
for ``provenance_write`` to keep beside it as ``NAME.provenance.json``.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import time
from dataclasses import dataclass
from email.message import Message
from pathlib import Path

import httpx

from cab_cli import retry
from common import progress

_pause = time.sleep  # between attempts (a test makes it instant)
_ETAG = re.compile(r'^"sha256-([0-9a-f]{64})"$')
_CONTENT_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+)$")
# The headers that say where a file came from (the server's common.provenance), in this order in the JSON kept.
PROVENANCE_HEADERS = ("CAB-Run", "CAB-Run-Finished", "CAB-Parameters", "CAB-Software", "CAB-Input-Fingerprint",
                      "CAB-Exported", "Repr-Digest")


class DownloadError(RuntimeError):
    """The server refused the download, or what came is not the file it described, or could not be written here."""


def _not_written(received: int, where: Path, problem: OSError) -> DownloadError:
    """A write error after the request was sent and answered (a full disk, a file or folder not writable): not a
    usage error (exit 2 says nothing was sent), but what came and was not written."""
    return DownloadError(f"{received:,} bytes came from the server but could not be written to {where}: {problem}")


@dataclass(frozen=True)
class Downloaded:
    path: Path
    size: int
    resumed_from: int  # bytes already there when the last request began (0: the whole file came in one go)
    attempts: int
    provenance: dict[str, str]  # the answer's PROVENANCE_HEADERS it has, by their names


def _provenance(answer: httpx.Response) -> dict[str, str]:
    return {name: answer.headers[name] for name in PROVENANCE_HEADERS if name in answer.headers}


def provenance_path(target: Path) -> Path:
    return target.with_name(target.name + ".provenance.json")


def provenance_write(done: Downloaded) -> Path:
    """``NAME.provenance.json`` beside the file: the provenance headers it came with, as a JSON object (written
    even when empty, so an older one never describes a newer file)."""
    path = provenance_path(done.path)
    path.write_text(json.dumps(done.provenance, indent=1) + "\n", encoding="utf-8")
    return path


def served_name(answer: httpx.Response) -> str | None:
    """The file name of the answer's ``Content-Disposition`` (RFC 6266: ``filename="…"``, or ``filename*=``), when it
    is a plain name: never one that reaches another folder or hides the file."""
    header = answer.headers.get("Content-Disposition")
    if not header:
        return None
    parsed = Message()
    parsed["Content-Disposition"] = header
    name = parsed.get_filename()
    if not name or name != Path(name).name or "\\" in name or name.startswith(".") or "\0" in name:
        return None
    return name


def _paths(target: Path) -> tuple[Path, Path]:
    return target.with_name(target.name + ".part"), target.with_name(target.name + ".part.etag")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _said(answer: httpx.Response) -> str:
    answer.read()
    try:
        detail = answer.json().get("detail", "")
    except (ValueError, AttributeError):
        detail = answer.text[:200]
    return f"HTTP {answer.status_code}: {detail}".rstrip(": ")


class _Unavailable(Exception):
    """The server could not take the request just then (``retry.UNAVAILABLE``): nothing of the file came."""

    def __init__(self, answer: httpx.Response) -> None:
        super().__init__(_said(answer))
        self.retry_after = retry.retry_after(answer.headers)


def _finish(part: Path, tag: Path, target: Path, etag: str) -> int:
    expected = _ETAG.match(etag)
    if expected and _sha256(part) != expected[1]:
        part.unlink()
        tag.unlink(missing_ok=True)
        raise DownloadError("the downloaded file does not match the server's checksum; it was removed: run the "
                            "command again")
    try:
        part.replace(target)
    except OSError as problem:
        raise DownloadError(f"the whole file came from the server, into {part}, but could not be named {target}: "
                            f"{problem}") from problem
    tag.unlink(missing_ok=True)
    return target.stat().st_size


def download(http: httpx.Client, url: str, target: Path, *, retries: int = 5, desc: str = "",
             server_name: bool = False) -> Downloaded:
    """``url`` into ``target``, resuming a ``.part`` left beside it; a dropped connection or an answer of a server
    briefly unavailable is asked again up to ``retries`` times (waiting 1, 2, 4… s, or as long as the answer's
    Retry-After asks) before the error is raised (the ``.part`` stays for the next run). ``server_name``: the finished
    file is named, in ``target``'s folder, as the answer's Content-Disposition names it (``served_name``), where it
    names one."""
    part, tag = _paths(target)
    attempt = 0
    while True:
        attempt += 1
        have = part.stat().st_size if part.exists() and tag.exists() else 0
        headers = {"Range": f"bytes={have}-", "If-Range": tag.read_text().strip()} if have else {}
        try:
            with http.stream("GET", url, headers=headers) as answer:
                if answer.status_code in retry.UNAVAILABLE:
                    raise _Unavailable(answer)
                if answer.status_code == 416 and have:
                    # Nothing left to send: the part is whole (it was not renamed yet) or it is not this file.
                    etag = answer.headers.get("ETag", "")
                    if etag == tag.read_text().strip():
                        whole = _named(target, answer) if server_name else target
                        size = _finish(part, tag, whole, etag)
                        return Downloaded(whole, size, have, attempt, _provenance(answer))
                    part.unlink()
                    continue
                if answer.status_code not in (200, 206):
                    raise DownloadError(_said(answer))
                etag, said = answer.headers.get("ETag", ""), _provenance(answer)
                whole = _named(target, answer) if server_name else target
                if answer.status_code == 206:
                    span = _CONTENT_RANGE.match(answer.headers.get("Content-Range", ""))
                    if span is None or int(span[1]) != have:
                        raise DownloadError("the server sent another range than the one asked for")
                    total, mode = int(span[3]), "ab"
                else:
                    if have:
                        print(f"{target.name}: the file changed on the server since the download began; starting "
                              "again", file=sys.stderr)
                    total, mode, have = int(answer.headers.get("Content-Length", 0)) or 0, "wb", 0
                _write(answer, part, tag, etag, mode=mode, have=have, total=total, desc=desc or target.name)
            if total and part.stat().st_size != total:
                raise httpx.ReadError(f"the connection closed after {part.stat().st_size:,} of {total:,} bytes")
            size = _finish(part, tag, whole, etag)
            return Downloaded(whole, size, have, attempt, said)
        except (httpx.TransportError, _Unavailable) as problem:
            _again_or_refused(problem, attempt=attempt, retries=retries, part=part, target=target)


def _write(answer: httpx.Response, part: Path, tag: Path, etag: str, *, mode: str, have: int, total: int,
           desc: str) -> None:
    """The answer's bytes into the part (appended, or from its start), as they arrive: a drop loses nothing received.
    A write error raises the DownloadError that says how many bytes came and were not written (``_not_written``)."""
    received = 0
    try:
        tag.write_text(etag + "\n")
        with part.open(mode) as out, progress.bar(desc=desc, total=total or None, unit="B", unit_scale=True) as bar:
            bar.update(have)
            for chunk in answer.iter_bytes():
                received += len(chunk)
                out.write(chunk)
                bar.update(len(chunk))
    except OSError as problem:
        raise _not_written(received, part, problem) from problem


def _named(target: Path, answer: httpx.Response) -> Path:
    name = served_name(answer)
    return target.with_name(name) if name else target


def _again_or_refused(problem: httpx.TransportError | _Unavailable, *, attempt: int, retries: int, part: Path,
                      target: Path) -> None:
    """Wait before attempt ``attempt + 1`` (1, 2, 4… s, or as long as the answer's Retry-After asks), or raise the
    DownloadError once ``retries`` are spent; the part stays either way."""
    kept = part.exists()
    if attempt > retries:
        again = (f"the part downloaded so far is kept in {part.name}: run the command again to resume" if kept
                 else "run the command again")
        raise DownloadError(f"{problem}; {again}") from problem
    asked = problem.retry_after if isinstance(problem, _Unavailable) else None
    print(f"{target.name}: {problem}; {'resuming' if kept else 'asking again'} (attempt {attempt + 1})"
          f"{retry.asked(asked)}", file=sys.stderr)
    _pause(retry.pause(retry.backoff(attempt), asked))
