"""The API tokens page: create a token (scopes limited to what the account's role allows; the key is shown once),
see your tokens with their last use, revoke one. Admins see and revoke everyone's."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import get_template
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from access.authed_request import AuthedRequest
from access.checks import is_study_admin, token_scopes_allowed, user_sees_all_studies
from api import forms, services
from api.models import ApiToken
from common.outage import read_after_commit


def _studies(request: AuthedRequest) -> Any:
    # The study model through the token's lazy foreign key: api sits below the app that owns studies.
    study_model = ApiToken._meta.get_field("study").related_model
    studies = study_model._default_manager.order_by("slug")
    return studies if user_sees_all_studies(user=request.user) else studies.filter(members__user=request.user)


def _tokens(request: AuthedRequest) -> Any:
    tokens = ApiToken.objects.select_related("user", "study").order_by("-created_at")
    return tokens if is_study_admin(request.user) else tokens.filter(user=request.user)


@never_cache
@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def tokens(request: AuthedRequest) -> HttpResponse:
    scopes = token_scopes_allowed(request.user)
    studies, listed = _studies(request), _tokens(request)  # the account's roles are read here, before any commit
    form = forms.TokenForm(request.POST or None, scopes=scopes, studies=studies)
    raw = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        days = data["expires_in_days"]
        token, raw = services.api_token_create(
            user=request.user, name=data["name"], scopes=data["scopes"], study=data["study"], by=request.user,
            expires_at=timezone.now() + timedelta(days=days) if days else None)
        form = forms.TokenForm(scopes=scopes, studies=studies)
    # The key is in this one answer only (never in the session or a redirect), which no cache keeps.
    context = {"form": form, "raw": raw, "tokens": listed, "scopes": scopes, "now": timezone.now()}
    if raw is None:
        return render(request, "api/tokens.html", context)
    # The token is committed: a page the database cannot be read for still shows its key, never the 503 that says
    # nothing was changed (common.outage), after which the key would be lost.
    page = read_after_commit(lambda: render(request, "api/tokens.html", context), otherwise=None)
    return page or HttpResponse(get_template("api/token_made.html").render({"raw": raw}))


@login_required
@require_POST
def token_revoke(request: AuthedRequest, token_id: int) -> HttpResponse:
    token = get_object_or_404(_tokens(request), pk=token_id)
    services.api_token_revoke(token=token, by=request.user)
    messages.success(request, f"Token {token.key_prefix}… ({token.name}) is revoked; it stops working now.")
    return redirect("api-tokens")
