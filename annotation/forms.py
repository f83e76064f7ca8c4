"""Input of the reviewer's turn page: the autosave of one attribute, completing a turn, time on task.

The forms check the shape of the input (whole numbers, the span list, which attribute and response are meant);
the rules a judgment obeys are the services' (``annotation.rules``), so every path reports them the same way.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django import forms
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User

from annotation import selectors, services
from annotation.kinds import CoderSetting, KindSetting, StudyKind, kind_of, kinds, setting_value
from annotation.models import Assignment, AttributeDefinition, Schema, Study
from annotation.services import STUDY_SETTINGS, SpanInput, study_settings_shown
from benchmark.models import ModelResponse, Session
from common.uploads import upload_size_check

_INT32 = 2**31 - 1
_WHOLE = {"invalid": "is not a whole number"}


class JudgmentSaveForm(forms.Form):
    form_id = forms.CharField(max_length=100, required=False)
    attribute = forms.CharField(max_length=20, error_messages={"required": "unknown attribute"})
    # The response's handle on this reviewer's page (annotation.selectors.response_handle), never its id.
    response = forms.CharField(max_length=64, required=False,
                               error_messages={"max_length": "that response is not part of this turn"})
    # Their ranges are judgment rules (annotation.rules), reported with the same words on every path.
    score = forms.IntegerField(required=False, error_messages=_WHOLE)
    instance_count = forms.IntegerField(required=False, error_messages=_WHOLE)
    spans = forms.CharField(max_length=1_000_000, required=False, strip=False)
    version = forms.IntegerField(min_value=0, max_value=_INT32, required=False, error_messages=_WHOLE)

    def __init__(self, *args: Any, assignment: Assignment, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.assignment = assignment

    def clean_attribute(self) -> AttributeDefinition:
        attribute = selectors.schema_attributes(study=self.assignment.round.study).by_code.get(
            self.cleaned_data["attribute"])
        if attribute is None:
            raise forms.ValidationError("unknown attribute")
        return attribute

    def clean_response(self) -> ModelResponse | None:
        """The response the handle names on this reviewer's page of this turn; any other handle (another
        reviewer's, another turn's, an id, a forged one) names nothing here."""
        handle = self.cleaned_data.get("response")
        if not handle:
            return None
        response = selectors.response_by_handle(study=self.assignment.round.study, coder_id=self.assignment.coder_id,
                                                turn=self.assignment.turn, handle=handle)
        if response is None:
            raise forms.ValidationError("that response is not part of this turn")
        return response

    def clean_spans(self) -> list[SpanInput] | None:
        """The span list as the page keeps it: a JSON list of {start, end, subcategory}. None when not sent."""
        raw = self.cleaned_data.get("spans")
        if raw is None or raw == "":
            return None if "spans" not in self.data else []
        try:
            items = json.loads(raw)
        except (ValueError, RecursionError):
            items = None
        if not isinstance(items, list) or not all(_is_span(item) for item in items):
            raise forms.ValidationError("spans must be a JSON list of {start, end, subcategory} with whole-number "
                                        "offsets")
        return [SpanInput(item["start"], item["end"], item["subcategory"]) for item in items]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        attribute = data.get("attribute")
        if isinstance(attribute, AttributeDefinition) and not attribute.subcategories.all():
            data["spans"] = None  # an attribute without subcategories keeps no spans, whatever was sent
        # The unit: the assignment's turn, or for a session attribute (a study kind's) the session that turn is
        # in (none for a turn without sessions, which the judgment rules then refuse in their words).
        data["turn"], data["session"] = self.assignment.turn, None
        if isinstance(attribute, AttributeDefinition) and attribute.unit == AttributeDefinition.Unit.SESSION:
            turn = self.assignment.turn
            data["turn"] = None
            data["session"] = (Session.objects.filter(pk=turn.session_id).first() if turn.session_id is not None
                               else None)
        return data


class _SharedFields(dict):
    """A form's fields shared by its instances rather than deep-copied for each one. Django copies them so that an
    instance may change its own; the autosave form never does, and the copy of its seven fields was about a tenth
    of an autosave's CPU (issue 34)."""

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, forms.Field]:
        return dict(self)


JudgmentSaveForm.base_fields = _SharedFields(JudgmentSaveForm.base_fields)


def _is_span(item: Any) -> bool:
    return (isinstance(item, dict) and isinstance(item.get("subcategory"), str)
            and all(isinstance(item.get(k), int) and not isinstance(item.get(k), bool)
                    and -_INT32 <= item[k] <= _INT32 for k in ("start", "end")))


