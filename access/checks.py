"""Who may do what, answered in one place. A refusal is ``PermissionDenied`` (403 on every page and API), never a
validation error: being the wrong person is not a mistake in the input."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied

from access import roles

AnyUser = User | AnonymousUser


def user_roles(*, user: AnyUser) -> list[str]:
    if not user.is_authenticated:
        return []
    names = set(user.groups.values_list("name", flat=True))
    return [role for role in roles.ROLES if role in names]


def user_sees_all_studies(*, user: AnyUser) -> bool:
    """Admins and researchers see every study and all of its data; everyone else only their own work."""
    if not user.is_authenticated:
        return False
    return bool(getattr(user, "is_superuser", False)) or bool(
        {roles.ADMIN, roles.RESEARCHER} & set(user_roles(user=user))
    )


def is_study_admin(user: AnyUser) -> bool:
    if not user.is_authenticated:
        return False
    return bool(getattr(user, "is_superuser", False)) or roles.ADMIN in user_roles(user=user)


def require_study_admin(user: AnyUser) -> None:
    if not is_study_admin(user):
        raise PermissionDenied("Only study admins can do this.")


def require_superuser(user: AnyUser) -> None:
    """Superuser status, and an account's password set by another person, are a superuser's to change."""
    if not (user.is_authenticated and getattr(user, "is_superuser", False)):
        raise PermissionDenied("Only a superuser can do this.")


def require_staff(user: AnyUser) -> None:
    if not user_sees_all_studies(user=user):
        raise PermissionDenied("Only admins and researchers can do this.")


def token_scopes_allowed(user: AnyUser) -> list[str]:
    """The API token scopes the account's roles allow, in a stable order."""
    if getattr(user, "is_superuser", False):
        return list(roles.TOKEN_SCOPES[roles.ADMIN])
    allowed = {scope for role in user_roles(user=user) for scope in roles.TOKEN_SCOPES[role]}
    return [scope for scope in roles.TOKEN_SCOPES[roles.ADMIN] if scope in allowed]
