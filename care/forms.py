"""The CARE timeline's input: the history named in its URL and the run chosen in its query."""

from __future__ import annotations

from django import forms
from django.core.validators import RegexValidator

from metrics.selectors import HISTORY_NAME_LENGTH

# A lone surrogate cannot be encoded for PostgreSQL (CharField already refuses NUL).
_NO_SURROGATE = RegexValidator("[\ud800-\udfff]", inverse_match=True, message="Contains a lone surrogate character.")


class TimelineForm(forms.Form):
    """A history's name (its conversation id, or DATASET/EXTERNAL_ID: at most HISTORY_NAME_LENGTH characters, no NUL
    or lone surrogate), and one of the study's succeeded runs (the newest when none is chosen)."""

    conversation = forms.CharField(max_length=HISTORY_NAME_LENGTH, strip=False, validators=[_NO_SURROGATE])
    run = forms.IntegerField(required=False, min_value=1, max_value=2**63 - 1)