class CompleteForm(forms.Form):
    confirm = forms.BooleanField(required=False)


class TimeForm(forms.Form):
    seconds = forms.IntegerField(min_value=-_INT32, max_value=_INT32, error_messages=_WHOLE)  # clamped by the service


def _flag_list(flags: list[str] | None) -> list[str]:
    flags = flags or []
    if len(flags) > 20 or any(len(flag) > 100 for flag in flags):
        raise forms.ValidationError("too many or too long flags")
    return list(flags)


class AssignmentNoteForm(forms.Form):
    """A coder's comment and flags on one item, and the note the page had from the server when the change was made
    (``base_``: left out, an empty note). Only the shape is checked here (text, a list of short words); which flags
    exist, how long a comment may be and whether the note changed meanwhile are the service's rules."""

    comment = forms.CharField(required=False, strip=False, max_length=100_000,
                              error_messages={"max_length": "the comment is far too long"})
    flags = forms.Field(required=False, widget=forms.MultipleHiddenInput)  # repeated: flags=unsure&flags=discuss
    base_comment = forms.CharField(required=False, strip=False, max_length=100_000,
                                   error_messages={"max_length": "the comment is far too long"})
    base_flags = forms.Field(required=False, widget=forms.MultipleHiddenInput)

    def clean_flags(self) -> list[str]:
        return _flag_list(self.cleaned_data.get("flags"))

    def clean_base_flags(self) -> list[str]:
        return _flag_list(self.cleaned_data.get("base_flags"))


def error_text(form: forms.Form) -> str:
    """A form's errors as one line: "score: is not a whole number; …" (the field's own message otherwise)."""
    parts = []
    for name, errors in form.errors.items():
        for error in errors:
            parts.append(f"{name}: {error}" if name != "__all__" and str(error) == "is not a whole number"
                         else str(error))
    return "; ".join(parts)


# --- study set-up (admins) -----------------------------------------------------------------------------------

class _SchemaChoiceField(forms.ModelChoiceField):
    """The schema: by its id on the page, by its slug for a script (``StudyScriptForm``); one that is not
    installed is named, with the schemas that are."""

    def to_python(self, value: Any) -> Any:
        try:
            return super().to_python(value)
        except forms.ValidationError as error:
            if error.code != "invalid_choice":
                raise
            installed = ", ".join(Schema.objects.order_by("slug").values_list("slug", flat=True))
            raise forms.ValidationError(f"no schema {value!r}; the installed schemas are {installed}",
                                        code="invalid_choice") from error


