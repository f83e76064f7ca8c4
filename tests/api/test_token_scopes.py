"""A token never holds more than its account's role allows, whichever way it is made."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from api import services
from api.models import ApiToken

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("persona", "scope"), [("researcher", "ingest"), ("researcher", "import"),
                                                ("reviewer", "metrics"), ("expert", "ingest")])
def test_the_service_refuses_a_scope_beyond_the_role(request, persona, scope):
    user = request.getfixturevalue(persona)
    with pytest.raises(ValidationError, match=f"role allows only .*; not {scope}"):
        services.api_token_create(user=user, name="x", scopes=[scope], by=None)
    assert not ApiToken.objects.exists()


def test_the_command_refuses_an_ingest_token_for_a_researcher(researcher):
    with pytest.raises(CommandError, match="role allows only read, metrics; not ingest"):
        call_command("create_api_token", "--user", researcher.username, "--scope", "ingest")
    assert not ApiToken.objects.exists()


def test_an_account_without_a_role_gets_no_token(outsider):
    with pytest.raises(ValidationError, match="has no role that may hold API tokens"):
        services.api_token_create(user=outsider, name="x", scopes=["read"], by=None)
