"""Accounts and their roles (the four role groups with their permissions), and the admins' people management:
creating accounts (one at a time or from a CSV), one-time set-password links, roles, deactivation; and what a
superuser still changes in the Django admin (``access.admin``): superuser status and a password, each recorded."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Iterable, Iterator

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission, User
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.core.validators import EmailValidator, MaxLengthValidator, ProhibitNullCharactersValidator
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from access import roles
from access.checks import require_study_admin, require_superuser, user_roles
from audit.services import audit_record
from common.errors import RowError, RowErrors


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


# --- people: accounts made and managed by admins ---------------------------------------------------------------

USERNAME = re.compile(r"^[\w.@+-]{1,150}$")
EMAIL_MAX_LENGTH = 254  # django.contrib.auth's User.email is varchar(254); the people page's form uses it too
NO_NUL = ProhibitNullCharactersValidator()  # PostgreSQL text cannot hold NUL
EMAIL_CHECKS = (NO_NUL, MaxLengthValidator(EMAIL_MAX_LENGTH), EmailValidator())


def password_link(*, user: User) -> str:
    """A one-time link (path) at which the account sets its own password; it stops working once used, when the
    password changes, or after PASSWORD_RESET_TIMEOUT."""
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    return reverse("password_reset_confirm", args=[uid, default_token_generator.make_token(user)])


def _role_set(user: User, role: str) -> None:
    groups = roles_ensure()
    user.groups.remove(*[g for name, g in groups.items() if name != role])
    user.groups.add(groups[role])
    user.is_staff = role in roles.STAFF_ROLES


@transaction.atomic
def account_create(*, username: str, email: str, role: str, by: User) -> User:
    """Create an account in one role with no password yet: the person sets it at ``password_link``."""
    require_study_admin(by)
    problems = _account_problems(username=username, email=email, role=role)
    if problems:
        raise ValidationError(problems)
    user = _account_insert(username=username, email=email)
    user.set_unusable_password()
    _role_set(user, role)
    user.save()
    audit_record(by=by, action="account.create", target=f"user:{username}", role=role)
    return user


def _taken(username: str) -> str:
    return f"{username!r} already has an account"


def _account_insert(*, username: str, email: str) -> User:
    """The account's row. One made meanwhile under the name (the same form or CSV sent twice at once, an import's
    coder) is refused as the check before it refuses it, where the unique index would have answered a 500."""
    try:
        with transaction.atomic():
            return get_user_model().objects.create(username=username, email=email)
    except IntegrityError:
        if not get_user_model().objects.filter(username=username).exists():
            raise
        raise ValidationError({"username": _taken(username)}) from None


def _first_refusal(value: str, checks: tuple[Callable[[str], object], ...]) -> str | None:
    """The message of the first of Django's validators ``checks`` that refuses ``value``, None when all accept it."""
    for check in checks:
        try:
            check(value)
        except ValidationError as error:
            return " ".join(error.messages)
    return None


def _account_problems(*, username: str, email: str, role: str) -> dict[str, str]:
    """What is wrong with an account to be made, by field (the same checks for the form and every CSV row)."""
    problems = {}
    if email and (refusal := _first_refusal(email, EMAIL_CHECKS)):
        problems["email"] = refusal
    if not USERNAME.match(username):
        problems["username"] = "letters, digits and @.+-_ only, at most 150 characters"
    elif get_user_model().objects.filter(username=username).exists():
        problems["username"] = _taken(username)
    if role not in roles.ROLES:
        problems["role"] = f"must be one of {', '.join(roles.ROLES)}"
    return problems


class _Unreadable(Exception):
    """The csv module cannot read on from a line (a field over its size limit, say): that line's row error."""

    def __init__(self, error: RowError):
        super().__init__(error.message)
        self.error = error


def _csv_records(text: str) -> Iterator[tuple[int, list[str]]]:
    """The records of a CSV text, each with the line it starts on (a quoted cell may hold line breaks); blank lines
    are skipped. Raises _Unreadable where the csv module gives up."""
    reader = csv.reader(io.StringIO(text))
    while True:
        line = reader.line_num + 1
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            raise _Unreadable(RowError(line, "line", f"not valid CSV ({error}); the lines from here on were not "
                                                     "read")) from error
        if cells:
            yield line, cells


def _nul_cells(header: list[str], cells: list[str]) -> dict[str, str]:
    """A row's cells that hold NUL (PostgreSQL text cannot), by column name; ``column N`` past the header."""
    names = [*header, *(f"column {n}" for n in range(len(header) + 1, len(cells) + 1))]
    return {name: refusal for name, cell in zip(names, cells, strict=False)
            if (refusal := _first_refusal(cell, (NO_NUL,)))}


