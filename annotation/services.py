"""Writes of the annotation app: schemas, studies, members, rounds, assignments, judgments, check-item alerts.

Keyword-only, the actor passed as ``by``; every write that has an actor records its audit event inside its own
transaction. State transitions are compare-and-set (``filter(pk=…, status=expected).update(…) == 1``): a lost race
raises ``ChangedMeanwhile`` ("reload"), never an integrity error.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, Exists, F, OuterRef, QuerySet
from django.utils import timezone

from access.checks import require_study_admin, user_roles, user_sees_all_studies
from annotation import rules, schema_document, selectors
from annotation.kinds import (
    CoderSetting,
    KindSetting,
    StudyKind,
    kind_of,
    kind_settings,
    kind_settings_problems,
    setting_value,
)
from annotation.models import (
    Assignment,
    AttributeDefinition,
    FormerStudyMember,
    Judgment,
    JudgmentRevision,
    ReviewerAlert,
    Round,
    RoundItem,
    Schema,
    SessionLabel,
    Span,
    SpanSubcategory,
    Study,
    StudyMember,
    blinding_key_new,
)
from audit.services import audit_record
from benchmark.models import Conversation, ModelResponse, Session, Turn
from common.locks import advisory_lock
from common.lookups import any_of


class ChangedMeanwhile(ValidationError):
    """Someone else changed the object between the page being shown and this action: nothing was done."""

    def __init__(self, what: str):
        super().__init__(f"{what} changed meanwhile; reload the page and try again")


# --- schemas -------------------------------------------------------------------------------------------------


def schema_is_frozen(*, schema: Schema) -> bool:
    return schema.studies.exclude(status=Study.Status.SETUP).exists()


def study_opens(*, study_id: int) -> None:
    """The study's state rule, its one home: a study in set-up opens when coded data first comes into it, by its
    first round opened (``round_open``: no reviewer saves before) or by an import of judgments or session labels
    (``judgment_import``, ``session_labels``: the API, the commands and ``cab import`` alike), whatever the import
    holds. From then on its schema is frozen (``schema_is_frozen``): what was coded names its attributes. An open or
    archived study is left as it is. In the caller's transaction, so a refused import leaves the study in set-up."""
    Study.objects.filter(pk=study_id, status=Study.Status.SETUP).update(status=Study.Status.OPEN)


@transaction.atomic
def schema_install(*, document: dict, by: User | None = None) -> Schema:
    """Install or update a schema from its document. Refused once a study using it is open."""
    doc = schema_document.parse(document)
    existing = Schema.objects.filter(slug=doc.slug).first()
    if existing is not None and schema_is_frozen(schema=existing):
        raise ValidationError(f"schema {doc.slug} is frozen: a study using it is open")
    schema = schema_document.write_schema_rows(
        doc, schema_model=Schema, attribute_model=AttributeDefinition, subcategory_model=SpanSubcategory
    )
    audit_record(by=by, action="schema.install", target=f"schema:{schema.slug}", version=doc.version)
    return schema


# --- studies and members -------------------------------------------------------------------------------------

RESERVED_SLUGS = frozenset({"new"})  # /studies/new/ is the New study page, not a study's


def study_slug_check(*, slug: str) -> None:
    """The rules of a new study's slug: what the column holds (letters, digits, - and _, at most its length) and
    not a reserved word, the page's address of something else. Every path that names a new study asks this (the New
    study form, ``study_create``, the judgments import's study, ``import_study --as``, the synthetic generators), so
    none makes a study nobody can open. Refused: ``ValidationError({"slug": …})``."""
    try:
        Study._meta.get_field("slug").clean(slug, None)
    except ValidationError as error:
        raise ValidationError({"slug": error.messages}) from error
    if slug in RESERVED_SLUGS:
        raise ValidationError({"slug": f"{slug!r} is reserved; choose another"})


def study_slug_lock(slug: str) -> None:
    """Serialise, until this transaction ends, the writers that may create a study under ``slug`` (``study_create``,
    the judgments import of a study not there yet, ``import_study``): the second waits for the first to commit and
    then finds its study, as it would have sent after it."""
    advisory_lock(f"study.slug:{slug}")


@transaction.atomic
def study_create(
    *,
    slug: str,
    name: str,
    schema: Schema,
    model_slots: Sequence[str],
    by: User | None,
    is_synthetic: bool = False,
    description: str = "",
    **settings: Any,
) -> Study:
    """Create a study in set-up. ``settings`` are the study's other fields (show_model_names, check_threshold,
    check_min_items, show_therapist_reference, the blinding settings, …) and the settings of its kind's own
    (``annotation.kinds.KindSetting``, checked here for every caller: a setting of another kind, a value none of
    its choices, or a coder setting, which a study without coders cannot have, is refused by name and nothing is
    written). Its checks are the New study form's
    (``annotation.forms.StudyForm``, which the page, ``manage.py create_study`` and the API fill in); the slug's
    rules (``study_slug_check``) are checked here for every caller, and a slug taken meanwhile is refused here in
    the form's words, nothing written."""
    study_slug_check(slug=slug)
    study_slug_lock(slug)
    own = {name: settings.pop(name) for name in list(settings) if name in kind_settings()}
    problems = kind_settings_problems(schema, own)
    if problems:
        raise ValidationError(problems)
    try:
        with transaction.atomic():
            study = Study.objects.create(slug=slug, name=name, schema=schema, model_slots=list(model_slots),
                                         is_synthetic=is_synthetic, description=description, kind_settings=own,
                                         **settings)
    except IntegrityError as error:
        if not Study.objects.filter(slug=slug).exists():
            raise
        raise ValidationError({"slug": Study(slug=slug).unique_error_message(Study, ("slug",))}) from error
    audit_record(by=by, action="study.create", study=study, target=f"study:{slug}")
    return study


# What an admin may change once a study exists: not its slug, schema or model slots, which its data depends on.
# Beside these, a study has the settings of its kind's own (annotation.kinds.KindSetting, in Study.kind_settings).
STUDY_SETTINGS = ("name", "description", "show_model_names", "show_therapist_reference", "check_threshold",
                  "check_min_items", "experts_see_consensus", "method_labels", "reference_labels", "session_history",
                  "session_order")


@transaction.atomic
def study_settings_update(*, study: Study, by: User, shown: dict[str, Any] | None = None,
                          **settings: Any) -> list[str]:
    """Change some of a study's ``STUDY_SETTINGS``; returns the names of those whose value changed (recorded).

    The settings of the study kind's own (``annotation.kinds.KindSetting``) are changed the same way, in
    ``Study.kind_settings``; one of another kind, or a value none of its choices, is refused by name (a coder
    setting's: none of the study's coders of its roles, ``annotation.selectors.study_coders``).

    ``shown``: the values the admin's page showed (``study_settings_shown``). Only the settings the admin changed
    from those are written, so a page opened before another admin's save does not put old values back; a setting
    both changed is refused (``ChangedMeanwhile``) and nothing is written."""
    require_study_admin(by)
    known = kind_settings()
    unknown = sorted(set(settings) - set(STUDY_SETTINGS) - set(known))
    if unknown:
        raise ValidationError(f"not a study setting: {', '.join(unknown)}")
    given = {name: value for name, value in settings.items() if name in known}
    problems = kind_settings_problems(study.schema, given, coders=_coders_for(study, given, known))
    if problems:
        raise ValidationError(problems)
    # FOR NO KEY UPDATE: serialised with every other write that locks the study's row, while a row naming the study
    # (a check-item alert, an audit event) is still written meanwhile. A reviewer's completion raising an alert
    # under their member's lock waits for no study lock, so the update of their alert below (the member's lock)
    # waits for it and never the other way round: FOR UPDATE, which the alert's foreign key waits for, deadlocked.
    current = Study.objects.select_for_update(no_key=True).get(pk=study.pk)
    values = _settings_of(current, kind=kind_of(study))
    if shown is not None:
        settings = {name: value for name, value in settings.items() if name not in shown or value != shown[name]}
        clashes = [name for name in settings if name in shown and values[name] != shown[name]]
        if clashes:
            raise ChangedMeanwhile(f"the study's {', '.join(clashes)}")
    changed = {name: value for name, value in settings.items() if values[name] != value}
    if changed:
        own = {name: value for name, value in changed.items() if name in known}
        Study.objects.filter(pk=study.pk).update(
            **{name: value for name, value in changed.items() if name not in own},
            **({"kind_settings": {**current.kind_settings, **own}} if own else {}))
        audit_record(by=by, action="study.settings", study=current, target=f"study:{current.slug}", changed=changed)
        if {"check_threshold", "check_min_items"} & set(changed):  # what the check-item alerts are measured against
            check_alerts_update(assignments=Assignment.objects.filter(round__study_id=study.pk))
    study.refresh_from_db()
    return sorted(changed)


def _coders_for(study: Study, given: dict[str, Any],
                known: dict[str, tuple[StudyKind, KindSetting]]) -> dict[str, str] | None:
    """The study's coders (username -> role, those taken off it with the role they had) when ``given`` sets a coder
    setting (``annotation.kinds.CoderSetting``), else None: one query, only when it is needed."""
    if not any(isinstance(known[name][1], CoderSetting) for name in given):
        return None
    return {coder.username: str(coder.role) for coder in selectors.study_coders(study=study)}


def _settings_of(study: Study, *, kind: StudyKind) -> dict[str, Any]:
    """The study's settings by name: ``STUDY_SETTINGS`` and those of its kind's own (their defaults when unset)."""
    return {**{name: getattr(study, name) for name in STUDY_SETTINGS},
            **{setting.name: setting_value(study, setting) for setting in kind.settings}}


@transaction.atomic
def study_method_labels_set(*, study: Study, value: str, by: User) -> bool:
    """Blind the study's human coders to the methods' labels, or show them the labels to confirm or correct (the
    validation protocol of a judge, docs/sessions.md#automated-coders-methods). True when the setting changed
    (recorded)."""
    require_study_admin(by)
    if value not in Study.MethodLabels.values:
        raise ValidationError({"method_labels": f"must be one of {', '.join(Study.MethodLabels.values)}"})
    return bool(study_settings_update(study=study, by=by, method_labels=value))


def study_settings_shown(*, study: Study) -> dict[str, Any]:
    """The study's settings as a settings page shows them (``study_settings_update(shown=…)``), its kind's own
    included."""
    return _settings_of(study, kind=kind_of(study))


PEOPLE_ROLES = (StudyMember.Role.REVIEWER, StudyMember.Role.EXPERT)  # a study's members who are people