class StudyForm(forms.ModelForm):
    """The New study form: every check of a new study's fields and their messages, for the page, for
    ``manage.py create_study`` and for ``POST /api/v1/studies/`` (``StudyScriptForm``); ``create`` makes the
    study through the one service."""

    model_slots_text = forms.CharField(
        max_length=1000, label="model slots", help_text="comma-separated, e.g. GPT, Claude, Gemini, Llama, Qwen")
    field_order = ["slug", "name", "description", "schema", "model_slots_text"]

    class Meta:
        model = Study
        fields = ["slug", "name", "description", "schema", "show_model_names", "show_therapist_reference",
                  "check_threshold", "check_min_items", "experts_see_consensus", "method_labels", "reference_labels",
                  "session_history", "session_order"]
        field_classes = {"schema": _SchemaChoiceField}
        labels = {"experts_see_consensus": "experts see the consensus"}
        help_texts = {"experts_see_consensus": (
            "Experts (the gold panel) may open the consensus screen of each closed calibration round from their "
            "home page, read-only: every expert's scores and the gold decided. Reviewers never see it.")}

    # The blinding of automated coders' labels (docs/sessions.md#automated-coders-methods) and the session-rated
    # settings (docs/sessions.md#study-settings): optional, a post without them (a page from before these settings)
    # keeps the stored values, a new study's being the model's defaults.
    KIND_SETTINGS = {"method_labels": "automated coders' labels", "reference_labels": "reference labels",
                     "session_history": "earlier sessions", "session_order": "session order"}

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        for name, label in self.KIND_SETTINGS.items():
            self.fields[name].required = False
            self.fields[name].label = label
        self.own_settings: list[str] = []
        self.coder_settings: list[str] = []
        for kind, setting in self.kind_settings_offered():
            self.fields[setting.name] = self.kind_setting_field(kind, setting)
            self.own_settings.append(setting.name)
            if isinstance(setting, CoderSetting):
                self.coder_settings.append(setting.name)

    def kind_settings_offered(self) -> list[tuple[StudyKind, KindSetting]]:
        """The study kinds' own settings this form offers: a new study may be of any kind, so every kind's, but for
        those whose value is one of the study's coders (a new study has none)."""
        return [(kind, setting) for kind in kinds().values() for setting in kind.settings
                if not isinstance(setting, CoderSetting)]

    def kind_setting_field(self, kind: StudyKind, setting: KindSetting) -> forms.ChoiceField:
        """A kind's own setting on the New study form: optional (blank: the setting's default), refused by the
        service for a schema of another kind."""
        return forms.ChoiceField(
            choices=[("", f"the default ({setting.default_said})"), *setting.choices], required=False,
            label=f"{setting.label} ({kind.name} studies)",
            help_text=f"{setting.help_text} Only for a study whose schema is {kind.name}'s.")

    def clean(self) -> dict[str, Any]:
        """A kind's own setting left blank (or not posted) is not given: the default, or the stored value. A coder
        setting posted blank is given: none chosen, the kind's default."""
        cleaned = super().clean() or {}
        for name in self.own_settings:
            if not cleaned.get(name) and not (name in self.coder_settings and name in self.data):
                cleaned.pop(name, None)
        return cleaned

    def clean_slug(self) -> str:
        slug: str = self.cleaned_data["slug"]
        try:
            services.study_slug_check(slug=slug)  # the rules of every path that names a new study
        except forms.ValidationError as error:
            raise forms.ValidationError(error.message_dict["slug"]) from error
        return slug

    def clean_model_slots_text(self) -> list[str]:
        slots = [part.strip() for part in self.cleaned_data["model_slots_text"].split(",") if part.strip()]
        if not slots:
            raise forms.ValidationError("name at least one model slot")
        if len(set(slots)) != len(slots):
            raise forms.ValidationError("each model slot once")
        if any(len(slot) > 50 for slot in slots):
            raise forms.ValidationError("at most 50 characters a slot")
        return slots

    def clean_check_threshold(self) -> float:
        value: float = self.cleaned_data["check_threshold"]
        if not 0 <= value <= 1:
            raise forms.ValidationError("a share between 0 and 1")
        return value

    def clean_method_labels(self) -> str:
        return self.cleaned_data.get("method_labels") or self.instance.method_labels

    def clean_reference_labels(self) -> str:
        return self.cleaned_data.get("reference_labels") or self.instance.reference_labels

    def clean_session_history(self) -> str:
        return self.cleaned_data.get("session_history") or self.instance.session_history

    def clean_session_order(self) -> str:
        return self.cleaned_data.get("session_order") or self.instance.session_order

    def create(self, *, by: User | None) -> Study | None:
        """The study this valid form describes, made by ``services.study_create`` (which records the audit event).
        None when the service refused it (its slug taken meanwhile): the reason is then among the form's errors
        and nothing was written."""
        data = dict(self.cleaned_data)
        slots = data.pop("model_slots_text")
        try:
            return services.study_create(by=by, model_slots=slots, **data)
        except forms.ValidationError as error:
            self.add_error(None, error)
            return None


# A script's names for the form's fields where they differ: its model slots are a list, the page's a text.
SCRIPT_NAMES = {"model_slots_text": "model_slots"}


class StudyScriptForm(StudyForm):
    """The New study form as a script fills it in (``manage.py create_study``, ``POST /api/v1/studies/``): the
    same fields, checks and messages. The slug, schema and model slots are required, as on the page; a setting
    not given has the value the page starts with, the model's default (the therapist reference shown, check
    threshold 0.7, …); the name is the slug unless given. The schema is named by its slug, the model slots are a
    list, one slot an item."""

    def __init__(self, given: Mapping[str, Any]):
        given = dict(given)
        self.slot_list = [str(slot) for slot in given.pop("model_slots", None) or []]
        page = StudyForm()
        data = {name: page.get_initial_for_field(field, name) for name, field in page.fields.items()}
        data["model_slots_text"] = ", ".join(self.slot_list)
        data["name"] = given.get("slug")
        data.update(given)
        super().__init__(data)
        schema = self.fields["schema"]
        assert isinstance(schema, forms.ModelChoiceField)
        schema.to_field_name = "slug"

    def clean_model_slots_text(self) -> list[str]:
        if any("," in slot for slot in self.slot_list):
            raise forms.ValidationError("one model slot an item: a slot has no comma")
        return super().clean_model_slots_text()


