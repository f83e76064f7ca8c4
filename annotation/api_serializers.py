"""Input and output shapes of the annotation API (studies, rounds, assignments, judgments)."""

from __future__ import annotations

from typing import Any

from django.core.validators import ProhibitNullCharactersValidator
from django.db import models
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import empty
from rest_framework.validators import ProhibitSurrogateCharactersValidator

from annotation.automated_coders import NAME_MAX, NAME_PATTERN, PROMPT_ID_MAX, VERSION_MAX
from annotation.kinds import CoderSetting, kind_settings
from annotation.long_format import row_role
from annotation.models import Round, Study
from annotation.selectors import response_handle
from api.fields import JsonBooleanField, JsonIntegerField, JsonNumberField, TextField, TextRegexField
from common.file_formats import FORMATS
from common.rounds import DESCRIPTION as ROUND_NAMES
from common.rounds import round_parse


class StudyOut(serializers.Serializer):
    slug = serializers.SlugField()
    name = serializers.CharField()
    description = serializers.CharField()
    status = serializers.ChoiceField(choices=Study.Status.choices)
    schema = serializers.CharField(source="schema.slug")
    schema_version = serializers.IntegerField(source="schema.version")
    model_slots = serializers.SerializerMethodField(help_text="null for a reviewer of a blinded study")
    is_synthetic = serializers.BooleanField()
    rounds = serializers.SerializerMethodField()

    def get_model_slots(self, study: Study) -> list[str] | None:
        return None if study.pk in self.context.get("blinded", set()) else list(study.model_slots)

    def get_rounds(self, study: Study) -> list[str]:
        # A study just created (context "created") has none: the answer to its creation reads nothing after the
        # commit, which an outage would turn into the 503 that says nothing was changed (common.outage).
        return [] if self.context.get("created") else [r.name for r in study.rounds.all()]


def _text(help_text: str, *, required: bool = False) -> TextField:
    # Blank, spaces and length are the form's to judge (annotation.forms.StudyForm), in its words.
    return TextField(required=required, allow_blank=True, trim_whitespace=False, help_text=help_text)


def _choices(choices: type[models.TextChoices]) -> str:
    return ", ".join(f"`{value}`" for value in choices.values)


