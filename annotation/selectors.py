"""Reads for the annotation app. Every query that returns judgments is scoped to what the caller may see."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Count, QuerySet

from annotation import roles
from annotation.models import Schema, Study


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
