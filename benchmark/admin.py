"""The benchmark material in the Django admin, read-only: what reviewers code comes in through ingestion, which
checks study isolation and frozen text (benchmark/material_rules.py); the admin would bypass both."""

from django.contrib import admin

from benchmark import models


class _ReadOnly:
    """Shown, never added or changed here (deleting stays possible: judged material is protected by its judgments)."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


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


@admin.register(models.Turn)
class TurnAdmin(_ReadOnly, admin.ModelAdmin):
    list_display = ("__str__", "conversation", "index")
    list_filter = ("conversation__dataset",)
    search_fields = ("conversation__external_id", "client_text")
    list_select_related = ("conversation__dataset",)
    raw_id_fields = ("conversation",)
    inlines = [ResponseInline]


@admin.register(models.ModelResponse)
class ModelResponseAdmin(_ReadOnly, admin.ModelAdmin):
    list_display = ("__str__", "model_slot", "model_version", "created_at")
    list_filter = ("model_slot", "turn__conversation__dataset")
    search_fields = ("turn__conversation__external_id", "model_version", "text")
    list_select_related = ("turn__conversation__dataset",)
