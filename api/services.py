"""Writes for the API plumbing: tokens (created, revoked, touched) and Idempotency-Key records.

Keyword-only, actor passed as ``by``; token creation and revocation are recorded in the audit trail.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from access.checks import token_scopes_allowed
from api.models import ApiToken, IdempotencyRecord
from audit.services import audit_record
from common.locks import advisory_lock

TOKEN_PREFIX = "cab_"  # noqa: S105  # nosec B105  # a prefix that marks our tokens, not a secret
TOKEN_DAYS_MAX = 3650  # a token expires at most ten years ahead (the token page, create_api_token)
# The `setup` scope creates studies (POST /api/v1/studies/), which a token limited to one study may never do
# (annotation.apis answers 403): such a token is refused when it is made, not in the script that first uses it.
SETUP_WITH_STUDY = ("the setup scope creates studies, which a token limited to one study cannot do: leave out the "
                    "study or the setup scope")
IDEMPOTENCY_TTL = timedelta(hours=24)
# Writing last_used_at on every request would turn every read into a write; once a minute is precise enough.
_TOUCH_EVERY = timedelta(minutes=1)


def api_token_hash(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


@transaction.atomic
def api_token_create(
    *,
    user: User,
    name: str,
    scopes: Iterable[str],
    by: User | None,
    study: Any = None,
    expires_at: datetime | None = None,
) -> tuple[ApiToken, str]:
    """Create a token; returns it with the raw key, which is never stored and cannot be shown again."""
    scopes = sorted(set(scopes))
    unknown = sorted(set(scopes) - set(ApiToken.Scope.values))
    if unknown or not scopes:
        problem = f"unknown scope(s) {', '.join(unknown)}" if unknown else "give at least one scope"
        raise ValidationError({"scopes": f"{problem}; scopes are {', '.join(ApiToken.Scope.values)}"})
    allowed = token_scopes_allowed(user)
    refused = [scope for scope in scopes if scope not in allowed]
    if refused and not allowed:
        raise ValidationError({"scopes": f"{user.get_username()} has no role that may hold API tokens"})
    if refused:
        raise ValidationError({"scopes": f"{user.get_username()}'s role allows only {', '.join(allowed)}; "
                                         f"not {', '.join(refused)}"})
    if study is not None and ApiToken.Scope.SETUP in scopes:
        raise ValidationError({"scopes": SETUP_WITH_STUDY})
    if expires_at is not None and expires_at <= timezone.now():
        raise ValidationError({"expires_at": "must be in the future"})
    if expires_at is not None and expires_at > timezone.now() + timedelta(days=TOKEN_DAYS_MAX):
        raise ValidationError({"expires_at": f"at most {TOKEN_DAYS_MAX} days ahead"})
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        name=name, user=user, key_prefix=raw[:12], key_hash=api_token_hash(raw), study=study, scopes=scopes,
        expires_at=expires_at,
    )
    _audit(by=by, action="api_token.create", token=token)
    return token, raw


@transaction.atomic
def api_token_revoke(*, token: ApiToken, by: User | None) -> ApiToken:
    """Revoke a token (idempotent). Compare-and-set: of two revocations at once, one revokes and is audited; the
    other finds it revoked and changes nothing."""
    if ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now()):
        token.refresh_from_db(fields=["revoked_at"])
        _audit(by=by, action="api_token.revoke", token=token)
    else:
        token.refresh_from_db(fields=["revoked_at"])
    return token


def api_token_touch(*, token: ApiToken) -> None:
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= _TOUCH_EVERY:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now


def _audit(*, by: User | None, action: str, token: ApiToken) -> None:
    audit_record(by=by, action=action, study=token.study, target=f"api_token:{token.key_prefix}",
                 name=token.name, user=token.user.get_username(), scopes=token.scopes)


class IdempotencyKeyReused(Exception):
    """The key was already used for a different request."""


def idempotent_call(
    *, user: User, key: str | None, request_hash: str, call: Callable[[], tuple[int, dict]]
) -> tuple[int, dict, bool]:
    """Run ``call`` (which returns status and body) once per (user, key): a resend of the same request gets the
    first successful answer again, flagged as replayed. Failures raise out of ``call`` and are not remembered,
    since they changed nothing and the corrected request may reuse the key."""
    if not key:
        status, body = call()
        return status, body, False
    with transaction.atomic():
        # Two concurrent sends of one key: the second waits here, then finds the first's record.
        advisory_lock(f"idempotency:{user.pk}:{key}")
        record = IdempotencyRecord.objects.filter(user=user, key=key).first()
        if record is not None and record.created_at >= timezone.now() - IDEMPOTENCY_TTL:
            if record.request_hash != request_hash:
                raise IdempotencyKeyReused(key)
            return record.status_code, record.response, True
        status, body = call()
        IdempotencyRecord.objects.update_or_create(
            user=user, key=key,
            defaults={"request_hash": request_hash, "status_code": status, "response": body,
                      "created_at": timezone.now()},
        )
        return status, body, False
