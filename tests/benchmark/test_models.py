"""The benchmark's data model: the database keeps one response per (turn, model slot)."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from tests.factories import ModelResponseFactory

pytestmark = pytest.mark.django_db


def test_database_refuses_a_second_response_for_a_model_slot():
    response = ModelResponseFactory(model_slot="GPT")
    with pytest.raises(IntegrityError, match="response_unique_model_slot"), transaction.atomic():
        ModelResponseFactory(turn=response.turn, model_slot="GPT")
