"""The accounts a Django command saves, seen as it saves them (``post_save`` of the user model while the block
runs): the shell's account commands (``createsuperuser``, ``changepassword``) are Django's own, and this is how
their writes get recorded without copying them."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db.models.signals import post_save


@contextlib.contextmanager
def accounts_saved() -> Iterator[list[tuple[User, bool]]]:
    """(account, created) of each save of an account while the block runs, in order."""
    saved: list[tuple[User, bool]] = []

    def seen(sender: Any, instance: User, created: bool, **kwargs: Any) -> None:
        saved.append((instance, created))

    model = get_user_model()
    post_save.connect(seen, sender=model, weak=False, dispatch_uid="access.shell_accounts")
    try:
        yield saved
    finally:
        post_save.disconnect(sender=model, dispatch_uid="access.shell_accounts")
