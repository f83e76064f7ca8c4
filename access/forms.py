"""Input of the people pages."""

from __future__ import annotations

from django import forms

from access import roles
from access.services import EMAIL_MAX_LENGTH

ROLE_CHOICES = [(role, role) for role in roles.ROLES]


class AccountForm(forms.Form):
    username = forms.CharField(max_length=150)
    email = forms.EmailField(required=False, max_length=EMAIL_MAX_LENGTH)  # Django's default, 320, is too long
    role = forms.ChoiceField(choices=ROLE_CHOICES)


class AccountsCsvForm(forms.Form):
    file = forms.FileField(label="CSV file (username,email,role)")

    def clean_file(self) -> str:
        upload = self.cleaned_data["file"]
        if upload.size > 1024 * 1024:
            raise forms.ValidationError("at most 1 MiB")
        try:
            return upload.read().decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise forms.ValidationError(f"not UTF-8 text ({error.reason} at byte {error.start})") from error


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=ROLE_CHOICES)


class ActiveForm(forms.Form):
    active = forms.BooleanField(required=False)
