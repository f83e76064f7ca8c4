from django.contrib import admin

from audit.models import AuditEvent


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ("at", "actor", "action", "study_slug", "target")
    list_filter = ("action", "study_slug")
    search_fields = ("action", "target", "actor__username", "study_slug")
    readonly_fields = ("at", "actor", "action", "study_id", "study_slug", "target", "data")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
