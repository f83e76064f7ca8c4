"""The benchmark material in the Django admin, read-only: what reviewers code comes in through ingestion, which
checks study isolation and frozen text (benchmark/material_rules.py); the admin would bypass both. A turn or a
reply may be deleted unless the frozen text rule keeps it (``material_rules.removal_conflicts``): the delete's
confirmation page names why (the session's code, the open round, the judgments) and deletes nothing."""

from typing import Any

from django.contrib import admin
from django.db import transaction

from benchmark import models
from benchmark.material_rules import Edit, removal_conflicts


class _ReadOnly:
    """Shown, never added or changed here."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class _FrozenNotDeleted:
    """Deleting a turn or reply (one, or "delete selected") asks ``removal_conflicts``, under the lock of their
    conversations, held until the delete: what it refuses is listed as protected, so Django deletes nothing."""

    def _removals(self, pks: list[Any]) -> list[Edit]:
        raise NotImplementedError

    def get_deleted_objects(self, objs: Any, request: Any) -> Any:
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)  # type: ignore[misc]
        with transaction.atomic():  # the one of the delete view, or of the action (``response_action``)
            refused = removal_conflicts(self._removals([obj.pk for obj in objs]))
        if not refused:
            return deleted, counts, perms_needed, protected
        return deleted, counts, perms_needed, [*protected, *(error.message for error in refused)]

    def response_action(self, request: Any, queryset: Any, *args: Any, **kwargs: Any) -> Any:
        # "delete selected": checked and deleted in one transaction, as the delete view is
        with transaction.atomic():
            return super().response_action(request, queryset, *args, **kwargs)  # type: ignore[misc]


@admin.register(models.Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ("name", "created_at")
    search_fields = ("name",)

    # A dataset's name is part of what names its material: ingestion finds the dataset by it (a renamed one would
    # get the same conversations again, under the old name), and the exports, the longitudinal histories
    # (dataset/external_id) and a run's input fingerprint carry it. Named once it holds conversations.
    def get_readonly_fields(self, request, obj=None):
        return ("name",) if obj is not None and obj.conversations.exists() else ()


class TurnInline(_ReadOnly, admin.StackedInline):
    model = models.Turn
    fields = ("index", "client_text", "therapist_reference")
    extra = 0
    show_change_link = True


@admin.register(models.Conversation)
class ConversationAdmin(_ReadOnly, admin.ModelAdmin):
    list_display = ("external_id", "dataset", "kind", "topic", "complexity", "title", "study", "is_synthetic")
    list_filter = ("dataset", "kind", "topic", "complexity", "is_synthetic")
    search_fields = ("external_id", "title", "turns__client_text")
    list_select_related = ("dataset", "study")
    inlines = [TurnInline]


class ResponseInline(_ReadOnly, admin.StackedInline):
    model = models.ModelResponse
    fields = ("model_slot", "model_version", "text")
    extra = 0


def _label(dataset: str, external_id: str) -> str:
    return f"{dataset}/{external_id}"  # as the ingestions' errors name a conversation


@admin.register(models.Turn)
class TurnAdmin(_FrozenNotDeleted, _ReadOnly, admin.ModelAdmin):
    list_display = ("__str__", "conversation", "index")
    list_filter = ("conversation__dataset",)
    search_fields = ("conversation__external_id", "client_text")
    list_select_related = ("conversation__dataset",)
    raw_id_fields = ("conversation",)
    inlines = [ResponseInline]

    def _removals(self, pks: list[Any]) -> list[Edit]:
        return [Edit(row, "turn", conversation_id, _label(dataset, external_id), "turn", turn_id=pk, turn_index=index)
                for row, (pk, index, conversation_id, dataset, external_id) in enumerate(
                    models.Turn.objects.filter(pk__in=pks).order_by("conversation_id", "index").values_list(
                        "pk", "index", "conversation_id", "conversation__dataset__name",
                        "conversation__external_id"))]


@admin.register(models.ModelResponse)
class ModelResponseAdmin(_FrozenNotDeleted, _ReadOnly, admin.ModelAdmin):
    list_display = ("__str__", "model_slot", "model_version", "created_at")
    list_filter = ("model_slot", "turn__conversation__dataset")
    search_fields = ("turn__conversation__external_id", "model_version", "text")
    list_select_related = ("turn__conversation__dataset",)

    def _removals(self, pks: list[Any]) -> list[Edit]:
        return [Edit(row, "response", conversation_id, _label(dataset, external_id), "response", turn_id=turn_id,
                     turn_index=index, response_id=pk, model_slot=slot)
                for row, (pk, slot, turn_id, index, conversation_id, dataset, external_id) in enumerate(
                    models.ModelResponse.objects.filter(pk__in=pks).order_by("turn__conversation_id", "turn__index",
                                                                             "model_slot").values_list(
                        "pk", "model_slot", "turn_id", "turn__index", "turn__conversation_id",
                        "turn__conversation__dataset__name", "turn__conversation__external_id"))]
