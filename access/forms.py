"""Input of the people pages and of the sign-in pages (the site's and the Django admin's)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.validators import MaxLengthValidator

from access import roles
from access.services import EMAIL_MAX_LENGTH
from common.uploads import upload_size_check

ROLE_CHOICES = [(role, role) for role in roles.ROLES]


class AccountForm(forms.Form):
    username = forms.CharField(max_length=150)
    email = forms.EmailField(required=False, max_length=EMAIL_MAX_LENGTH)  # Django's default, 320, is too long
    role = forms.ChoiceField(choices=ROLE_CHOICES)


class AccountsCsvForm(forms.Form):
    file = forms.FileField(label="CSV file (username,email,role)")

    def clean_file(self) -> str:
        upload = self.cleaned_data["file"]
        upload_size_check(upload, settings.ACCOUNTS_CSV_MAX_SIZE)
        try:
            return upload.read().decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise forms.ValidationError(f"not UTF-8 text ({error.reason} at byte {error.start})") from error


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=ROLE_CHOICES)


class ActiveForm(forms.Form):
    active = forms.BooleanField(required=False)


class _UsernameChecked:
    """Django's sign-in forms set the username's max_length after building the field, so it is never checked: a
    longer name went on to ``authenticate``, and django-axes, recording the failure in a 255-character column, failed
    with a 500. Here the name is refused as too long before anyone is asked."""

    fields: dict[str, Any]

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        username = self.fields["username"]
        username.validators.append(MaxLengthValidator(username.max_length))


class SignInForm(_UsernameChecked, AuthenticationForm):
    pass


class AdminSignInForm(_UsernameChecked, AdminAuthenticationForm):
    pass
