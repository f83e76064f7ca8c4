"""Pages are gzip-compressed as Django's GZipMiddleware does it (Vary, only where accepted and shorter, a random
file name in the gzip header against BREACH), at a lower level (issue 34); the API is not compressed."""

from __future__ import annotations

import gzip

from django.http import HttpResponse, StreamingHttpResponse
from django.test import RequestFactory

from common.compression import PAGE_LEVEL, PageGZipMiddleware

PAGE = b"<p>" + b"A turn page with much repeated markup. " * 200 + b"</p>"


def answered(path: str, response: HttpResponse | StreamingHttpResponse, accept: str = "gzip, deflate, br"):
    request = RequestFactory().get(path, headers={"accept-encoding": accept} if accept else {})
    return PageGZipMiddleware(lambda _: response)(request)


def test_a_page_is_compressed_at_the_page_level_with_a_padded_header():
    sizes = set()
    for _ in range(20):
        response = answered("/rounds/1/turns/1/", HttpResponse(PAGE))
        assert response["Content-Encoding"] == "gzip" and response["Vary"] == "Accept-Encoding"
        assert gzip.decompress(response.content) == PAGE
        assert int(response["Content-Length"]) == len(response.content)
        assert response.content[3] & gzip.FNAME  # the random file name is there
        sizes.add(len(response.content))
    assert len(sizes) > 1, "the padding varies the length"
    unpadded = len(gzip.compress(PAGE, compresslevel=PAGE_LEVEL, mtime=0))
    assert unpadded + 1 <= min(sizes) and max(sizes) <= unpadded + 100


def test_a_strong_etag_becomes_weak():
    page = HttpResponse(PAGE)
    page["ETag"] = '"v1"'
    assert answered("/queue/", page)["ETag"] == 'W/"v1"'


def test_what_is_not_compressed():
    assert "Content-Encoding" not in answered("/healthz", HttpResponse(b'{"status": "ok"}'))  # too short
    refused = answered("/rounds/1/turns/1/", HttpResponse(PAGE), accept="")
    assert "Content-Encoding" not in refused and refused["Vary"] == "Accept-Encoding"
    assert refused.content == PAGE
    api = answered("/api/v1/studies/", HttpResponse(PAGE))
    assert "Content-Encoding" not in api and api.content == PAGE
    streamed = answered("/exports/", StreamingHttpResponse(iter([PAGE, PAGE])))
    assert streamed["Content-Encoding"] == "gzip"  # Django's own, chunk by chunk
    assert gzip.decompress(b"".join(streamed.streaming_content)) == PAGE + PAGE


def test_a_file_that_answers_byte_ranges_is_not_compressed():
    """Its ranges, length and strong ETag (If-Range's) are those of the file as it is (common.downloads)."""
    for status in (200, 206):
        ranged = StreamingHttpResponse(iter([PAGE, PAGE]), status=status)
        ranged["Accept-Ranges"], ranged["ETag"], ranged["Content-Length"] = "bytes", '"sha256-x"', str(2 * len(PAGE))
        sent = answered("/exports/s/judgments.csv", ranged)
        assert "Content-Encoding" not in sent and sent["ETag"] == '"sha256-x"'
        assert sent["Content-Length"] == str(2 * len(PAGE)) and b"".join(sent.streaming_content) == PAGE + PAGE
