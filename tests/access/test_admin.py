"""The Django admin's accounts page (access/admin.py): a username never changes, and roles, staff status and
deactivation stay the people page's (recorded); a password, the e-mail and superuser status are still set there,
superuser status and a password recorded in the audit trail. The role groups are shown there read-only."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.urls import reverse

from access import roles
from audit.models import AuditEvent
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


def _events() -> list[tuple[str | None, str, str]]:
    return [(e.actor.username if e.actor else None, e.action, e.target) for e in AuditEvent.objects.order_by("id")]


def _superuser_posted(client, user: User, ticked: bool):  # noqa: ANN001, ANN202
    change = reverse("admin:auth_user_change", args=[user.pk])
    form = form_fields(client, change)
    form.pop("is_superuser", None)
    return client.post(change, form | ({"is_superuser": "on"} if ticked else {}))


def test_superuser_status_granted_and_revoked_in_the_admin_is_recorded(client, superuser, admin_user):
    """A superuser passes every check of every study; before, the admin's tick box granted it without a trace."""
    client.force_login(superuser)
    assert _superuser_posted(client, admin_user, ticked=True).status_code == 302
    admin_user.refresh_from_db()
    assert admin_user.is_superuser
    assert _events() == [("root", "account.superuser_grant", "user:study-admin")]
    assert _superuser_posted(client, admin_user, ticked=False).status_code == 302
    admin_user.refresh_from_db()
    assert not admin_user.is_superuser
    assert _events()[1:] == [("root", "account.superuser_revoke", "user:study-admin")]
    # a save that leaves the status as it was records nothing
    assert _superuser_posted(client, admin_user, ticked=False).status_code == 302
    assert len(_events()) == 2


def _auth_state() -> list[tuple]:
    return sorted((u.username, u.is_superuser, u.is_staff, u.email) for u in User.objects.all())


@pytest.mark.parametrize(("persona", "held"), [("reviewer", "reviewer"), ("researcher", "researcher")])
def test_superuser_status_is_an_admins_and_refused_to_anyone_else_by_its_field(client, superuser, persona, held,
                                                                             request):  # noqa: ANN001
    """A reviewer made superuser would see and change every study's judgments and gold; a researcher, who writes
    nothing, would write everything."""
    user = request.getfixturevalue(persona)
    client.force_login(superuser)
    before = _auth_state()
    response = _superuser_posted(client, user, ticked=True)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {"is_superuser": [
        f"superuser status is an admin's: {user.username} holds {held}, and a superuser sees and changes every "
        "study's judgments and gold (make them an admin on the people page first)"]}
    assert _auth_state() == before and _events() == []


def test_a_superuser_does_not_revoke_their_own_status(client, superuser):
    client.force_login(superuser)
    response = _superuser_posted(client, superuser, ticked=False)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {"is_superuser": [
        "you cannot revoke your own superuser status (another superuser can)"]}
    superuser.refresh_from_db()
    assert superuser.is_superuser and _events() == []


def test_a_password_set_or_turned_off_in_the_admin_is_recorded(client, superuser, reviewer):
    """Whoever sets a person's password can sign in as them and code in their name; the people page's set-password
    links were recorded, the admin's password form was not."""
    client.force_login(superuser)
    page = reverse("admin:auth_user_password_change", args=[reviewer.pk])
    form = form_fields(client, page)
    assert client.post(page, form | {"password1": "a-New-pass-42", "password2": "a-New-pass-42"}).status_code == 302
    assert _events() == [("root", "account.password_set", "user:reviewer")]
    form = form_fields(client, page)
    assert client.post(page, form | {"usable_password": "false", "unset-password": "1"}).status_code == 302
    reviewer.refresh_from_db()
    assert not reviewer.has_usable_password()
    assert _events()[1:] == [("root", "account.password_unset", "user:reviewer")]
    # a refused form (two passwords that differ) changes and records nothing
    form = form_fields(client, page)
    assert client.post(page, form | {"password1": "a-New-pass-42", "password2": "another-pass-42"}).status_code == 200
    assert len(_events()) == 2


def _groups() -> list[tuple[str, list[str]]]:
    return [(g.name, sorted(g.permissions.values_list("codename", flat=True))) for g in Group.objects.order_by("name")]


def test_the_role_groups_are_shown_read_only(client, superuser, researcher):
    """A role group's permissions are the code's (access.roles.ROLE_PERMISSIONS): before, a superuser gave the
    researcher group change_judgment in the admin, unrecorded, so researchers changed judgments there; renamed or
    deleted, a role group took its role from everyone in it."""
    client.force_login(superuser)
    group = Group.objects.get(name=roles.RESEARCHER)
    before = _groups()
    change = reverse("admin:auth_group_change", args=[group.pk])
    assert client.get(change).status_code == 200  # shown
    wanted = Permission.objects.get(codename="change_judgment")
    assert client.post(change, {"name": "researchers", "permissions": [str(wanted.pk)]}).status_code == 403
    assert client.post(reverse("admin:auth_group_delete", args=[group.pk]), {"post": "yes"}).status_code == 403
    assert client.post(reverse("admin:auth_group_add"), {"name": "extra"}).status_code == 403
    assert _groups() == before
    assert roles.RESEARCHER in [name for name, _ in before] and researcher.groups.get().name == roles.RESEARCHER
