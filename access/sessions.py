"""Sessions end after idle time: a session that has had no request for ``SESSION_COOKIE_AGE`` seconds is gone.

Each save of a session moves its expiry to now + ``SESSION_COOKIE_AGE``. Saving it on every request would cost
three queries on every page and autosave; instead a request renews it when the last renewal is more than
``SESSION_RENEW_SECONDS`` old (and signing in counts as one), so the idle limit holds to within that margin.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth.signals import user_logged_in
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse

RENEWED = "_renewed_at"


@receiver(user_logged_in)
def _renewed_at_sign_in(sender: Any, request: HttpRequest | None, **_: Any) -> None:
    if request is not None and hasattr(request, "session"):
        request.session[RENEWED] = int(time.time())


class IdleSessionMiddleware:
    """Placed right after ``SessionMiddleware``, so the renewal it asks for is saved on the way out."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        session = getattr(request, "session", None)
        # Only a request that read its session renews it (a health check or a static page never loads it).
        if session is not None and session.accessed and session.session_key and not session.is_empty():
            now = int(time.time())
            if now - session.get(RENEWED, 0) >= settings.SESSION_RENEW_SECONDS:
                session[RENEWED] = now
        return response
