from __future__ import annotations

from typing import Any

from django import forms

from api.models import ApiToken
from api.services import SETUP_WITH_STUDY, TOKEN_DAYS_MAX


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100)
    scopes = forms.MultipleChoiceField(choices=(), widget=forms.CheckboxSelectMultiple)
    study: forms.ModelChoiceField[Any] = forms.ModelChoiceField(
        queryset=None, required=False, empty_label="every study the account can see")
    expires_in_days = forms.IntegerField(min_value=1, max_value=TOKEN_DAYS_MAX, required=False)

    def __init__(self, *args: Any, scopes: list[str], studies: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        labels = dict(ApiToken.Scope.choices)
        scope_field = self.fields["scopes"]
        study_field = self.fields["study"]
        assert isinstance(scope_field, forms.MultipleChoiceField) and isinstance(study_field, forms.ModelChoiceField)
        scope_field.choices = [(scope, labels[scope]) for scope in scopes]
        study_field.queryset = studies

    def clean(self) -> dict[str, Any] | None:
        data = super().clean()
        if data and data.get("study") is not None and ApiToken.Scope.SETUP in data.get("scopes", []):
            self.add_error("scopes", SETUP_WITH_STUDY)
        return data


class RevokeForm(forms.Form):
    token = forms.IntegerField(min_value=1)
