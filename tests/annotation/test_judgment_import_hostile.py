"""Judgment files that are well-formed enough to parse but hostile in a cell: a span whose offsets or subcategory
are not scalars, a number longer than Python parses. Each is a row error by its line on every path (the service,
``import_judgments``, the API's 400), never a crash or a 500, and nothing is written."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from annotation import judgment_import
from annotation.models import Judgment
from common.errors import RowErrors
from tests.annotation.test_judgment_import import conversations, row, write_jsonl  # noqa: F401  (a fixture)

pytestmark = pytest.mark.django_db

HOSTILE_SPANS = {
    "a start that is a list": [{"start": [0], "end": 3, "subcategory": "assumes"}],
    "an end that is an object": [{"start": 0, "end": {"a": 1}, "subcategory": "assumes"}],
    "a subcategory that is a list": [{"start": 0, "end": 3, "subcategory": ["assumes"]}],
    "the same hostile span twice": [{"start": [0], "end": 3, "subcategory": "assumes"}] * 2,
}
HEADER = "study,round,reviewer,is_gold,dataset,conversation_id,turn_index,model,attribute,score,instance_count,spans\n"
LONG = "1" * 5000  # beyond Python's 4,300 digits for an int from text


@pytest.mark.parametrize("spans", HOSTILE_SPANS.values(), ids=HOSTILE_SPANS.keys())
def test_a_hostile_span_is_a_row_error(conversations, tmp_path, spans):  # noqa: F811
    with pytest.raises(RowErrors) as refused:
        judgment_import.judgments_import(rows=[(4, row(spans=spans))], study_slug="imported", by=None, typed=True,
                                         create_study=True)
    assert {(e.row, e.field.split("[")[0]) for e in refused.value.errors} == {(4, "spans")}
    with pytest.raises(CommandError, match="line 1"):
        call_command("import_judgments", str(write_jsonl(tmp_path, [row(spans=spans)])), "--study", "imported",
                     "--create-study")
    assert not Judgment.objects.exists()


def _post(as_token, admin_user, body: str, content_type: str):
    client = as_token(admin_user, scopes=["import"])
    client.raise_request_exception = False
    return client.generic("POST", "/api/v1/studies/cab-demo/judgments/import/", body.encode(),
                          content_type=content_type)


def test_the_api_answers_400_to_a_hostile_span(study, demo_conversations, admin_user, as_token):
    body = json.dumps(row(study="cab-demo", spans=HOSTILE_SPANS["a start that is a list"])) + "\n"
    answer = _post(as_token, admin_user, body, "application/x-ndjson")
    assert answer.status_code == 400
    assert not Judgment.objects.filter(round__study=study).exists()


def test_the_api_answers_400_to_a_number_too_long_on_a_json_line(study, demo_conversations, admin_user, as_token):
    line = json.dumps(row(study="cab-demo")).replace('"score": 1', f'"score": {LONG}')
    answer = _post(as_token, admin_user, line + "\n", "application/x-ndjson")
    assert answer.status_code == 400
    assert answer.json()["errors"] == [{"line": 1, "field": "line", "message": "not valid JSON (a number too long)"}]
    assert not Judgment.objects.filter(round__study=study).exists()


def test_the_api_answers_400_to_a_number_too_long_in_a_csv_spans_cell(study, demo_conversations, admin_user,
                                                                      as_token):
    spans = f'"[{{""start"": {LONG}, ""end"": 3, ""subcategory"": ""assumes""}}]"'
    body = HEADER + f"cab-demo,calibration-1,alice,false,CounselChat,appendix-d-1,1,GPT,AUR,1,1,{spans}\n"
    answer = _post(as_token, admin_user, body, "text/csv")
    assert answer.status_code == 400
    assert not Judgment.objects.filter(round__study=study).exists()
