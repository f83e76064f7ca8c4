"""403 and 404 are the product's own pages, with a way back (DEBUG is off under test, as in production)."""

from __future__ import annotations

import pytest
from django.template.loader import render_to_string

pytestmark = pytest.mark.django_db


def test_a_forbidden_page_is_styled_and_leads_home(client, reviewer):
    client.force_login(reviewer)
    response = client.get("/studies/anything/")
    page = response.content.decode()
    assert response.status_code == 403 and "<h1>Not allowed</h1>" in page and 'href="/"' in page
    assert "css/app.css" in page


def test_a_missing_page_is_styled_and_leads_home(client, reviewer):
    client.force_login(reviewer)
    response = client.get("/rounds/999999/turns/1/")
    page = response.content.decode()
    assert response.status_code == 404 and "<h1>Not found</h1>" in page and 'href="/"' in page


def test_the_server_error_page_renders_without_a_request():
    page = render_to_string("500.html")
    assert "Something went wrong on our side" in page and "css/app.css" in page


def test_home_reads_only_a_post_is_refused(client, reviewer):
    client.force_login(reviewer)
    assert client.get("/").status_code == 200
    assert client.post("/").status_code == 405
