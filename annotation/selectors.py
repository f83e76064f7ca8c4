"""Reads for the annotation app. Every query that returns judgments is scoped to what the caller may see."""

from __future__ import annotations

from collections.abc import Iterator

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Count, QuerySet

from annotation import roles
from annotation.models import Judgment, Schema, Span, Study


def user_roles(*, user: AbstractBaseUser | AnonymousUser) -> list[str]:
    if not user.is_authenticated:
        return []
    names = set(user.groups.values_list("name", flat=True))
    return [role for role in roles.ROLES if role in names]


def user_sees_all_studies(*, user: AbstractBaseUser | AnonymousUser) -> bool:
    if not user.is_authenticated:
        return False
    return user.is_superuser or bool({roles.ADMIN, roles.RESEARCHER} & set(user_roles(user=user)))


def studies_visible_to(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[Study]:
    studies = Study.objects.select_related("schema").prefetch_related("rounds")
    if not user_sees_all_studies(user=user):
        studies = studies.filter(members__user=user)
    return studies.annotate(conversation_count=Count("rounds__items__turn__conversation", distinct=True)).order_by(
        "slug"
    )


def schema_get(*, slug: str) -> Schema:
    return Schema.objects.prefetch_related("attributes__subcategories").get(slug=slug)


def judgment_rows(*, study: Study) -> Iterator[dict]:
    """The study's judgments in the SPEC §6 long format, streamed (constant memory at any size)."""
    spans: dict[int, list[dict]] = {}
    for judgment_id, start, end, slug in (
        Span.objects.filter(judgment__round__study=study)
        .order_by("judgment_id", "start", "end", "subcategory__slug")
        .values_list("judgment_id", "start", "end", "subcategory__slug")
        .iterator(chunk_size=5000)
    ):
        spans.setdefault(judgment_id, []).append({"start": start, "end": end, "subcategory": slug})
    rows = (
        Judgment.objects.filter(round__study=study)
        .order_by("round__kind", "round__number", "is_gold", "coder__username", "conversation__dataset__name",
                  "conversation__external_id", "turn__index", "response__model_slot", "attribute__position")
        .values_list("id", "round__kind", "round__number", "coder__username", "is_gold",
                     "conversation__dataset__name", "conversation__external_id", "turn__index",
                     "response__model_slot", "attribute__code", "score", "instance_count")
        .iterator(chunk_size=5000)
    )
    for (judgment_id, kind, number, coder, is_gold, dataset, conversation, turn, model, code, score,
         instance_count) in rows:
        yield {
            "study": study.slug,
            "round": f"calibration-{number}" if kind == "calibration" else "main",
            "reviewer": coder,
            "is_gold": is_gold,
            "dataset": dataset,
            "conversation_id": conversation,
            "turn_index": turn,
            "model": model,
            "attribute": code,
            "score": score,
            "instance_count": instance_count,
            "spans": spans.get(judgment_id, []),
        }
