"""The audit trail: who did what, for every action a study must be able to account for.

Append-only (PostgreSQL refuses UPDATE and DELETE on the table, migration 0003), and independent of the objects it
describes: the study is recorded by id and slug, not by a foreign key, so deleting a study keeps its history.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class AuditEvent(models.Model):
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="audit_events",
        help_text="Empty for the system (commands, workers).",
    )
    action = models.CharField(max_length=60, help_text="entity.verb, e.g. round.close")
    study_id = models.BigIntegerField(null=True, blank=True, db_index=True, help_text="The study's id, if any.")
    study_slug = models.CharField(max_length=80, blank=True, help_text="The study's slug when the event happened.")
    target = models.CharField(max_length=200, blank=True)
    data = models.JSONField(default=dict, blank=True)
    at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.actor} {self.action} {self.target}"
