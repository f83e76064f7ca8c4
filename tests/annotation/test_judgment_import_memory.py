"""A judgments import's memory grows by a few hundred bytes a row, not by a model instance a row: a paper-scale
file (about 700,000 rows) is imported in one web worker or one command (``judgment_import``: slotted rows, shared
strings, the judgments written a batch at a time). Measured with ``tracemalloc``, which counts every Python
allocation whatever the machine's speed or load."""

from __future__ import annotations

import io
import tracemalloc

import pytest
from django.core.management import call_command

from annotation import judgment_import
from annotation.models import Judgment
from annotation.services import judgments_purge

pytestmark = pytest.mark.django_db

# Bytes a row may add at the import's peak over the memory before it: about 500 here, where the import that held a
# row's ``__dict__`` and a Judgment instance for every row took about 1,850.
PER_ROW = 1_000


def test_import_memory_grows_by_the_row_not_by_the_judgment(monkeypatch):
    call_command("generate_synthetic", "--conversations", "10", "--responses", "250", "--reviewers", "6",
                 "--seed", "11", "--slug", "memory", stdout=io.StringIO())
    exported = io.StringIO()
    call_command("export_judgments", study="memory", format="csv", stdout=exported)
    judgments = Judgment.objects.filter(round__study__slug="memory")
    n = judgments.count()
    assert n > 5_000
    judgments_purge(judgments=judgments, by=None, reason="imported again by the test")
    monkeypatch.setattr(judgment_import, "_BATCH", 1_000)  # several batches, as at paper scale
    body = io.BytesIO(exported.getvalue().encode())
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        summary = judgment_import.judgments_file_import(file=body, fmt="csv", study_slug="memory", by=None)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert summary.judgments_created == n == judgments.count()
    assert (peak - before) / n < PER_ROW, f"{(peak - before) / n:.0f} bytes a row at the import's peak"
