from django.contrib import admin

from metrics.models import MetricRun


@admin.register(MetricRun)
class MetricRunAdmin(admin.ModelAdmin):
    list_display = ("pk", "study", "trigger", "status", "progress", "created_at", "finished_at")
    list_filter = ("status", "trigger", "study")
    search_fields = ("study__slug",)
    readonly_fields = [f.name for f in MetricRun._meta.fields]
