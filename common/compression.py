"""Compression of the site's pages, not of its API.

Pages (the turn page above all) are gzip-compressed by Django's GZipMiddleware. API answers are left as they are:
API clients choose their own transfer encoding at the proxy, streamed exports are read by scripts that may not
decode gzip, and an uncompressed API body cannot leak a secret through its compressed length (BREACH).
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponseBase
from django.middleware.gzip import GZipMiddleware

API_PREFIX = "/api/"


class PageGZipMiddleware(GZipMiddleware):
    def process_response(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        if request.path.startswith(API_PREFIX):
            return response
        return super().process_response(request, response)
