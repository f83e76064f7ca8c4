"""The form that starts a metric run from the browser (the API takes the same parameters, metrics.api_serializers)."""

from __future__ import annotations

from typing import Any

from django import forms

from metrics import parameters


class MetricRunForm(forms.Form):
    bootstrap = forms.IntegerField(min_value=parameters.BOOTSTRAP_MIN, max_value=parameters.BOOTSTRAP_MAX,
                                   initial=parameters.DEFAULT_BOOTSTRAP, label="Bootstrap resamples (B)")
    seed = forms.IntegerField(min_value=parameters.SEED_MIN, max_value=parameters.SEED_MAX,
                              initial=parameters.DEFAULT_SEED)
    top_k = forms.IntegerField(min_value=parameters.TOP_K_MIN, max_value=parameters.TOP_K_MAX,
                               initial=parameters.DEFAULT_TOP_K, label="Panel size k")

    def __init__(self, *args: Any, reviewers: int = 0, **kwargs: Any) -> None:
        """``reviewers``: how many the study has, the most k may be (0: none yet, only TOP_K_MAX caps it)."""
        super().__init__(*args, **kwargs)
        self.reviewers = reviewers

    def clean_top_k(self) -> int:
        k = self.cleaned_data["top_k"]
        problem = parameters.top_k_beyond_reviewers(k, self.reviewers)
        if problem:
            raise forms.ValidationError(problem)
        return k


def top_k_cap(reviewers: int) -> int:
    """The largest panel size k the overview offers: the study's reviewers, within TOP_K_MAX."""
    return min(reviewers, parameters.TOP_K_MAX) if reviewers else parameters.TOP_K_MAX
