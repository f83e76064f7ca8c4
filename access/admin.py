"""Accounts in the Django admin (superusers only: no role holds auth's permissions), with what the people page owns
read-only. The people page (``access.views.people``) makes an account with its role, sets roles (staff status
follows the role: a reviewer or expert with the Django admin would see everyone's judgments and gold), deactivates
and issues set-password links, each recorded in the audit trail; the admin did all of it unrecorded and past those
rules. A username names its person in every export, report and the audit trail (``user:NAME``), so it never changes:
renamed in the admin, a coder looked like another person across two exports of one study. The admin still sets a
password (its own form), the e-mail, the names and superuser status."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html

# The people page's (recorded) or nobody's to change.
PEOPLE_PAGE_FIELDS = ("username", "is_active", "is_staff", "groups", "user_permissions", "last_login", "date_joined")

admin.site.unregister(User)


@admin.register(User)
class AccountAdmin(UserAdmin):
    readonly_fields = PEOPLE_PAGE_FIELDS

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
