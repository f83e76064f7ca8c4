"""Schemas, studies, rounds, assignments, judgments and spans.

What is coded, on which unit and on what scale is data (``Schema`` / ``AttributeDefinition``), never code.
The database guards the judgments: unique per (round, coder, unit, attribute); scores inside the attribute's
scale, spans inside the response text and of the judgment's own attribute (PostgreSQL triggers, migration
0002); the services validate the same rules first so users get a specific message.
"""

from __future__ import annotations

import secrets

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q

from benchmark.models import Conversation, ModelResponse, Session, Turn


class Schema(models.Model):
    slug = models.SlugField(max_length=50, unique=True)
    version = models.PositiveIntegerField(default=1)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    definition = models.JSONField(help_text="The schema document as loaded (groups, clusters, indices).")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return f"{self.slug} (v{self.version})"


class AttributeDefinition(models.Model):
    class Unit(models.TextChoices):
        TURN = "turn", "Once per turn"
        RESPONSE = "response", "Once per model response"
        CONVERSATION = "conversation", "Once per conversation"
        SESSION = "session", "Once per session (of a longitudinal history)"

    class ItemType(models.TextChoices):
        """A session checklist item's type: what its presence or absence says about the session."""

        PRODUCTIVE = "productive", "Productive"
        UNPRODUCTIVE = "unproductive", "Unproductive"
        REQUIRED = "required", "Required"

    class Level(models.TextChoices):
        NOMINAL = "nominal", "Nominal"
        ORDINAL = "ordinal", "Ordinal"
        INTERVAL = "interval", "Interval"

    schema = models.ForeignKey(Schema, on_delete=models.CASCADE, related_name="attributes")
    code = models.CharField(max_length=20)
    name = models.CharField(max_length=200)
    group = models.CharField(max_length=30, help_text="Reporting group, e.g. user / response / flag.")
    unit = models.CharField(max_length=20, choices=Unit.choices)
    cluster = models.CharField(max_length=10, blank=True)
    position = models.PositiveIntegerField()
    scale_min = models.IntegerField()
    scale_max = models.IntegerField()
    level = models.CharField(max_length=10, choices=Level.choices)
    scale_labels = models.JSONField(default=dict, blank=True, help_text="Optional label per scale value.")
    definition = models.TextField()
    anchors = models.JSONField(default=dict, help_text="Meaning of each scale value.")
    bucket = models.JSONField(help_text="Relaxed bucket: scale value -> bucket representative.")
    risk = models.JSONField(null=True, blank=True, help_text="Risk encoding: scale value -> risk in [0, 1].")
    has_instance_count = models.BooleanField(default=False)
    counts_toward_uiri = models.BooleanField(default=False)
    # Session checklist items (docs/sessions.md#session-checklists): blank / empty for every other attribute.
    item_type = models.CharField(max_length=12, choices=ItemType.choices, blank=True,
                                 help_text="Checklist items only: productive, unproductive or required.")
    crisis_types = models.JSONField(default=list, blank=True,
                                    help_text="Checklist items only: the crisis types the item applies to.")

    class Meta:
        ordering = ["schema_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["schema", "code"], name="attribute_unique_code"),
            models.CheckConstraint(condition=Q(scale_max__gt=models.F("scale_min")), name="attribute_scale_ordered"),
        ]

    def __str__(self) -> str:
        return f"{self.code} · {self.name}"

    @property
    def scale(self) -> list[int]:
        return list(range(self.scale_min, self.scale_max + 1))

    @property
    def has_spans(self) -> bool:
        return self.subcategories.exists()


class SpanSubcategory(models.Model):
    schema = models.ForeignKey(Schema, on_delete=models.CASCADE, related_name="subcategories")
    attribute = models.ForeignKey(AttributeDefinition, on_delete=models.CASCADE, related_name="subcategories")
    slug = models.SlugField(max_length=50)
    name = models.CharField(max_length=100)
    colour = models.CharField(max_length=7, help_text="#rrggbb")
    style = models.CharField(max_length=10, default="solid", help_text="Underline style: a non-colour cue.")
    description = models.TextField(blank=True)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["attribute_id", "position"]
        verbose_name_plural = "span subcategories"
        constraints = [
            models.UniqueConstraint(fields=["schema", "slug"], name="subcategory_unique_slug_in_schema"),
        ]

    def __str__(self) -> str:
        return self.slug


