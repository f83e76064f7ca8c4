"""Django's ``createsuperuser``, with what the product adds to any account it makes: the new superuser is an admin
(superuser status is an admin's, README "Roles") and its creation is in the audit trail, in the transaction that
makes the account (``access.services.account_superuser_created``). This is how an installation gets its first
admin (README "Full stack"); everyone else is made on the people page."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.management.commands import createsuperuser
from django.db import transaction

from access.management.shell_accounts import accounts_saved
from access.services import account_superuser_created


class Command(createsuperuser.Command):
    help = createsuperuser.Command.help + " The account is an admin, and its creation is recorded in the audit trail."

    def handle(self, *args: Any, **options: Any) -> None:
        # One transaction from the prompts to the record: the account exists with its role and its record, or not
        # at all (a prompt read while it is open holds no lock anyone waits on).
        with transaction.atomic(using=options.get("database")), accounts_saved() as saved:
            super().handle(*args, **options)
            for user, created in saved:
                if created and user.is_superuser:
                    account_superuser_created(user=user, via="createsuperuser")
