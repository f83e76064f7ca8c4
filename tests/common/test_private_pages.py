"""Every page answers ``Cache-Control: no-store`` (``common.private_pages``), and what says how it may be kept keeps
its own: the schema's parts script, the highlight styles, static files, an API answer."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.urls import reverse

from annotation.models import Round

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(client):
    call_command("load_demo", "--quiet")
    client.force_login(User.objects.get(username="demo-reviewer"))
    return Round.objects.get(study__slug="demo", kind="calibration", number=1)


def test_pages_are_never_kept(client, demo):
    signed_out = client.__class__().get(reverse("login"))
    assert "no-store" in signed_out["Cache-Control"]
    for url in ("/", f"/rounds/{demo.pk}/", f"/rounds/{demo.pk}/turns/1/"):
        response = client.get(url)
        assert response.status_code == 200, url
        assert "no-store" in response["Cache-Control"], url
        assert "private" in response["Cache-Control"], url


def test_what_says_how_it_is_kept_keeps_it(client, demo):
    page = client.get(f"/rounds/{demo.pk}/turns/1/").content.decode()
    parts = next(part for part in page.split('"') if "coding-parts.js" in part).replace("&amp;", "&")
    assert "immutable" in client.get(parts)["Cache-Control"]
    answer = client.get("/healthz")
    assert "no-store" not in answer.get("Cache-Control", "")
