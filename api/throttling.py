"""API rate limits (DRF's throttles): one budget per token or signed-in account, another per address for requests
without one. The rates are read from settings on every request (DRF's own classes read them once at import), so a
deployment — or a test — changes them without a restart of the class."""

from __future__ import annotations

from django.conf import settings
from rest_framework.throttling import AnonRateThrottle, UserRateThrottle


def _rate(scope: str) -> str | None:
    rates = getattr(settings, "REST_FRAMEWORK", {}).get("DEFAULT_THROTTLE_RATES", {})
    rate: str | None = rates.get(scope)
    return rate


class AnonymousRate(AnonRateThrottle):
    scope = "anonymous"

    def get_rate(self) -> str | None:
        return _rate(self.scope)


class AccountRate(UserRateThrottle):
    scope = "account"

    def get_rate(self) -> str | None:
        return _rate(self.scope)
