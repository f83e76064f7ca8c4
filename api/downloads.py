"""A file on disk as a download that can resume (RFC 9110, section 14): ``Accept-Ranges: bytes``, a strong
``ETag``, one byte range (``Range: bytes=N-``, ``N-M`` or ``-N``) answered ``206`` with ``Content-Range``, ``If-Range``
(the range only while the ETag still matches, else the whole file), and ``416`` with ``Content-Range: bytes */SIZE``
for a range that starts past the end. A header that is not one range in bytes (several ranges, another unit,
garbage) is ignored, as the RFC allows: the answer is the whole file."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from django.http import FileResponse, HttpRequest, JsonResponse, StreamingHttpResponse

CHUNK = 1 << 16
_ONE_RANGE = re.compile(r"^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$", re.IGNORECASE)


class Unsatisfiable(Exception):
    pass


def byte_range(header: str | None, size: int) -> tuple[int, int] | None:
    """(first, last) byte of the one range the header asks for, clipped to the file; None for no usable range
    header (the whole file). Raises Unsatisfiable for a range that selects nothing of the file."""
    if not header:
        return None
    match = _ONE_RANGE.match(header)
    if match is None:
        return None
    first, last = match.groups()
    if not first and not last:
        return None
    if not first:  # the last N bytes
        length = int(last)
        if length == 0 or size == 0:
            raise Unsatisfiable
        return max(size - length, 0), size - 1
    start = int(first)
    if last and int(last) < start:
        return None  # not a valid range: ignored
    if start >= size:
        raise Unsatisfiable
    return start, min(int(last) if last else size - 1, size - 1)


def _slice(path: Path, start: int, length: int) -> Iterator[bytes]:
    with path.open("rb") as source:
        source.seek(start)
        while length > 0:
            data = source.read(min(CHUNK, length))
            if not data:
                return
            length -= len(data)
            yield data


def ranged_file(request: HttpRequest, path: Path, *, etag: str, content_type: str,
                filename: str) -> FileResponse | StreamingHttpResponse | JsonResponse:
    """The file as a download (see the module's docstring). ``etag`` is quoted and strong: it changes whenever a
    byte does."""
    size = path.stat().st_size
    headers = {"Accept-Ranges": "bytes", "ETag": etag,
               "Content-Disposition": f'attachment; filename="{filename}"'}
    wanted = request.headers.get("Range")
    condition = request.headers.get("If-Range")
    if wanted and condition is not None and condition.strip() != etag:
        wanted = None  # the client's copy is another file: send this one whole
    try:
        chosen = byte_range(wanted, size)
    except Unsatisfiable:
        return JsonResponse({"detail": f"The range {wanted!r} is outside the file, which has {size} bytes."},
                            status=416, headers={"Content-Range": f"bytes */{size}", **headers})
    if chosen is None:
        whole = FileResponse(path.open("rb"), content_type=content_type)
        for name, value in headers.items():
            whole[name] = value
        whole["Content-Length"] = str(size)
        return whole
    start, end = chosen
    response = StreamingHttpResponse(_slice(path, start, end - start + 1), status=206, content_type=content_type,
                                     headers={**headers, "Content-Range": f"bytes {start}-{end}/{size}",
                                              "Content-Length": str(end - start + 1)})
    return response
