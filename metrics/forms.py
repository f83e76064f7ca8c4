"""The form that starts a metric run from the browser (the API takes the same parameters, metrics.api_serializers,
and refuses them in the same words, metrics.parameters.problem)."""

from __future__ import annotations

from django import forms

from metrics import parameters


class MetricRunForm(forms.Form):
    bootstrap = forms.IntegerField(min_value=parameters.BOOTSTRAP_MIN, max_value=parameters.BOOTSTRAP_MAX,
                                   initial=parameters.DEFAULT_BOOTSTRAP, label="Bootstrap resamples (B)",
                                   error_messages=parameters.error_messages("bootstrap"))
    seed = forms.IntegerField(min_value=parameters.SEED_MIN, max_value=parameters.SEED_MAX,
                              initial=parameters.DEFAULT_SEED, error_messages=parameters.error_messages("seed"))
    top_k = forms.IntegerField(min_value=parameters.TOP_K_MIN, max_value=parameters.TOP_K_MAX,
                               initial=parameters.DEFAULT_TOP_K, label="Panel size k",
                               error_messages=parameters.error_messages("top_k"))


def top_k_cap(reviewers: int) -> int:
    """The largest panel size k the overview offers: the study's reviewers, within TOP_K_MAX. Only offered: a larger
    k (up to TOP_K_MAX) is a valid run on every path, the panel of everyone (docs/metrics.md#panel-selection)."""
    return min(reviewers, parameters.TOP_K_MAX) if reviewers else parameters.TOP_K_MAX
