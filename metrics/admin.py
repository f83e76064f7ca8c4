from django.contrib import admin
from django.http import HttpRequest

from metrics.models import MetricRun


@admin.register(MetricRun)
class MetricRunAdmin(admin.ModelAdmin):
    list_display = ("pk", "study", "trigger", "status", "progress", "created_at", "finished_at")
    list_filter = ("status", "trigger", "study")
    search_fields = ("study__slug",)
    readonly_fields = [f.name for f in MetricRun._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        # A run starts through metric_run_request (the dashboards' overview, the API, the command), which checks its
        # parameters and records who asked; a blank row added here would fail on its study and never run. Researchers
        # hold metrics.add_metricrun for that button, not for this form.
        return False
