"""Compression of the site's pages, not of its API.

Pages (the turn page above all) are gzip-compressed here, as Django's GZipMiddleware does it (the Vary header, only
where the browser accepts gzip and the result is shorter, random bytes in the gzip header against BREACH) but at a
lower level: level 2 instead of Django's 6. On the turn page (47 KB of HTML) level 6 took 1.4 ms of CPU, more than a
whole health-check request, for 10.4 KB; level 2 takes 0.45 ms for 11.5 KB (issue 34,
docs/benchmarks.md#issue-34-reviewer-pages-whose-cost-does-not-grow-with-the-study). Static files are not
compressed here: WhiteNoise serves them precompressed.

A file that answers byte ranges (``Accept-Ranges: bytes``: the judgment downloads and study bundles of
``common.downloads``, on the pages too) is left as it is: gzipped, its 206 would be no range of the file, its length
would go and its strong ETag, the SHA-256 of its bytes, would turn weak, which ``If-Range`` never matches (RFC 9110
§13.1.5), so a browser resuming an interrupted download got the whole file again (docs/api.md#resuming-a-download).

API answers are left as they are: API clients choose their own transfer encoding at the proxy, streamed exports are
read by scripts that may not decode gzip, and an uncompressed API body cannot leak a secret through its compressed
length (BREACH).
"""

from __future__ import annotations

import gzip
import secrets

from django.http import HttpRequest, HttpResponseBase
from django.middleware.gzip import GZipMiddleware, re_accepts_gzip
from django.utils.cache import patch_vary_headers

API_PREFIX = "/api/"
PAGE_LEVEL = 2


def page_compressed(content: bytes, *, max_random_bytes: int) -> bytes:
    """``content`` gzip-compressed at ``PAGE_LEVEL``, with up to ``max_random_bytes`` random bytes as the file name
    in its header (django.utils.text.compress_string's padding: the body's length tells nothing)."""
    compressed = memoryview(gzip.compress(content, compresslevel=PAGE_LEVEL, mtime=0))
    header = bytearray(compressed[:10])
    header[3] = gzip.FNAME
    return bytes(header) + b"a" * secrets.randbelow(max_random_bytes) + b"\x00" + compressed[10:]


class PageGZipMiddleware(GZipMiddleware):
    def process_response(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        if request.path.startswith(API_PREFIX) or response.get("Accept-Ranges", "none") != "none":
            return response
        if response.streaming or response.has_header("Content-Encoding"):
            return super().process_response(request, response)  # streamed: Django's, chunk by chunk
        content = response.content  # type: ignore[attr-defined]
        if len(content) < 200:  # not worth compressing
            return response
        patch_vary_headers(response, ("Accept-Encoding",))
        if not re_accepts_gzip.search(request.META.get("HTTP_ACCEPT_ENCODING", "")):
            return response
        compressed = page_compressed(content, max_random_bytes=self.max_random_bytes)
        if len(compressed) >= len(content):
            return response
        response.content = compressed  # type: ignore[attr-defined]
        response.headers["Content-Length"] = str(len(compressed))
        etag = response.get("ETag")
        if etag and etag.startswith('"'):  # a strong ETag becomes weak (RFC 9110 8.8.1), as Django's does
            response.headers["ETag"] = "W/" + etag
        response.headers["Content-Encoding"] = "gzip"
        return response
