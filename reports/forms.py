"""The dashboards' filter form: every filter lives in the URL (GET), so a view can be shared."""

from __future__ import annotations

from typing import cast

from django import forms

from reports.charts import Choices, Filters


class FilterForm(forms.Form):
    """Choices come from the report shown; a value the report does not have (a link from an older run) is
    dropped, and the page says which default it shows instead."""

    run = forms.IntegerField(required=False, min_value=1, max_value=2**63 - 1)
    round = forms.ChoiceField(required=False)
    model = forms.ChoiceField(required=False)
    dataset = forms.ChoiceField(required=False)
    scale = forms.ChoiceField(required=False, choices=[("risk", "risk-recoded"), ("raw", "raw scores")])
    signal = forms.ChoiceField(required=False)
    kind = forms.ChoiceField(required=False, label="Conversations", choices=[
        ("", "all"), ("single", "single-turn only"), ("multi", "multi-turn only")])

    def __init__(self, data: dict, *, choices: Choices | None = None, runs: list[tuple[int, str]] | None = None):
        super().__init__(data)
        self.fields["run"].widget = forms.Select(choices=runs or [])
        if choices is not None:
            options = {"round": [("", "last calibration round")] + [(r, r) for r in choices.rounds],
                       "model": [("", "all models")] + [(m, m) for m in choices.models],
                       "dataset": [("", "all datasets")] + [(d, d) for d in choices.datasets],
                       "signal": [(s, s) for s in choices.signals]}
            for name, values in options.items():
                cast(forms.ChoiceField, self.fields[name]).choices = values

    def filters(self, shown: tuple[str, ...] | None = None) -> tuple[Filters, list[str]]:
        """The filters to apply and, for each value that could not be used, what was shown instead (only for the
        ``shown`` filters when given: a page says nothing of a filter it does not have)."""
        self.is_valid()
        dropped = [f"{name} {self.data.get(name)!r} is not in this report: showing the default"
                   for name in self.errors if name != "run" and (shown is None or name in shown)]
        cleaned = {name: value for name, value in getattr(self, "cleaned_data", {}).items()
                   if name in ("round", "model", "dataset", "scale", "signal", "kind") and value}
        return Filters(**cleaned), dropped


class SpanExamplesForm(forms.Form):
    """The span-evidence drill-down's query: a model and a subcategory, within the span-evidence page's dataset and
    conversation-kind filters, under one of the study's succeeded runs (the newest when none is chosen). A field
    refuses what the database could not compare (a NUL byte) and a run that is no number of a run."""

    model = forms.CharField(max_length=200, strip=False)
    subcategory = forms.CharField(max_length=200, strip=False)
    dataset = forms.CharField(required=False, max_length=200, strip=False)
    kind = forms.ChoiceField(required=False, choices=[("", "all"), ("single", "single-turn"), ("multi", "multi-turn")])
    run = forms.IntegerField(required=False, min_value=1, max_value=2**63 - 1)
