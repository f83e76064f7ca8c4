"""Input of the reviewer's turn page: the autosave of one attribute, completing a turn, time on task.

The forms check the shape of the input (whole numbers, the span list, which attribute and response are meant);
the rules a judgment obeys are the services' (``annotation.rules``), so every path reports them the same way.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib.auth import get_user_model

from annotation import selectors
from annotation.models import Assignment, AttributeDefinition, Study, StudyMember
from annotation.services import STUDY_SETTINGS, SpanInput, study_settings_shown
from benchmark.models import ModelResponse, Session

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
        # The unit: the assignment's turn, or for a session attribute (SPEC-CARE) the session that turn is in (none
        # for a turn without sessions, which the judgment rules then refuse in their words).
        data["turn"], data["session"] = self.assignment.turn, None
        if isinstance(attribute, AttributeDefinition) and attribute.unit == AttributeDefinition.Unit.SESSION:
            turn = self.assignment.turn
            data["turn"] = None
            data["session"] = (Session.objects.filter(pk=turn.session_id).first() if turn.session_id is not None
                               else None)
        return data


def _is_span(item: Any) -> bool:
    return (isinstance(item, dict) and isinstance(item.get("subcategory"), str)
            and all(isinstance(item.get(k), int) and not isinstance(item.get(k), bool)
                    and -_INT32 <= item[k] <= _INT32 for k in ("start", "end")))


class CompleteForm(forms.Form):
    confirm = forms.BooleanField(required=False)


class TimeForm(forms.Form):
    seconds = forms.IntegerField(min_value=-_INT32, max_value=_INT32, error_messages=_WHOLE)  # clamped by the service


class AssignmentNoteForm(forms.Form):
    """A coder's comment and flags on one item. Only the shape is checked here (text, a list of short words);
    which flags exist and how long a comment may be are the service's rules."""

    comment = forms.CharField(required=False, strip=False, max_length=100_000,
                              error_messages={"max_length": "the comment is far too long"})
    flags = forms.Field(required=False, widget=forms.MultipleHiddenInput)  # repeated: flags=unsure&flags=discuss

    def clean_flags(self) -> list[str]:
        flags = self.cleaned_data.get("flags") or []
        if len(flags) > 20 or any(len(flag) > 100 for flag in flags):
            raise forms.ValidationError("too many or too long flags")
        return list(flags)


def error_text(form: forms.Form) -> str:
    """A form's errors as one line: "score: is not a whole number; …" (the field's own message otherwise)."""
    parts = []
    for name, errors in form.errors.items():
        for error in errors:
            parts.append(f"{name}: {error}" if name != "__all__" and str(error) == "is not a whole number"
                         else str(error))
    return "; ".join(parts)


# --- study set-up (admins) -----------------------------------------------------------------------------------

RESERVED_SLUGS = {"new"}


class StudyForm(forms.ModelForm):
    model_slots_text = forms.CharField(
        max_length=1000, label="model slots", help_text="comma-separated, e.g. GPT, Claude, Gemini, Llama, Qwen")

    class Meta:
        model = Study
        fields = ["slug", "name", "description", "schema", "show_model_names", "show_therapist_reference",
                  "check_threshold", "check_min_items", "experts_see_consensus"]
        labels = {"experts_see_consensus": "experts see the consensus"}
        help_texts = {"experts_see_consensus": (
            "Experts (the gold panel) may open the consensus screen of each closed calibration round from their "
            "home page, read-only: every expert's scores and the gold decided. Reviewers never see it.")}

    def clean_slug(self) -> str:
        slug: str = self.cleaned_data["slug"]
        if slug in RESERVED_SLUGS:
            raise forms.ValidationError(f"{slug!r} is reserved; choose another")
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
        # Whether human coders see an LLM judge's labels (SPEC-CARE validation protocol); a post without it (a page
        # from before this setting) keeps the stored value.
        self.fields["method_labels"].required = False
        self.fields["method_labels"].label = "automated coders' labels"
        # Session-rated studies (SPEC-LC8): likewise optional, a post without them keeps the stored values.
        for name, label in self.LC8_SETTINGS.items():
            self.fields[name].required = False
            self.fields[name].label = label

    LC8_SETTINGS = {"reference_labels": "reference labels", "session_history": "earlier sessions",
                    "session_order": "session order"}

    def clean_method_labels(self) -> str:
        return self.cleaned_data.get("method_labels") or self.instance.method_labels

    def clean_reference_labels(self) -> str:
        return self.cleaned_data.get("reference_labels") or self.instance.reference_labels

    def clean_session_history(self) -> str:
        return self.cleaned_data.get("session_history") or self.instance.session_history

    def clean_session_order(self) -> str:
        return self.cleaned_data.get("session_order") or self.instance.session_order

    def clean_shown(self) -> dict[str, Any] | None:
        raw = self.cleaned_data.get("shown")
        if not raw:
            return None
        try:
            shown = json.loads(raw)
        except (ValueError, RecursionError):
            shown = None
        if not isinstance(shown, dict) or not set(shown) <= set(STUDY_SETTINGS):
            raise forms.ValidationError("this page is out of date: reload it")
        return shown


class UploadForm(forms.Form):
    file = forms.FileField(label="conversations (SPEC §6 JSON Lines)")

    def clean_file(self) -> list[str]:
        upload = self.cleaned_data["file"]
        try:
            return upload.read().decode("utf-8-sig").split("\n")
        except UnicodeDecodeError as error:
            raise forms.ValidationError(f"not UTF-8 text ({error.reason} at byte {error.start})") from error


class MemberForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=StudyMember.Role.choices)

    def clean_username(self) -> Any:
        user = get_user_model().objects.filter(username=self.cleaned_data["username"]).first()
        if user is None:
            raise forms.ValidationError(f"no account {self.cleaned_data['username']!r}; create it on the People page")
        if not user.is_active:
            raise forms.ValidationError(f"{user.get_username()} is deactivated")
        return user


class StudyDataFilter(forms.Form):
    dataset = forms.CharField(max_length=100, required=False)
    kind = forms.ChoiceField(choices=[("", "any"), ("single", "single-turn"), ("multi", "multi-turn")],
                             required=False)
    page = forms.IntegerField(min_value=1, max_value=1_000_000, required=False)