@transaction.atomic
def accounts_create_from_csv(*, text: str, by: User) -> list[User]:
    """Bulk add from a CSV with a header ``username,email,role``: all or nothing, every problem by line and column.
    Each row gets the single-account form's checks; a cell holding NUL and text the csv module cannot read (a field
    over its size limit, say) are row errors too, and so is a header naming one of the three columns twice."""
    require_study_admin(by)
    records = _csv_records(text)
    try:
        _, header = next(records, (1, []))
    except _Unreadable as unreadable:
        raise RowErrors([unreadable.error]) from unreadable
    header_problems = [f"column {n}: {refusal}" for n, name in enumerate(header, start=1)
                       if (refusal := _first_refusal(name, (NO_NUL,)))]
    # A column named twice would be read from its last place, the other's cells dropped without a word.
    header_problems += [f"column {n}: {name!r} is also column {header.index(name) + 1}"
                        for n, name in enumerate(header, start=1)
                        if name in ("username", "email", "role") and header.index(name) + 1 != n]
    missing = [c for c in ("username", "email", "role") if c not in header]
    if missing:
        header_problems.append(f"missing column(s) {', '.join(missing)}; expected username,email,role")
    if header_problems:
        raise RowErrors([RowError(1, "header", problem) for problem in header_problems])
    rows: list[tuple[int, str, str, str]] = []
    errors: list[RowError] = []
    seen: dict[str, int] = {}
    try:
        for line, cells in records:
            row = dict(zip(header, cells, strict=False))
            username, email, role = (row.get(name, "").strip() for name in ("username", "email", "role"))
            problems = _account_problems(username=username, email=email, role=role)
            if username in seen:
                problems["username"] = f"{username!r} is also on line {seen[username]}"
            seen.setdefault(username, line)
            problems |= _nul_cells(header, cells)
            errors += [RowError(line, name, message) for name, message in problems.items()]
            rows.append((line, username, email, role))
    except _Unreadable as unreadable:
        errors.append(unreadable.error)
    if errors:
        raise RowErrors(errors)
    if not rows:
        raise RowErrors([RowError(2, "username", "the file lists no accounts")])
    made: list[User] = []
    for line, username, email, role in rows:
        try:
            made.append(account_create(username=username, email=email, role=role, by=by))
        except ValidationError as refused:  # an account made meanwhile under its name (``_account_insert``)
            errors += [RowError(line, name, " ".join(messages)) for name, messages in refused.message_dict.items()]
    if errors:
        raise RowErrors(errors)
    return made


def is_automated_coder(*, user: User, groups: Iterable[str]) -> bool:
    """Whether an account holding these groups is an automated coder's, a study's method or reference coder
    (annotation.automated_coders): made inactive, without a password or a role, so that it never signs in. A person's
    account has a role (the people page, the shell and an import give one), but for a superuser that 0.2.0's
    ``createsuperuser`` made (no role: an upgraded installation's first admin); an account that is a superuser's, or
    active, is never a coder's."""
    return not set(groups) & set(roles.ROLES) and not user.is_superuser and not user.is_active


def _refuse_automated_coder(user: User, what: str) -> None:
    """The people page's changes that would let an automated coder's account sign in, refused with the reason."""
    if is_automated_coder(user=user, groups=user.groups.values_list("name", flat=True)):
        raise ValidationError(f"{user.get_username()} is an automated coder's account (a study's method or reference "
                              f"coder), which never signs in: it is given no {what}")


# Why an account may not be given a role that sees every study (``roles.STAFF_ROLES``), from the apps above this one
# (annotation: the account codes blind in a study), each in words or None (``on_role_seeing_every_study``).
_SEEING_EVERY_STUDY_REFUSALS: list[Callable[[User], str | None]] = []


def on_role_seeing_every_study(refusal: Callable[[User], str | None]) -> None:
    """Register why an account may not be given a role that sees every study (annotation.apps: a study's reviewer
    or expert, whose codings would no longer be blind), asked by ``account_role_set``."""
    if refusal not in _SEEING_EVERY_STUDY_REFUSALS:
        _SEEING_EVERY_STUDY_REFUSALS.append(refusal)


@transaction.atomic
def account_role_set(*, user: User, role: str, by: User) -> User:
    require_study_admin(by)
    _refuse_automated_coder(user, "role")
    if role not in roles.ROLES:
        raise ValidationError({"role": f"must be one of {', '.join(roles.ROLES)}"})
    if role in roles.STAFF_ROLES:
        for refusal in _SEEING_EVERY_STUDY_REFUSALS:
            if why := refusal(user):
                raise ValidationError({"role": why})
    if user.is_superuser and role != roles.ADMIN:  # superuser status is an admin's (superuser_problem)
        raise ValidationError({"role": f"{user.get_username()} is a superuser, which is an admin's status: a "
                                       "superuser revokes it in the Django admin first (recorded), then the role "
                                       "can change"})
    _role_set(user, role)
    user.save(update_fields=["is_staff"])
    audit_record(by=by, action="account.role_set", target=f"user:{user.get_username()}", role=role)
    return user


