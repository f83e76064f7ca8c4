"""The admins' people page: accounts, roles, deactivation, one-time set-password links."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST, require_safe

from access import forms, password_links, services
from access.authed_request import AuthedRequest
from access.checks import require_study_admin, user_roles
from common.errors import RowErrors
from common.outage import read_after_commit
from common.uploads import size_said

View = Callable[..., HttpResponse]


def admin_only(view: View) -> View:
    @login_required
    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        require_study_admin(request.user)
        return view(request, *args, **kwargs)

    return wrapper


def _link_kept(request: HttpRequest, users: list[Any], paths: list[str], *, done: str) -> None:
    """Keep the links just issued beside their accounts on this admin's people page (access.password_links). The
    accounts (``done``: made or reset) are committed, so the session is saved here, not on the way out: a database
    that cannot take it (unreachable or busy) leaves the links unkept, said in the message (a cookie's), and the
    answer is never the 503 that says nothing was changed. The message names a count and the first few accounts
    (``_accounts_said``), whatever their number, so it stays in the messages cookie: a longer one would be put in the
    session, saved on the way out (to a database that may not take it), growing with the file."""
    for user, path in zip(users, paths, strict=True):
        password_links.password_link_remember(session=request.session, user=user, path=path)
    names = _accounts_said(users)

    def saved() -> bool:
        request.session.save()
        return True

    kept = read_after_commit(saved, otherwise=False)
    request.session.modified = False  # saved, or left out: nothing for the way out to save (and fail on) again
    if not kept:
        messages.warning(request, f"{done}: {names}. {'Its' if len(users) == 1 else 'Their'} one-time set-password "
                                  f"link could not be kept on this page (the database could not take it): once the "
                                  f"page loads again, issue a new one with New set-password link beside the account.")
        return
    if len(users) == 1:
        messages.success(request, f"One-time set-password link for {names}: beside the account below until it is "
                                  "used or expires. Copy it and send it to them.")
    else:
        messages.success(request, f"One-time set-password links for {names}: beside each account below until it is "
                                  "used or expires. Copy each and send it to its person.")


NAMED = 3  # the accounts a message names; the others are counted (every one is listed on the page)


def _accounts_said(users: list[Any]) -> str:
    """The accounts a message is about: the name of one; else their number and the first ``NAMED`` names."""
    names = [user.get_username() for user in users]
    if len(names) == 1:
        return names[0]
    if len(names) <= NAMED:
        return f"{len(names)} accounts ({', '.join(names[:-1])} and {names[-1]})"
    return f"{len(names)} accounts ({', '.join(names[:NAMED])} and {len(names) - NAMED} more)"


@admin_only
@require_safe
def people(request: AuthedRequest) -> HttpResponse:
    accounts = list(get_user_model().objects.prefetch_related("groups").order_by("username"))
    links = {pk: (request.build_absolute_uri(link.path), link.expires) for pk, link in
             password_links.password_links_pending(session=request.session, users=accounts).items()}
    return render(request, "access/people.html", {
        "accounts": [(a, names, links.get(a.pk), services.is_automated_coder(user=a, groups=names))
                     for a, names in ((a, [g.name for g in a.groups.all()]) for a in accounts)],
        "form": forms.AccountForm(), "csv_form": forms.AccountsCsvForm(), "roles": user_roles(user=request.user),
        "csv_max_size": size_said(settings.ACCOUNTS_CSV_MAX_SIZE),
    })


@admin_only
@require_POST
def account_create(request: AuthedRequest) -> HttpResponse:
    form = forms.AccountForm(request.POST)
    if not form.is_valid():
        for name, errors in form.errors.items():
            messages.error(request, f"{name}: {' '.join(str(e) for e in errors)}")
        return redirect("people")
    try:
        user = services.account_create(by=request.user, **form.cleaned_data)
    except ValidationError as error:
        for name, refusals in error.message_dict.items():
            messages.error(request, f"{name}: {' '.join(refusals)}")
        return redirect("people")
    _link_kept(request, [user], [services.password_link(user=user)], done="Made")
    return redirect("people")


@admin_only
@require_POST
def accounts_upload(request: AuthedRequest) -> HttpResponse:
    form = forms.AccountsCsvForm(request.POST, request.FILES)
    if not form.is_valid():
        for name, errors in form.errors.items():
            messages.error(request, f"{name}: {' '.join(str(e) for e in errors)}")
        return redirect("people")
    try:
        users = services.accounts_create_from_csv(text=form.cleaned_data["file"], by=request.user)
    except RowErrors as error:
        messages.error(request, error.summary())
        return redirect("people")
    _link_kept(request, users, [services.password_link(user=user) for user in users], done="Made")
    return redirect("people")


def _account(user_id: int) -> Any:
    return get_object_or_404(get_user_model(), pk=user_id)


@admin_only
@require_POST
def account_role(request: AuthedRequest, user_id: int) -> HttpResponse:
    user = _account(user_id)
    form = forms.RoleForm(request.POST)
    if form.is_valid():
        try:
            services.account_role_set(user=user, role=form.cleaned_data["role"], by=request.user)
        except ValidationError as error:
            messages.error(request, " ".join(error.messages))
        else:
            messages.success(request, f"{user.get_username()} is now {form.cleaned_data['role']}.")
    else:
        messages.error(request, "choose one of the roles")
    return redirect("people")


@admin_only
@require_POST
def account_active(request: AuthedRequest, user_id: int) -> HttpResponse:
    user = _account(user_id)
    form = forms.ActiveForm(request.POST)
    form.is_valid()
    active = bool(form.cleaned_data.get("active"))
    try:
        services.account_active_set(user=user, active=active, by=request.user)
        messages.success(request, f"{user.get_username()} is {'active again' if active else 'deactivated'}: "
                                  + ("they can sign in." if active else "their sessions and tokens stop now; "
                                                                        "their judgments stay."))
    except ValidationError as error:
        for message in error.messages:
            messages.error(request, message)
    return redirect("people")


@admin_only
@require_POST
def account_password_link(request: AuthedRequest, user_id: int) -> HttpResponse:
    user = _account(user_id)
    try:
        link = services.password_link_issue(user=user, by=request.user)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        _link_kept(request, [user], [link], done="Reset")
    return redirect("people")
