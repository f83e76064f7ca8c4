"""Who may call what. Three layers, checked in this order:

1. ``TokenScope``: a request authenticated by an API token may only do what the token's scopes name (the view
   says which scope each method needs) and, for a study-scoped token, only on that study.
2. ``RolePermission``: the account's role must carry the model permissions the view names per method (so a
   reviewer can never ingest, and a researcher can read but not import).
3. Row-level visibility (which studies, whose judgments) is the selectors' job: ``annotation.apis.study_for``
   returns 404 for a study the caller cannot see, and the judgment selectors hand reviewers their own judgments
   only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rest_framework import exceptions
from rest_framework.permissions import BasePermission

from access.checks import user_sees_all_studies
from api.models import ApiToken

if TYPE_CHECKING:  # rest_framework.views imports this module (DEFAULT_PERMISSION_CLASSES): no cycle
    from rest_framework.request import Request
    from rest_framework.views import APIView

READ_METHODS = ("GET", "HEAD", "OPTIONS")


def _method(request: Request) -> str:
    return "GET" if request.method in READ_METHODS else str(request.method)


class TokenScope(BasePermission):
    def has_permission(self, request: Request, view: APIView) -> bool:
        token = request.auth
        if not isinstance(token, ApiToken):
            return True  # a browser session: the role decides
        scope = getattr(view, "required_scopes", {}).get(_method(request))
        if scope is None or scope not in token.scopes:
            wanted = repr(str(scope)) if scope is not None else "this operation"
            self.message = f"This token's scopes ({', '.join(token.scopes)}) do not include {wanted}."
            return False
        slug = view.kwargs.get("slug")
        if token.study is not None and slug is not None and slug != token.study.slug:  # study is select_related
            self.message = f"This token is limited to study {token.study.slug!r}."
            return False
        return True


class RolePermission(BasePermission):
    def has_permission(self, request: Request, view: APIView) -> bool:
        perms = getattr(view, "required_perms", {}).get(_method(request), ())
        if perms and not request.user.has_perms(perms):
            self.message = "Your role does not allow this."
            return False
        if getattr(view, "staff_only", False) and not user_sees_all_studies(user=request.user):
            self.message = "Only admins and researchers can do this."
            return False
        return True


def token_allows_study(request: Any, study: Any) -> None:
    """For objects reached without a study in the URL (a metric run by id): a study-scoped token stops here."""
    token = request.auth
    if isinstance(token, ApiToken) and token.study is not None and token.study_id != study.pk:
        raise exceptions.PermissionDenied(f"This token is limited to study {token.study.slug!r}.")
