from django.contrib import admin

from benchmark import models


@admin.register(models.Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ("name", "created_at")
    search_fields = ("name",)


class TurnInline(admin.StackedInline):
    model = models.Turn
    fields = ("index", "client_text", "therapist_reference")
    extra = 0
    show_change_link = True


@admin.register(models.Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ("external_id", "dataset", "kind", "topic", "complexity", "title", "is_synthetic")
    list_filter = ("dataset", "kind", "topic", "complexity", "is_synthetic")
    search_fields = ("external_id", "title", "turns__client_text")
    list_select_related = ("dataset",)
    inlines = [TurnInline]


class ResponseInline(admin.StackedInline):
    model = models.ModelResponse
    fields = ("model_slot", "model_version", "text")
    extra = 0

    def get_readonly_fields(self, request, obj=None):
        # Response text is the reference frame of span offsets: never edited in the admin.
        return ("model_slot", "model_version", "text")


@admin.register(models.Turn)
class TurnAdmin(admin.ModelAdmin):
    list_display = ("__str__", "conversation", "index")
    list_filter = ("conversation__dataset",)
    search_fields = ("conversation__external_id", "client_text")
    list_select_related = ("conversation__dataset",)
    raw_id_fields = ("conversation",)
    inlines = [ResponseInline]


@admin.register(models.ModelResponse)
class ModelResponseAdmin(admin.ModelAdmin):
    list_display = ("__str__", "model_slot", "model_version", "created_at")
    list_filter = ("model_slot", "turn__conversation__dataset")
    search_fields = ("turn__conversation__external_id", "model_version", "text")
    list_select_related = ("turn__conversation__dataset",)
    readonly_fields = ("turn", "model_slot", "model_version", "text", "created_at", "updated_at")