def member_refusal(*, user: User, role: str) -> str | None:
    """Why ``user`` cannot join a study as a coder of ``role`` (reviewer or expert), or None. A study's coders code
    blind: a reviewer sees only their own judgments, never gold, and in a blinded study no model names
    (docs/reference.md#roles). An account that sees every study (admin, researcher, superuser:
    ``access.checks.user_sees_all_studies``) sees all of that on every page, its coding page too: its codings would
    not be blind. The one rule of every path that adds a member (the study page, every judgment import)."""
    if not user_sees_all_studies(user=user):
        return None
    held = ", ".join(user_roles(user=user)) or "superuser"
    return (f"{user.get_username()} is an account of role {held}, which sees every study's judgments, gold and "
            f"model names: as {'an' if role == StudyMember.Role.EXPERT else 'a'} {role} of a study their codings "
            f"would not be blind. Code with an account of role reviewer or expert (People page)")


def coder_of_studies_refusal(user: User) -> str | None:
    """Why ``user`` may not be given a role that sees every study (admin, researcher), or None: they are a reviewer
    or expert of a study not archived, whose codings are blind (``member_refusal``, the same rule from the other
    side). Taken off those studies first (their judgments stay), the role can change. Asked by
    ``access.services.account_role_set`` (registered in annotation.apps)."""
    coding = sorted(StudyMember.objects.filter(user=user, role__in=PEOPLE_ROLES)
                    .exclude(study__status=Study.Status.ARCHIVED).values_list("study__slug", "role"))
    if not coding:
        return None
    named = ", ".join(f"{role} of {slug}" for slug, role in coding[:3]) + (
        f" and {len(coding) - 3} more" if len(coding) > 3 else "")
    return (f"{user.get_username()} is a {named}: a role that sees every study's judgments, gold and model names "
            "would unblind their codings. Take them off those studies first (their judgments stay), or code with "
            "another account")


# What an archived study's refusal of a judgment or a label says no longer changes.
ARCHIVED_JUDGMENTS = "its judgments and labels no longer change"
# What an archived study's refusal of a membership change (an addition, a removal, another role) says.
ARCHIVED_MEMBERS = "its members no longer change: nobody is added, taken off or given another role"


def study_locked(study: Study) -> bool:
    """Lock the study's row until this transaction ends, as archiving locks it; whether it is archived. Two writes
    that check the study at once are serialised, and a study archived meanwhile is seen archived.

    FOR NO KEY UPDATE, as an update of the study's values locks it: a row that names the study (a reviewer's
    check-item alert, an audit event) is still written meanwhile. Under FOR UPDATE, which such a row's foreign key
    waits for, a write holding it that then updated a reviewer's alert (a gold value, under the reviewer's lock)
    deadlocked with their completion raising the alert under that lock."""
    status = Study.objects.select_for_update(no_key=True).filter(pk=study.pk).values_list("status", flat=True).first()
    return status == Study.Status.ARCHIVED


def archived_refusal(study: Study, what: str) -> ValidationError:
    """What a write an archived study no longer takes is refused with: "study 'SLUG' is archived: WHAT"."""
    return ValidationError(f"study {study.slug!r} is archived: {what}")


def study_locked_unarchived(study: Study, *, what: str) -> None:
    """``study_locked``, refusing an archived study (``archived_refusal``). Every write an archived study no longer
    takes (its rounds, gold, judgments, labels, workshop notes, new members and coders) checks here, so a study
    archived meanwhile is refused, never written into after."""
    if study_locked(study):
        raise archived_refusal(study, what)


@transaction.atomic
def study_member_add(*, study: Study, user: User, role: str, by: User | None) -> StudyMember:
    """Add a person as a member in a role, reviewer or expert (idempotent); reviewers get the next anonymous alias
    R1, R2, … Someone taken off and added back in the role they had gets back their alias and place on the panel;
    in another role they are what they are now (a new alias, undecided for the panel), unless they coded in the
    study: their codings would change role with them, so that is refused. Someone added back gets back in their
    queue each completed item of an open round whose turn was given a response while they were off the study
    (``items_short_of_responses_reopened``). A method or a reference coder is an account that never
    signs in: ``annotation.automated_coders``."""
    if role not in PEOPLE_ROLES:
        raise ValidationError({"role": f"must be reviewer or expert, got {str(role)[:50]!r}: a method or a reference "
                                       "coder is registered with `manage.py register_coder` or the API "
                                       "(/api/v1/studies/SLUG/methods/, …/references/), never as a person's account"})
    # Whoever is added may turn out to be someone added back, whose items may go back to their queue (a removal
    # that commits before the study's row is locked makes them one): the completions lock before the study's row,
    # as an ingestion takes them (its trigger holds the lock until it commits, and its foreign keys to the study, a
    # conversation it claims, share the study's row then): the other order deadlocked with it. Taken whatever the
    # person is: it waits only for an ingestion into the study's completed turns, never for another holder.
    completions_locked(study.pk)
    # One addition to a study at a time: two reviewers added at once would otherwise get the same alias.
    archived = study_locked(study)
    member = StudyMember.objects.filter(study=study, user=user).first()
    if member is not None:  # a member already (a demo loaded again): nothing changes, archived or not
        return member
    if archived:
        raise archived_refusal(study, ARCHIVED_MEMBERS)
    if refusal := member_refusal(user=user, role=role):
        raise ValidationError({"username": refusal})
    # A member again: what they are now is what they are (FormerStudyMember). In the role they had, they are again
    # what they were: their alias (kept for them alone) and their place on the panel, whose main-round queue and
    # figures are still theirs.
    former = FormerStudyMember.objects.filter(study=study, user=user).first()
    if former is not None and former.role != role:
        # Codings carry no role of their own: the member's role is theirs. Added back in another role, a former
        # expert's codings would be read as a reviewer's (or the reverse), and every figure would change silently.
        codings = Judgment.objects.filter(round__study=study, coder=user, is_gold=False).count()
        if codings:
            raise ValidationError({"role": f"{user.get_username()} coded {codings} item{'s' if codings != 1 else ''} "
                                           f"in this study as {former.role}: added back as {role}, those codings "
                                           f"would be counted as {'an' if role == 'expert' else 'a'} {role}'s in "
                                           f"every report and export. Add them back as {former.role}"})
    was = former if former is not None and former.role == role else None
    member = StudyMember.objects.create(study=study, user=user, role=role, alias=was.alias if was else "",
                                        retained=was.retained if was else None)
    if former is not None:
        former.delete()
        items_short_of_responses_reopened(study=study, assignments=Assignment.objects.filter(coder=user))
    if role == StudyMember.Role.REVIEWER and not member.alias:
        # The next number after the aliases in use or once used (a count would repeat one after a removal, and
        # a removed reviewer's alias still names their notes and codings).
        aliases = [*StudyMember.objects.filter(study=study).values_list("alias", flat=True),
                   *FormerStudyMember.objects.filter(study=study).values_list("alias", flat=True)]
        used = [int(a[1:]) for a in aliases if a[:1] == "R" and a[1:].isdigit()]
        member.alias = f"R{max(used, default=0) + 1}"
        member.save(update_fields=["alias"])
    audit_record(by=by, action="member.add", study=study, target=f"user:{user.get_username()}", role=role)
    return member


# The advisory lock class of a study's completions (the two-key form, whose keys never meet common.locks' one-key
# locks): whatever completes an item or may find one short (a completion, a round reopened, a member added back,
# ``turns_short_requeue``) holds its study's shared, and the trigger that sends a turn back to its coders when a
# response is added to it (annotation migrations 0023 and 0025, which name this number) takes it exclusive, for
# every study whose rounds assign the turn, until its transaction commits. Before any item's row: the trigger locks
# the items it sends back after it, then their queue counters (migration 0017), as a save locks its item, then the
# counters.
COMPLETIONS_LOCK = -1039018984


