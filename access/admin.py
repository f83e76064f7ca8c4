"""Accounts in the Django admin (superusers only: no role holds auth's permissions), with what the people page owns
read-only. The people page (``access.views.people``) makes an account with its role, sets roles (staff status
follows the role: a reviewer or expert with the Django admin would see everyone's judgments and gold), deactivates
and issues set-password links, each recorded in the audit trail; the admin did all of it unrecorded and past those
rules. A username names its person in every export, report and the audit trail (``user:NAME``), so it never changes:
renamed in the admin, a coder looked like another person across two exports of one study. The admin still sets a
password (its own form), the e-mail, the names and superuser status; a password and superuser status are recorded
(``access.services.account_superuser_set``, ``account_password_recorded``), since a superuser passes every check of
every study and whoever sets a password can sign in as its person.

The role groups are shown read-only: their permissions are the code's (``access.roles.ROLE_PERMISSIONS``, set by
the migrations), so a permission given to a role there, unrecorded, let researchers change judgments in the admin
until the next migration took it back, and a role group renamed or deleted took its role from everyone in it."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.forms import UserChangeForm
from django.contrib.auth.models import Group, User
from django.db import transaction
from django.forms import ModelForm
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html

from access import services

# The people page's (recorded) or nobody's to change.
PEOPLE_PAGE_FIELDS = ("username", "is_active", "is_staff", "groups", "user_permissions", "last_login", "date_joined")

admin.site.unregister(User)
admin.site.unregister(Group)


class AccountForm(UserChangeForm):
    """The account's change form, refusing by its field a superuser status its actor may not set
    (``access.services.superuser_problem``)."""

    by: User  # the signed-in superuser: AccountAdmin.get_form binds it to a subclass per request

    def clean(self) -> dict[str, Any]:
        super().clean()
        if "is_superuser" in self.changed_data:
            superuser = bool(self.cleaned_data.get("is_superuser"))
            problem = services.superuser_problem(user=self.instance, superuser=superuser, by=self.by)
            if problem:
                self.add_error("is_superuser", problem)
        return self.cleaned_data


@admin.register(User)
class AccountAdmin(UserAdmin):
    form = AccountForm
    readonly_fields = PEOPLE_PAGE_FIELDS

    def get_form(self, request: HttpRequest, obj: User | None = None, change: bool = False,
                 **kwargs: Any) -> type[ModelForm]:
        form = super().get_form(request, obj, change=change, **kwargs)
        return type(form.__name__, (form,), {"by": request.user})

    def save_model(self, request: HttpRequest, obj: User, form: ModelForm, change: bool) -> None:
        """The account's other fields as the form gives them, its superuser status through the service (recorded),
        in the change view's transaction."""
        superuser = obj.is_superuser
        granted_or_revoked = "is_superuser" in form.changed_data
        if granted_or_revoked:
            obj.is_superuser = not superuser
        super().save_model(request, obj, form, change)
        if granted_or_revoked:
            services.account_superuser_set(user=obj, superuser=superuser, by=request.user)  # type: ignore[arg-type]

    def user_change_password(self, request: HttpRequest, id: str, form_url: str = "") -> HttpResponse:
        """Django's password form, its write and its record in one transaction."""
        with transaction.atomic():
            user = self.get_object(request, unquote(id))
            before = user.password if user is not None else None
            response = super().user_change_password(request, id, form_url)
            if user is not None and request.method == "POST":
                user.refresh_from_db(fields=["password"])
                if user.password != before:
                    services.account_password_recorded(user=user, by=request.user)  # type: ignore[arg-type]
            return response

    # An account is made on the people page, with its role and an audit event.
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    # Nor deleted: the audit trail names it (``user:NAME``), and its name taken again would make another person the
    # author of those events. The people page deactivates an account instead.
    def has_delete_permission(self, request: HttpRequest, obj: User | None = None) -> bool:
        return False

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "",
                    extra_context: dict[str, Any] | None = None) -> HttpResponse:
        if request.method == "GET" and self.get_object(request, unquote(object_id)) is not None:
            messages.info(request, format_html(
                "Roles, deactivation and set-password links are on <a href=\"{}\">the people page</a>, recorded; a "
                "username names its person in every export, report and the audit trail, so it never changes.",
                reverse("people")))
        return super().change_view(request, object_id, form_url, extra_context)


@admin.register(Group)
class RoleGroupAdmin(GroupAdmin):
    """The role groups, read-only: their permissions are ``access.roles.ROLE_PERMISSIONS``, and a role is its group's
    name (``access.checks.user_roles``)."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Group | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Group | None = None) -> bool:
        return False
