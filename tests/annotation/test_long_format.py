"""The long format (annotation/long_format.py): the same rows whatever the batch size, in a bounded number of
queries."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from annotation import long_format
from annotation.long_format import judgment_rows
from annotation.models import Judgment, Study

pytestmark = pytest.mark.django_db


def slice_queries(study: Study) -> int:
    """The queries of an export besides one per batch of spans: the study's schema (whether its rows carry
    session_index: ``long_format.columns_for``), the members' roles and the rounds, then in each round its coders,
    one cursor per coder (its non-gold rows) and one for the round's gold rows. They grow with rounds and coders,
    never with rows."""
    rounds = list(study.rounds.all())
    return 3 + sum(2 + Judgment.objects.filter(round=r).values("coder").distinct().count() for r in rounds)


def file_queries(study: Study) -> int:
    """The queries of a file export (CSV or JSON Lines) besides the request's own. The database writes the
    judgments' lines (``annotation.long_format_sql``): a fixed set (the members' roles, the lookup tables, the
    schema's cells, the rounds; read inside the caller's transaction, as a test is), three per round (its coders,
    whether it has gold rows, its spans) and seven per slice (each coder's non-gold rows, and the round's gold rows
    if any: the slice's coders, its rows, conversations and models), whatever the number of rows."""
    rounds = list(study.rounds.all())
    slices = sum(Judgment.objects.filter(round=r).values("coder").distinct().count()
                 + Judgment.objects.filter(round=r, is_gold=True, score__isnull=False).exists() for r in rounds)
    return 7 + 3 * len(rounds) + 7 * slices


def test_long_format_rows_are_the_same_whatever_the_batch_size(monkeypatch, django_assert_max_num_queries):
    call_command("generate_synthetic", "--conversations", "6", "--reviewers", "3", "--seed", "2",
                 "--calibration-turns", "1", "--slug", "batched", "--span-rate", "1")
    study = Study.objects.get(slug="batched")
    whole = list(judgment_rows(study=study))
    assert any(row["spans"] for row in whole)
    monkeypatch.setattr(long_format, "JUDGMENT_ROWS_BATCH", 7)
    batches = -(-len(whole) // 7)
    with django_assert_max_num_queries(slice_queries(study) + batches):
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
    sql = [query["sql"] for query in captured]
    assert sum("SET LOCAL work_mem" in s for s in sql) == 2
    assert not any("WITH HOLD" in s for s in sql)
    with transaction.atomic():
        assert list(judgment_rows(study=study)) == rows
        assert "".join(long_format.judgments_csv(study=study)) == text
    assert rows and any(row["spans"] for row in rows)


def test_the_sliced_export_is_the_one_query_order_and_the_writers_bytes_of_its_rows():
    """The export reads a slice at a time (a round's non-gold rows of one coder, then its gold rows): across
    rounds, coders, gold and roles its rows are exactly those of the one whole-study query in its ORDER BY, and the
    CSV and JSON Lines files are exactly ``csv.writer`` over ``csv_cells`` and ``json.dumps`` of each row."""
    import csv
    import io
    import json

    from annotation.models import Span, StudyMember
    from common.cells import csv_cell
    from common.rounds import round_name

    call_command("generate_synthetic", "--conversations", "12", "--reviewers", "4", "--experts", "2", "--seed", "5",
                 "--calibration-rounds", "2", "--calibration-turns", "3", "--coders-per-turn", "2",
                 "--span-rate", "0.5", "--slug", "sliced")
    study = Study.objects.get(slug="sliced")
    reviewer = StudyMember.objects.filter(study=study, role=StudyMember.Role.REVIEWER).order_by("user__username")[1]
    reviewer.role = StudyMember.Role.METHOD
    reviewer.save()

    spans: dict[int, list[dict]] = {}
    for judgment_id, start, end, slug in (Span.objects.filter(judgment__round__study=study)
                                          .order_by("judgment_id", "start", "end", "subcategory__slug")
                                          .values_list("judgment_id", "start", "end", "subcategory__slug")):
        spans.setdefault(judgment_id, []).append({"start": start, "end": end, "subcategory": slug})
    expected = []
    for (judgment_id, kind, number, coder, is_gold, dataset, conversation, turn, model, code, score, instance_count,
         is_expert, is_method, session, turn_session) in long_format.judgments_query(study=study):
        role = "expert" if is_gold or is_expert else "method" if is_method else "reviewer"
        row = (study.slug, round_name(kind, number), coder, is_gold, dataset, conversation, turn, model, code, score,
               instance_count, spans.get(judgment_id, []), role)
        expected.append(row if session is None and turn_session is None else (*row, session or turn_session))
    assert len({row[1] for row in expected}) == 3 and len({row[2] for row in expected}) >= 5
    assert {row[3] for row in expected} == {False, True} and {row[12] for row in expected} == {
        "reviewer", "expert", "method"}
    assert any(row[11] for row in expected)

    assert list(long_format.judgment_tuples(study=study)) == expected
    rows = list(judgment_rows(study=study))
    assert [tuple(row.values()) for row in rows] == expected

    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow([csv_cell(name) for name in long_format.COLUMNS])
    for row in rows:
        writer.writerow([csv_cell(value) for value in long_format.csv_cells(row)])
    assert "".join(long_format.judgments_csv(study=study)) == buffer.getvalue()
    assert "".join(long_format.judgments_jsonl(study=study)) == "".join(
        json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