BLINDING_KEY_BYTES = 32


def blinding_key_new() -> str:
    """A fresh study blinding key: random bytes from the operating system, as hex (``Study.blinding_key``)."""
    return secrets.token_hex(BLINDING_KEY_BYTES)


class Study(models.Model):
    class Status(models.TextChoices):
        SETUP = "setup", "Setting up"
        OPEN = "open", "Open"
        ARCHIVED = "archived", "Archived"

    slug = models.SlugField(max_length=80, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    schema = models.ForeignKey(Schema, on_delete=models.PROTECT, related_name="studies")
    model_slots = models.JSONField(default=list, help_text="Model slots under study, e.g. [\"GPT\", \"Claude\"].")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.SETUP)
    show_model_names = models.BooleanField(default=False, help_text="Reviewers see model identities.")
    show_therapist_reference = models.BooleanField(default=True)
    check_threshold = models.FloatField(
        default=0.7, help_text="Alert the admin when a reviewer's bucketed agreement on check items falls below this."
    )
    check_min_items = models.PositiveIntegerField(default=20, help_text="Check items scored before alerts start.")
    experts_see_consensus = models.BooleanField(
        default=False, help_text="Experts may open the consensus screen of a closed calibration round (read-only)."
    )

    # The choices of both label settings, automated coders' and reference labels: so their words name no one kind of
    # label (the field's label and help text say which).
    class MethodLabels(models.TextChoices):
        BLINDED = "blinded", "Blinded: human coders never see these labels"
        SHOWN = "shown", "Shown: human coders see these labels, to confirm or correct them"

    method_labels = models.CharField(
        max_length=10, choices=MethodLabels.choices, default=MethodLabels.BLINDED,
        help_text="Whether human coders see the labels of automated coders (LLM judges): the validation protocol.",
    )
    reference_labels = models.CharField(
        max_length=10, choices=MethodLabels.choices, default=MethodLabels.BLINDED,
        help_text="Whether human coders see the reference labels (blinded unless the study says).",
    )

    class SessionHistory(models.TextChoices):
        SHOWN = "shown", "Shown: a session's page shows the trajectory's earlier sessions"
        HIDDEN = "hidden", "Hidden: a session's page shows that session's transcript only"

    session_history = models.CharField(
        max_length=10, choices=SessionHistory.choices, default=SessionHistory.SHOWN,
        help_text="Session-rated studies: whether raters see earlier sessions (the effect of history).",
    )

    class SessionOrder(models.TextChoices):
        IN_ORDER = "in_order", "In order: each trajectory's sessions one after another, numbered"
        BLINDED = "blinded", "Blinded: sessions of all trajectories in a shuffled order, unnumbered"

    session_order = models.CharField(
        max_length=10, choices=SessionOrder.choices, default=SessionOrder.IN_ORDER,
        help_text="Session-rated studies: whether a rater's queue gives away each trajectory's sequence.",
    )
    # The settings of the study kind's own (annotation.kinds.KindSetting: name -> value, declared by the kind); a
    # setting not in it has its default (annotation.kinds.setting_value). The database's own default ({}: every
    # setting its default) lets a process of 0.2.0, which knows no such column, still create a study on a migrated
    # database (README "Upgrading").
    kind_settings = models.JSONField(
        default=dict, db_default=models.Value({}, output_field=models.JSONField()), blank=True,
        help_text="The study kind's own settings by name (docs/architecture.md#study-kinds).")
    is_synthetic = models.BooleanField(default=False)
    # The key of the reviewers' response handles (annotation.selectors.response_handle): the study's own, so that
    # neither a guessed SECRET_KEY nor rotating it touches them. A secret: no page, export or API answer shows it
    # (only a study archive carries it, as the study's state). Changed only between rounds
    # (services.study_blinding_key_rotate), as every open page names its responses by it.
    blinding_key = models.CharField(
        max_length=2 * BLINDING_KEY_BYTES, default=blinding_key_new, editable=False,
        validators=[RegexValidator(r"^[0-9a-f]{64}\Z", "must be 64 lowercase hexadecimal digits")],
        help_text="The key of the reviewers' response handles: 32 bytes as hex, secret.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]
        verbose_name_plural = "studies"
        constraints = [
            models.CheckConstraint(condition=Q(blinding_key__regex=r"^[0-9a-f]{64}$"), name="study_blinding_key_hex"),
        ]

    def __str__(self) -> str:
        return self.name


class StudyMember(models.Model):
    class Role(models.TextChoices):
        REVIEWER = "reviewer", "Reviewer"
        EXPERT = "expert", "Expert (gold panel)"
        METHOD = "method", "Method (an automated coder, e.g. an LLM judge)"
        REFERENCE = "reference", "Reference (the reference labels, e.g. a controlled PHQ-8 state)"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="members")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="study_memberships")
    role = models.CharField(max_length=10, choices=Role.choices)
    alias = models.CharField(max_length=20, blank=True, help_text="Anonymous label shown in workshops (R1…Rn).")
    retained = models.BooleanField(null=True, blank=True, help_text="Kept in the main-round panel (None: undecided).")
    # A method member (role ``method``) is an automated coder: what it is. Blank for people.
    method_name = models.CharField(max_length=100, blank=True, help_text="Methods only, e.g. an LLM judge's name.")
    method_version = models.CharField(max_length=100, blank=True)
    method_prompt_id = models.CharField(max_length=100, blank=True)

    class Meta:
        ordering = ["study_id", "role", "alias"]
        constraints = [models.UniqueConstraint(fields=["study", "user"], name="member_unique_user")]

    def __str__(self) -> str:
        return f"{self.user} in {self.study} ({self.role})"