def completions_locked(study_id: int) -> None:
    """Hold the study's completions lock shared until the transaction ends, before reading what an item's turn
    holds: a response being added to one of the study's turns (its trigger holds the lock exclusive until it
    commits) is waited for and then seen, and a response added meanwhile waits for this transaction to commit, then
    sees what it did (an item completed, a round open, a member back) and sends the turn back. Without it each could
    read the other's state from before, and the new response be coded by nobody. Holders of the shared lock never
    wait for each other. Taken before the study's row (``study_locked``), as an ingestion takes them: the foreign
    key of a conversation it claims shares that row at its commit, while its trigger holds this lock."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock_shared(%s, %s)", [COMPLETIONS_LOCK, study_id % 2147483647])


def items_short_of_responses_reopened(*, study: Study, assignments: QuerySet[Assignment],
                                      excluding: Collection[int] = ()) -> int:
    """Take out of the completed ones, in one statement, the items of ``assignments`` in the study's open rounds
    whose turn holds a response (of a model slot the study codes) that their coder has no judgment of in the item's
    round, when the study's schema codes responses: a response added when the trigger of migration 0023 left the
    item alone (its round closed, its coder taken off the study), which a completed item cannot otherwise lack, as
    every response's forms were scored to complete it. It is the trigger's rule for responses that arrived
    meanwhile, read by what the coder coded rather than by timestamps (a response reused by an archive's import, or
    written under another server's clock, would otherwise look new). Items locked by feedback and items of someone
    no longer a member are left alone, as the trigger leaves them. The queue counters follow through the triggers of
    migration 0017. The caller holds ``completions_locked``. ``excluding``: ids of responses not counted (an
    archive's import, which tells the items short of its own responses from those short of responses it lacks).
    Returns how many went back."""
    if not AttributeDefinition.objects.filter(schema_id=study.schema_id, unit=AttributeDefinition.Unit.RESPONSE
                                              ).exists():
        return 0
    responses = ModelResponse.objects.filter(turn_id=OuterRef("turn_id"))
    if study.model_slots:
        responses = responses.filter(model_slot__in=study.model_slots)
    if excluding:
        responses = responses.exclude(any_of("pk", sorted(excluding)))
    coded = Judgment.objects.filter(round_id=OuterRef(OuterRef("round_id")), coder_id=OuterRef(OuterRef("coder_id")),
                                    is_gold=False, response_id=OuterRef("pk"))
    member = StudyMember.objects.filter(study=study, user_id=OuterRef("coder_id"))
    short = assignments.filter(
        round__study=study, round__status=Round.Status.OPEN, completed_at__isnull=False, feedback_locked=False,
    ).filter(Exists(member), Exists(responses.filter(~Exists(coded))))
    check_coders = _check_coders(short)
    back = short.update(completed_at=None)
    _check_alerts_update(check_coders)  # their codings no longer count in those reviewers' check-item agreement
    return back


@transaction.atomic
def study_archive(*, study: Study, by: User) -> Study:
    """Archive a finished study (no round open): it stays, with its data and history, marked archived."""
    require_study_admin(by)
    # Rounds are opened under the same lock (calibration.services), so none opens between the check and the update.
    Study.objects.select_for_update().filter(pk=study.pk).values_list("pk", flat=True).first()
    if study.rounds.filter(status=Round.Status.OPEN).exists():
        raise ValidationError("close the study's open rounds first")
    if not Study.objects.filter(pk=study.pk).exclude(status=Study.Status.ARCHIVED).update(
        status=Study.Status.ARCHIVED
    ):
        raise ChangedMeanwhile(f"study {study.slug}")
    study.refresh_from_db()
    audit_record(by=by, action="study.archive", study=study, target=f"study:{study.slug}")
    return study


@transaction.atomic
def study_blinding_key_rotate(*, study: Study, by: User | None) -> Study:
    """Give the study a new random blinding key: every reviewer's handles and presentation order change.

    Only between rounds (none open), since an open page names its responses by the old handles and would save
    nothing; a study migrated from SECRET_KEY-keyed handles (annotation migration 0016) gets a key of its own this
    way. The audit event says that the key changed, never what it is. ``by`` None is the system (``manage.py
    rotate_blinding_key``); a person must be a study admin."""
    if by is not None:
        require_study_admin(by)
    # Rounds are opened and reopened under the same lock (calibration.services), so none opens before this commits.
    Study.objects.select_for_update().filter(pk=study.pk).values_list("pk", flat=True).first()
    open_rounds = [r.name for r in study.rounds.filter(status=Round.Status.OPEN).order_by("kind", "number")]
    if open_rounds:
        raise ValidationError(f"the blinding key changes only between rounds: close {', '.join(open_rounds)} first "
                              "(reviewers' open pages name responses by the current key)")
    Study.objects.filter(pk=study.pk).update(blinding_key=blinding_key_new())
    study.refresh_from_db()
    audit_record(by=by, action="study.blinding_rotate", study=study, target=f"study:{study.slug}")
    return study


@transaction.atomic
def study_member_remove(*, member: StudyMember, by: User) -> None:
    """Take someone off a study: their pages and saves stop at once; their judgments stay, and so does their role
    (and place on the panel) for the reports and exports, in a ``FormerStudyMember``. A method or reference with
    session labels stays: its labels belong to its membership (``SessionLabel.coder``), so the refusal says so. An
    archived study's members stay as they are (``ARCHIVED_MEMBERS``).

    The member's row lock is the one every save of theirs holds a share of (``_round_and_judgment_locked``): a save
    under way lands before the removal, and a save after it finds no member and is refused."""
    require_study_admin(by)
    # The study's lock first, as every study-wide write takes it (the main round's assignment, the panel, a member's
    # addition): an assignment that read the panel gives its queues before the removal, or reads the panel without
    # them. Then the member as they are now, not as the caller read them (the panel may have changed since).
    study_locked_unarchived(member.study, what=ARCHIVED_MEMBERS)
    current = StudyMember.objects.select_for_update().filter(pk=member.pk).first()
    if current is None:
        raise ChangedMeanwhile("the study's members")
    labels = SessionLabel.objects.filter(coder_id=current.pk).count()
    if labels:
        raise ValidationError(f"{member.user.get_username()} has {labels} session label{'s' if labels != 1 else ''} "
                              "in this study, which belong to their membership: they stay a member while the labels "
                              "are there")
    current.delete()
    FormerStudyMember.objects.update_or_create(study=member.study, user=member.user, defaults={
        "role": current.role, "alias": current.alias, "retained": current.retained})
    audit_record(by=by, action="member.remove", study=member.study, target=f"user:{member.user.get_username()}",
                 role=member.role)


# --- judgments -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SpanInput:
    start: int
    end: int
    subcategory: str


class ItemLockedError(ValidationError):
    """A save refused because the coder's item no longer takes changes (its round is not open, or it was compared
    with gold in feedback): ``current`` is the coder's judgment as it stays (None: not coded), for the page to show
    in place of the refused change."""

    def __init__(self, errors: dict[str, str], current: Judgment | None):
        self.current = current
        super().__init__(errors)


class StaleNoteError(Exception):
    """An item's note (comment and flags) changed since the page making the change read it (another tab or device
    saved first): ``comment`` and ``flags`` are the note as it is now, for the page to show."""

    def __init__(self, comment: str, flags: list[str]):
        self.comment, self.flags = comment, flags
        super().__init__("the note was changed elsewhere; reload to see the newer one")


class StaleJudgmentError(Exception):
    """The judgment changed since the editor loaded it (another tab or device saved first), or is gone
    (``current`` None: purged since)."""

    def __init__(self, current: Judgment | None):
        self.current = current
        super().__init__(
            "the judgment is gone since it was loaded (purged); reload to see the item as it is" if current is None
            else f"{current.attribute.code} was changed elsewhere (now {current.score}, version {current.version}); "
                 "reload to see the newer value"
        )


def _judgment_errors(
    *, round: Round, attribute: AttributeDefinition, score: int | None, score_required: bool, turn: Turn | None,
    response: ModelResponse | None, conversation_id: int | None, instance_count: int | None,
    spans: Sequence[SpanInput], session: Session | None = None, kept_spans: Sequence[tuple[int, int, str]] = (),
) -> dict[str, str]:
    subcategories = [sub.slug for sub in attribute.subcategories.all()] if spans else []
    errors = rules.judgment_problems(
        attribute=attribute, score=score, score_required=score_required, has_turn=turn is not None,
        has_response=response is not None, has_session=session is not None, instance_count=instance_count,
        spans=[(s.start, s.end, s.subcategory) for s in spans], subcategories=subcategories,
        text_length=len(response.text) if response is not None else None,
        text=response.text if response is not None else None, kept_spans=kept_spans,
    )
    if response is not None and turn is not None and response.turn_id != turn.pk:
        errors["response"] = "the response does not belong to the turn"
    elif response is not None and (problem := rules.model_problem(round.study.model_slots, response.model_slot)):
        errors["response"] = problem
    if attribute.schema_id != round.study.schema_id:
        errors["attribute"] = f"{attribute.code} is not an attribute of this study's schema"
    if conversation_id is None:
        errors["unit"] = f"{attribute.code}: no unit given (turn, response or conversation)"
    return errors


@transaction.atomic
def judgment_save(
    *,
    round: Round,
    by: User,
    attribute: AttributeDefinition,
    score: int | None,
    turn: Turn | None = None,
    response: ModelResponse | None = None,
    conversation: Conversation | None = None,
    instance_count: int | None = None,
    spans: Sequence[SpanInput] | None = None,
    expected_version: int | None = None,
    session: Session | None = None,
) -> Judgment:
    """Create or update one of the coder's own judgments (and replace its spans when given). The unit is the
    turn, the response, the ``session`` of a longitudinal history (no turn) or the conversation.

    ``expected_version`` is the version the editor last saw: a save against an older version is refused so a
    judgment edited in two tabs is never silently overwritten. The round is re-read under a row lock, so a save
    racing the round's closing either lands before it or is refused.
    """
    if response is not None and turn is None:
        turn = response.turn
    conversation_id, unit_lookup, unit = _judgment_unit(turn=turn, session=session, conversation=conversation)
    lookup: dict[str, Any] = {"round": round, "attribute": attribute, "turn": turn, "response": response,
                              "is_gold": False, "coder": by, **unit_lookup}
    # One locked read of the round answers "still open?" and "still a member?"; the same statement locks the
    # judgment, if there is one yet.
    state, judgment = _round_and_judgment_locked(round=round, coder=by, lookup=lookup)
    if not state["member"]:
        raise PermissionDenied("you are not a member of this study (any more): nothing was saved")
    # The item no longer takes changes: said alone, whatever else the change got wrong.
    if state["status"] != Round.Status.OPEN:
        raise ItemLockedError({"round": _closed_refusal(round, state["status"], "judgments can no longer change")},
                              judgment)
    if round.kind == Round.Kind.CALIBRATION and _feedback_locked(round=round, coder=by, unit=unit):
        # Only a calibration round's reopening locks items, and it is read here, after the round's lock, in a
        # statement of its own: a save that waited for the reopening sees the reopened round in its locked row, but
        # a subquery of that same statement would still see the items as they were before (READ COMMITTED takes
        # one snapshot per statement), and the save would land in an item already compared with gold.
        raise ItemLockedError({"round": f"this item of {round.name} was compared with gold in your feedback before "
                                        "the round was reopened: its judgments stay as they were"}, judgment)
    _refuse_if_agreed_to_gold(lookup=lookup, judgment=judgment, score=score, role=state["role"])
    # Spans are of the judgment's own attribute (the rules, and a trigger in PostgreSQL): an attribute without
    # subcategories has none to read. Read before the rules, which let a span the judgment holds be sent again.
    kept_spans = _span_values(judgment) if judgment is not None and attribute.subcategories.all() else []
    errors = _judgment_errors(
        round=round, attribute=attribute, score=score, score_required=False, turn=turn, response=response,
        conversation_id=conversation_id, instance_count=instance_count, spans=spans or (), session=session,
        kept_spans=kept_spans,
    )
    if errors:
        raise ValidationError(errors)
    assert conversation_id is not None  # _judgment_errors refuses a judgment without a unit
    before: dict[str, Any] | None = None
    if judgment is None and expected_version:
        # The editor showed a judgment (its version) that the coder no longer has: never made again from a page
        # that did not see it go.
        raise StaleJudgmentError(None)
    if judgment is None:
        judgment = Judgment(**{k: v for k, v in lookup.items() if k != "conversation_id"},
                            conversation_id=conversation_id, score=score, instance_count=instance_count)
    else:
        if expected_version is not None and expected_version != judgment.version:
            raise StaleJudgmentError(judgment)
        before = judgment_value(judgment, spans=kept_spans)
        judgment.score = score
        judgment.instance_count = instance_count
        judgment.version += 1
    after = judgment_value(judgment, spans=kept_spans if spans is None else [(s.start, s.end, s.subcategory)
                                                                              for s in spans])
    if before is None:  # a new judgment and the first row of its history, before its spans can point at it
        _judgment_create_recorded(judgment=judgment, lookup=lookup, by=by, source=JudgmentRevision.Source.AUTOSAVE,
                                  after=after)
    # The page sends the spans with every save; rewrite them only when they changed (a new judgment has none).
    if spans is not None and sorted((s.start, s.end, s.subcategory) for s in spans) != sorted(kept_spans):
        _spans_replace(judgment=judgment, attribute=attribute, spans=spans, had_spans=bool(kept_spans))
    if before is not None:
        _judgment_update_recorded(judgment=judgment, by=by, source=JudgmentRevision.Source.AUTOSAVE, before=before,
                                  after=after)
    return judgment


def _refuse_if_agreed_to_gold(*, lookup: dict[str, Any], judgment: Judgment | None, score: int | None,
                              role: str) -> None:
    """Refuse a change of the coder's score of a unit (``lookup`` and ``judgment``: their own judgment's, None when none
    yet) to ``score`` when the unit's gold value names them among who agreed to it. An expert agrees to a gold value
    after scoring the item, against the scores the consensus screen showed (``gold_agreement_problems``): their own
    score then stays, so that who agreed never goes stale, above all for an expert taken off since, who agreed to their
    own score only (docs/reference.md#gold)."""
    # who agreed names experts of the gold panel who scored the unit: a reviewer's autosave asks nothing more
    if role != StudyMember.Role.EXPERT or judgment is None or score == judgment.score:
        return
    unit = {key: value for key, value in lookup.items() if key not in ("coder", "is_gold")}
    gold = (Judgment.objects.filter(**unit, is_gold=True, agreed_by=lookup["coder"])
            .values_list("score", flat=True).first())
    if gold is not None:
        raise ItemLockedError({"score": f"you agreed to the gold value {gold} of this item: your score stays "
                                        f"{judgment.score} while the gold names you among who agreed (a study admin "
                                        "can take your name off it on the consensus screen)"}, judgment)


def _closed_refusal(round: Round, status: str, what: str, *, archived: str = ARCHIVED_JUDGMENTS) -> str:
    """Why a round that is not open refuses a coder's write: "study 'SLUG' is archived: ARCHIVED" when its study
    is (``archived_refusal``: its rounds are all closed, but what the coder is told is the study's end, not a
    round's), else "ROUND is STATUS: WHAT". Read only once a write is refused: a save into an open round asks
    nothing more."""
    study = Study.objects.filter(pk=round.study_id, status=Study.Status.ARCHIVED).only("slug").first()
    if study is not None:
        return archived_refusal(study, archived).messages[0]
    return f"{round.name} is {status}: {what}"


def _judgment_unit(*, turn: Turn | None, session: Session | None,
                   conversation: Conversation | None) -> tuple[int | None, dict[str, Any], dict[str, Any]]:
    """A judgment's conversation id, what names its unit in a lookup besides turn and response, and the
    coder's assignments whose feedback lock covers it (the turn's; any turn of the session or conversation)."""
    if turn is not None:
        return turn.conversation_id, {}, {"turn": turn}
    if session is not None:
        return session.conversation_id, {"session": session}, {"turn__session_id": session.pk}
    conversation_id = getattr(conversation, "pk", None)
    return conversation_id, {"conversation_id": conversation_id}, {"turn__conversation_id": conversation_id}


def _feedback_locked(*, round: Round, coder: User, unit: dict[str, Any]) -> bool:
    """Whether one of the coder's assignments in the round that covers the unit (``_judgment_unit``'s third value:
    the turn, or every turn of a session or conversation) was compared with gold before the round was reopened:
    ``Assignment.objects.filter(round=round, coder=coder, feedback_locked=True, **unit).exists()``, in a statement
    written here (every calibration autosave asks; ``tests/annotation/test_locked_read.py`` compares both)."""
    [(name, value)] = unit.items()
    column = {"turn": "id", "turn__session_id": "session_id", "turn__conversation_id": "conversation_id"}[name]
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT 1 FROM {quote(Assignment._meta.db_table)} a JOIN {quote(Turn._meta.db_table)} t "  # noqa: S608  # nosec B608 - names from the models, values bound
            f"ON t.id = a.turn_id WHERE a.round_id = %s AND a.coder_id = %s AND a.feedback_locked = %s "
            f"AND t.{quote(column)} = %s LIMIT 1",
            (round.pk, coder.pk, True, getattr(value, "pk", value)),
        )
        return cursor.fetchone() is not None


