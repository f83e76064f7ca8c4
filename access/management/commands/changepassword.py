"""Django's ``changepassword``, with the password set recorded in the audit trail (``account.password_set``, no
actor), as the admin's password form and the people page's set-password links are
(``access.services.account_password_changed``)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.management.commands import changepassword
from django.db import transaction

from access.management.shell_accounts import accounts_saved
from access.services import account_password_changed


class Command(changepassword.Command):
    help = changepassword.Command.help + " The change is recorded in the audit trail."

    def handle(self, *args: Any, **options: Any) -> str | None:
        with transaction.atomic(using=options.get("database")), accounts_saved() as saved:
            result = super().handle(*args, **options)
            for user, _ in saved:
                account_password_changed(user=user, via="changepassword")
        return result
