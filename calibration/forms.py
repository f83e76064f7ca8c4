"""Input of the calibration pages: every POST is parsed by one of these forms before a service is called."""

from __future__ import annotations

from typing import cast
from urllib.parse import urlencode

from django import forms
from django.http import QueryDict

from annotation import rules
from annotation.models import AttributeDefinition, Round
from benchmark.models import ModelResponse, Turn
from calibration import selectors


class SampleSetForm(forms.Form):
    """Empty fields take the service's defaults."""

    n = forms.IntegerField(min_value=1, max_value=10_000, required=False, label="set size")
    seed = forms.IntegerField(min_value=0, max_value=2**32 - 1, required=False)


class RefsSetForm(forms.Form):
    refs = forms.CharField(max_length=100_000, widget=forms.Textarea, label="turns")


class RoundCreateForm(forms.Form):
    number = forms.IntegerField(min_value=1, max_value=999_999_999, label="round number")
    gold_pool = forms.BooleanField(required=False, label="reserved gold pool (experts only; hidden check items)")


class OpenForm(forms.Form):
    allow_parallel = forms.BooleanField(required=False, label="open although another calibration round is open")


class CloseForm(forms.Form):
    confirm = forms.BooleanField(required=False, label="close although coders have not finished")


class ReopenForm(forms.Form):
    reason = forms.CharField(max_length=1000, label="reason",
                             error_messages={"required": "say why the round is reopened; the reason is recorded"})


class MainRoundForm(forms.Form):
    """Empty fields take the service's defaults."""

    overlap = forms.FloatField(min_value=0, max_value=1, required=False, label="double-coded share")
    check_items = forms.IntegerField(min_value=0, max_value=1000, required=False, label="check conversations")
    seed = forms.IntegerField(min_value=0, max_value=2**32 - 1, required=False)


class PanelViewForm(forms.Form):
    """The panel page's query: which top k to suggest (the report's panel size when not given)."""

    k = forms.IntegerField(min_value=1, max_value=1000, required=False)


class PanelForm(forms.Form):
    """Retaining a panel: the first post shows what the change does; the confirmation posts again with
    ``confirm`` and the ``state`` it was shown (a confirmation of an older state is shown afresh)."""

    retain = forms.MultipleChoiceField(choices=(), label="reviewers to retain",
                                       error_messages={"required": "tick at least one reviewer to retain"})
    k = forms.IntegerField(min_value=1, max_value=1000, required=False, label="top k")
    reason = forms.CharField(max_length=1000, required=False)
    confirm = forms.BooleanField(required=False)
    state = forms.CharField(max_length=100_000, required=False)

    def __init__(self, *args, reviewers: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.MultipleChoiceField, self.fields["retain"]).choices = [(name, name) for name in reviewers]


class ItemForm(forms.Form):
    """One unit and attribute of a round's item set (a gold value or a workshop note is about it)."""

    attribute = forms.CharField(max_length=20)
    turn = forms.IntegerField(min_value=1, max_value=2**63 - 1)
    response = forms.IntegerField(min_value=1, max_value=2**63 - 1, required=False)

    def __init__(self, *args, round: Round, **kwargs):
        super().__init__(*args, **kwargs)
        self.round = round

    def clean(self):
        data = super().clean()
        assert data is not None  # forms.Form.clean returns cleaned_data
        if self.errors:
            return data
        attribute = AttributeDefinition.objects.filter(schema_id=self.round.study.schema_id,
                                                       code=data["attribute"]).first()
        # With what names it (its conversation and dataset): the answer says it once the work is committed, when a
        # read that met an outage would answer 503 "Nothing was changed" (common.outage).
        turn = (Turn.objects.select_related("conversation__dataset")
                .filter(pk=data["turn"], round_items__round=self.round).first())
        if attribute is None:
            raise forms.ValidationError(f"{data['attribute']!r} is not an attribute of this study's schema")
        if turn is None:
            raise forms.ValidationError("that turn is not in this round's set")
        response = None
        if data.get("response") is not None:
            response = ModelResponse.objects.filter(pk=data["response"], turn=turn).first()
            if response is None:
                raise forms.ValidationError("that response is not part of the turn")
            problem = rules.model_problem(self.round.study.model_slots, response.model_slot)
            if problem:
                raise forms.ValidationError(problem)
        data.update(attribute=attribute, turn=turn, response=response)
        return data


class GoldForm(ItemForm):
    score = forms.IntegerField(error_messages={"required": "choose the gold value"})
    # A name the gold panel does not hold (one a stale gold value still names, shown ticked on the screen) is
    # refused in the words of the rule (annotation.rules.agreement_problems), not Django's "not a valid choice".
    agreed = forms.MultipleChoiceField(choices=(), required=False, error_messages={"invalid_choice": (
        "who agreed: %(value)s is not an expert of the study (now or before): untick them")})
    note = forms.CharField(max_length=10_000, required=False)
    version = forms.IntegerField(min_value=0, required=False)
    reason = forms.CharField(max_length=1000, required=False, label="reason for changing closed gold")

    def __init__(self, *args, round: Round, **kwargs):
        super().__init__(*args, round=round, **kwargs)
        self.experts = selectors.gold_panel_users(study=round.study)  # those taken off since too: their codings count
        cast(forms.MultipleChoiceField, self.fields["agreed"]).choices = [(name, name) for name in sorted(self.experts)]


class NoteForm(ItemForm):
    text = forms.CharField(max_length=20_000, required=False, strip=False)
    # The note as the page showed it; absent (an older page, a script) means "no check".
    shown = forms.CharField(max_length=20_000, required=False, strip=False, empty_value=None)


ITEM_KEY = r"^[0-9]+-[0-9]+-[A-Za-z0-9_.-]+$"


class PositionForm(forms.Form):
    """Where the admin was on a paged list, to come back there after an action: the list's query string (its filter
    and page), the item's anchor, and the one after it (for an action that takes the item out of the filter)."""

    back = forms.CharField(max_length=2000, required=False)
    item = forms.RegexField(ITEM_KEY, max_length=200, required=False)
    following = forms.RegexField(ITEM_KEY, max_length=200, required=False)

    def _given(self, name: str) -> str:
        """A field's value if it is valid, else nothing: a bad field loses only its own part of the way back."""
        self.is_valid()
        return self.cleaned_data.get(name) or ""

    def query(self, keys: tuple[str, ...]) -> str:
        """The list's query string again, keeping only ``keys`` (each value cut to 100 characters)."""
        given = QueryDict(self._given("back").lstrip("?"))
        return urlencode([(key, given[key][:100]) for key in keys if given.get(key)])

    def anchor(self, *, moved: bool = False) -> str:
        """The item's anchor, or the next item's when the action ``moved`` the item out of the list."""
        key = (self._given("following") if moved else "") or self._given("item")
        return f"item-{key}" if key else ""


def given(form: forms.Form) -> dict:
    """The cleaned values that were filled in (empty optional fields are left to the service's defaults)."""
    return {name: value for name, value in form.cleaned_data.items() if value is not None}


def form_errors(form: forms.Form) -> list[str]:
    """A form's errors as sentences naming the field ("seed: Ensure this value is …")."""
    messages = []
    for name, errors in form.errors.items():
        label = form.fields[name].label or name if name in form.fields else ""
        messages += [f"{label}: {error}" if label else str(error) for error in errors]
    return messages
