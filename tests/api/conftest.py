"""Fixtures of the API's tests."""

from __future__ import annotations

import pytest

from annotation.long_format import judgment_rows
from benchmark.models import ModelResponse
from tests.factories import JudgmentFactory, RoundFactory


@pytest.fixture
def coded(study, demo_conversations, reviewer) -> list[dict]:  # noqa: ANN001
    """A closed calibration round of the study where the reviewer scored six responses; its long-format rows."""
    calibration = RoundFactory(study=study, kind="calibration", number=1, status="closed")
    for number, response in enumerate(ModelResponse.objects.order_by("pk")[:6]):
        JudgmentFactory(round=calibration, coder=reviewer, response=response, score=number % 3)
    return list(judgment_rows(study=study))
