"""The Django admin's accounts page (access/admin.py): a username never changes, and roles, staff status and
deactivation stay the people page's (recorded); a password, the e-mail and superuser status are still set there."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from django.urls import reverse

from access import roles
from tests.admin_form import form_fields
from tests.factories import JudgmentFactory, StudyMemberFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def superuser(db) -> User:  # noqa: ANN001
    """Only a superuser sees accounts in the Django admin: no role holds auth's permissions (access.roles)."""
    return User.objects.create_superuser("root", "root@example.org", "pw-for-tests")


def _state(user: User) -> tuple:
    user.refresh_from_db()
    return user.username, user.is_active, user.is_staff, sorted(user.groups.values_list("name", flat=True))


def test_a_coders_name_role_and_status_are_not_changed_in_the_admin(client, superuser, reviewer):
    """Before, a superuser renamed a coder on this page, and their exports, reports and the audit trail then carried
    the new name (one person looked like two across two exports of one study); their role, staff status (a reviewer
    with the Django admin sees everyone's judgments) and deactivation changed there unrecorded too."""
    JudgmentFactory(coder=reviewer, round__study=StudyMemberFactory(user=reviewer).study)
    before = _state(reviewer)
    client.force_login(superuser)
    change = reverse("admin:auth_user_change", args=[reviewer.pk])
    form = form_fields(client, change)
    changed = {"username": "renamed", "is_staff": "on", "groups": str(Group.objects.get(name=roles.ADMIN).pk),
               "email": "r@example.org"}
    form.pop("is_active", None)  # unticked: deactivated, were it read
    form.pop("user_permissions", None)  # a multiple select with nothing chosen posts nothing
    response = client.post(change, form | changed)
    assert response.status_code == 302  # saved: what the admin still sets
    assert _state(reviewer) == before
    assert reviewer.email == "r@example.org"
    assert before[3] == [roles.REVIEWER]
    page = client.get(change).content.decode()
    assert f'are on <a href="{reverse("people")}">the people page</a>, recorded; a username names its person' in page
    assert 'name="username"' not in page and 'name="groups"' not in page and 'name="is_staff"' not in page


def test_accounts_are_made_on_the_people_page_and_passwords_still_set_in_the_admin(client, superuser, reviewer):
    client.force_login(superuser)
    count = User.objects.count()
    assert client.post(reverse("admin:auth_user_add"), {"username": "by-hand", "password1": "x-Long-pass-9",
                                                        "password2": "x-Long-pass-9"}).status_code == 403
    assert User.objects.count() == count
    page = reverse("admin:auth_user_password_change", args=[reviewer.pk])
    form = form_fields(client, page) | {"password1": "a-New-pass-42", "password2": "a-New-pass-42"}
    assert client.post(page, form).status_code == 302
    reviewer.refresh_from_db()
    assert reviewer.check_password("a-New-pass-42")


def test_a_study_admin_does_not_see_accounts_in_the_django_admin(client, admin_user, reviewer):
    client.force_login(admin_user)
    assert client.get(reverse("admin:auth_user_change", args=[reviewer.pk])).status_code == 403


def test_an_account_is_not_deleted_in_the_admin(client, superuser, reviewer):
    """The audit trail names an account (``user:NAME``); deleted, its name could be given to someone else, who
    would then read as the author of those events. The people page deactivates instead."""
    client.force_login(superuser)
    delete = reverse("admin:auth_user_delete", args=[reviewer.pk])
    assert client.post(delete, {"post": "yes"}).status_code == 403
    changelist = reverse("admin:auth_user_changelist")
    assert client.post(changelist, {"action": "delete_selected", "_selected_action": [reviewer.pk],
                                    "post": "yes"}).status_code in (200, 302)
    assert User.objects.filter(pk=reviewer.pk).exists()