def _judgment_create_recorded(*, judgment: Judgment, lookup: dict[str, Any], by: User, source: str,
                              after: dict[str, Any]) -> None:
    """Insert the coder's new ``judgment`` (unsaved; ``lookup``: its unit, attribute and coder) and the first row of
    its history (``after``, nothing before), in one statement. A judgment of the same unit that another tab or
    device created between our read and this insert makes it a stale save, and nothing is written.

    The statement is written here, the columns and their values as Django's own insert prepares them (defaults,
    ``auto_now``): the first save of every unit of a page is a create, and the ORM's two inserts, each in a
    savepoint, cost a quarter more CPU than a save that updates (issue 34).
    ``tests/annotation/test_services.py`` compares both writes."""
    fields = [f for f in Judgment._meta.concrete_fields if not f.primary_key]
    values = [f.get_db_prep_save(f.pre_save(judgment, add=True), connection) for f in fields]
    with connection.cursor() as cursor:
        cursor.execute(_judgment_create_sql(fields), (*values, judgment.version, getattr(by, "pk", None), source,
                                                      judgment.updated_at, json.dumps(after)))
        row = cursor.fetchone()
    if row is None:
        current = Judgment.objects.filter(**lookup).first()
        if current is None:  # it was there at our insert and is gone already
            raise IntegrityError("a judgment of this unit was written and removed meanwhile")
        raise StaleJudgmentError(current)
    judgment.pk = row[0]
    judgment._state.adding, judgment._state.db = False, connection.alias


_judgment_create_statement: list[str] = []


def _judgment_create_sql(fields: list[Any]) -> str:
    """``_judgment_create_recorded``'s statement, built once per process (it depends only on the models)."""
    if not _judgment_create_statement:
        quote = connection.ops.quote_name
        judgments, revisions = quote(Judgment._meta.db_table), quote(JudgmentRevision._meta.db_table)
        _judgment_create_statement.append(
            f"WITH made AS (INSERT INTO {judgments} ({', '.join(quote(str(f.column)) for f in fields)}) "  # noqa: S608  # nosec B608 - names from the models, values bound
            f"VALUES ({', '.join(['%s'] * len(fields))}) ON CONFLICT DO NOTHING RETURNING id) "
            f"INSERT INTO {revisions} ({', '.join(quote(c) for c in _HISTORY_COLUMNS)}) "
            "SELECT id, %s, %s, %s, %s, NULL, %s::jsonb FROM made RETURNING judgment_id")
    return _judgment_create_statement[0]


def _round_and_judgment_locked(*, round: Round, coder: User,
                               lookup: dict[str, Any]) -> tuple[dict[str, Any], Judgment | None]:
    """The round's status and whether ``coder`` is (still) a member of its study, with their role (None: no member),
    each read under a shared lock on its row (the round's, the coder's membership), and the coder's judgment named by
    ``lookup`` (field name -> value, instance or None), or None, under an exclusive lock: in one statement.

    The shared lock on the round (``FOR SHARE``, which Django's ``select_for_update`` cannot take) lets the saves of
    a round run side by side, while closing or reopening it (an UPDATE of the row) waits for them and they wait for
    it. The one on the membership (``FOR KEY SHARE``: a change of the panel or an alias does not wait for it) does
    the same with taking the coder off (``study_member_remove`` locks the row, then deletes it): a save under way
    lands before the removal, and a save that waited for it finds no member. The exclusive lock on the judgment
    orders two saves of the same judgment (the later one finds a new version).

    The statement is written here rather than composed from two querysets: it runs on every autosave, and Django
    compiling the two querysets cost more CPU than the rest of the save's SQL together (issue 11's autosave
    figures). Its predicates are those of ``Judgment.objects.filter(**lookup)``; the tests of this module compare
    both readings."""
    quote = connection.ops.quote_name
    fields = Judgment._meta.concrete_fields
    columns = {f.name: str(f.column) for f in fields} | {f.attname: str(f.column) for f in fields}
    where, params = [], []
    for name, value in lookup.items():
        column = quote(columns[name])
        if value is None:
            where.append(f"{column} IS NULL")
        else:
            where.append(f"{column} = %s")
            params.append(value.pk if hasattr(value, "_meta") else value)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT r.status, m.id IS NOT NULL, m.role, {', '.join('j.' + quote(str(f.column)) for f in fields)} "  # noqa: S608  # nosec B608 - table and column names from the models, values bound
            f"FROM (SELECT status FROM {quote(Round._meta.db_table)} WHERE id = %s FOR SHARE) r "
            f"LEFT JOIN (SELECT id, role FROM {quote(StudyMember._meta.db_table)} "
            "WHERE study_id = %s AND user_id = %s FOR KEY SHARE) m ON true "
            f"LEFT JOIN (SELECT * FROM {quote(Judgment._meta.db_table)} WHERE {' AND '.join(where)} "
            "LIMIT 1 FOR UPDATE) j ON true",
            (round.pk, round.study_id, coder.pk, *params),
        )
        row = cursor.fetchone()
    if row is None:
        raise Round.DoesNotExist("the round is gone")
    state: dict[str, Any] = {"status": row[0], "member": row[1], "role": row[2]}
    if row[3 + fields.index(Judgment._meta.pk)] is None:  # no judgment yet: the joined columns are NULL
        return state, None
    return state, Judgment.from_db(connection.alias, [f.attname for f in fields], row[3:])


def _judgment_update_recorded(*, judgment: Judgment, by: User, source: str, before: dict[str, Any],
                              after: dict[str, Any]) -> None:
    """Write a judgment's new score, instance count and version, and keep the change in its history when its value
    changed (``_revision_record``): one statement, the update and the history row together."""
    judgment.updated_at = timezone.now()
    if before == after:  # the same value: no history row
        judgment.save(update_fields=["score", "instance_count", "version", "updated_at"])
        return
    quote = connection.ops.quote_name
    judgments, revisions = quote(Judgment._meta.db_table), quote(JudgmentRevision._meta.db_table)
    columns = ", ".join(quote(c) for c in _HISTORY_COLUMNS)
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH changed AS (UPDATE {judgments} SET score = %s, instance_count = %s, version = %s, updated_at = %s "  # noqa: S608  # nosec B608 - table names from the models
            f"WHERE id = %s RETURNING id) INSERT INTO {revisions} ({columns}) "
            "SELECT id, %s, %s, %s, %s, %s::jsonb, %s::jsonb FROM changed",
            (judgment.score, judgment.instance_count, judgment.version, judgment.updated_at, judgment.pk,
             judgment.version, getattr(by, "pk", None), source, judgment.updated_at, json.dumps(before),
             json.dumps(after)),
        )
        if cursor.rowcount != 1:
            raise Judgment.DoesNotExist(f"judgment {judgment.pk} is gone")


def _spans_replace(*, judgment: Judgment, attribute: AttributeDefinition, spans: Sequence[SpanInput],
                   had_spans: bool = True) -> None:
    subcategories = {sub.slug: sub for sub in attribute.subcategories.all()}
    if had_spans:
        judgment.spans.all().delete()
    Span.objects.bulk_create(
        Span(judgment=judgment, subcategory=subcategories[s.subcategory], start=s.start, end=s.end) for s in spans
    )


