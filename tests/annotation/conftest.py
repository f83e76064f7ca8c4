"""Fixtures for the annotation tests: a model response with non-ASCII text, and a calibration round of an open
study."""

from __future__ import annotations

import pytest

from tests.factories import ModelResponseFactory, RoundFactory, StudyFactory


@pytest.fixture
def response():
    return ModelResponseFactory(model_slot="GPT", text="Have you tried naming the worry? Ça va 😊 — okay.")


@pytest.fixture
def round_(db):
    return RoundFactory(study=StudyFactory(status="open"))
