"""Writes for the annotation app: schemas, studies, roles, judgments. Keyword-only, actor passed as ``by``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, Group, Permission
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Count, F
from django.utils import timezone

from annotation import roles, schema_document
from annotation.models import (
    Assignment,
    AttributeDefinition,
    AuditEvent,
    Judgment,
    Round,
    RoundItem,
    Schema,
    Span,
    SpanSubcategory,
    Study,
    StudyMember,
)
from benchmark.models import Conversation, ModelResponse, Turn

User = get_user_model()


# --- schemas -------------------------------------------------------------------------------------------------


def write_schema_rows(doc: schema_document.SchemaDoc, *, schema_model, attribute_model, subcategory_model) -> Any:
    """Create or update the rows of a schema document. Takes the model classes so the data migration can
    pass its historical models; callers are responsible for the frozen check and the transaction."""
    schema, _ = schema_model.objects.update_or_create(
        slug=doc.slug,
        defaults={
            "version": doc.version,
            "name": doc.name,
            "description": doc.description,
            "definition": doc.definition,
        },
    )
    for spec in doc.attributes:
        attribute, _ = attribute_model.objects.update_or_create(
            schema=schema,
            code=spec.code,
            defaults={
                "name": spec.name,
                "group": spec.group,
                "unit": spec.unit,
                "cluster": spec.cluster,
                "position": spec.position,
                "scale_min": spec.scale_min,
                "scale_max": spec.scale_max,
                "level": spec.level,
                "scale_labels": spec.scale_labels,
                "definition": spec.definition,
                "anchors": spec.anchors,
                "bucket": spec.bucket,
                "risk": spec.risk,
                "has_instance_count": spec.has_instance_count,
                "counts_toward_uiri": spec.counts_toward_uiri,
            },
        )
        for sub in spec.subcategories:
            subcategory_model.objects.update_or_create(
                schema=schema,
                slug=sub.slug,
                defaults={
                    "attribute": attribute,
                    "name": sub.name,
                    "colour": sub.colour,
                    "style": sub.style,
                    "description": sub.description,
                    "position": sub.position,
                },
            )
    return schema


def schema_is_frozen(*, schema: Schema) -> bool:
    return schema.studies.exclude(status=Study.Status.SETUP).exists()


@transaction.atomic
def schema_install(*, document: dict, by: AbstractBaseUser | None = None) -> Schema:
    """Install or update a schema from its document. Refused once a study using it is open."""
    doc = schema_document.parse(document)
    existing = Schema.objects.filter(slug=doc.slug).first()
    if existing is not None and schema_is_frozen(schema=existing):
        raise ValidationError(f"schema {doc.slug} is frozen: a study using it is open")
    schema = write_schema_rows(
        doc, schema_model=Schema, attribute_model=AttributeDefinition, subcategory_model=SpanSubcategory
    )
    AuditEvent.objects.create(actor=by, action="schema.install", target=f"schema:{schema.slug}")
    return schema


# --- roles and people ----------------------------------------------------------------------------------------


def roles_ensure() -> dict[str, Group]:
    """Create the four role groups with their permissions (idempotent)."""
    if Group.objects.filter(name__in=roles.ROLES).count() < len(roles.ROLES):
        roles.sync_groups(group_model=Group, permission_model=Permission)
    return {group.name: group for group in Group.objects.filter(name__in=roles.ROLES)}


def user_ensure(*, username: str, role: str, password: str | None = None, email: str = "") -> AbstractBaseUser:
    """Get or create an account in one role. Staff status follows the role: reviewers and experts never get the
    Django admin (it would show them other people's judgments and gold)."""
    if role not in roles.ROLES:
        raise ValidationError(f"unknown role {role!r}; roles are {', '.join(roles.ROLES)}")
    groups = roles_ensure()
    user, created = User.objects.get_or_create(username=username, defaults={"email": email})
    if created or password is not None:
        if password is None:
            user.set_unusable_password()
        else:
            user.set_password(password)
    user.is_staff = role in roles.STAFF_ROLES
    user.save()
    user.groups.add(groups[role])
    return user


# --- studies -------------------------------------------------------------------------------------------------


@transaction.atomic
def study_create(
    *,
    slug: str,
    name: str,
    schema: Schema,
    model_slots: Sequence[str],
    by: AbstractBaseUser | None,
    is_synthetic: bool = False,
    description: str = "",
) -> Study:
    study = Study.objects.create(
        slug=slug,
        name=name,
        schema=schema,
        model_slots=list(model_slots),
        is_synthetic=is_synthetic,
        description=description,
    )
    AuditEvent.objects.create(actor=by, action="study.create", study=study, target=f"study:{slug}")
    return study


def study_member_add(*, study: Study, user: AbstractBaseUser, role: str) -> StudyMember:
    member, created = StudyMember.objects.get_or_create(study=study, user=user, defaults={"role": role})
    if created and role == StudyMember.Role.REVIEWER:
        count = StudyMember.objects.filter(study=study, role=StudyMember.Role.REVIEWER).count()
        member.alias = f"R{count}"
        member.save(update_fields=["alias"])
    return member


# --- judgments -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SpanInput:
    start: int
    end: int
    subcategory: str


def score_error(attribute: AttributeDefinition, score: int) -> str:
    return f"{attribute.code}: score {score} is outside the scale {attribute.scale_min}–{attribute.scale_max}"


def judgment_validate(
    *,
    attribute: AttributeDefinition,
    score: Any,
    turn: Turn | None,
    response: ModelResponse | None,
    instance_count: Any = None,
    spans: Iterable[SpanInput] = (),
) -> dict[str, str]:
    """Every rule a judgment must satisfy, as {field: message}; empty when valid."""
    errors: dict[str, str] = {}
    code = attribute.code
    if score is None:
        pass  # spans highlighted before scoring: the judgment exists, its score is still to come
    elif isinstance(score, bool) or not isinstance(score, int):
        errors["score"] = f"{code}: score must be a whole number"
    elif not attribute.scale_min <= score <= attribute.scale_max:
        errors["score"] = score_error(attribute, score)
    if attribute.unit == AttributeDefinition.Unit.RESPONSE and response is None:
        errors["unit"] = f"{code} is coded once per model response: a response is required"
    elif attribute.unit == AttributeDefinition.Unit.TURN and (turn is None or response is not None):
        errors["unit"] = f"{code} is coded once per turn: give a turn and no response"
    elif attribute.unit == AttributeDefinition.Unit.CONVERSATION and (turn is not None or response is not None):
        errors["unit"] = f"{code} is coded once per conversation: give neither turn nor response"
    if response is not None and turn is not None and response.turn_id != turn.pk:
        errors["response"] = "the response does not belong to the turn"
    if instance_count is not None:
        if not attribute.has_instance_count:
            errors["instance_count"] = f"{code} takes no instance count"
        elif isinstance(instance_count, bool) or not isinstance(instance_count, int) or instance_count < 0:
            errors["instance_count"] = f"{code}: instance count must be a whole number ≥ 0"
    spans = list(spans)
    if spans:
        allowed = {sub.slug for sub in attribute.subcategories.all()}
        text_length = len(response.text) if response is not None else 0
        for i, span in enumerate(spans):
            where = f"spans[{i}]"
            if span.subcategory not in allowed:
                errors[where] = (
                    f"{code}: subcategory {span.subcategory!r} is not one of this attribute's "
                    f"({', '.join(sorted(allowed)) or 'none'})"
                )
            elif not (0 <= span.start < span.end <= text_length):
                errors[where] = (
                    f"{code}: span [{span.start}, {span.end}) is outside the response text (0–{text_length} characters)"
                )
    return errors


@transaction.atomic
def judgment_save(
    *,
    round: Round,
    by: AbstractBaseUser,
    attribute: AttributeDefinition,
    score: int | None,
    turn: Turn | None = None,
    response: ModelResponse | None = None,
    conversation: Conversation | None = None,
    instance_count: int | None = None,
    spans: Sequence[SpanInput] | None = None,
    expected_version: int | None = None,
    is_gold: bool = False,
) -> Judgment:
    """Create or update one judgment (and replace its spans when given).

    ``expected_version`` is the version the editor last saw: a save against an older version is refused so a
    judgment edited in two tabs is never silently overwritten.
    """
    if response is not None and turn is None:
        turn = response.turn
    errors = judgment_validate(
        attribute=attribute,
        score=score,
        turn=turn,
        response=response,
        instance_count=instance_count,
        spans=spans or (),
    )
    if round.status != Round.Status.OPEN:
        errors["round"] = f"{round.name} is {round.get_status_display().lower()}: judgments can no longer change"
    if attribute.schema_id != round.study.schema_id:
        errors["attribute"] = f"{attribute.code} is not an attribute of this study's schema"
    conversation_id = turn.conversation_id if turn is not None else getattr(conversation, "pk", None)
    if conversation_id is None:
        errors["unit"] = f"{attribute.code}: no unit given (turn, response or conversation)"
    if errors:
        raise ValidationError(errors)
    lookup: dict[str, Any] = {"round": round, "attribute": attribute, "turn": turn, "response": response}
    if turn is None:
        lookup["conversation_id"] = conversation_id
    lookup["is_gold"] = is_gold
    if not is_gold:
        lookup["coder"] = by
    judgment = Judgment.objects.select_for_update().filter(**lookup).first()
    if judgment is None:
        try:
            with transaction.atomic():
                judgment = _judgment_create(round, by, is_gold, attribute, conversation_id, turn, response, score,
                                            instance_count)
        except IntegrityError:
            # Another tab or device created it between our read and our insert: the same as a stale save.
            current = Judgment.objects.filter(**lookup).first()
            if current is None:
                raise
            raise StaleJudgmentError(current) from None
    else:
        if expected_version is not None and expected_version != judgment.version:
            raise StaleJudgmentError(judgment)
        judgment.score = score
        judgment.instance_count = instance_count
        judgment.version += 1
        if is_gold:
            judgment.coder = by
        judgment.save()
    if spans is not None:
        subcategories = {sub.slug: sub for sub in attribute.subcategories.all()}
        judgment.spans.all().delete()
        Span.objects.bulk_create(
            Span(judgment=judgment, subcategory=subcategories[s.subcategory], start=s.start, end=s.end) for s in spans
        )
    return judgment


def _judgment_create(round, by, is_gold, attribute, conversation_id, turn, response, score, instance_count):
    return Judgment.objects.create(
        round=round,
        coder=by,
        is_gold=is_gold,
        attribute=attribute,
        conversation_id=conversation_id,
        turn=turn,
        response=response,
        score=score,
        instance_count=instance_count,
    )


class StaleJudgmentError(Exception):
    """The judgment changed since the editor loaded it (another tab or device saved first)."""

    def __init__(self, current: Judgment):
        self.current = current
        super().__init__(
            f"{current.attribute.code} was changed elsewhere (now {current.score}, version {current.version}); "
            "reload to see the newer value"
        )


# --- rounds --------------------------------------------------------------------------------------------------


def round_ensure(*, study: Study, kind: str, number: int = 1, by: AbstractBaseUser | None) -> Round:
    round_, created = Round.objects.get_or_create(study=study, kind=kind, number=number)
    if created:
        AuditEvent.objects.create(actor=by, action="round.create", study=study, target=f"round:{round_.name}")
    return round_


@transaction.atomic
def round_items_set(*, round: Round, turns: Sequence[Turn], by: AbstractBaseUser | None) -> None:
    """Fix the ordered item set of a draft round (the calibration set)."""
    if round.status != Round.Status.DRAFT:
        raise ValidationError(f"{round.name} is {round.status}: its items are fixed")
    RoundItem.objects.filter(round=round).delete()
    RoundItem.objects.bulk_create(
        RoundItem(round=round, turn=turn, position=position) for position, turn in enumerate(turns, start=1)
    )
    AuditEvent.objects.create(
        actor=by, action="round.items_set", study=round.study, target=f"round:{round.name}", data={"n": len(turns)}
    )


@transaction.atomic
def assignments_ensure(*, round: Round, coder: AbstractBaseUser, turns: Sequence[Turn]) -> int:
    """Queue turns for a coder in the given order, after what they already have; returns how many were added."""
    have = set(Assignment.objects.filter(round=round, coder=coder).values_list("turn_id", flat=True))
    start = Assignment.objects.filter(round=round, coder=coder).count()
    new = [turn for turn in turns if turn.pk not in have]
    Assignment.objects.bulk_create(
        Assignment(round=round, coder=coder, turn=turn, position=start + offset)
        for offset, turn in enumerate(new, start=1)
    )
    return len(new)


@transaction.atomic
def round_open(*, round: Round, by: AbstractBaseUser | None) -> Round:
    """Open a draft round; the study opens with it, which freezes its schema."""
    if round.status == Round.Status.OPEN:
        return round
    if round.status == Round.Status.CLOSED:
        raise ValidationError(f"{round.name} is closed; reopening is a separate, recorded admin action")
    round.status = Round.Status.OPEN
    round.opened_at = timezone.now()
    round.save(update_fields=["status", "opened_at"])
    study = round.study
    if study.status == Study.Status.SETUP:
        study.status = Study.Status.OPEN
        study.save(update_fields=["status"])
    AuditEvent.objects.create(actor=by, action="round.open", study=study, target=f"round:{round.name}")
    return round


# --- completing a turn, time on task ---------------------------------------------------------------------------


@dataclass
class TurnCheck:
    missing: list[str]
    warnings: list[str]
    completed: bool


@transaction.atomic
def assignment_complete(*, assignment: Assignment, by: AbstractBaseUser, confirm: bool = False) -> TurnCheck:
    """Mark a turn done when every required coding is present. Inconsistencies the reviewer should look at
    again (a score above 0 with no span, an instance count that differs from the spans) need ``confirm``."""
    from annotation.selectors import turn_view

    if assignment.coder_id != by.pk:
        raise ValidationError("only the assigned coder can complete this turn")
    if assignment.round.status != Round.Status.OPEN:
        raise ValidationError(f"{assignment.round.name} is not open")
    view = turn_view(round_id=assignment.round_id, user=by, position=assignment.position)
    span_counts = dict(
        Judgment.objects.filter(round=assignment.round, coder=by, is_gold=False, turn=assignment.turn)
        .annotate(n=Count("spans"))
        .values_list("id", "n")
    )
    missing: list[str] = []
    warnings: list[str] = []
    for group in view.turn_groups:
        for attribute in group.attributes:
            judgment = view.turn_judgments.get(attribute.code)
            if judgment is None or judgment.score is None:
                missing.append(f"{attribute.code} · {attribute.name}")
    for card in view.cards:
        for group in view.response_groups:
            for attribute in group.attributes:
                judgment = card.judgments.get(attribute.code)
                where = f"{card.label} · {attribute.code}"
                if judgment is None or judgment.score is None:
                    missing.append(f"{where} · {attribute.name}")
                    continue
                spans = span_counts.get(judgment.pk, 0)
                if attribute.subcategories.all() and judgment.score > 0 and spans == 0:
                    warnings.append(f"{where}: score {judgment.score} but no highlighted span")
                if judgment.instance_count is not None and judgment.instance_count != spans:
                    warnings.append(f"{where}: instance count {judgment.instance_count} but {spans} span(s)")
    completed = not missing and (confirm or not warnings)
    if completed and assignment.completed_at is None:
        assignment.completed_at = timezone.now()
        assignment.save(update_fields=["completed_at"])
        if assignment.is_check_item:
            from annotation.calibration import check_alert_update

            check_alert_update(study=assignment.round.study, user=by)
    return TurnCheck(missing=missing, warnings=warnings, completed=completed)


MAX_TIME_BEAT_SECONDS = 120


def assignment_time_add(*, assignment: Assignment, by: AbstractBaseUser, seconds: int) -> None:
    """Add active (non-idle) seconds reported by the turn page; one report never adds more than two minutes."""
    if assignment.coder_id != by.pk:
        raise ValidationError("only the assigned coder reports time on this turn")
    seconds = max(0, min(int(seconds), MAX_TIME_BEAT_SECONDS))
    if seconds:
        Assignment.objects.filter(pk=assignment.pk).update(active_seconds=F("active_seconds") + seconds)


@transaction.atomic
def round_close(*, round: Round, by: AbstractBaseUser | None) -> Round:
    """Close an open round: every judgment in it is locked, and a metrics run starts (after commit)."""
    from metrics.services import metric_run_request

    locked = Round.objects.select_for_update().get(pk=round.pk)
    if locked.status != Round.Status.OPEN:
        raise ValidationError(f"{locked.name} is {locked.status}, not open")
    locked.status = Round.Status.CLOSED
    locked.closed_at = timezone.now()
    locked.save(update_fields=["status", "closed_at"])
    AuditEvent.objects.create(actor=by, action="round.close", study=locked.study, target=f"round:{locked.name}")
    metric_run_request(study=locked.study, by=by, trigger="round-closed")
    return locked