class FormerStudyMember(models.Model):
    """Someone taken off a study (``annotation.services.study_member_remove``): no access any more, but their
    judgments stay, and so does what they were when they made them. Reports and exports read a coder's role and
    place on the panel from the members and, for a coder no longer a member, from here (an expert's own codings
    stay an expert's, a method's labels a method's); adding them again ends the record."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="former_members")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="former_memberships")
    role = models.CharField(max_length=10, choices=StudyMember.Role.choices)
    alias = models.CharField(max_length=20, blank=True, help_text="Their alias, never given to anyone else.")
    retained = models.BooleanField(null=True, blank=True, help_text="On the main-round panel when taken off.")
    removed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study_id", "user_id"]
        constraints = [models.UniqueConstraint(fields=["study", "user"], name="former_member_unique_user")]

    def __str__(self) -> str:
        return f"{self.user} formerly in {self.study} ({self.role})"


class Round(models.Model):
    class Kind(models.TextChoices):
        CALIBRATION = "calibration", "Calibration"
        MAIN = "main", "Main"

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        OPEN = "open", "Open"
        CLOSED = "closed", "Closed"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="rounds")
    kind = models.CharField(max_length=12, choices=Kind.choices)
    number = models.PositiveIntegerField(default=1)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    opened_at = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    gold_pool = models.BooleanField(
        default=False,
        help_text="A reserved gold pool: only experts code it, reviewers never see it, and its gold turns become the "
                  "main round's hidden check items.",
    )

    class Meta:
        ordering = ["study_id", "kind", "number"]
        constraints = [
            models.UniqueConstraint(fields=["study", "kind", "number"], name="round_unique_number"),
            models.CheckConstraint(condition=Q(kind="calibration") | Q(number=1), name="round_main_is_single"),
        ]

    def __str__(self) -> str:
        return f"{self.study.slug}:{self.name}"

    @property
    def name(self) -> str:
        """The round name of the interchange format: ``calibration-N`` or ``main``."""
        return f"calibration-{self.number}" if self.kind == self.Kind.CALIBRATION else "main"


class RoundItem(models.Model):
    """A turn in a round's fixed, ordered item set (the calibration set, or the main-round pool)."""

    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="items")
    turn = models.ForeignKey(Turn, on_delete=models.PROTECT, related_name="round_items")
    position = models.PositiveIntegerField()

    class Meta:
        ordering = ["round_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["round", "turn"], name="round_item_unique_turn"),
            models.UniqueConstraint(fields=["round", "position"], name="round_item_unique_position"),
        ]

    def __str__(self) -> str:
        return f"{self.round} #{self.position}"


