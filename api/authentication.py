"""Bearer-token authentication for scripts (``Authorization: Bearer cab_…``; ``Token cab_…`` is accepted too).

The token is looked up by its SHA-256; revoked and expired tokens are refused with a message that says which.
``request.auth`` is the ApiToken, so permissions can check its scopes and study.
"""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from api import services
from api.models import ApiToken

_KEYWORDS = {b"bearer", b"token"}


class ApiTokenAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request):
        parts = authentication.get_authorization_header(request).split()
        if not parts or parts[0].lower() not in _KEYWORDS:
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed("Authorization header must be 'Bearer <token>'.")
        try:
            raw = parts[1].decode("ascii")
        except UnicodeDecodeError as error:
            raise exceptions.AuthenticationFailed("Invalid token.") from error
        token = (
            ApiToken.objects.select_related("user", "study")
            .filter(key_hash=services.api_token_hash(raw))
            .first()
        )
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        if token.revoked_at is not None:
            raise exceptions.AuthenticationFailed("This token has been revoked.")
        if token.is_expired(timezone.now()):
            raise exceptions.AuthenticationFailed("This token has expired.")
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("The token's account is disabled.")
        services.api_token_touch(token=token)
        return token.user, token

    def authenticate_header(self, request) -> str:
        # Makes unauthenticated requests 401 (with this challenge) rather than 403.
        return 'Bearer realm="api"'


class ApiTokenScheme(OpenApiAuthenticationExtension):
    target_class = "api.authentication.ApiTokenAuthentication"
    name = "ApiToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API token from `manage.py create_api_token` (shown once, stored hashed).",
        }
