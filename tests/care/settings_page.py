"""The CARE demo study's settings page as an admin opens it, for the tests of the kind's own settings
(tests/care/test_quality_scope.py, tests/care/test_reference_coding.py)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from care.demo import CARE_DEMO_STUDY


def settings_page(admin: User) -> tuple[Client, str, dict]:
    """(client, url, the form's values as the page would post them unchanged)."""
    client = Client()
    client.force_login(admin)
    url = reverse("study-settings", args=[CARE_DEMO_STUDY])
    form = client.get(url).context["form"]
    posted = {name: form[name].value() for name in form.fields}
    return client, url, {name: "on" if value is True else value for name, value in posted.items()
                         if value is not False and value is not None}
