"""Datasets, conversations, turns and model responses: the material that is coded.

Response text is immutable once any judgment points at it (spans are character offsets into it); the
database enforces that with a trigger (see migration 0002), the services check it first for a clear message.
"""

from __future__ import annotations

from django.db import models

TOPICS = [
    "Depression",
    "Anxiety",
    "Counseling Fundamentals",
    "Intimate Relationships",
    "Family Conflicts",
    "Trauma",
    "Self-esteem",
    "Emotional Regulation",
    "Sleep",
    "Social / Work Relationships",
    "Addiction / Substance Use",
    "Grief and Loss",
    "Spirituality",
    "Sexuality",
    "Nutritional / Physical Fitness",
    "Diagnosis",
    "Military Issues",
    "Self-harm / Suicidal Ideation",
    "Social / Economic Well-being",
    "Motivation",
    "ADHD",
    "Sexual Harassment",
]


class Dataset(models.Model):
    name = models.CharField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Conversation(models.Model):
    class Kind(models.TextChoices):
        SINGLE = "single", "Single-turn"
        MULTI = "multi", "Multi-turn"

    class Complexity(models.TextChoices):
        HIGH = "high", "High"
        MEDIUM = "medium", "Medium"
        LOW = "low", "Low"

    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="conversations")
    external_id = models.CharField(max_length=200, help_text="The conversation's id in its source corpus.")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    topic = models.CharField(max_length=60, choices=[(t, t) for t in TOPICS])
    complexity = models.CharField(max_length=10, choices=Complexity.choices, null=True, blank=True)
    title = models.CharField(max_length=200, blank=True)
    is_synthetic = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["dataset__name", "external_id"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "external_id"], name="conversation_unique_external_id"),
            models.CheckConstraint(
                condition=models.Q(kind="multi", complexity__isnull=True) | models.Q(kind="single"),
                name="conversation_multi_has_no_complexity_label",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.dataset.name}/{self.external_id}"


class Turn(models.Model):
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="turns")
    index = models.PositiveIntegerField(help_text="1-based position in the conversation.")
    client_text = models.TextField()
    therapist_reference = models.TextField(blank=True)

    class Meta:
        ordering = ["conversation_id", "index"]
        constraints = [
            models.UniqueConstraint(fields=["conversation", "index"], name="turn_unique_index"),
            models.CheckConstraint(condition=models.Q(index__gte=1), name="turn_index_from_one"),
        ]

    def __str__(self) -> str:
        return f"{self.conversation} turn {self.index}"


class ModelResponse(models.Model):
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="responses")
    model_slot = models.CharField(max_length=50, help_text="e.g. GPT, Claude, Gemini, Llama, Qwen")
    model_version = models.CharField(max_length=200, blank=True)
    text = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["turn_id", "model_slot"]
        constraints = [
            models.UniqueConstraint(fields=["turn", "model_slot"], name="response_unique_model_slot"),
        ]

    def __str__(self) -> str:
        return f"{self.turn} · {self.model_slot}"
