"""Metric runs: a report computed by a worker from a study's judgments, with its parameters and outcome."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class MetricRun(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    study = models.ForeignKey("annotation.Study", on_delete=models.CASCADE, related_name="metric_runs")
    trigger = models.CharField(max_length=30, default="manual", help_text="manual / api / round-closed / command")
    parameters = models.JSONField(default=dict, help_text="seed, bootstrap, top_k, schema version …")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    progress = models.FloatField(default=0.0)
    progress_message = models.CharField(max_length=200, blank=True)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="metric_runs"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    enqueued_at = models.DateTimeField(
        null=True, blank=True, help_text="When the run was last handed to the task broker (None: not yet, or it was "
                                         "unreachable; the workers' recovery sends it).")
    resent_at = models.DateTimeField(
        null=True, blank=True, help_text="When the workers' recovery last sent the run again (no worker had taken it "
                                         "in time, or its worker stopped); shown with the run.")
    heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="Last sign of life of the worker computing the run; a running run without "
                                         "one for METRIC_RUN_STALE_SECONDS is taken over.")

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(progress__gte=0) & models.Q(progress__lte=1), name="metric_run_progress_fraction"
            ),
            models.CheckConstraint(
                condition=~models.Q(status="succeeded") | models.Q(result__isnull=False),
                name="metric_run_success_has_result",
            ),
        ]

    def __str__(self) -> str:
        return f"run {self.pk} of {self.study} ({self.status})"

    @property
    def duration_seconds(self) -> float | None:
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None
