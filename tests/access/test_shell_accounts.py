"""The shell's account commands (``manage.py createsuperuser``, ``changepassword``) are Django's with the product's
rules: the first admin made by ``createsuperuser`` is an admin (superuser status is an admin's), and both commands'
writes are in the audit trail, as the people page's and the Django admin's are. Before, an account made or a
password set from a shell left no record, and a superuser made there held no role."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command, get_commands

from access import roles
from access.checks import user_roles
from access.management.commands import changepassword
from audit.models import AuditEvent

pytestmark = pytest.mark.django_db


def _events() -> list[tuple]:
    return list(AuditEvent.objects.order_by("pk").values_list("actor", "action", "target", "data"))


def test_the_commands_are_the_products():
    assert get_commands()["createsuperuser"] == "access"
    assert get_commands()["changepassword"] == "access"


def test_createsuperuser_makes_an_admin_and_records_it(monkeypatch):
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", "a-long-first-password-9")
    call_command("createsuperuser", "--noinput", username="first", email="first@example.org", verbosity=0)
    first = User.objects.get(username="first")
    assert (first.is_superuser, first.is_staff, user_roles(user=first)) == (True, True, [roles.ADMIN])
    assert first.check_password("a-long-first-password-9")
    assert _events() == [(None, "account.create", "user:first", {"role": roles.ADMIN, "via": "createsuperuser"}),
                         (None, "account.superuser_grant", "user:first", {"via": "createsuperuser"})]


def test_a_refused_createsuperuser_makes_and_records_nothing(monkeypatch):
    User.objects.create_user("taken")
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", "a-long-first-password-9")
    with pytest.raises(CommandError, match="already taken"):
        call_command("createsuperuser", "--noinput", username="taken", email="", verbosity=0)
    assert (User.objects.filter(is_superuser=True).count(), _events()) == (0, [])


def test_changepassword_records_the_password_set(monkeypatch):
    reviewer = User.objects.create_user("rita", password="the-old-password-7")
    # the terminal's prompt (getpass) answers twice with the new password
    monkeypatch.setattr(changepassword.Command, "_get_pass", lambda self, prompt="": "the-new-password-8")
    call_command("changepassword", "rita", stdout=None)
    reviewer.refresh_from_db()
    assert reviewer.check_password("the-new-password-8")
    assert _events() == [(None, "account.password_set", "user:rita", {"via": "changepassword"})]