class Assignment(models.Model):
    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="assignments")
    coder = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="assignments")
    turn = models.ForeignKey(Turn, on_delete=models.PROTECT, related_name="assignments")
    position = models.PositiveIntegerField()
    is_check_item = models.BooleanField(default=False, help_text="Hidden gold check item (main round).")
    feedback_locked = models.BooleanField(
        default=False,
        help_text="Compared with gold in feedback before the round was reopened: its judgments stay as they were.",
    )
    completed_at = models.DateTimeField(null=True, blank=True)
    active_seconds = models.PositiveIntegerField(default=0)
    time_reported_at = models.DateTimeField(
        null=True, blank=True, help_text="When the turn page last reported active time (a report adds at most the "
                                         "wall-clock time since).")
    comment = models.TextField(blank=True, help_text="The coder's comment on this item, for the admins.")
    flags = models.JSONField(default=list, blank=True,
                             help_text="The coder's flags on this item (slugs of Assignment.FLAGS).")

    FLAGS = {
        "unsure": "Unsure",
        "truncated": "Text looks truncated",
        "discuss": "Needs discussion",
    }

    class Meta:
        ordering = ["round_id", "coder_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["round", "coder", "turn"], name="assignment_unique_turn"),
        ]
        indexes = [
            # The turn page's previous and next item, a page of the queue: one index probe each, however long the
            # queue.
            models.Index(fields=["round", "coder", "position"], name="assignment_queue_position_idx"),
            # Where to resume (the first item not completed): one probe, however many items before it are done; the
            # index above would walk past every completed one.
            models.Index(fields=["round", "coder", "position"], condition=Q(completed_at__isnull=True),
                         name="assignment_queue_undone_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.coder} #{self.position} in {self.round}"


class _Progress(models.Model):
    """A coder's count of items in a round and of those completed, kept by PostgreSQL triggers on
    ``annotation_assignment`` (migration 0017) in the transaction of every insert, update or delete of an
    assignment, whatever code path makes it. A row exists while it counts at least one assignment. Never written by
    the application."""

    # DO_NOTHING: the triggers remove a row with the coder's last assignment it counts, which Django deletes before
    # the round (the foreign keys are checked at commit).
    round = models.ForeignKey(Round, on_delete=models.DO_NOTHING, related_name="+")
    coder = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.DO_NOTHING, related_name="+")
    total = models.PositiveIntegerField()
    done = models.PositiveIntegerField()

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return f"{self.done}/{self.total} of coder {self.coder_id} in round {self.round_id}"


class QueueProgress(_Progress):
    """The coder's whole queue in the round."""

    class Meta:
        constraints = [models.UniqueConstraint(fields=["round", "coder"], name="queue_progress_unique")]


class ConversationProgress(_Progress):
    """The part of the coder's queue in one conversation (the conversation of each assignment's turn)."""

    conversation = models.ForeignKey(Conversation, on_delete=models.DO_NOTHING, related_name="+")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["round", "coder", "conversation"],
                                               name="conversation_progress_unique")]

    def __str__(self) -> str:
        return f"{super().__str__()}, conversation {self.conversation_id}"


