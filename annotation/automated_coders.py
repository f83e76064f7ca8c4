"""Automated coders (docs/sessions.md#automated-coders-methods): a coder may be a method — an LLM judge with a name, a
version and a prompt id — whose labels arrive in the long format (``role`` = ``method``) through the same importer,
rules and idempotency as people's judgments (``annotation.judgment_import``).

A method is a study member with role ``method`` whose account can never sign in (inactive, no password, no role
group): its judgments need a coder like anyone's, but nobody works as it. Whether the study's human coders see its
labels is the study's ``method_labels`` setting (``annotation.services.study_method_labels_set``);
``method_labels_visible_to`` is the one read that honours it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import QuerySet

from access.checks import user_sees_all_studies
from annotation import services
from annotation.models import Judgment, SessionLabel, Study, StudyMember
from audit.services import audit_record

# What an automated coder's fields may hold: the limits are the columns' (StudyMember), one source for the API, the
# command and every other caller of the services below.
NAME_MAX = StudyMember._meta.get_field("method_name").max_length or 0
VERSION_MAX = StudyMember._meta.get_field("method_version").max_length or 0
PROMPT_ID_MAX = StudyMember._meta.get_field("method_prompt_id").max_length or 0
NAME_PATTERN = r"^[\w.@+-]+$"  # its length apart (NAME_MAX)
_NAME = re.compile(NAME_PATTERN[1:-1])  # used with fullmatch: "$" would also match before a final newline
_SURROGATE = re.compile("[\ud800-\udfff]")
NAME_RULE = f"letters, digits and @.+-_ only, at most {NAME_MAX} characters"


def coder_fields_check(fields: dict[str, tuple[object, int]]) -> None:
    """Refuse fields of an automated coder that the study's membership cannot hold: ``ValidationError`` naming
    each field and why. ``fields``: name -> (value, its column's length); ``name`` is the coder's name."""
    errors: dict[str, str] = {}
    for field, (value, limit) in fields.items():
        if not isinstance(value, str):
            errors[field] = f"must be text, not {type(value).__name__}"
        elif field == "name" and not _NAME.fullmatch(value):
            errors[field] = f"required: {NAME_RULE}" if not value else NAME_RULE
        elif "\x00" in value:
            errors[field] = "must not contain a NUL character"
        elif _SURROGATE.search(value):  # a JSON escape, or a byte not UTF-8 on a command line: not storable text
            errors[field] = "must not contain a lone surrogate character"
        elif len(value) > limit:
            errors[field] = f"at most {limit} characters (it has {len(value)})"
    if errors:
        raise ValidationError(errors)


def coder_errors(error: ValidationError) -> dict[str, list[str]]:
    """A refusal of ``method_register`` or ``reference_register`` by field (a message of no field is the name's)."""
    return error.message_dict if hasattr(error, "error_dict") else {"name": error.messages}


def method_account_ensure(*, username: str) -> User:
    """The account a method's judgments are recorded under: created inactive, with an unusable password and no
    role group, so it can never sign in or be given work. An existing account of a person is refused."""
    coder_fields_check({"name": (username, NAME_MAX)})
    user, created = get_user_model().objects.get_or_create(username=username, defaults={"is_active": False})
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    elif user.is_active:
        raise ValidationError({"name": f"{username} is a person's account; a method needs a name of its own"})
    return user


def _with_account(member: StudyMember, user: User) -> StudyMember:
    """``member`` holding its account ``user``, read inside the registration's transaction: a membership found (or
    refreshed) holds none, and the answer reading it after the commit would meet an outage there with the 503 that
    says nothing was changed (common.outage), for a coder that was registered."""
    member.user = user
    return member


# An archived study's coders stay as they were: a registration that would add or change one is refused.
ARCHIVED_CODERS = "it takes no new coders and its coders no longer change"


@transaction.atomic
def method_register(*, study: Study, name: str, version: str = "", prompt_id: str = "",
                    by: User | None) -> StudyMember:
    """Make ``name`` a method coder of the study (idempotent), recording what it is: version and prompt id. A
    changed version or prompt is a different method: give it a different name (its labels differ). A field the
    membership cannot hold is refused (``ValidationError`` by field: name, version, prompt_id), nothing written."""
    coder_fields_check({"name": (name, NAME_MAX), "version": (version, VERSION_MAX),
                        "prompt_id": (prompt_id, PROMPT_ID_MAX)})
    archived = services.study_locked(study)  # refused below if this would change it
    user = method_account_ensure(username=name)
    member, created = StudyMember.objects.get_or_create(
        study=study, user=user,
        defaults={"role": StudyMember.Role.METHOD, "method_name": name, "method_version": version,
                  "method_prompt_id": prompt_id},
    )
    if not created and member.role != StudyMember.Role.METHOD:
        raise ValidationError({"name": f"{name} is a member of the study as {member.role}, not a method"})
    changed = not created and (member.method_version, member.method_prompt_id) != (version, prompt_id)
    if archived and (created or changed):  # the account and membership just made are rolled back with it
        raise services.archived_refusal(study, ARCHIVED_CODERS)
    if changed:
        if user.judgments.filter(round__study=study).exists() or member.session_labels.exists():
            raise ValidationError({"name": f"method {name} already has labels as version {member.method_version!r}, "
                                           f"prompt {member.method_prompt_id!r}: register the new version under a new "
                                           "name"})
        StudyMember.objects.filter(pk=member.pk).update(method_name=name, method_version=version,
                                                        method_prompt_id=prompt_id)
        member.refresh_from_db()
    if created or changed:
        audit_record(by=by, action="method.register", study=study, target=f"user:{name}", version=version,
                     prompt_id=prompt_id)
    return _with_account(member, user)


@transaction.atomic
def reference_register(*, study: Study, name: str, description: str = "", by: User | None) -> StudyMember:
    """Make ``name`` the study's reference coder (idempotent; docs/sessions.md#coders-methods-and-reference-coders):
    whose session labels are the reference every rater and method is measured against, e.g. the controlled PHQ-8 state
    or a self-report label. Like a method, an account that can never sign in; ``description`` (what the labels are) is
    kept as its version. A study may have several reference coders (label sources); the metrics name the one they
    compare with. A field the membership cannot hold is refused (``ValidationError`` by field: name, description),
    nothing written."""
    coder_fields_check({"name": (name, NAME_MAX), "description": (description, VERSION_MAX)})
    archived = services.study_locked(study)  # refused below if this would change it
    user = method_account_ensure(username=name)
    member, created = StudyMember.objects.get_or_create(
        study=study, user=user,
        defaults={"role": StudyMember.Role.REFERENCE, "method_name": name, "method_version": description},
    )
    if not created and member.role != StudyMember.Role.REFERENCE:
        raise ValidationError({"name": f"{name} is a member of the study as {member.role}, not a reference coder"})
    changed = not created and member.method_version != description
    if archived and (created or changed):
        raise services.archived_refusal(study, ARCHIVED_CODERS)
    if changed:
        StudyMember.objects.filter(pk=member.pk).update(method_version=description)
        member.refresh_from_db()
    if created or changed:
        audit_record(by=by, action="reference.register", study=study, target=f"user:{name}")
    return _with_account(member, user)


AUTOMATED_ROLES = (StudyMember.Role.METHOD, StudyMember.Role.REFERENCE)  # coders that are not people


def is_human_coder(*, study: Study, user: User) -> bool:
    return StudyMember.objects.filter(study=study, user=user).exclude(role__in=AUTOMATED_ROLES).exists()


def method_labels_visible_to(*, user: User, study: Study, turn_ids: Iterable[int] | None = None,
                             session_ids: Iterable[int] | None = None) -> QuerySet[Judgment]:
    """The methods' labels (non-gold judgments of the study's method members) that a page may show this user:
    every one for staff (admins, researchers); for a human coder only when the study shows method labels
    (``Study.MethodLabels.SHOWN``, to confirm or correct them), never when it blinds them; nothing for anyone else.
    Optionally limited to some turns (their turn- and response-level labels) or sessions."""
    labels = Judgment.objects.filter(
        round__study=study, is_gold=False, score__isnull=False,
        coder__study_memberships__study=study, coder__study_memberships__role=StudyMember.Role.METHOD,
    )
    shown = study.method_labels == Study.MethodLabels.SHOWN and is_human_coder(study=study, user=user)
    if not user_sees_all_studies(user=user) and not shown:
        return labels.none()
    if turn_ids is not None:
        labels = labels.filter(turn_id__in=list(turn_ids))
    if session_ids is not None:
        labels = labels.filter(session_id__in=list(session_ids))
    return labels.select_related("attribute", "coder").order_by("turn_id", "response_id", "session_id",
                                                                "attribute__position", "coder__username")


def session_labels_visible_to(*, user: User, study: Study, session_ids: Iterable[int] | None = None,
                              roles: Iterable[str] = (StudyMember.Role.REFERENCE, StudyMember.Role.METHOD),
                              ) -> QuerySet[SessionLabel]:
    """The session labels (docs/sessions.md#session-labels) of the reference coders and the methods that a page may show
    this user: every one for staff (admins, researchers); for a human coder of the study, the reference's only when the
    study shows them (``reference_labels`` = ``shown``) and the methods' only when it shows method labels
    (``method_labels``), never while it blinds them (the default); nothing for anyone else. Optionally limited to some
    sessions. The one read of these labels for people's pages: a reviewer page that goes through it cannot leak them."""
    wanted = set(roles)
    labels = SessionLabel.objects.filter(study=study, coder__role__in=sorted(wanted))
    if not user_sees_all_studies(user=user):
        settings: dict[str, str] = {StudyMember.Role.REFERENCE: study.reference_labels,
                                    StudyMember.Role.METHOD: study.method_labels}
        shown = sorted(role for role in wanted if settings.get(role) == Study.MethodLabels.SHOWN)
        if not shown or not is_human_coder(study=study, user=user):
            return labels.none()
        labels = labels.filter(coder__role__in=shown)
    if session_ids is not None:
        labels = labels.filter(session_id__in=list(session_ids))
    return labels.select_related("attribute", "coder__user").order_by("session_id", "coder__role", "coder_id",
                                                                      "seed", "attribute__position")


def reference_labels_visible_to(*, user: User, study: Study,
                                session_ids: Iterable[int] | None = None) -> QuerySet[SessionLabel]:
    """The reference coders' session labels this user may see (``session_labels_visible_to`` for that role)."""
    return session_labels_visible_to(user=user, study=study, session_ids=session_ids,
                                     roles=(StudyMember.Role.REFERENCE,))
