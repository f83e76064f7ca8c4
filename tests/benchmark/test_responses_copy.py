"""The write of new model responses (benchmark/response_ingest.py ``responses_insert``: COPY in binary format): every
text is stored byte for byte as sent, whatever it holds and whichever way the body carried it; NUL never reaches
the COPY; the body is hashed only for an Idempotency-Key, and replay works with and without one."""

from __future__ import annotations

import hashlib
import io
import json

import psycopg
import pytest
from django.db import connection, transaction
from django.utils import timezone

from api.models import IdempotencyRecord
from api.parsers import BulkJSONLinesParser, BulkJSONParser
from benchmark import response_ingest
from benchmark.models import ModelResponse, Turn
from tests.factories import response_items

pytestmark = pytest.mark.django_db

RESPONSES = "/api/v1/studies/cab-demo/responses/"

AWKWARD = [
    "😊 naïve — ça, 中文 العربية עברית \U0010ffff",
    "back\\slash \\N and \\. and \\\\ and a trailing \\",
    "\\",
    "tab\there\t",
    "\t",
    "line\nbreak\r\nand \rcr\n",
    "\r",
    "\n\n",
    "  spaces kept  ",
    "\x01\x1f\x7f control characters \u2028\u2029 \ufeff",
    '"quoted" and {"json": [1]}',
    "\\.",  # COPY's end-of-data marker in the text format
    "'=SUM(A1)",
    "x" * 1_500_000 + "😊\\\t\n",  # over the megabyte sent at a time
    "y",
]


def _stored() -> list[tuple]:
    """Every stored response as PostgreSQL holds it: its text's UTF-8 bytes, not Python's reading of them."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT turn_id, model_slot, model_version, convert_to(text, 'UTF8'), created_at, updated_at "
            "FROM benchmark_modelresponse ORDER BY turn_id, model_slot"
        )
        return [(*row[:3], bytes(row[3]), *row[4:]) for row in cursor.fetchall()]


def _awkward_items() -> list[dict]:
    items = response_items()
    assert len(items) >= len(AWKWARD)
    for item, text in zip(items, AWKWARD, strict=False):
        item["text"] = text
    return items


def _body(items: list[dict], fmt: str) -> tuple[bytes, str]:
    if fmt == "array":  # non-ASCII as itself: a text without escapes is its slice of the body
        return json.dumps(items, ensure_ascii=False).encode(), "application/json"
    if fmt == "array-ascii":  # every non-ASCII character escaped: each such text is decoded
        return json.dumps(items).encode(), "application/json"
    return "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items).encode(), "application/x-ndjson"


@pytest.mark.parametrize("fmt", ["array", "array-ascii", "lines", "service"])
def test_awkward_texts_are_stored_byte_for_byte_as_an_orm_insert_stores_them(ingester, turns_only, study, fmt):
    items = _awkward_items()
    before = timezone.now()
    if fmt == "service":
        summary = response_ingest.responses_ingest(items=items, study=study, model_slots=study.model_slots)
        assert summary.created == len(items)
    else:
        body, content_type = _body(items, fmt)
        response = ingester.generic("POST", RESPONSES, body, content_type=content_type)
        assert response.status_code == 200, response.content
        assert response.json()["created"] == len(items)
    after = timezone.now()
    copied = _stored()

    turns = {(t.conversation.dataset.name, t.conversation.external_id, t.index): t.pk
             for t in Turn.objects.select_related("conversation__dataset")}
    expected = sorted((turns[(i["dataset"], i["conversation_id"], i["turn_index"])], i["model"], i["model_version"],
                       i["text"].encode()) for i in items)
    assert [row[:4] for row in copied] == expected
    for *_, created_at, updated_at in copied:
        assert created_at == updated_at and before <= created_at <= after

    # The same rows written through the ORM (parameters, no COPY): identical bytes in the database
    rows = list(ModelResponse.objects.values_list("turn_id", "model_slot", "model_version", "text"))
    ModelResponse.objects.all().delete()
    ModelResponse.objects.bulk_create([ModelResponse(turn_id=turn_id, model_slot=slot, model_version=version, text=text)
                                       for turn_id, slot, version, text in rows])
    assert [row[:4] for row in _stored()] == [row[:4] for row in copied]

    # and a resend finds every text unchanged (the database's digest of the stored text is the sent text's)
    ModelResponse.objects.all().delete()
    response_ingest.responses_ingest(items=items, study=study, model_slots=study.model_slots)
    again = response_ingest.responses_ingest(items=items, study=study, model_slots=study.model_slots)
    assert (again.created, again.updated, again.unchanged) == (0, 0, len(items))


@pytest.mark.parametrize("fmt", ["array", "array-ascii", "lines"])
def test_a_text_with_nul_is_a_clear_400_and_nothing_is_written(ingester, turns_only, fmt):
    items = response_items()
    items[3]["text"] = "before\x00after"
    body, content_type = _body(items, fmt)
    response = ingester.generic("POST", RESPONSES, body, content_type=content_type)
    assert response.status_code == 400
    assert {"index": 3, "field": "text", "message": "may not contain NUL characters"} in response.json()["errors"]
    assert ModelResponse.objects.count() == 0


def test_postgresql_refuses_a_nul_that_got_past_validation(turns_only):
    """Defence in depth: the binary COPY does not quietly store or cut a NUL (validation refuses it first)."""
    turn_id = Turn.objects.values_list("pk", flat=True).first()
    with pytest.raises(psycopg.DataError), transaction.atomic():
        response_ingest.responses_insert([(turn_id, "GPT", "", b"before\x00after")])
    assert ModelResponse.objects.count() == 0


def test_the_copy_keeps_its_new_rows_in_memory_and_the_transaction_keeps_its_work_mem(turns_only):
    """The COPY runs with ``_COPY_WORK_MEM``, so that the new rows the response-added trigger reads (annotation
    migration 0023) stay in memory rather than go to a temporary file; the statements after it have the session's
    ``work_mem`` again. A statement trigger of this test's own reads the setting while the COPY runs."""
    with connection.cursor() as cursor:
        cursor.execute("SHOW work_mem")
        session = cursor.fetchone()[0]
        assert session != response_ingest._COPY_WORK_MEM
        cursor.execute("""
            CREATE FUNCTION test_copy_work_mem() RETURNS trigger AS $$ BEGIN
                PERFORM set_config('test.copy_work_mem', current_setting('work_mem'), true); RETURN NULL;
            END $$ LANGUAGE plpgsql;
            CREATE TRIGGER test_copy_work_mem AFTER INSERT ON benchmark_modelresponse
                FOR EACH STATEMENT EXECUTE FUNCTION test_copy_work_mem()""")
    turn_id = Turn.objects.values_list("pk", flat=True).first()
    response_ingest.responses_insert([(turn_id, "GPT", "", b"A new response.")])
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('test.copy_work_mem'), current_setting('work_mem')")
        assert cursor.fetchone() == (response_ingest._COPY_WORK_MEM, session)
    assert ModelResponse.objects.count() == 1


