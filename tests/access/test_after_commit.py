"""An account made (or a set-password link issued) on the People page as the database drops right after the commit
answers with what was done, never the 503 that says "Nothing was changed" (common.outage): the link is kept in the
admin's session, whose save is the request's last write, and an admin told nothing was made would make the account
again and be refused ("already exists"), or never send the link of an account that was reset."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.messages import get_messages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from access.services import user_ensure
from tests.access.test_people import MANY, many_accounts
from tests.annotation.test_after_commit import _ended_after_the_commit_of

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)  # the connection is ended for real
User = get_user_model()


@pytest.fixture
def page(admin_user, settings) -> Client:
    settings.DEBUG = False  # the pages' own 500 and 503
    client = Client(raise_request_exception=False)
    client.force_login(admin_user)
    return client


def _said(answer) -> list[str]:  # noqa: ANN001
    assert answer.status_code == 302, (answer.status_code, answer.content[-300:])
    return [m.message for m in get_messages(answer.wsgi_request)]


@pytest.mark.parametrize("how", ["form", "csv"])
def test_an_account_made_as_the_database_drops_says_it_was_made_and_its_link_was_not_kept(page, how):
    with _ended_after_the_commit_of('INSERT INTO "auth_user"') as seen:
        if how == "form":
            answer = page.post(reverse("account-create"), {"username": "rita", "email": "", "role": "reviewer"})
        else:
            csv = SimpleUploadedFile("people.csv", b"username,email,role\nrita,,reviewer\n", content_type="text/csv")
            answer = page.post(reverse("accounts-upload"), {"file": csv})
    assert seen, "the account was committed"
    (said,) = _said(answer)
    assert said.startswith("Made: rita. Its one-time set-password link could not be kept on this page"), said
    assert "issue a new one with New set-password link" in said, said
    assert User.objects.filter(username="rita").exists()


def test_a_link_issued_as_the_database_drops_says_the_password_was_reset_and_the_link_not_kept(page):
    rita = user_ensure(username="rita", role="reviewer", password="an-old-Passphrase-1")  # noqa: S106
    with _ended_after_the_commit_of('UPDATE "auth_user"') as seen:
        answer = page.post(reverse("account-password-link", args=[rita.pk]))
    assert seen, "the reset was committed"
    (said,) = _said(answer)
    assert said.startswith("Reset: rita. Its one-time set-password link could not be kept on this page"), said
    assert not User.objects.get(pk=rita.pk).has_usable_password()


def test_a_link_kept_as_the_database_drops_after_the_session_is_saved_is_kept_and_said(page):
    """The session saved in the view is not saved again on the way out (a second save met the dropped database)."""
    with _ended_after_the_commit_of('UPDATE "django_session"') as seen:
        answer = page.post(reverse("account-create"), {"username": "rita", "email": "", "role": "reviewer"})
    assert seen, "the session was saved"
    (said,) = _said(answer)
    assert said.startswith("One-time set-password link for rita: beside the account below"), said
    assert "rita" in page.get(reverse("people")).content.decode()
    assert list(page.session["password_links"]) == [str(User.objects.get(username="rita").pk)]



def test_many_accounts_made_as_the_database_drops_are_said_briefly_in_the_cookie(page):
    """The message that the links were not kept names a count and the first three accounts, and is carried in the
    messages cookie: before, it named every account of the CSV, and past what the cookie holds Django put it in the
    session, whose row the dropped database was to take on the way out."""
    names, csv = many_accounts()
    with _ended_after_the_commit_of('INSERT INTO "auth_user"') as seen:
        answer = page.post(reverse("accounts-upload"), {"file": csv})
    assert seen, "the accounts were committed"
    (said,) = _said(answer)
    assert said.startswith(f"Made: {MANY} accounts ({names[0]}, {names[1]}, {names[2]} and {MANY - 3} more). Their "
                           "one-time set-password link could not be kept on this page"), said
    assert answer.cookies["messages"].value
    shown = page.get(reverse("people")).content.decode()
    assert f"Made: {MANY} accounts ({names[0]}" in shown
    assert User.objects.filter(username__in=names).count() == MANY
