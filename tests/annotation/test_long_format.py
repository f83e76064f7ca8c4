"""The long format (annotation/long_format.py): the same rows whatever the batch size, in a bounded number of
queries."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from annotation import long_format
from annotation.long_format import judgment_rows
from annotation.models import Study

pytestmark = pytest.mark.django_db


def test_long_format_rows_are_the_same_whatever_the_batch_size(monkeypatch, django_assert_max_num_queries):
    call_command("generate_synthetic", "--conversations", "6", "--reviewers", "3", "--seed", "2",
                 "--calibration-turns", "1", "--slug", "batched", "--span-rate", "1")
    study = Study.objects.get(slug="batched")
    whole = list(judgment_rows(study=study))
    assert any(row["spans"] for row in whole)
    monkeypatch.setattr(long_format, "JUDGMENT_ROWS_BATCH", 7)
    batches = -(-len(whole) // 7)
    with django_assert_max_num_queries(batches + 3):
        assert list(judgment_rows(study=study)) == whole