class Judgment(models.Model):
    """One coding by one person of one attribute on one unit in one round.

    The unit is a response (response-level attributes), a turn (``response`` null), a session of a longitudinal
    history (``turn`` null, ``session`` set) or a conversation (``turn`` and ``session`` null). Gold judgments are
    the consensus record of the gold panel (``is_gold``); there is at most one gold judgment per (round, unit,
    attribute), whoever recorded it.
    """

    round = models.ForeignKey(Round, on_delete=models.PROTECT, related_name="judgments")
    coder = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="judgments")
    is_gold = models.BooleanField(default=False)
    attribute = models.ForeignKey(AttributeDefinition, on_delete=models.PROTECT, related_name="judgments")
    conversation = models.ForeignKey(Conversation, on_delete=models.PROTECT, related_name="judgments")
    turn = models.ForeignKey(Turn, on_delete=models.PROTECT, related_name="judgments", null=True, blank=True)
    response = models.ForeignKey(
        ModelResponse, on_delete=models.PROTECT, related_name="judgments", null=True, blank=True
    )
    session = models.ForeignKey(Session, on_delete=models.PROTECT, related_name="judgments", null=True, blank=True)
    score = models.IntegerField(
        null=True, blank=True, help_text="None while the coder has highlighted spans but not yet scored."
    )
    instance_count = models.PositiveIntegerField(null=True, blank=True)
    note = models.TextField(blank=True)
    agreed_by = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="gold_agreements",
        help_text="Gold only: the experts who agreed to this consensus value.",
    )
    version = models.PositiveIntegerField(default=1, help_text="Bumped on every change; stale saves are refused.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["round_id", "coder_id", "conversation_id", "turn_id", "response_id", "attribute_id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(response__isnull=True) | Q(turn__isnull=False), name="judgment_response_within_turn"
            ),
            models.CheckConstraint(
                condition=Q(instance_count__isnull=True) | Q(instance_count__gte=0),
                name="judgment_instance_count_non_negative",
            ),
            models.CheckConstraint(condition=Q(session__isnull=True) | Q(turn__isnull=True),
                                   name="judgment_session_unit_has_no_turn"),
            models.UniqueConstraint(
                fields=["round", "coder", "attribute", "response"],
                condition=Q(response__isnull=False, is_gold=False),
                name="judgment_unique_response_unit",
            ),
            models.UniqueConstraint(
                fields=["round", "coder", "attribute", "turn"],
                condition=Q(response__isnull=True, turn__isnull=False, is_gold=False),
                name="judgment_unique_turn_unit",
            ),
            models.UniqueConstraint(
                fields=["round", "coder", "attribute", "conversation"],
                condition=Q(turn__isnull=True, session__isnull=True, is_gold=False),
                name="judgment_unique_conversation_unit",
            ),
            models.UniqueConstraint(
                fields=["round", "coder", "attribute", "session"],
                condition=Q(session__isnull=False, is_gold=False),
                name="judgment_unique_session_unit",
            ),
            models.UniqueConstraint(
                fields=["round", "attribute", "response"],
                condition=Q(response__isnull=False, is_gold=True),
                name="gold_unique_response_unit",
            ),
            models.UniqueConstraint(
                fields=["round", "attribute", "turn"],
                condition=Q(response__isnull=True, turn__isnull=False, is_gold=True),
                name="gold_unique_turn_unit",
            ),
            models.UniqueConstraint(
                fields=["round", "attribute", "conversation"],
                condition=Q(turn__isnull=True, session__isnull=True, is_gold=True),
                name="gold_unique_conversation_unit",
            ),
            models.UniqueConstraint(
                fields=["round", "attribute", "session"],
                condition=Q(session__isnull=False, is_gold=True),
                name="gold_unique_session_unit",
            ),
        ]
        indexes = [
            models.Index(fields=["round", "is_gold"], name="judgment_round_gold_idx"),
            models.Index(fields=["round", "coder", "turn"], name="judgment_round_coder_turn_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.attribute.code}={self.score} by {self.coder} in {self.round}"


class SessionLabel(models.Model):
    """A value given to one attribute of one session by a coder that is not a person (docs/sessions.md#session-labels):
    a method's prediction (role ``method``; per seed, e.g. a per-session PHQ-8 total as a float) or the study's
    reference labels (role ``reference``, e.g. the controlled PHQ-8 state). Stored exactly as sent: never rounded or
    clipped, which is why these are not judgments (a judgment's score is an integer on the attribute's scale).
    People's session codes stay judgments (unit ``session``, autosaved in rounds). ``seed`` is null when the coder has
    none.
    """

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="session_labels")
    coder = models.ForeignKey(StudyMember, on_delete=models.PROTECT, related_name="session_labels",
                              help_text="A method or reference member of the study.")
    seed = models.IntegerField(null=True, blank=True, help_text="The method's run seed; empty when it has none.")
    session = models.ForeignKey(Session, on_delete=models.PROTECT, related_name="labels")
    attribute = models.ForeignKey(AttributeDefinition, on_delete=models.PROTECT, related_name="session_labels")
    value = models.FloatField()
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["study_id", "coder_id", "seed", "session_id", "attribute_id"]
        constraints = [
            models.UniqueConstraint(fields=["coder", "seed", "session", "attribute"], name="session_label_unique",
                                    condition=Q(seed__isnull=False)),
            models.UniqueConstraint(fields=["coder", "session", "attribute"], name="session_label_unique_unseeded",
                                    condition=Q(seed__isnull=True)),
        ]

    def __str__(self) -> str:
        return f"{self.coder} seed {self.seed} {self.session} {self.attribute.code}={self.value}"


class JudgmentRevision(models.Model):
    """One change of one judgment: who, when, through which path, and its value before and after.

    Written by every service that changes a judgment, in the same transaction (append-only: PostgreSQL refuses
    UPDATE and DELETE on this table, and DELETE on judgments, migration 0011, except inside the one audited
    ``annotation.services.judgments_purge``). A value is ``{"score", "instance_count", "note", "spans": [[start,
    end, subcategory slug], ...]}`` with spans sorted, and for gold also ``"agreed_by": [username, ...]``
    (``annotation.services.judgment_value``); ``before`` is null when the change created the judgment. A save
    that changes nothing keeps no revision but still bumps the judgment's version, so versions here may skip.
    """

    class Source(models.TextChoices):
        AUTOSAVE = "autosave", "turn page"
        GOLD = "gold", "gold record"
        IMPORT = "import", "import"
        RESTORE = "restore", "study restore"

    judgment = models.ForeignKey(Judgment, on_delete=models.PROTECT, related_name="revisions")
    version = models.PositiveIntegerField(help_text="The judgment's version after this change.")
    changed_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True,
                                   related_name="+", help_text="Empty for the system (commands, workers).")
    source = models.CharField(max_length=20, choices=Source.choices)
    at = models.DateTimeField(db_index=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField()

    class Meta:
        ordering = ["judgment_id", "at", "id"]

    def __str__(self) -> str:
        return f"{self.judgment_id} v{self.version} by {self.changed_by_id} at {self.at:%Y-%m-%d %H:%M:%S}"


class Span(models.Model):
    judgment = models.ForeignKey(Judgment, on_delete=models.CASCADE, related_name="spans")
    subcategory = models.ForeignKey(SpanSubcategory, on_delete=models.PROTECT, related_name="spans")
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()

    class Meta:
        ordering = ["judgment_id", "start", "end"]
        constraints = [
            models.CheckConstraint(condition=Q(end__gt=models.F("start")), name="span_not_empty"),
        ]

    def __str__(self) -> str:
        return f"[{self.start}, {self.end}) {self.subcategory.slug}"


class WorkshopNote(models.Model):
    """The calibration workshop's decision on one disagreement item (a unit and attribute of a closed round)."""

    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="workshop_notes")
    attribute = models.ForeignKey(AttributeDefinition, on_delete=models.PROTECT, related_name="+")
    turn = models.ForeignKey(Turn, on_delete=models.PROTECT, related_name="+")
    response = models.ForeignKey(ModelResponse, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    text = models.TextField()
    written_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["round_id", "turn_id", "response_id", "attribute_id"]
        constraints = [
            models.UniqueConstraint(fields=["round", "attribute", "turn", "response"],
                                    condition=Q(response__isnull=False), name="workshop_note_unique_response_item"),
            models.UniqueConstraint(fields=["round", "attribute", "turn"],
                                    condition=Q(response__isnull=True), name="workshop_note_unique_turn_item"),
        ]

    def __str__(self) -> str:
        return f"note on {self.attribute.code} in {self.round}"


class ReviewerAlert(models.Model):
    """Raised for the admin when a reviewer's agreement on hidden gold check items falls below the threshold."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="alerts")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="alerts")
    agreement = models.FloatField()
    threshold = models.FloatField()
    n_items = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    # Resolved by the check items themselves (the agreement no longer below the threshold: ``check_alert_update``),
    # not by an admin, whose resolution holds while the reviewer's figures are the ones resolved.
    withdrawn = models.BooleanField(default=False, db_default=False,
                                    help_text="Resolved because the agreement was no longer below the threshold, "
                                              "not by an admin.")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.reviewer}: {self.agreement:.0%} on {self.n_items} check items (< {self.threshold:.0%})"
