"""Pages are never kept by the browser or a proxy: ``Cache-Control: no-store`` (Django's never-cache directives) on
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

# What Django's never_cache sets, as one constant: its helper also dates an Expires header (for HTTP/1.0 caches),
# which cost about 60 microseconds a page on a loaded host against about 3 for this; no-store needs no date.
NEVER_KEPT = "max-age=0, no-cache, no-store, must-revalidate, private"


class PrivatePagesMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if not response.has_header("Cache-Control") and \
                response.get("Content-Type", "").startswith("text/html"):
            response["Cache-Control"] = NEVER_KEPT
        return response