def study_create_scripted(*, given: Mapping[str, Any], by: User | None) -> Study:
    """Create a study from a script's values (``StudyScriptForm``), through the form's checks and the service.
    Refused: ``ValidationError`` by the script's field names (code ``unique`` on ``slug`` for a slug taken), and
    nothing was written."""
    form = StudyScriptForm(given)
    study = form.create(by=by) if form.is_valid() else None
    if study is None:
        raise forms.ValidationError({SCRIPT_NAMES.get(name, name): errors
                                     for name, errors in form.errors.as_data().items()})
    return study


class StudySettingsForm(StudyForm):
    """A study's settings once it exists (``services.STUDY_SETTINGS``): the creation form without the slug, schema
    and model slots, which the study's data depends on."""

    model_slots_text = None  # type: ignore[assignment]
    # The values this page showed (services.study_settings_update(shown=…)): another admin's save meanwhile is kept.
    shown = forms.CharField(widget=forms.HiddenInput, required=False, max_length=100_000, strip=False)

    class Meta(StudyForm.Meta):
        fields = list(STUDY_SETTINGS)

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["shown"].initial = json.dumps(study_settings_shown(study=self.instance))

    def kind_settings_offered(self) -> list[tuple[StudyKind, KindSetting]]:
        """The settings of this study's kind's own alone (none for a study of the default kind)."""
        kind = kind_of(self.instance) if self.instance.pk else None
        return [(kind, setting) for setting in kind.settings] if kind is not None else []

    def kind_setting_field(self, kind: StudyKind, setting: KindSetting) -> forms.ChoiceField:
        """A setting of the study's kind's own, showing its value (a post without it keeps the stored value); a
        coder setting's choices are the study's coders of its roles (``selectors.study_coders``: those taken off
        it too, with the role they had), and none."""
        if isinstance(setting, CoderSetting):
            coders = [(coder.username, f"{coder.username} ({coder.role}{'' if coder.member else ', taken off'})")
                      for coder in selectors.study_coders(study=self.instance) if coder.role in setting.roles]
            return forms.ChoiceField(choices=[("", setting.default_said), *coders], required=False,
                                     label=setting.label, initial=setting_value(self.instance, setting),
                                     help_text=setting.help_text)
        return forms.ChoiceField(choices=setting.choices, required=False, label=setting.label,
                                 initial=setting_value(self.instance, setting),
                                 help_text=f"{setting.help_text} Default: {setting.default_said}.")

    def clean_shown(self) -> dict[str, Any] | None:
        raw = self.cleaned_data.get("shown")
        if not raw:
            return None
        try:
            shown = json.loads(raw)
        except (ValueError, RecursionError):
            shown = None
        if not isinstance(shown, dict) or not set(shown) <= {*STUDY_SETTINGS, *self.own_settings}:
            raise forms.ValidationError("this page is out of date: reload it")
        return shown


class UploadForm(forms.Form):
    # An empty file is the importer's to refuse, in the words of every other path (conversation_ingest)
    file = forms.FileField(label="conversations (JSON Lines)", allow_empty_file=True)

    def clean_file(self) -> list[str]:
        upload = self.cleaned_data["file"]
        upload_size_check(upload, settings.CONVERSATIONS_UPLOAD_MAX_SIZE,
                          larger=" A larger file goes through the API in parts: cab ingest conversations FILE.")
        try:
            return upload.read().decode("utf-8-sig").split("\n")
        except UnicodeDecodeError as error:
            raise forms.ValidationError(f"not UTF-8 text ({error.reason} at byte {error.start})") from error


class MemberForm(forms.Form):
    username = forms.CharField(max_length=150)
    # People only: a method or a reference coder is never a person's account (annotation.automated_coders).
    role = forms.ChoiceField(choices=[(role.value, role.label) for role in services.PEOPLE_ROLES])

    def clean_username(self) -> Any:
        user = get_user_model().objects.filter(username=self.cleaned_data["username"]).first()
        if user is None:
            raise forms.ValidationError(f"no account {self.cleaned_data['username']!r}; create it on the People page")
        if not user.is_active:
            raise forms.ValidationError(f"{user.get_username()} is deactivated")
        return user


class QueuePageForm(forms.Form):
    """Where a page of the coder's queue starts (a position; the queue's start when absent or not a position)."""

    start = forms.IntegerField(min_value=0, max_value=_INT32, required=False)


class StudyDataFilter(forms.Form):
    dataset = forms.CharField(max_length=100, required=False)
    kind = forms.ChoiceField(choices=[("", "any"), ("single", "single-turn"), ("multi", "multi-turn")],
                             required=False)
    page = forms.IntegerField(min_value=1, max_value=1_000_000, required=False)
