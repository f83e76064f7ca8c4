"""Datasets, conversations, turns and model responses: the material that is coded.

Datasets are shared between studies (a dataset name and a conversation id name one conversation everywhere, and
any study may code it), but each conversation has at most one study that may change it: the one whose ingestion
first wrote it (``Conversation.study``). Material some study uses (round items, assignments, judgments) or owns
never changes through another study's ingestion, nor through an import without a study.

What reviewers coded against is frozen: a response's text once it has judgments or its turn is in an open round;
a turn's client text and therapist reference once it, or a later turn that shows it as context, has judgments or
is in an open round; a conversation's kind, topic, complexity, title, dataset and id once any of it is coded. The
ingestions check all of this first (benchmark/material_rules.py), for a clear message; PostgreSQL triggers are the
backstop for every other path (annotation migration 0002 for judged responses, benchmark migration 0002 for the
rest). See README, "Study isolation and frozen text".
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
        LONGITUDINAL = "longitudinal", "Longitudinal (a trajectory of counseling sessions)"

    class Complexity(models.TextChoices):
        HIGH = "high", "High"
        MEDIUM = "medium", "Medium"
        LOW = "low", "Low"

    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="conversations")
    external_id = models.CharField(max_length=200, help_text="The conversation's id in its source corpus.")
    kind = models.CharField(max_length=12, choices=Kind.choices)
    topic = models.CharField(max_length=60, choices=[(t, t) for t in TOPICS])
    complexity = models.CharField(max_length=10, choices=Complexity.choices, null=True, blank=True)
    title = models.CharField(max_length=200, blank=True)
    is_synthetic = models.BooleanField(default=False)
    # benchmark sits below annotation, so the owner is named lazily (docs/architecture.md#layers: a model points
    # upward only so).
    study = models.ForeignKey(
        "annotation.Study", on_delete=models.SET_NULL, null=True, blank=True, related_name="owned_conversations",
        help_text="The study whose ingestion first wrote it: only that study's ingestion may change it. Empty for "
                  "material imported without a study (import_conversations, the demo), until a study changes it.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["dataset__name", "external_id"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "external_id"], name="conversation_unique_external_id"),
            models.CheckConstraint(
                condition=models.Q(kind__in=["multi", "longitudinal"], complexity__isnull=True)
                | models.Q(kind="single"),
                name="conversation_multi_has_no_complexity_label",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.dataset.name}/{self.external_id}"


class Session(models.Model):
    """One chat session of a longitudinal history (docs/sessions.md#histories-of-sessions-conversations-json-lines): the
    history's turns are split into sessions.

    A conversation without sessions (every CAB conversation) is one implicit session: its turns have no session,
    so nothing that reads turns changes. Sessions exist only for conversations imported in the ``sessions`` form.
    """

    class Kind(models.TextChoices):
        CHAT = "chat", "Chat"
        CRISIS = "crisis", "Crisis"
        CALLBACK = "callback", "Callback"
        COUNSELING = "counseling", "Counseling session (a trajectory's session)"

    class CrisisType(models.TextChoices):
        SI = "SI", "Suicidal ideation"
        SELF_HARM = "self-harm", "Self-harm"
        ANXIETY = "anxiety", "Anxiety"

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="sessions")
    index = models.PositiveIntegerField(help_text="1-based position in the history.")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    crisis_type = models.CharField(max_length=10, choices=CrisisType.choices, null=True, blank=True,
                                   help_text="The crisis of a crisis session, or the one a callback returns to.")

    class Meta:
        ordering = ["conversation_id", "index"]
        constraints = [
            models.UniqueConstraint(fields=["conversation", "index"], name="session_unique_index"),
            models.CheckConstraint(condition=models.Q(index__gte=1), name="session_index_from_one"),
            models.CheckConstraint(
                condition=~models.Q(kind="crisis", crisis_type__isnull=True)
                & ~models.Q(kind__in=["chat", "counseling"], crisis_type__isnull=False),
                name="session_crisis_type_fits_kind",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.conversation} session {self.index}"


class Turn(models.Model):
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="turns")
    # Null for a conversation without sessions (its one implicit session): every CAB turn, unchanged.
    session = models.ForeignKey(Session, on_delete=models.PROTECT, null=True, blank=True, related_name="turns")
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
    # No index of its own: the unique (turn, model_slot) index below serves every lookup by turn, and a second one
    # cost each bulk-ingested response another index insert.
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="responses", db_index=False)
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
