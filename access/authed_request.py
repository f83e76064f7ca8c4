"""The request a signed-in page handles, as the type checker should see it: ``login_required`` (or a decorator
built on it) has already sent anonymous visitors to the login page, and django-htmx's middleware has set
``request.htmx``. Annotation only: Django still passes a plain ``HttpRequest``."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class AuthedRequest(HttpRequest):
    user: User
    htmx: HtmxDetails
