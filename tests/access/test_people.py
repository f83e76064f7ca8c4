"""Admins make and manage accounts from the product: one-time set-password links, CSV bulk add, roles,
deactivation; everyone else gets 403."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from audit.models import AuditEvent
from tests.conftest import sign_in

pytestmark = pytest.mark.django_db
User = get_user_model()


def _link(page: str) -> str:
    match = re.search(r"http://testserver(/reset/[^/]+/[^/ ]+/)", page)
    assert match, page
    return match.group(1)


def test_an_account_made_by_an_admin_sets_its_own_password_once(client, admin_user):
    client.force_login(admin_user)
    page = client.post(reverse("account-create"), {"username": "rita", "email": "rita@example.org",
                                                   "role": "reviewer"}, follow=True).content.decode()
    rita = User.objects.get(username="rita")
    assert not rita.has_usable_password() and list(rita.groups.values_list("name", flat=True)) == ["reviewer"]
    assert not rita.is_staff
    link = _link(page)
    client.logout()
    form = client.get(link, follow=True)
    assert b"Set your password" in form.content
    done = client.post(form.redirect_chain[-1][0] if form.redirect_chain else link,
                       {"new_password1": "a-long-Passphrase-42", "new_password2": "a-long-Passphrase-42"}, follow=True)
    assert b"Your password is set." in done.content
    assert sign_in(client, "rita", "a-long-Passphrase-42")
    client.logout()
    assert b"has been used or has expired" in client.get(link, follow=True).content
    assert AuditEvent.objects.filter(action="account.create", actor=admin_user, target="user:rita").exists()


def test_a_csv_of_accounts_is_all_or_nothing_with_line_numbers(client, admin_user):
    client.force_login(admin_user)
    bad = b"username,email,role\nann,ann@x.org,reviewer\nbob,bob@x.org,boss\nann,a2@x.org,expert\n"
    from django.core.files.uploadedfile import SimpleUploadedFile

    page = client.post(reverse("accounts-upload"), {"file": SimpleUploadedFile("p.csv", bad)},
                       follow=True).content.decode()
    assert "line 3: role: must be one of reviewer, expert, admin, researcher" in page
    assert "line 4: username: &#x27;ann&#x27; is also on line 2" in page
    assert not User.objects.filter(username__in=["ann", "bob"]).exists()
    good = b"username,email,role\nann,ann@x.org,reviewer\neve,eve@x.org,expert\n"
    page = client.post(reverse("accounts-upload"), {"file": SimpleUploadedFile("p.csv", good)},
                       follow=True).content.decode()
    assert page.count("/reset/") == 2
    assert User.objects.get(username="eve").groups.get().name == "expert"


def test_deactivating_stops_sign_in_and_keeps_the_account(client, admin_user, reviewer):
    client.force_login(admin_user)
    client.post(reverse("account-active", args=[reviewer.pk]))
    reviewer.refresh_from_db()
    assert not reviewer.is_active
    client.logout()
    assert not sign_in(client, "reviewer", "pw-for-tests")
    client.force_login(admin_user)
    client.post(reverse("account-active", args=[reviewer.pk]), {"active": "1"})
    assert sign_in(client, "reviewer", "pw-for-tests")


def test_an_admin_cannot_deactivate_themselves(client, admin_user):
    client.force_login(admin_user)
    page = client.post(reverse("account-active", args=[admin_user.pk]), follow=True).content.decode()
    assert "you cannot deactivate your own account" in page
    admin_user.refresh_from_db()
    assert admin_user.is_active


def test_setting_a_role_replaces_the_old_one_and_staff_follows(client, admin_user, reviewer):
    client.force_login(admin_user)
    client.post(reverse("account-role", args=[reviewer.pk]), {"role": "researcher"})
    reviewer.refresh_from_db()
    assert list(reviewer.groups.values_list("name", flat=True)) == ["researcher"] and reviewer.is_staff


def test_people_pages_are_for_admins_only(client, reviewer, researcher):
    for user in (reviewer, researcher):
        client.force_login(user)
        assert client.get(reverse("people")).status_code == 403
        assert client.post(reverse("account-create"), {"username": "x", "role": "admin"}).status_code == 403
    assert not User.objects.filter(username="x").exists()