# --- judgment history ----------------------------------------------------------------------------------------


def judgment_value(judgment: Judgment, *, spans: Iterable[Sequence[Any]],
                   agreed_by: Iterable[str] | None = None) -> dict[str, Any]:
    """A judgment's value as its history keeps it (``JudgmentRevision.before`` / ``after``): score, instance
    count, note and spans as sorted ``[start, end, subcategory slug]``; a gold value also names who agreed
    (sorted usernames; ``[]`` where nobody was named). The one definition used by every writer."""
    value: dict[str, Any] = {
        "score": judgment.score, "instance_count": judgment.instance_count, "note": judgment.note,
        "spans": sorted([int(start), int(end), str(slug)] for start, end, slug in spans),
    }
    if judgment.is_gold:
        value["agreed_by"] = sorted(agreed_by or ())
    return value


def _span_values(judgment: Judgment) -> list[tuple[int, int, str]]:
    """A judgment's spans as (start, end, subcategory slug), in the spans' order: what
    ``judgment.spans.values_list("start", "end", "subcategory__slug")`` reads, in a statement written here because
    an autosave of an attribute with spans reads them every time (compiling the queryset cost more than running it;
    ``tests/annotation/test_locked_read.py`` compares both)."""
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT s.{quote('start')}, s.{quote('end')}, c.slug FROM {quote(Span._meta.db_table)} s "  # noqa: S608  # nosec B608 - names from the models, values bound
            f"JOIN {quote(SpanSubcategory._meta.db_table)} c ON c.id = s.subcategory_id WHERE s.judgment_id = %s "
            f"ORDER BY s.{quote('start')}, s.{quote('end')}, s.id",
            (judgment.pk,),
        )
        return [(start, end, slug) for start, end, slug in cursor.fetchall()]


def _revision_record(*, judgment: Judgment, by: User | None, source: str, before: dict[str, Any] | None,
                     after: dict[str, Any]) -> JudgmentRevision | None:
    """Keep one change of a judgment, in the caller's transaction. A save that changed nothing (same value
    before and after) keeps nothing, though it still bumps the version: history versions can skip numbers."""
    if before == after:
        return None
    return JudgmentRevision.objects.create(judgment=judgment, version=judgment.version, changed_by=by,
                                           source=source, at=judgment.updated_at, before=before, after=after)


_HISTORY_COLUMNS = ("judgment_id", "version", "changed_by_id", "source", "at", "before", "after")


def revisions_start(*, created: Iterable[tuple[Judgment, Iterable[Sequence[Any]]]], by: User | None,
                    source: str) -> int:
    """Start the history of judgments just created in bulk (an import, generated data): one revision each, with
    no value before, and no query per judgment. ``created`` yields (saved judgment, its spans as (start, end,
    slug)); it is consumed as a stream, so memory stays flat at any size.

    The rows go through one COPY: at 700,000 judgments, an INSERT's parameters (every value quoted by the driver)
    cost several times what the import's own writes do."""
    at, by_id = timezone.now(), getattr(by, "pk", None)
    rows = ((judgment.pk, judgment.version, by_id, source, at, None, judgment_value(judgment, spans=spans))
            for judgment, spans in created)
    n = 0
    table = connection.ops.quote_name(JudgmentRevision._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(c) for c in _HISTORY_COLUMNS)
    with connection.cursor() as cursor, cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row((*row[:-1], json.dumps(row[-1], ensure_ascii=False)))
            n += 1
    return n


@transaction.atomic
def judgments_purge(*, judgments: QuerySet[Judgment], by: User | None, reason: str) -> int:
    """Delete judgments for good, with their spans and their history; returns how many.

    Judgments are never deleted otherwise: PostgreSQL refuses it (and any change to their history) unless the
    transaction sets ``cab.purge`` (migration 0011), which only this service does, for the length of its own
    deletes. The purge is recorded in the audit trail with its reason, per study. ``by`` None is the system (a
    command or a test); a person must be a study admin."""
    if by is not None:
        require_study_admin(by)
    if not reason.strip():
        raise ValidationError("say why these judgments are purged; the reason is recorded")
    rows = list(judgments.values_list("pk", "round__study_id", "round__study__slug"))
    if not rows:
        return 0
    ids = [pk for pk, _, _ in rows]
    # The reviewers with a completed check item on a purged judgment's turn (their coding, or the gold it is compared
    # with): their check-item agreement is read again once the judgments are gone.
    check_coders = _check_coders(Assignment.objects.filter(Exists(Judgment.objects.filter(
        pk__in=ids, round__study_id=OuterRef("round__study_id"), turn_id=OuterRef("turn_id")))))
    # Transaction-local, and undone with this service's savepoint if a delete fails; switched off again at once
    # so that nothing else later in the caller's transaction is let through.
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('cab.purge', 'on', true)")
    JudgmentRevision.objects.filter(judgment_id__in=ids).delete()
    Judgment.objects.filter(pk__in=ids).delete()  # their spans and gold agreements go with them
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('cab.purge', 'off', true)")
    _check_alerts_update(check_coders)
    per_study: dict[tuple[int, str], int] = {}
    for _, study_id, slug in rows:
        per_study[(study_id, slug)] = per_study.get((study_id, slug), 0) + 1
    for (study_id, slug), n in sorted(per_study.items()):
        audit_record(by=by, action="judgments.purge", study=Study(pk=study_id, slug=slug), target=f"study:{slug}",
                     n=n, reason=reason.strip())
    return len(ids)


def gold_agreement_problems(*, round: Round, attribute: AttributeDefinition, turn: Turn,
                            response: ModelResponse | None, score: int, agreed_by: Sequence[User]) -> str:
    """Why a gold value of one unit may not name ``agreed_by`` as the experts who agreed to it ("" when it may):
    each must be on the study's gold panel (an expert, or taken off as one: ``selectors.study_coders``) and have
    scored the unit in the round. An expert still on the study may agree to a value they did not code (the panel
    settled it together; the consensus screen shows their own score beside it); one taken off since agreed to
    their own coding only, so their score must be the gold value. The rule of every gold value recorded with who
    agreed (the consensus screen, its unanimous items): docs/reference.md#gold."""
    if not agreed_by:
        return ""
    panel = {coder.username: coder.member for coder in selectors.study_coders(study=round.study)
             if coder.role == StudyMember.Role.EXPERT}
    scores = dict(Judgment.objects.filter(
        round=round, is_gold=False, attribute=attribute, turn=turn, response=response, score__isnull=False,
        coder_id__in=[user.pk for user in agreed_by]).values_list("coder__username", "score"))
    problems = rules.agreement_problems(agreed=[user.get_username() for user in agreed_by], panel=panel,
                                        scores=scores, gold=score, round_name=round.name)
    if not problems:
        return ""
    return ("who agreed: " + "; ".join(problems) + " (only the gold panel's experts who scored the item agree to "
            "its gold, and one taken off the study only to their own score)")


@transaction.atomic
def gold_save(
    *, round: Round, by: User, attribute: AttributeDefinition, turn: Turn,
    response: ModelResponse | None, score: int, note: str = "", agreed_by: Sequence[User] = (),
    expected_version: int | None = None,
) -> Judgment:
    """Record the consensus (gold) value of one unit: one gold judgment per (round, unit, attribute), whoever
    records it, ``agreed_by`` the experts ``gold_agreement_problems`` accepts. ``expected_version`` (the version
    the admin saw, 0 for "none yet") refuses a lost race."""
    errors = _judgment_errors(
        round=round, attribute=attribute, score=score, score_required=True, turn=turn, response=response,
        conversation_id=turn.conversation_id, instance_count=None, spans=(),
    )
    if not errors and (disagreed := gold_agreement_problems(round=round, attribute=attribute, turn=turn,
                                                            response=response, score=score, agreed_by=agreed_by)):
        errors["agreed_by"] = disagreed
    if errors:
        raise ValidationError(errors)
    lookup = {"round": round, "is_gold": True, "attribute": attribute, "turn": turn, "response": response}
    judgment = Judgment.objects.select_for_update().filter(**lookup).first()
    seen = judgment.version if judgment is not None else 0
    if expected_version is not None and expected_version != seen:
        raise ChangedMeanwhile(f"the gold value of {attribute.code}")
    before: dict[str, Any] | None = None
    kept_spans: list[tuple[int, int, str]] = []
    if judgment is None:
        try:
            with transaction.atomic():
                judgment = Judgment.objects.create(
                    round=round, coder=by, is_gold=True, attribute=attribute, turn=turn, response=response,
                    conversation_id=turn.conversation_id, score=score, note=note,
                )
        except IntegrityError:
            raise ChangedMeanwhile(f"the gold value of {attribute.code}") from None
    else:
        kept_spans = _span_values(judgment)  # an imported gold value may have spans; recording keeps them
        before = judgment_value(judgment, spans=kept_spans,
                                agreed_by=[u.get_username() for u in judgment.agreed_by.all()])
        Judgment.objects.filter(pk=judgment.pk).update(score=score, note=note, coder=by, version=F("version") + 1,
                                                       updated_at=timezone.now())
        judgment.refresh_from_db()
    judgment.agreed_by.set(agreed_by)
    after = judgment_value(judgment, spans=kept_spans, agreed_by=[u.get_username() for u in agreed_by])
    _revision_record(judgment=judgment, by=by, source=JudgmentRevision.Source.GOLD, before=before, after=after)
    # A check item is a gold turn: the reviewers who completed one of this turn are compared with this value now.
    check_alerts_update(assignments=Assignment.objects.filter(round__study_id=round.study_id, turn=turn))
    audit_record(by=by, action="gold.record", study=round.study, target=f"round:{round.name}",
                 attribute=attribute.code, turn=turn.pk, response=response.pk if response else None, score=score)
    return judgment


# --- rounds and assignments ----------------------------------------------------------------------------------


@transaction.atomic
def round_ensure(*, study: Study, kind: str, number: int = 1, by: User | None) -> Round:
    round_, created = Round.objects.get_or_create(study=study, kind=kind, number=number)
    if created:
        audit_record(by=by, action="round.create", study=study, target=f"round:{round_.name}")
    return round_


@transaction.atomic
def round_items_set(*, round: Round, turns: Sequence[Turn], by: User | None) -> None:
    """Fix the ordered item set of a draft round (the calibration set)."""
    if not Round.objects.select_for_update().filter(pk=round.pk, status=Round.Status.DRAFT).exists():
        raise ValidationError(f"{round.name} is no longer a draft: its items are fixed")
    RoundItem.objects.filter(round=round).delete()
    RoundItem.objects.bulk_create(
        RoundItem(round=round, turn=turn, position=position) for position, turn in enumerate(turns, start=1)
    )
    audit_record(by=by, action="round.items_set", study=round.study, target=f"round:{round.name}", n=len(turns))


