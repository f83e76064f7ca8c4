"""The one-time set-password links an admin has issued, kept beside their accounts on the people page until used or
expired (README, "Using it"; docs/reference.md#one-time-set-password-links).

A link is Django's password-reset token. Nothing stores it: it is an HMAC, keyed by ``SECRET_KEY``, of the
account's state (its password hash, last sign-in, e-mail) and the time it was made, so setting the password (or
issuing a newer link, which resets the password) spends it, and ``PASSWORD_RESET_TIMEOUT`` ends it. To show a link
again, the admin's own session keeps the account's id, the link's time stamp and the SHA-256 of the token, never
the token. The link is made again from the time stamp and the account's current state, and shown only while that
gives the very same token (its digest matches) and ``check_token`` still accepts it: made again from an account
whose password has since been set, the token would be a new, working one, and the digest is what keeps a spent link
from coming back. So a copy of the sessions table gives nobody a working link, another admin never sees the links
this one issued, and a link that was used, superseded or expired leaves the page by itself. Once the admin's
session ends the page no longer shows it (it stays valid until used or expired; a new one can be issued).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.contrib.auth.tokens import PasswordResetTokenGenerator, default_token_generator
from django.contrib.sessions.backends.base import SessionBase
from django.urls import reverse
from django.utils import timezone
from django.utils.crypto import constant_time_compare
from django.utils.encoding import force_bytes
from django.utils.http import base36_to_int, urlsafe_base64_encode

SESSION_KEY = "password_links"  # {account id: [token time stamp, issued at (epoch seconds), SHA-256 of the token]}


class _Links(PasswordResetTokenGenerator):
    """Django's token generator (same salt, algorithm and secret as ``default_token_generator``, which the
    set-password page checks with), able to make a token again from its time stamp."""

    def token_at(self, user: User, timestamp: int) -> str:
        return self._make_token_with_timestamp(user, timestamp, self.secret)


_links = _Links()


@dataclass(frozen=True)
class PendingLink:
    path: str
    expires: datetime


def _path(user: User, token: str) -> str:
    return reverse("password_reset_confirm", args=[urlsafe_base64_encode(force_bytes(user.pk)), token])


def password_link_remember(*, session: SessionBase, user: User, path: str) -> None:
    """Keep the link just issued for ``user`` on the admin's people page (not the token: see the module)."""
    token = path.rstrip("/").rsplit("/", 1)[-1]
    pending = dict(session.get(SESSION_KEY, {}))
    pending[str(user.pk)] = [base36_to_int(token.split("-", 1)[0]), int(time.time()), _digest(token)]
    session[SESSION_KEY] = pending


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def password_links_pending(*, session: SessionBase, users: list[User]) -> dict[int, PendingLink]:
    """The links this session issued that still work, by account id; the others are forgotten."""
    pending = session.get(SESSION_KEY, {})
    if not pending:
        return {}
    by_id = {str(user.pk): user for user in users}
    shown, kept = {}, {}
    for user_id, entry in pending.items():
        user = by_id.get(user_id)
        if user is None or not (isinstance(entry, list) and len(entry) == 3):
            continue
        stamp, issued, digest = entry
        token = _links.token_at(user, stamp)
        if constant_time_compare(_digest(token), digest) and default_token_generator.check_token(user, token):
            kept[user_id] = [stamp, issued, digest]
            shown[user.pk] = PendingLink(
                path=_path(user, token),
                expires=timezone.now() + timedelta(seconds=issued + settings.PASSWORD_RESET_TIMEOUT - time.time()),
            )
    if kept != pending:
        session[SESSION_KEY] = kept
    return shown
