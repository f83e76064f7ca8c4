"""Pagination (api/pagination.py): a cursor that does not decode to an id position is a 404, never a 500."""

from __future__ import annotations

import base64

import pytest

pytestmark = pytest.mark.django_db

JUDGMENTS = "/api/v1/studies/cab-demo/judgments/"


def test_a_forged_cursor_is_a_404_not_a_500(researcher, as_token, study):
    forged = base64.b64encode(b"p=not-a-number").decode()
    assert as_token(researcher).get(JUDGMENTS, {"cursor": forged}).status_code == 404
    assert as_token(researcher).get(JUDGMENTS, {"cursor": "garbage"}).status_code == 404
