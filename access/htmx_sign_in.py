"""An htmx request that finds no session is answered 401 with why, not redirected to the sign-in page.

A page's htmx request (a workshop note, a report's filters, the runs table it refreshes) that meets
``login_required`` would get the redirect to the sign-in page; htmx follows it and puts the sign-in page where the
answer goes, and what was being sent is neither saved nor said to be lost. Answered 401 instead, the page keeps what
was typed and says why (``static/js/htmx-errors.js``), as the coding page's own endpoints do. A request without
htmx (a browser's navigation, a form sent without JavaScript) still gets the redirect.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import resolve_url

SESSION_ENDED = "Your session has ended: sign in again (in another tab, to keep this page), then send this again."


@cache
def _sign_in_path() -> str:
    return urlsplit(resolve_url(settings.LOGIN_URL)).path


class HtmxSignInMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (response.status_code == 302 and request.headers.get("HX-Request") == "true"
                and urlsplit(response.get("Location", "")).path == _sign_in_path()):
            return HttpResponse(SESSION_ENDED, status=401, content_type="text/plain; charset=utf-8")
        return response