@transaction.atomic
def assignments_ensure(*, round: Round, coder: User, turns: Sequence[Turn],
                       by: User | None) -> int:
    """Queue turns for a coder in the given order, after what they already have; returns how many were added."""
    have = set(Assignment.objects.filter(round=round, coder=coder).values_list("turn_id", flat=True))
    start = len(have)
    new = [turn for turn in turns if turn.pk not in have]
    Assignment.objects.bulk_create(
        Assignment(round=round, coder=coder, turn=turn, position=start + offset)
        for offset, turn in enumerate(new, start=1)
    )
    if new:
        audit_record(by=by, action="assignments.add", study=round.study, target=f"round:{round.name}",
                     coder=coder.get_username(), n=len(new))
    return len(new)


def _round_transition(*, round: Round, expected: str, to: str, by: User | None, action: str,
                      **data: Any) -> Round:
    """Move a round from ``expected`` to ``to`` as a compare-and-set (a round in another state refuses) and record
    it."""
    _round_move(round=round, expected=expected, to=to)
    audit_record(by=by, action=action, study=round.study, target=f"round:{round.name}", **data)
    return round


def _round_status_shared(round: Round) -> str:
    """The round's status as committed now, read under a shared lock on its row (``FOR SHARE``, which Django's
    ``select_for_update`` cannot take) held until the transaction ends: the lock a save takes
    (``_round_and_judgment_locked``), which a closing or reopening (an UPDATE of the row) waits for, and which waits
    for one under way and then reads what it committed. Writers that hold it run side by side."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT status FROM {connection.ops.quote_name(Round._meta.db_table)} "  # noqa: S608  # nosec B608 - the name from the model, the value bound
                       "WHERE id = %s FOR SHARE", (round.pk,))
        row = cursor.fetchone()
    if row is None:
        raise Round.DoesNotExist("the round is gone")
    return str(row[0])


def _round_move(*, round: Round, expected: str, to: str) -> None:
    """``_round_transition`` without its audit event, for a transition whose event says what it did after."""
    now = timezone.now()
    stamps: dict[str, datetime | None] = (
        {"opened_at": now} if to == Round.Status.OPEN and expected == Round.Status.DRAFT else {}
    )
    if to == Round.Status.CLOSED:
        stamps["closed_at"] = now
    elif expected == Round.Status.CLOSED:
        stamps["closed_at"] = None
    if not Round.objects.filter(pk=round.pk, status=expected).update(status=to, **stamps):
        current = Round.objects.filter(pk=round.pk).values_list("status", flat=True).first()
        if current is None or current == round.status:
            raise ValidationError(f"{round.name} is {current}, not {expected}")
        raise ChangedMeanwhile(round.name)
    round.refresh_from_db()


@transaction.atomic
def round_open(*, round: Round, by: User | None) -> Round:
    """Open a draft round; the study opens with it, which freezes its schema."""
    if round.status == Round.Status.CLOSED:
        raise ValidationError(f"{round.name} is closed; reopening is a separate, recorded admin action")
    _round_transition(round=round, expected=Round.Status.DRAFT, to=Round.Status.OPEN, by=by, action="round.open")
    study_opens(study_id=round.study_id)
    return round


@transaction.atomic
def round_close(*, round: Round, by: User | None) -> Round:
    """Close an open round: every judgment in it is locked. (The calibration protocol's ``round_close`` also
    starts a metrics run.)"""
    return _round_transition(round=round, expected=Round.Status.OPEN, to=Round.Status.CLOSED, by=by,
                             action="round.close")


@dataclass(frozen=True)
class RoundReopen:
    """A reopened round, how many of its coders' completed turns the reopening took out of the completed ones
    (``turns_back_in_queues``: a response was added to them while the round was closed) and how many items it
    locked (``feedback_locked``, with ``round_reopen``'s ``feedback_lock``)."""

    round: Round
    turns_back_in_queues: int
    feedback_locked: int = 0


@transaction.atomic
def round_reopen(*, round: Round, by: User, reason: str, feedback_lock: bool = False) -> RoundReopen:
    """Reopen a closed round: an explicit admin action, with its reason recorded. A turn a coder completed that got
    a response while the round was closed goes back to their queue (``items_short_of_responses_reopened``); the
    audit event counts them (``turns_back_in_queues``). ``feedback_lock``: lock every item of the round first
    (``Assignment.feedback_locked``: the calibration protocol's reopening, whose feedback compared them with gold),
    so that they stay as they were, completions included: a locked item sent back to its coder's queue could never
    be coded again, and would stay short for good."""
    require_study_admin(by)
    if not reason.strip():
        raise ValidationError("say why the round is reopened; the reason is recorded")
    # Before any row of the round: a response being added to one of the study's turns is waited for, and one added
    # meanwhile waits for the reopening, then finds the round open (completions_locked).
    completions_locked(round.study_id)
    _round_move(round=round, expected=Round.Status.CLOSED, to=Round.Status.OPEN)
    locked = (Assignment.objects.filter(round=round, feedback_locked=False).update(feedback_locked=True)
              if feedback_lock else 0)
    back = items_short_of_responses_reopened(study=round.study, assignments=Assignment.objects.filter(round=round))
    audit_record(by=by, action="round.reopen", study=round.study, target=f"round:{round.name}",
                 reason=reason.strip(), turns_back_in_queues=back)
    return RoundReopen(round=round, turns_back_in_queues=back, feedback_locked=locked)


# --- completing a turn, time on task ---------------------------------------------------------------------------


@dataclass
class TurnCheck:
    missing: list[str]
    warnings: list[str]
    completed: bool


@transaction.atomic
def assignment_complete(*, assignment: Assignment, by: User, confirm: bool = False) -> TurnCheck:
    """Mark a turn done when every required coding is present: every form scored, and what the study's kind still
    wants of the codes (its ``turn_missing`` hook). Inconsistencies the reviewer should look at again (a score above
    0 with no span, an instance count that differs from the spans) need ``confirm``. The item is locked before its
    codes are read, so a save that would leave it short (``item_judgment_save``) lands before or after, never
    between; and so is the study's completions lock, before the item, so a response added to the turn meanwhile
    (the trigger of migration 0025) is either among the codes it wants or sends the completed turn back, never
    neither. The round's status is read under a share of its row (``_round_status_shared``), as a save reads it: a
    closing or reopening under way is waited for and then seen (a round closed meanwhile refuses the completion),
    and one that comes later waits for the completion to commit, so no turn is completed in a closed round."""
    if assignment.coder_id != by.pk:
        raise ValidationError("only the assigned coder can complete this turn")
    # The completions lock, then the round, then the item: a reopening takes the first two in that order, a save
    # the last two (_round_and_judgment_locked, then item_judgment_save's lock on the item), and the trigger of
    # migration 0025 the lock, then the items; none of them waits for another in a circle.
    completions_locked(assignment.round.study_id)
    status = _round_status_shared(assignment.round)
    if status != Round.Status.OPEN:
        raise ValidationError(_closed_refusal(assignment.round, status, "its turns are no longer completed",
                                              archived="its turns are no longer completed"))
    completed_at = Assignment.objects.select_for_update().filter(pk=assignment.pk).values_list("completed_at")
    done_before = completed_at.get()[0] is not None
    missing, warnings = _turn_check(assignment=assignment, by=by)
    completed = not missing and (confirm or not warnings)
    if completed and not done_before:
        Assignment.objects.filter(pk=assignment.pk).update(completed_at=timezone.now())
    elif missing and done_before:  # completed once and short since (under a version whose saves kept it): no longer
        Assignment.objects.filter(pk=assignment.pk).update(completed_at=None)
    else:
        return TurnCheck(missing=missing, warnings=warnings, completed=completed)
    if assignment.is_check_item:  # its codings now count in the reviewer's check-item agreement, or no longer do
        check_alert_update(study=assignment.round.study, user=by)
    return TurnCheck(missing=missing, warnings=warnings, completed=completed)


class TakenOff(ValidationError):
    """The coder of an item was taken off its study since the item was read: its turns are no longer theirs."""

    def __init__(self, by: User):
        super().__init__(f"{by.get_username()} was taken off the study: its turns are no longer theirs")


def _turn_check(*, assignment: Assignment, by: User) -> tuple[list[str], list[str]]:
    """What completing the coder's item still wants (every form scored, and the kind's ``turn_missing``) and what
    it asks to confirm, as the item's codes are now. ``TakenOff`` when the coder was taken off the study since the
    item was read; a ``ValidationError`` saying so when the item is no longer theirs at its position otherwise."""
    view = selectors.turn_view(round_id=assignment.round_id, user=by, position=assignment.position)
    if view is None:  # the coder's item when it was read, no longer
        if not StudyMember.objects.filter(study_id=assignment.round.study_id, user=by).exists():
            raise TakenOff(by)
        raise ValidationError(f"{by.get_username()} has no item at position {assignment.position} of round "
                              f"{assignment.round.name} any more: it was removed since it was read")
    span_counts = dict(
        Judgment.objects.filter(round=assignment.round, coder=by, is_gold=False, turn=assignment.turn)
        .annotate(n=Count("spans"))
        .values_list("id", "n")
    )
    missing: list[str] = []
    warnings: list[str] = []
    for form in view.all_forms():
        judgment, attribute = form.judgment, form.attribute
        where = f"{form.label} · {attribute.code}" if form.label else attribute.code
        if judgment is None or judgment.score is None:
            missing.append(f"{where} · {attribute.name}")
            continue
        spans = span_counts.get(judgment.pk, 0)
        if attribute.ui_has_spans and judgment.score > 0 and spans == 0:  # type: ignore[attr-defined]  # set by selectors
            warnings.append(f"{where}: score {judgment.score} but no highlighted span")
        if judgment.instance_count is not None and judgment.instance_count != spans:
            warnings.append(f"{where}: instance count {judgment.instance_count} but {spans} span(s)")
    turn_missing = kind_of(view.study).turn_missing
    if turn_missing is not None:
        missing += turn_missing(view)
    return missing, warnings


@dataclass(frozen=True)
class ItemSave:
    """A save of a judgment on the coder's item: the judgment, and when the save took the item out of the completed
    ones, what completing it wants again (empty: it stays as it was)."""

    judgment: Judgment
    reopened: list[str]


def item_judgment_save(*, assignment: Assignment, by: User, **fields: Any) -> ItemSave:
    """Save one of the coder's judgments on their item (``judgment_save``'s ``fields``: the coding page's autosave)
    and keep the item's completion true: a completed item that the save leaves short of what completing it wants
    (a score cleared, or a code the kind's ``turn_missing`` no longer takes, such as an action turn's horizon set
    to none) is no longer completed, in the save's transaction (the queue's counters follow: migration 0017). The
    change is kept either way (refusing it would leave a coder unable to change a strategy and its horizon one at a
    time); the answer says what the item wants again. A save of a completed hidden check item's judgment updates
    the reviewer's check-item alert in the same transaction (``check_alert_update``): the coding, or the item's
    completion, is part of the agreement it states. Only a save that can leave the item short or is of a check item
    asks: a cleared score, any save in a study whose kind has a ``turn_missing`` hook, any save of a check item
    (``Assignment.is_check_item``, read with the item); any other costs what ``judgment_save`` costs."""
    attribute: AttributeDefinition = fields["attribute"]
    may_leave_short = fields.get("score") is None or kind_of(attribute).turn_missing is not None
    if not may_leave_short and not assignment.is_check_item:
        return ItemSave(judgment=judgment_save(round=assignment.round, by=by, **fields), reopened=[])
    with transaction.atomic():
        judgment = judgment_save(round=assignment.round, by=by, **fields)
        # Locked as assignment_complete locks it: a completion racing this save reads the codes after it.
        completed_at = Assignment.objects.select_for_update().filter(pk=assignment.pk).values_list("completed_at")
        if completed_at.get()[0] is None:
            return ItemSave(judgment=judgment, reopened=[])
        missing = _turn_check(assignment=assignment, by=by)[0] if may_leave_short else []
        if missing:
            Assignment.objects.filter(pk=assignment.pk).update(completed_at=None)
        if assignment.is_check_item:
            check_alert_update(study=assignment.round.study, user=by)
        return ItemSave(judgment=judgment, reopened=missing)


@dataclass(frozen=True)
class ShortTurn:
    """A completed item of an open round that is short of what completing it wants (``_turn_check``), named
    without anything people wrote: the study's slug, the round's name, the coder's username and the item's
    position in their queue; ``missing``: how many codes completing it wants."""

    assignment_id: int
    round_id: int
    study: str
    round: str
    coder: str
    position: int
    missing: int


@dataclass(frozen=True)
class RefusedTurn:
    """A completed item the check refused to check for another reason than its coder taken off the study (its item
    gone since it was read, a kind's ``turn_missing`` refusing it), named as ``ShortTurn`` names one, and why."""

    study: str
    round: str
    coder: str
    position: int
    reason: str


@dataclass(frozen=True)
class ShortTurns:
    """What ``turns_short_find`` found: the items of open rounds short (in study, round, coder and position order),
    how many completed items of open rounds it checked, and how many it left unchecked, each with why; and for closed
    rounds, the items short (when it checked them), how many it checked, or how many it did not check."""

    short: list[ShortTurn]
    checked: int
    feedback_locked: int  # compared with gold before a reopening: their codes no longer change
    not_members: int  # their coder was taken off the study: they can no longer code it
    closed_short: list[ShortTurn] = field(default_factory=list)  # never sent back: a closed round's record stays
    closed_checked: int = 0
    closed_unchecked: int = 0  # completed items of closed rounds, when they were not asked for
    refused: list[RefusedTurn] = field(default_factory=list)  # the check refused them: not checked, each with why


def _completed(*, statuses: Sequence[str] = (Round.Status.OPEN,), assignments: QuerySet[Assignment] | None = None,
               ) -> QuerySet[Assignment]:
    """The completed items of the rounds in ``statuses`` (of ``assignments``, when given), with whether their coder
    is still a member of the study."""
    base = Assignment.objects.all() if assignments is None else assignments
    return base.filter(completed_at__isnull=False, round__status__in=statuses).annotate(
        member=Exists(StudyMember.objects.filter(study_id=OuterRef("round__study_id"), user_id=OuterRef("coder_id"))),
    ).select_related("round__study", "coder").order_by("round__study__slug", "round__kind", "round__number",
                                                        "coder__username", "position")


def _short(assignments: Iterable[Assignment], *, each: Callable[[], None] = lambda: None,
           ) -> tuple[list[ShortTurn], int, int, int, list[RefusedTurn]]:
    """The items of ``assignments`` (``_completed``'s) that ``_turn_check`` finds short, with how many it
    checked, and how many it left alone: feedback-locked, or their coder no longer a member; and the items its check
    refused otherwise, each with why. ``each`` is called after each item (a command's progress bar)."""
    short: list[ShortTurn] = []
    refused: list[RefusedTurn] = []
    checked = locked = gone = 0
    for assignment in assignments:
        each()
        if assignment.feedback_locked:
            locked += 1
        elif not assignment.member:  # type: ignore[attr-defined]  # annotated by _completed
            gone += 1
        else:
            try:
                missing, _ = _turn_check(assignment=assignment, by=assignment.coder)
            except TakenOff:  # since the items were read
                gone += 1
                continue
            except ValidationError as error:
                refused.append(RefusedTurn(study=assignment.round.study.slug, round=assignment.round.name,
                                           coder=assignment.coder.get_username(), position=assignment.position,
                                           reason="; ".join(error.messages)))
                continue
            checked += 1
            if missing:
                short.append(ShortTurn(assignment_id=assignment.pk, round_id=assignment.round_id,
                                       study=assignment.round.study.slug,
                                       round=assignment.round.name, coder=assignment.coder.get_username(),
                                       position=assignment.position, missing=len(missing)))
    return short, checked, locked, gone, refused


def turns_short_completed(*, closed: bool = False) -> int:
    """How many completed items ``turns_short_find(closed=…)`` reads (a command's progress bar: one count)."""
    return _completed(statuses=(Round.Status.OPEN, Round.Status.CLOSED) if closed else (Round.Status.OPEN,)).count()


def turns_short_find(*, closed: bool = False, each: Callable[[], None] = lambda: None) -> ShortTurns:
    """Every completed item of an open round whose turn is short of what completing it wants, by the check that
    completing it makes (``_turn_check``): left so by 0.2.0, whose saves could clear a score of a completed turn
    and keep it completed (README, "Upgrading"), or by a response added to it before migration 0023. Items compared
    with gold in feedback (their codes no longer change) and items of coders taken off the study (they can no
    longer code them) are not checked, only counted. Closed rounds' completed items are counted, and with
    ``closed`` checked too, their short ones listed apart (``closed_short``): ``turns_short_requeue`` never sends
    them back, a closed round's record staying what it was until it is reopened. ``each`` is called after each item
    read. Reads only: ``manage.py requeue_short_turns``'s dry run."""
    short, checked, locked, gone, refused = _short(_completed().iterator(chunk_size=500), each=each)
    if not closed:
        return ShortTurns(short=short, checked=checked, feedback_locked=locked, not_members=gone, refused=refused,
                          closed_unchecked=_completed(statuses=(Round.Status.CLOSED,)).count())
    closed_short, closed_checked, closed_locked, closed_gone, closed_refused = _short(
        _completed(statuses=(Round.Status.CLOSED,)).iterator(chunk_size=500), each=each)
    return ShortTurns(short=short, checked=checked, feedback_locked=locked + closed_locked,
                      not_members=gone + closed_gone, closed_short=closed_short, closed_checked=closed_checked,
                      refused=refused + closed_refused)


@transaction.atomic
def turns_short_requeue(*, found: Sequence[ShortTurn], by: User | None) -> list[ShortTurn]:
    """Take out of the completed ones, in one transaction, the items of ``found`` (``turns_short_find``'s) that are
    still short, completed, in an open round and their coder's while a member: each is checked again under the
    locks a save and a completion take (its round's share, its own row), so a coder who completed it again since,
    with every code given, keeps it. The queue counters follow through the triggers of migration 0017. One audit
    event per round (``round.turns_short_requeue``: the coders' usernames and positions). ``by`` None is the
    system (the command); a person must be a study admin. Returns the items taken out."""
    if by is not None:
        require_study_admin(by)
    ids = sorted(turn.assignment_id for turn in found)
    if not ids:
        return []
    rounds = sorted({turn.round_id for turn in found})
    # The completions lock of each study first, in study order, as the trigger of migration 0025 takes them: an
    # ingestion's trigger sends completed items back too, locking them in the order its statement finds them, this
    # in id order; each could hold an item the other wanted next (a deadlock). Now one waits for the other before
    # any item, and this reads the codes with the responses the other added.
    for study_id in sorted(set(Round.objects.filter(pk__in=rounds).values_list("study_id", flat=True))):
        completions_locked(study_id)
    with connection.cursor() as cursor:  # a share of each round's row, as a save takes: no close runs meanwhile
        cursor.execute("SELECT id FROM annotation_round WHERE id = ANY(%s) ORDER BY id FOR SHARE", [rounds])
    list(Assignment.objects.select_for_update(of=("self",)).filter(pk__in=ids).order_by("pk").values_list("pk"))
    short, _, _, _, _ = _short(_completed(assignments=Assignment.objects.filter(pk__in=ids)))
    requeued = Assignment.objects.filter(pk__in=[turn.assignment_id for turn in short])
    check_coders = _check_coders(requeued)
    requeued.update(completed_at=None)
    _check_alerts_update(check_coders)  # their codings no longer count in those reviewers' check-item agreement
    per_round: dict[int, list[ShortTurn]] = {}
    for turn in short:
        per_round.setdefault(turn.round_id, []).append(turn)
    for round_id, turns in sorted(per_round.items()):
        round_ = Round.objects.select_related("study").get(pk=round_id)
        audit_record(by=by, action="round.turns_short_requeue", study=round_.study, target=f"round:{round_.name}",
                     n=len(turns), items=[[turn.coder, turn.position] for turn in turns])
    return short


MAX_TIME_BEAT_SECONDS = 120


@transaction.atomic
def assignment_time_add(*, assignment: Assignment, by: User, seconds: int) -> int:
    """Add active (non-idle) seconds reported by the turn page, only while the round is open; one report adds at
    most two minutes and never more than the wall-clock time since the previous report. Returns what was added."""
    if assignment.coder_id != by.pk:
        raise ValidationError("only the assigned coder reports time on this turn")
    now = timezone.now()
    # A share of the round's row as a save takes (``_round_status_shared``): a closing waits for the report, and the
    # round's saves do not (an exclusive lock of the round would hold up every save into it for as long as the
    # report's transaction, every few seconds for each reviewer). Then the item's row: the round's row first, as a
    # save, a note and a reopening take them (a reopening locks the round, then its items: the other order
    # deadlocked with it).
    status = _round_status_shared(assignment.round)
    row = Assignment.objects.select_for_update().get(pk=assignment.pk)
    if status != Round.Status.OPEN:
        raise ValidationError(_closed_refusal(assignment.round, status, "time on task is no longer recorded",
                                              archived="time on task is no longer recorded"))
    since = (now - row.time_reported_at).total_seconds() if row.time_reported_at else MAX_TIME_BEAT_SECONDS
    added = max(0, min(int(seconds), MAX_TIME_BEAT_SECONDS, math.ceil(since)))
    Assignment.objects.filter(pk=row.pk).update(active_seconds=F("active_seconds") + added, time_reported_at=now)
    return added


MAX_ITEM_COMMENT_CHARS = 5000


@transaction.atomic
def assignment_note_save(*, assignment: Assignment, by: User, comment: str, flags: Sequence[str],
                         base: tuple[str, Sequence[str]] | None = None) -> Assignment:
    """The coder's comment and flags (slugs of ``Assignment.FLAGS``) on one item, for the admins: kept stripped,
    the flags sorted and without repeats. Refused, field by field, for an unknown flag, a comment over
    ``MAX_ITEM_COMMENT_CHARS``, anyone but the item's coder (or a coder no longer a member of the study), a round
    that is not open and an item compared with gold in feedback; an unchanged note writes nothing. The round is
    re-read under a share of its row, as the autosave reads it, so a note racing the round's closing lands before
    it or is refused, and holds up none of the round's saves. ``base``: the note (comment, flags) the change was
    made on, as the coding page had it from the server; a note that is neither that nor the new one was changed
    meanwhile (another tab, even one saving at the same moment: the item's row is locked as the note is read), and the
    change is refused (``StaleNoteError``) rather than written over it: a flag ticked in one tab would otherwise send
    that tab's older comment along."""
    comment = comment.strip()
    wanted = sorted(set(flags))
    errors: dict[str, str] = {}
    unknown = [flag for flag in wanted if flag not in Assignment.FLAGS]
    if unknown:
        shown = ", ".join(repr(flag[:40]) for flag in unknown[:5])
        errors["flags"] = f"unknown flag {shown} (known: {', '.join(Assignment.FLAGS)})"
    if len(comment) > MAX_ITEM_COMMENT_CHARS:
        errors["comment"] = (f"the comment has {len(comment):,} characters; at most {MAX_ITEM_COMMENT_CHARS:,} "
                             "are kept")
    status = _round_status_shared(assignment.round)
    member = StudyMember.objects.filter(study_id=assignment.round.study_id, user=by).exists()
    # The item's row locked as the note is read, as its write locks it (after the round's, the order of a completion):
    # a note of another tab under way is read as it commits, never written over from the base both read before it.
    current_comment, current_flags, locked = Assignment.objects.select_for_update(no_key=True).filter(
        pk=assignment.pk).values_list("comment", "flags", "feedback_locked").get()
    round_ = assignment.round
    if assignment.coder_id != by.pk or not member:
        errors["coder"] = "only the assigned coder, while a member of the study, can note this item"
    if status != Round.Status.OPEN:
        errors["round"] = _closed_refusal(round_, status, "notes on its items can no longer change",
                                          archived="its items' notes no longer change")
    elif locked:
        errors["round"] = (f"this item of {round_.name} was compared with gold in your feedback before the round "
                           "was reopened: its note stays as it was")
    if errors:
        raise ValidationError(errors)
    if (comment, wanted) == (current_comment, current_flags):
        assignment.comment, assignment.flags = comment, wanted
        return assignment
    if base is not None and (base[0].strip(), sorted(set(base[1]))) != (current_comment, sorted(current_flags)):
        raise StaleNoteError(current_comment, current_flags)
    assignment.comment, assignment.flags = comment, wanted
    Assignment.objects.filter(pk=assignment.pk).update(comment=comment, flags=wanted)
    audit_record(by=by, action="assignment.note", study=round_.study, target=f"round:{round_.name}",
                 position=assignment.position, flags=wanted, comment_chars=len(comment))
    return assignment


# --- hidden check items ----------------------------------------------------------------------------------------


@transaction.atomic
def check_alert_update(*, study: Study, user: User) -> ReviewerAlert | None:
    """Keep the reviewer's check-item alert in line with their agreement as it is now (``selectors.check_agreement``:
    their codings of the check items they completed, against gold). Below the study's threshold on at least
    ``check_min_items`` codings: an alert is raised for the admin when none is open (audited ``check.alert``; the
    alert is returned) unless an admin resolved the latest at these very figures (``_resolved_by_admin``), and an
    open one takes the new figures. Otherwise an open alert no longer holds: it is
    withdrawn (resolved by nobody, audited ``check.alert_withdraw`` with the figures that withdrew it), so the study
    page never shows an agreement that is no longer the reviewer's. Returns None unless it raised an alert.

    Called, in their transaction, by every write that changes what the agreement rests on: a check item completed
    (``assignment_complete``) or taken out of the completed ones (a save that leaves it short, ``item_judgment_save``;
    ``turns_short_requeue``; ``items_short_of_responses_reopened``: a round reopened, a member added back, an
    archive imported; ``check_alerts_of_turns_sent_back``: a response ingested into its turn), a save
    of a completed check item's judgment (``item_judgment_save``), a gold value recorded (``gold_save``) or
    imported (``annotation.judgment_import``), and a purge of either (``judgments_purge``). An import's own codings
    change none: it neither completes a turn nor overwrites a judgment, and a completed turn has a judgment of every
    code it asks."""
    # One update of the reviewer's alert at a time (two completions at once raise one alert, not two): the member's
    # row, FOR NO KEY UPDATE, which the share every save of theirs holds on it (FOR KEY SHARE) neither waits for nor
    # makes wait.
    StudyMember.objects.select_for_update(no_key=True).filter(study=study, user=user).values_list("pk").first()
    # The threshold and minimum as committed now, not as the caller read the study (a request that loaded it before
    # an admin changed them would otherwise measure against the old ones, and undo what the change's update did).
    threshold, min_items = Study.objects.filter(pk=study.pk).values_list("check_threshold", "check_min_items").get()
    agreement, n = selectors.check_agreement(study=study, user=user)
    # The agreement an alert states; None when there is none to state (at or above the threshold, or too few codings).
    below = None if agreement is None or n < min_items or agreement >= threshold else agreement
    current = ReviewerAlert.objects.filter(study=study, reviewer=user, resolved_at__isnull=True).first()
    if current is None:
        if below is None or _resolved_by_admin(study=study, user=user, figures=(below, n, threshold)):
            return None
        alert = ReviewerAlert.objects.create(study=study, reviewer=user, agreement=below,
                                             threshold=threshold, n_items=n)
        audit_record(by=None, action="check.alert", study=study, target=f"user:{user.get_username()}",
                     agreement=below, n=n)
        return alert
    figures = {"agreement": below, "n_items": n, "threshold": threshold}
    if below is None:
        ReviewerAlert.objects.filter(pk=current.pk).update(resolved_at=timezone.now(), withdrawn=True)
        audit_record(by=None, action="check.alert_withdraw", study=study, target=f"user:{user.get_username()}",
                     agreement=agreement, n=n)
    elif figures != {name: getattr(current, name) for name in figures}:
        ReviewerAlert.objects.filter(pk=current.pk).update(**figures)
    return None


def _resolved_by_admin(*, study: Study, user: User, figures: tuple[float, int, float]) -> bool:
    """Whether the reviewer's latest alert was resolved by an admin (``alert_resolve``, not withdrawn) at these very
    figures (agreement, codings, threshold): the admin has seen them, and a write that leaves them as they were (a
    span changed on a completed check item, a gold value saved again) raises no alert again. Figures that differ
    (another check item completed, a score changed) raise one. One query, only when an alert would be raised."""
    latest = (ReviewerAlert.objects.filter(study=study, reviewer=user).order_by("-created_at", "-pk")
              .values_list("resolved_at", "withdrawn", "agreement", "n_items", "threshold").first())
    return latest is not None and latest[0] is not None and not latest[1] and tuple(latest[2:]) == figures


def _check_alerts_update(coders: Iterable[tuple[int, int]]) -> None:
    """``check_alert_update`` for each (study id, user id) of ``coders`` (repeats taken once), in that order, so
    that two writes that update several reviewers' alerts lock their members' rows in one order."""
    pairs = sorted(set(coders))
    if not pairs:
        return
    studies = Study.objects.in_bulk({study_id for study_id, _ in pairs})
    users = User.objects.in_bulk({user_id for _, user_id in pairs})
    for study_id, user_id in pairs:
        check_alert_update(study=studies[study_id], user=users[user_id])


def check_alerts_update(*, assignments: QuerySet[Assignment]) -> None:
    """``check_alert_update`` for each reviewer with a completed check item among ``assignments``: for a write that
    has just changed what their agreement rests on in bulk or for several reviewers at once (a gold value, an
    import's gold rows). One query when none has."""
    _check_alerts_update(_check_coders(assignments))


def check_alerts_of_turns_sent_back(turn_ids: Sequence[int]) -> None:
    """``check_alert_update`` for each reviewer with a check item on one of ``turn_ids`` that the trigger of
    migration 0025 may have sent back (not completed, in an open main round, not locked by feedback, its coder a
    member), after an ingestion whose new responses to those turns sent completed items back to their coders'
    queues: their codings no longer count in those reviewers' agreement. The trigger counts what it sent back and
    names none; called by every ingestion that sent any back, in its transaction
    (``benchmark.material_rules.turns_sent_back``; registered by ``AnnotationConfig.ready``), never by one that sent
    none back. One query finds the reviewers; one whose check item there was under way already is updated too, which
    changes nothing of their alert."""
    member = StudyMember.objects.filter(study_id=OuterRef("round__study_id"), user_id=OuterRef("coder_id"))
    _check_alerts_update(Assignment.objects.filter(
        any_of("turn_id", turn_ids), Exists(member), is_check_item=True, completed_at__isnull=True,
        feedback_locked=False, round__kind=Round.Kind.MAIN, round__status=Round.Status.OPEN,
    ).values_list("round__study_id", "coder_id").distinct())


def _check_coders(assignments: QuerySet[Assignment]) -> list[tuple[int, int]]:
    """(study id, coder id) of the completed check items among ``assignments``, read now: whose alerts a change of
    those items' codings or completions changes (``_check_alerts_update``). One query."""
    return list(assignments.filter(is_check_item=True, round__kind=Round.Kind.MAIN, completed_at__isnull=False
                                   ).values_list("round__study_id", "coder_id").distinct())


@transaction.atomic
def alert_resolve(*, alert: ReviewerAlert, by: User) -> ReviewerAlert:
    require_study_admin(by)
    if not ReviewerAlert.objects.filter(pk=alert.pk, resolved_at__isnull=True).update(resolved_at=timezone.now()):
        raise ChangedMeanwhile("this alert")
    alert.refresh_from_db()
    audit_record(by=by, action="check.alert_resolve", study=alert.study, target=f"user:{alert.reviewer}")
    return alert