class StudyIn(serializers.Serializer):
    """A new study: the admin's New study form as a script fills it in (``annotation.forms.StudyScriptForm``).
    Only JSON types are checked here; what a value may be is the form's rule, refused in the form's words. A
    setting left out has the form's default."""

    refuses_unknown_fields = True  # validate names each unknown field (the schema says so: api.openapi)

    slug = _text("letters, digits, - and _, at most 80 characters; not `new`; unused", required=True)
    name = _text("default: the slug")
    description = _text("default: empty")
    schema = _text("an installed schema's slug (`cab-v1`, or a study kind's: docs/schema.md)",
                   required=True)
    model_slots = serializers.ListField(
        child=TextField(allow_blank=True, trim_whitespace=False),
        help_text="the model slots under study, one an item (at least one, each once, at most 50 characters, no "
                  "comma)")
    show_model_names = JsonBooleanField(required=False, help_text="reviewers see model identities (default false)")
    show_therapist_reference = JsonBooleanField(required=False, help_text="default true")
    check_threshold = JsonNumberField(
        required=False, help_text="alert when a reviewer's bucketed agreement on check items falls below this "
                                  "share, 0 to 1 (default 0.7)")
    check_min_items = JsonIntegerField(required=False,
                                       help_text="check items scored before alerts start, 0 or more (default 20)")
    experts_see_consensus = JsonBooleanField(
        required=False, help_text="experts may open a closed calibration round's consensus screen (default false)")
    method_labels = _text(f"human coders see automated coders' labels: {_choices(Study.MethodLabels)} (default "
                          "`blinded`)")
    reference_labels = _text(f"human coders see the reference labels (session-rated studies): "
                             f"{_choices(Study.MethodLabels)} (default `blinded`)")
    session_history = _text(f"raters see a trajectory's earlier sessions (session-rated studies): "
                            f"{_choices(Study.SessionHistory)} (default `shown`)")
    session_order = _text(f"a rater's queue gives away each trajectory's order (session-rated studies): "
                          f"{_choices(Study.SessionOrder)} (default `in_order`)")

    def get_fields(self) -> dict[str, serializers.Field]:
        """The fields above and the study kinds' own settings (``annotation.kinds.KindSetting``), each for a study
        of its kind only; not a coder setting, which a new study (without coders) cannot have."""
        fields = super().get_fields()
        for kind, setting in kind_settings().values():
            if isinstance(setting, CoderSetting):
                continue
            said = setting.help_text.rstrip(".")
            fields[setting.name] = _text(
                f"{kind.name} studies only: {said[:1].lower()}{said[1:]}: "
                f"{', '.join(f'`{value}`' for value in setting.values)} (default `{setting.default}`)")
        return fields

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(self.initial_data) - set(self.fields)) if isinstance(self.initial_data, dict) else []
        if unknown:
            known = kind_settings()
            raise serializers.ValidationError({name: (
                f"unknown field: a {known[name][0].name} study's {known[name][1].label} is one of its coders, chosen "
                "on the study's settings page once it has them"
                if name in known and isinstance(known[name][1], CoderSetting)
                else f"unknown field; fields are {', '.join(self.fields)}") for name in unknown})
        return attrs

    def form_values(self) -> dict[str, Any]:
        """The values as the form reads them: numbers as the page would send them, in text."""
        return {name: str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value
                for name, value in self.validated_data.items()}


class CoderProgressOut(serializers.Serializer):
    reviewer = serializers.CharField()
    assigned = serializers.IntegerField()
    completed = serializers.IntegerField()


class RoundOut(serializers.Serializer):
    name = serializers.CharField(help_text="calibration-N or main")
    kind = serializers.ChoiceField(choices=Round.Kind.choices)
    number = serializers.IntegerField()
    status = serializers.ChoiceField(choices=Round.Status.choices)
    opened_at = serializers.DateTimeField(allow_null=True)
    closed_at = serializers.DateTimeField(allow_null=True)
    n_items = serializers.IntegerField(help_text="turns in the round's item set")
    assigned = serializers.IntegerField(help_text="assignments you can see (all, or your own)")
    completed = serializers.IntegerField()
    progress = CoderProgressOut(many=True)


# What a filter may name (docs/api.md#filters-and-pages): what the study has, matched ignoring case, or a 400.
_NAMED = "{}, matched ignoring case; another value is a 400"
_YOURSELF = "; reviewers and experts: only themselves"


class AssignmentFilterIn(serializers.Serializer):
    reviewer = serializers.CharField(required=False, max_length=150,
                                     help_text=_NAMED.format("one of the study's coders") + _YOURSELF)


# What a reviewer or expert of a study whose session order is blinded is not told (annotation.selectors
# .session_order_hidden): which trajectory, and where in it.
_ORDER_HIDDEN = "{}; null for reviewers and experts of a study whose session order is blinded"


class AssignmentOut(serializers.Serializer):
    id = serializers.IntegerField()
    round = serializers.CharField(source="round.name")
    reviewer = serializers.CharField(source="coder.username")
    position = serializers.IntegerField()
    dataset = serializers.CharField(source="turn.conversation.dataset.name")
    conversation_id = serializers.SerializerMethodField(help_text=_ORDER_HIDDEN.format("the conversation's id"))
    turn_index = serializers.SerializerMethodField(help_text=_ORDER_HIDDEN.format("the turn's index"))
    is_check_item = serializers.SerializerMethodField(help_text="null for reviewers: check items stay hidden")
    completed_at = serializers.DateTimeField(allow_null=True)
    active_seconds = serializers.IntegerField()

    def get_conversation_id(self, assignment) -> str | None:
        return None if self.context.get("sessions_blinded") else assignment.turn.conversation.external_id

    def get_turn_index(self, assignment) -> int | None:
        return None if self.context.get("sessions_blinded") else assignment.turn.index

    def get_is_check_item(self, assignment) -> bool | None:
        return assignment.is_check_item if self.context.get("staff") else None


