"""Input of the reviewer's turn page: the autosave of one attribute, completing a turn, time on task.

The forms check the shape of the input (whole numbers, the span list, which attribute and response are meant);
the rules a judgment obeys are the services' (``annotation.rules``), so every path reports them the same way.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms

from annotation.models import Assignment, AttributeDefinition
from annotation.services import SpanInput
from benchmark.models import ModelResponse

_INT32 = 2**31 - 1
_WHOLE = {"invalid": "is not a whole number"}


class JudgmentSaveForm(forms.Form):
    form_id = forms.CharField(max_length=100, required=False)
    attribute = forms.CharField(max_length=20, error_messages={"required": "unknown attribute"})
    response = forms.IntegerField(min_value=1, max_value=2**63 - 1, required=False, error_messages=_WHOLE)
    score = forms.IntegerField(min_value=-_INT32, max_value=_INT32, required=False, error_messages=_WHOLE)
    # Its range is a judgment rule (annotation.rules), reported with the same words on every path.
    instance_count = forms.IntegerField(min_value=-_INT32, max_value=_INT32, required=False, error_messages=_WHOLE)
    spans = forms.CharField(max_length=1_000_000, required=False, strip=False)
    version = forms.IntegerField(min_value=0, max_value=_INT32, required=False, error_messages=_WHOLE)

    def __init__(self, *args: Any, assignment: Assignment, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.assignment = assignment

    def clean_attribute(self) -> AttributeDefinition:
        attribute = AttributeDefinition.objects.filter(
            schema_id=self.assignment.round.study.schema_id, code=self.cleaned_data["attribute"]
        ).prefetch_related("subcategories").first()
        if attribute is None:
            raise forms.ValidationError("unknown attribute")
        return attribute

    def clean_response(self) -> ModelResponse | None:
        response_id = self.cleaned_data.get("response")
        if response_id is None:
            return None
        response = ModelResponse.objects.filter(pk=response_id, turn=self.assignment.turn).first()
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
        return data


def _is_span(item: Any) -> bool:
    return (isinstance(item, dict) and isinstance(item.get("subcategory"), str)
            and all(isinstance(item.get(k), int) and not isinstance(item.get(k), bool)
                    and -_INT32 <= item[k] <= _INT32 for k in ("start", "end")))


class CompleteForm(forms.Form):
    confirm = forms.BooleanField(required=False)


class TimeForm(forms.Form):
    seconds = forms.IntegerField(min_value=-_INT32, max_value=_INT32, error_messages=_WHOLE)  # clamped by the service


def error_text(form: forms.Form) -> str:
    """A form's errors as one line: "score: is not a whole number; …" (the field's own message otherwise)."""
    parts = []
    for name, errors in form.errors.items():
        for error in errors:
            parts.append(f"{name}: {error}" if name != "__all__" and str(error) == "is not a whole number"
                         else str(error))
    return "; ".join(parts)
