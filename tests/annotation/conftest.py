"""Fixtures for the annotation tests: a model response with non-ASCII text, and a calibration round of an open
study."""

from __future__ import annotations

import pytest

from tests.factories import ModelResponseFactory, RoundFactory, StudyFactory, StudyMemberFactory


@pytest.fixture
def response():
    return ModelResponseFactory(model_slot="GPT", text="Have you tried naming the worry? Ça va 😊 — okay.")


@pytest.fixture
def round_(db, reviewer, other_reviewer, expert):
    """A calibration round of an open study whose members are the reviewer, the other reviewer and the expert."""
    study = StudyFactory(status="open")
    for user, role in ((reviewer, "reviewer"), (other_reviewer, "reviewer"), (expert, "expert")):
        StudyMemberFactory(study=study, user=user, role=role)
    return RoundFactory(study=study)