class JudgmentFilterIn(serializers.Serializer):
    round = serializers.CharField(required=False, max_length=21, help_text=(
        "calibration-N or main: one of the study's rounds, matched ignoring case (another is a 400)"))
    reviewer = serializers.CharField(required=False, max_length=150, help_text=_NAMED.format(
        "one of the study's coders (or whoever recorded its gold)") + _YOURSELF)
    model = serializers.CharField(required=False, max_length=50, help_text=_NAMED.format(
        "one of the study's model slots") + "; refused for reviewers and experts of a blinded study")
    attribute = serializers.CharField(required=False, max_length=20,
                                      help_text=_NAMED.format("an attribute code of the study's schema"))

    def validate_round(self, value: str) -> str:
        """A round's name in any case, as every name filter (``query_filter_named`` then matches it ignoring case:
        ``Main`` is ``main``)."""
        if round_parse(value.lower()) is None:
            raise serializers.ValidationError(f"{value[:100]!r} is no round's name: {ROUND_NAMES}")
        return value


class SpanOut(serializers.Serializer):
    start = serializers.IntegerField()
    end = serializers.IntegerField()
    subcategory = serializers.CharField(source="subcategory.slug")


class _SecondsForCoders(serializers.DateTimeField):
    """Whole seconds for reviewers and experts: judgments created in bulk (an import) carry microseconds in the
    order they were written, which may be the model-slot order of each turn."""

    def to_representation(self, value):
        if value is not None and not self.context.get("staff"):
            value = value.replace(microsecond=0)
        return super().to_representation(value)


class JudgmentOut(serializers.Serializer):
    """One judgment in the long format (docs/reference.md#long-format-of-judgments), plus ids for staff and the
    response's handle.

    Reviewers and experts never see a judgment's or a response's id: both follow the order things were created in,
    which is the model-slot order of each turn. They see the response's handle instead, the name it has on their
    own turn page (``data-response``)."""

    id = serializers.SerializerMethodField(help_text="null for reviewers and experts")
    study = serializers.SerializerMethodField()
    round = serializers.CharField(source="round.name")
    reviewer = serializers.CharField(source="coder.username")
    is_gold = serializers.BooleanField()
    dataset = serializers.CharField(source="conversation.dataset.name")
    conversation_id = serializers.SerializerMethodField(help_text=_ORDER_HIDDEN.format("the conversation's id"))
    turn_index = serializers.SerializerMethodField(
        help_text=_ORDER_HIDDEN.format("the turn's index, null for a judgment of a session or a conversation"))
    session_index = serializers.SerializerMethodField(
        help_text="the session of a longitudinal history the judgment is on, or its turn is "
                  "in, as in the exports; null for a judgment not on a session, and for reviewers and experts of a "
                  "study whose session order is blinded")
    model = serializers.SerializerMethodField(help_text="null for user-level attributes, and for reviewers of a "
                                                        "blinded study")
    response = serializers.SerializerMethodField(
        help_text="the response's handle on the turn page of the judgment's coder; null for user-level attributes")
    response_id = serializers.SerializerMethodField(help_text="null for reviewers and experts, and for user-level "
                                                              "attributes")
    attribute = serializers.CharField(source="attribute.code")
    score = serializers.IntegerField()
    instance_count = serializers.IntegerField(allow_null=True)
    spans = SpanOut(many=True)
    role = serializers.SerializerMethodField(
        help_text="whose coding it is, as in the exports: reviewer, expert (an expert's own coding, and every gold "
                  "judgment) or method")
    updated_at = _SecondsForCoders(help_text="to the microsecond for staff, whole seconds for reviewers and experts")

    def get_id(self, judgment) -> int | None:
        return judgment.pk if self.context.get("staff") else None

    def get_conversation_id(self, judgment) -> str | None:
        return None if self.context.get("sessions_blinded") else judgment.conversation.external_id

    def get_turn_index(self, judgment) -> int | None:
        if self.context.get("sessions_blinded") or judgment.turn_id is None:
            return None
        return judgment.turn.index

    def get_session_index(self, judgment) -> int | None:
        if self.context.get("sessions_blinded"):
            return None
        if judgment.session_id is not None:
            return judgment.session.index
        if judgment.turn_id is not None and judgment.turn.session_id is not None:
            return judgment.turn.session.index
        return None

    def get_role(self, judgment) -> str:
        return row_role(self.context["coder_roles"].get(judgment.coder_id), is_gold=judgment.is_gold)

    def get_response(self, judgment) -> str | None:
        if judgment.response_id is None:
            return None
        return response_handle(study=self.context["study"], coder_id=judgment.coder_id, turn_id=judgment.turn_id,
                               response_id=judgment.response_id)

    def get_response_id(self, judgment) -> int | None:
        return judgment.response_id if self.context.get("staff") else None

    def get_study(self, judgment) -> str:
        return self.context["study"].slug

    def get_model(self, judgment) -> str | None:
        if judgment.response_id is None or self.context.get("blinded"):
            return None
        return judgment.response.model_slot


