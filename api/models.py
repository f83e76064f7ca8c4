"""API tokens and remembered answers to ``Idempotency-Key`` requests.

A token is shown once, when it is created; only its SHA-256 is stored, so a database leak does not leak usable
credentials (the token has 256 bits of entropy, so a plain hash is enough — no salt or slow hash is needed).
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    class Scope(models.TextChoices):
        INGEST = "ingest", "Ingest conversations and model responses"
        IMPORT = "import", "Import judgments (long format)"
        READ = "read", "Read studies, rounds, assignments, judgments, metric runs and exports"
        METRICS = "metrics", "Start metric runs"
        SETUP = "setup", "Create studies"

    name = models.CharField(max_length=100, help_text="What the token is for, e.g. 'ingest script on the GPU box'.")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    key_prefix = models.CharField(max_length=12, help_text="The token's first characters, to recognise it.")
    key_hash = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the token, hex.")
    study = models.ForeignKey(
        "annotation.Study", on_delete=models.CASCADE, null=True, blank=True, related_name="api_tokens",
        help_text="When set, the token reaches this study only.",
    )
    scopes = models.JSONField(default=list, help_text="Subset of ingest, import, read, metrics, setup.")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.key_prefix}…)"

    def is_expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now


class IdempotencyRecord(models.Model):
    """The first successful answer to a request sent with an ``Idempotency-Key`` header, replayed on a resend."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=200)
    request_hash = models.CharField(max_length=64, help_text="SHA-256 of method, path and body.")
    status_code = models.PositiveSmallIntegerField()
    response = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "key"], name="idempotency_unique_key_per_user")]

    def __str__(self) -> str:
        return f"{self.key} ({self.status_code})"
