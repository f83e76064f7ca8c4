"""The CARE timeline's input: the history named in its URL and the run chosen in its query."""

from __future__ import annotations

from django import forms
from django.core.validators import RegexValidator

# A lone surrogate cannot be encoded for PostgreSQL (CharField already refuses NUL).
_NO_SURROGATE = RegexValidator("[\ud800-\udfff]", inverse_match=True, message="Contains a lone surrogate character.")


class TimelineForm(forms.Form):
    """A conversation id as the database stores them (at most 200 characters, no NUL or lone surrogate), and one
    of the study's succeeded runs (the newest when none is chosen)."""

    conversation = forms.CharField(max_length=200, strip=False, validators=[_NO_SURROGATE])
    run = forms.IntegerField(required=False, min_value=1, max_value=2**63 - 1)
