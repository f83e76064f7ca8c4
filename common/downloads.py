"""Downloads that can be resumed: a file answered whole (200) or in part (206) by HTTP range requests, with a strong
``ETag`` (the SHA-256 of its bytes) that ``If-Range`` is checked against, so a client that lost its connection asks
for the bytes it misses and gets them only if the file is still the one it began (docs/api.md#resuming-a-download).

Written here because Django's ``FileResponse`` answers no ``Range`` header (Django ticket #22479), and the small
packages that add one (django-ranged-response 0.2) check no ``If-Range``, which is what keeps a resumed file from
being two files joined. One range a request (``bytes=N-``, ``bytes=N-M``, ``bytes=-S``); a request for several, or
a header this does not understand, gets the whole file, as RFC 9110 §14.2 lets a server do.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from typing import IO

from django.http import HttpRequest, JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase

from common.provenance import REPR_DIGEST, repr_digest

CHUNK = 1 << 16
_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


class Spooled:
    """Bytes written once to an unnamed temporary file (memory stays flat at any size), with their size and ETag."""

    def __init__(self, chunks: Iterable[bytes | str]) -> None:
        self.file: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 - handed to the response, which closes it
        digest = hashlib.sha256()
        try:
            for chunk in chunks:
                data = chunk.encode() if isinstance(chunk, str) else chunk
                digest.update(data)
                self.file.write(data)
        except BaseException:
            self.file.close()
            raise
        self.size = self.file.tell()
        self.sha256 = digest.hexdigest()
        self.etag = f'"sha256-{self.sha256}"'

    @classmethod
    def kept(cls, file: IO[bytes], *, size: int, sha256: str) -> Spooled:
        """A file written before whose SHA-256 is known (a study bundle kept on disk: docs/bundle.md), opened for
        reading; the response closes it."""
        spooled = cls.__new__(cls)  # nothing to spool
        spooled.file, spooled.size, spooled.sha256, spooled.etag = file, size, sha256, f'"sha256-{sha256}"'
        return spooled


class Unsatisfiable(ValueError):
    """The range lies outside the file (416)."""


def wanted_range(header: str | None, size: int) -> tuple[int, int] | None:
    """The one byte range a ``Range`` header asks for, as (first, last) inclusive; ``None`` when there is no header
    or one this answers with the whole file. Raises ``Unsatisfiable`` for a range outside the file."""
    if not header:
        return None
    match = _RANGE.match(header.strip().replace(" ", ""))
    if match is None or (not match[1] and not match[2]):
        return None
    if not match[1]:  # the last S bytes
        suffix = int(match[2])
        if not suffix or not size:
            raise Unsatisfiable(header)
        return max(size - suffix, 0), size - 1
    first = int(match[1])
    if match[2] and int(match[2]) < first:
        return None  # not a valid range: ignored (RFC 9110 §14.1.1)
    if first >= size:
        raise Unsatisfiable(header)
    return first, min(int(match[2]) if match[2] else size - 1, size - 1)


class _Slice:
    """``length`` bytes of the file from ``first``, read as they are sent; the file is closed when they have been,
    or when the response is closed before (a client gone, or a ``HEAD``, whose body is never read)."""

    def __init__(self, file: IO[bytes], first: int, length: int) -> None:
        self.file, self.first, self.length = file, first, length

    def __iter__(self) -> Iterator[bytes]:
        try:
            self.file.seek(self.first)
            length = self.length
            while length > 0:
                block = self.file.read(min(CHUNK, length))
                if not block:
                    break
                length -= len(block)
                yield block
        finally:
            self.file.close()

    def close(self) -> None:  # StreamingHttpResponse.close() calls it
        self.file.close()


def resumable(request: HttpRequest, spooled: Spooled, *, content_type: str, filename: str,
              provenance: Mapping[str, str] | None = None) -> HttpResponseBase:
    """The file whole or the part asked for; ``If-Range`` must equal the ETag (a strong match) for a part, else the
    whole file is sent again (the file changed since the client began). Every answer (206 and 416 too) carries
    ``Repr-Digest`` (RFC 9530: the SHA-256 of the whole file, the ETag's bytes, as base64) and the ``provenance``
    headers (``common.provenance``)."""
    headers = {"Accept-Ranges": "bytes", "ETag": spooled.etag, REPR_DIGEST: repr_digest(spooled.sha256),
               **(provenance or {}), "Content-Disposition": f'attachment; filename="{filename}"'}
    size = spooled.size
    condition = request.headers.get("If-Range")
    try:
        span = wanted_range(request.headers.get("Range"), size)
    except Unsatisfiable:
        if condition is None or condition.strip() == spooled.etag:
            spooled.file.close()
            detail = f"The range asked for lies outside the file, which has {size:,} bytes."
            return JsonResponse({"detail": detail}, status=416, headers={**headers, "Content-Range": f"bytes */{size}"})
        span = None
    if condition is not None and condition.strip() != spooled.etag:
        span = None
    first, last = span if span else (0, size - 1)
    length = max(last - first + 1, 0)
    response = StreamingHttpResponse(_Slice(spooled.file, first, length), content_type=content_type,
                                     status=206 if span else 200, headers=headers)
    response["Content-Length"] = str(length)
    if span:
        response["Content-Range"] = f"bytes {first}-{last}/{size}"
    return response
