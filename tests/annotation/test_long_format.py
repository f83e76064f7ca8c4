"""The long format (annotation/long_format.py): the same rows whatever the batch size, in a bounded number of
queries."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

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


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_outside_a_transaction_the_export_reads_in_one_of_its_own():
    """A download runs in autocommit mode: the rows are then read in one transaction (a streaming cursor, not one
    WITH HOLD that computes the whole result first, and one snapshot), with PostgreSQL's sort memory raised in it;
    the rows and the file are the same as read inside the caller's transaction."""
    call_command("generate_synthetic", "--conversations", "4", "--reviewers", "2", "--seed", "3",
                 "--calibration-turns", "1", "--slug", "autocommit", "--span-rate", "1")
    study = Study.objects.get(slug="autocommit")
    assert connection.get_autocommit()
    with CaptureQueriesContext(connection) as captured:
        rows = list(judgment_rows(study=study))
        text = "".join(long_format.judgments_csv(study=study))
    assert connection.get_autocommit() and not connection.in_atomic_block
    if connection.vendor == "postgresql":
        sql = [query["sql"] for query in captured]
        assert sum("SET LOCAL work_mem" in s for s in sql) == 2
        assert not any("WITH HOLD" in s for s in sql)
    with transaction.atomic():
        assert list(judgment_rows(study=study)) == rows
        assert "".join(long_format.judgments_csv(study=study)) == text
    assert rows and any(row["spans"] for row in rows)