class _CoderTextField(TextField):
    """An automated coder's field as sent: its rules (characters, lengths) are the service's
    (annotation.automated_coders.coder_fields_check), as for the command; a value it refuses is a 400 naming the
    field, in its words. So no trimming and none of DRF's own refusals (blank, NUL, surrogates): " v2 " is stored as
    " v2 " by both paths, and "" is refused by both in the same words. The schema states the same rules, from the
    same constants."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(trim_whitespace=False, **kwargs)
        self.validators = [validator for validator in self.validators if not isinstance(
            validator, ProhibitNullCharactersValidator | ProhibitSurrogateCharactersValidator)]

    def run_validation(self, data: Any = empty) -> Any:
        return data if data == "" else super().run_validation(data)  # a blank name: the service's refusal


@extend_schema_field({"type": "string", "pattern": NAME_PATTERN, "maxLength": NAME_MAX})
class CoderNameField(_CoderTextField):
    pass


@extend_schema_field({"type": "string", "maxLength": VERSION_MAX})
class CoderVersionField(_CoderTextField):
    pass


@extend_schema_field({"type": "string", "maxLength": PROMPT_ID_MAX})
class CoderPromptIdField(_CoderTextField):
    pass


class MethodIn(serializers.Serializer):
    name = CoderNameField(help_text="the method's coder name: the reviewer column of its long-format rows (role "
                                    "method)")
    version = CoderVersionField(required=False, allow_blank=True, default="")
    prompt_id = CoderPromptIdField(required=False, allow_blank=True, default="")


class MethodOut(serializers.Serializer):
    name = serializers.CharField(source="user.username")
    version = serializers.CharField(source="method_version")
    prompt_id = serializers.CharField(source="method_prompt_id")


class JudgmentsFileIn(serializers.Serializer):
    """A long-format file as a form upload (``multipart/form-data``), for clients that send files so."""

    file = serializers.FileField(help_text="judgments in the long format (docs/reference.md#long-format-of-judgments), "
                                           "CSV or JSON Lines, UTF-8")
    format = serializers.ChoiceField(
        choices=list(FORMATS), required=False,
        help_text="default: by the file's name (.csv, .jsonl or .ndjson), else by its part's Content-Type (text/csv, "
                  "application/x-ndjson or application/jsonl); a file whose name and Content-Type say neither, sent "
                  "without `format`, is refused: 400 naming the file under the field `format`, nothing read "
                  "(common/file_formats.py: never guessed)")


class JudgmentImportOut(serializers.Serializer):
    study_created = serializers.BooleanField()
    rounds_created = serializers.ListField(child=serializers.CharField())
    accounts_created = serializers.ListField(child=serializers.CharField())
    judgments_created = serializers.IntegerField()
    judgments_unchanged = serializers.IntegerField()
    spans_created = serializers.IntegerField()
    session_labels_created = serializers.IntegerField(
        help_text="session labels: methods' predictions / reference labels")
    session_labels_updated = serializers.IntegerField()
    session_labels_unchanged = serializers.IntegerField()


# --- session labels (docs/sessions.md#session-labels): methods' predictions per seed and the reference labels ----


class ReferenceIn(serializers.Serializer):
    name = CoderNameField(help_text="the reference coder's name: the reviewer column of its long-format rows (role "
                                    "reference)")
    description = CoderVersionField(required=False, allow_blank=True, default="",
                                    help_text="what its labels are, e.g. 'controlled PHQ-8 state'")


class ReferenceOut(serializers.Serializer):
    name = serializers.CharField(source="user.username")
    description = serializers.CharField(source="method_version")


class SessionLabelRowIn(serializers.Serializer):
    """One session label in the long format (documentation of the import's rows; the importer checks them)."""

    dataset = TextField(max_length=100)
    conversation_id = TextField(max_length=200)
    session_index = serializers.IntegerField(min_value=1, help_text="the session of the trajectory, 1-based")
    attribute = TextField(max_length=20, help_text="a session attribute of the schema (those its kind labels, e.g. a "
                                                   "questionnaire's items and total)")
    score = serializers.FloatField(help_text="a JSON number, stored exactly: a method's value as sent (never rounded "
                                             "or clipped); a reference label a whole number on the attribute's scale")
    reviewer = TextRegexField(r"^[\w.@+-]{1,150}$", help_text="the registered method's or reference coder's name")
    role = serializers.ChoiceField(choices=["method", "reference"])
    seed = serializers.IntegerField(required=False, allow_null=True, min_value=-(2**31), max_value=2**31 - 1,
                                    help_text="a method's run seed; empty for the reference")


class SessionLabelsIn(serializers.Serializer):
    rows = SessionLabelRowIn(many=True, help_text="at most 50,000 rows a request")


class SessionLabelCoderCountsOut(serializers.Serializer):
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    unchanged = serializers.IntegerField()


class SessionLabelImportOut(serializers.Serializer):
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    unchanged = serializers.IntegerField()
    skipped = serializers.IntegerField(help_text="judgment rows of an export file (the command's option only)")
    coders = serializers.DictField(child=SessionLabelCoderCountsOut(), help_text="coder name -> its counts")


class SessionLabelFilterIn(serializers.Serializer):
    coder = serializers.CharField(required=False, max_length=150,
                                  help_text=_NAMED.format("one of the study's methods and references"))
    seed = serializers.IntegerField(required=False, min_value=-(2**31), max_value=2**31 - 1)
    role = serializers.ChoiceField(choices=["method", "reference"], required=False)


class SessionLabelOut(serializers.Serializer):
    id = serializers.IntegerField()
    reviewer = serializers.CharField(source="coder.user.username")
    role = serializers.CharField(source="coder.role")
    seed = serializers.IntegerField(allow_null=True)
    dataset = serializers.CharField(source="session.conversation.dataset.name")
    conversation_id = serializers.CharField(source="session.conversation.external_id")
    session_index = serializers.IntegerField(source="session.index")
    attribute = serializers.CharField(source="attribute.code")
    score = serializers.FloatField(source="value")
    updated_at = serializers.DateTimeField()