def test_idempotent_replay_with_and_without_a_key(ingester, turns_only):
    body, content_type = _body(response_items(), "lines")
    first = ingester.generic("POST", RESPONSES, body, content_type=content_type, HTTP_IDEMPOTENCY_KEY="copy-1")
    again = ingester.generic("POST", RESPONSES, body, content_type=content_type, HTTP_IDEMPOTENCY_KEY="copy-1")
    assert first.json() == again.json() == {"items": 20, "created": 20, "updated": 0, "unchanged": 0,
                                            "turns_back_in_queues": 0}
    assert again["Idempotent-Replayed"] == "true" and "Idempotent-Replayed" not in first
    assert IdempotencyRecord.objects.get(key="copy-1").request_hash == hashlib.sha256(
        f"POST {RESPONSES}\n{hashlib.sha256(body).hexdigest()}".encode()).hexdigest()

    other = body.replace(b"\n", b"\n\n", 1)  # the same items, another body: not the same request
    assert ingester.generic("POST", RESPONSES, other, content_type=content_type,
                            HTTP_IDEMPOTENCY_KEY="copy-1").status_code == 422

    without_key = ingester.generic("POST", RESPONSES, body, content_type=content_type)
    assert without_key.status_code == 200 and "Idempotent-Replayed" not in without_key
    assert without_key.json() == {"items": 20, "created": 0, "updated": 0, "unchanged": 20, "turns_back_in_queues": 0}
    assert IdempotencyRecord.objects.count() == 1


@pytest.mark.parametrize("parser", [BulkJSONParser, BulkJSONLinesParser])
def test_a_bulk_body_is_hashed_only_when_asked(parser):
    content = b'[{"a": 1}]' if parser is BulkJSONParser else b'{"a": 1}\n'
    body = parser().parse(io.BytesIO(content), parser.media_type, {})
    assert "sha256" not in vars(body)  # parsing alone does not hash
    assert body.sha256 == hashlib.sha256(content).hexdigest()