@transaction.atomic
def account_active_set(*, user: User, active: bool, by: User) -> User:
    """Deactivate (or reactivate) an account: a deactivated person's sessions and tokens stop at once (Django
    and the API refuse inactive accounts); their judgments stay."""
    require_study_admin(by)
    if user.pk == by.pk and not active:
        raise ValidationError("you cannot deactivate your own account")
    if active:
        _refuse_automated_coder(user, "reactivation")
    if not get_user_model().objects.filter(pk=user.pk, is_active=not active).update(is_active=active):
        raise ValidationError(f"{user.get_username()} is already {'active' if active else 'deactivated'}")
    user.refresh_from_db()
    audit_record(by=by, action="account.activate" if active else "account.deactivate",
                 target=f"user:{user.get_username()}")
    return user


@transaction.atomic
def password_link_issue(*, user: User, by: User) -> str:
    """A new one-time set-password link for someone who lost theirs (the old password stops working)."""
    require_study_admin(by)
    _refuse_automated_coder(user, "set-password link")
    user.set_unusable_password()
    user.save(update_fields=["password"])
    audit_record(by=by, action="account.password_reset", target=f"user:{user.get_username()}")
    return password_link(user=user)


# --- the Django admin's changes of an account (a superuser's) ---------------------------------------------------


def superuser_problem(*, user: User, superuser: bool, by: User) -> str | None:
    """Why ``by`` may not set ``user``'s superuser status to ``superuser``, in words (None: they may). A superuser
    passes every check of every study (``access.checks``): it is an admin's status, never a coder's or a
    researcher's, who would then see, and change, everyone's judgments and gold outside their role; and nobody
    revokes their own, so an installation is never left without a superuser by a slip."""
    name = user.get_username()
    if superuser and roles.ADMIN not in user_roles(user=user):
        held = ", ".join(user_roles(user=user)) or "no role"
        return (f"superuser status is an admin's: {name} holds {held}, and a superuser sees and changes every study's "
                "judgments and gold (make them an admin on the people page first)")
    if not superuser and user.pk == by.pk:
        return "you cannot revoke your own superuser status (another superuser can)"
    return None


@transaction.atomic
def account_superuser_set(*, user: User, superuser: bool, by: User) -> User:
    """Grant or revoke superuser status, recorded (``account.superuser_grant`` / ``account.superuser_revoke``)."""
    require_superuser(by)
    problem = superuser_problem(user=user, superuser=superuser, by=by)
    if problem:
        raise ValidationError({"is_superuser": problem})
    if not get_user_model().objects.filter(pk=user.pk, is_superuser=not superuser).update(is_superuser=superuser):
        raise ValidationError({"is_superuser": f"{user.get_username()} is already "
                                               f"{'a superuser' if superuser else 'not a superuser'}"})
    user.refresh_from_db(fields=["is_superuser"])
    audit_record(by=by, action="account.superuser_grant" if superuser else "account.superuser_revoke",
                 target=f"user:{user.get_username()}")
    return user


@transaction.atomic
def account_superuser_created(*, user: User, via: str) -> User:
    """A superuser made from a shell (``manage.py createsuperuser``: the installation's first admin) becomes an admin,
    as superuser status is an admin's (``superuser_problem``), and its creation is recorded with no actor
    (``account.create`` with role admin, ``account.superuser_grant``), as the people page and the admin record
    theirs."""
    _role_set(user, roles.ADMIN)
    user.save(update_fields=["is_staff"])
    target = f"user:{user.get_username()}"
    audit_record(by=None, action="account.create", target=target, role=roles.ADMIN, via=via)
    audit_record(by=None, action="account.superuser_grant", target=target, via=via)
    return user


def account_password_changed(*, user: User, via: str) -> None:
    """Record a password set from a shell (``manage.py changepassword``), with no actor, as the admin's password
    form records one (``account_password_recorded``)."""
    audit_record(by=None, action="account.password_set", target=f"user:{user.get_username()}", via=via)


def account_password_recorded(*, user: User, by: User) -> None:
    """Record a password a superuser set, or password sign-in they turned off, on the Django admin's password form
    (``account.password_set`` / ``account.password_unset``): whoever sets a person's password can sign in as them,
    so it is recorded as the people page's set-password links are. Called inside the write's transaction."""
    require_superuser(by)
    audit_record(by=by, action="account.password_set" if user.has_usable_password() else "account.password_unset",
                 target=f"user:{user.get_username()}")
