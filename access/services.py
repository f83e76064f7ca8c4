"""Accounts and their roles (the four role groups with their permissions)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission, User
from django.core.exceptions import ValidationError

from access import roles


def roles_ensure() -> dict[str, Group]:
    """Create the four role groups with their permissions (idempotent)."""
    if Group.objects.filter(name__in=roles.ROLES).count() < len(roles.ROLES):
        roles.sync_groups(group_model=Group, permission_model=Permission)
    return {group.name: group for group in Group.objects.filter(name__in=roles.ROLES)}


def user_ensure(*, username: str, role: str, password: str | None = None, email: str = "") -> User:
    """Get or create an account in one role. Staff status follows the role: reviewers and experts never get the
    Django admin (it would show them other people's judgments and gold)."""
    if role not in roles.ROLES:
        raise ValidationError(f"unknown role {role!r}; roles are {', '.join(roles.ROLES)}")
    groups = roles_ensure()
    user, created = get_user_model().objects.get_or_create(username=username, defaults={"email": email})
    if created or password is not None:
        if password is None:
            user.set_unusable_password()
        else:
            user.set_password(password)
    user.is_staff = role in roles.STAFF_ROLES
    user.save()
    user.groups.add(groups[role])
    return user
