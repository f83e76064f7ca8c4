"""Pages are never kept by the browser or a proxy: ``Cache-Control: no-store`` (Django's never-cache headers) on
every HTML answer that does not say how it may be kept itself.

A page holds what people wrote (the conversations, the scores, the notes), which no browser cache or proxy should
keep; and kept by the browser, Back to a turn showed the copy first loaded instead of what was saved on it since (a
change made there went out on an old version: tests/functional/test_turn_page.py), Back to a queue its old
progress. An answer that sets its own ``Cache-Control`` (the schema's parts script, the highlight
styles, a chart) keeps it; static files never reach this middleware (WhiteNoise answers them first); downloads
(CSV, JSON, images) are files their reader keeps on purpose.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponseBase
from django.utils.cache import add_never_cache_headers


class PrivatePagesMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if not response.has_header("Cache-Control") and \
                response.get("Content-Type", "").startswith("text/html"):
            add_never_cache_headers(response)
        return response
