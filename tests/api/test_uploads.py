"""Files sent as form uploads (``multipart/form-data``, the part ``file``), the way generated clients send files:
ingestion of conversations and responses from JSON Lines or a JSON array (…/upload/), and the judgments import,
whose file's format is the form's ``format``, else its name's, else its part's Content-Type. Same answers as the
raw bodies; a form without its one file, a format that cannot be told, or a file over the limit is refused in the
API's error shape."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings

from annotation.long_format import judgment_rows
from annotation.models import Judgment
from annotation.services import judgments_purge
from api.parsers import _CONTENT_TYPES
from benchmark.demo import demo_records
from benchmark.models import ModelResponse
from tests.factories import conversations_without_responses, jsonl, response_items

pytestmark = pytest.mark.django_db

CONVERSATIONS = "/api/v1/studies/cab-demo/conversations/"
RESPONSES = "/api/v1/studies/cab-demo/responses/"
IMPORT = "/api/v1/studies/cab-demo/judgments/import/"


def upload(api, url, content: bytes, name="items.jsonl", content_type="application/octet-stream", headers=None,
           **fields):
    form = {"file": SimpleUploadedFile(name, content, content_type=content_type), **fields}
    return api.post(url, form, format="multipart", headers=headers)


def test_conversations_and_responses_ingest_from_a_jsonl_or_json_file_as_the_json_body_does(ingester):
    answer = upload(ingester, CONVERSATIONS + "upload/", jsonl(conversations_without_responses()).encode())
    assert answer.status_code == 200, answer.json()
    assert answer.json()["conversations_created"] == len(demo_records())
    answer = upload(ingester, RESPONSES + "upload/", json.dumps(response_items()).encode(), name="r.json")
    assert answer.json() == {"items": len(response_items()), "created": len(response_items()), "updated": 0,
                             "unchanged": 0, "turns_back_in_queues": 0}
    again = upload(ingester, RESPONSES + "upload/", b"\n" + jsonl(response_items()).encode())
    assert again.json()["unchanged"] == len(response_items())
    assert ModelResponse.objects.count() == len(response_items())


@pytest.mark.parametrize("how", ["JSON Lines body", "JSON array body", "JSON Lines upload", "JSON array upload"])
def test_a_file_that_begins_with_a_utf8_bom_ingests_as_without_it(ingester, how):
    """Editors on Windows begin a file with a byte order mark: dropped here as manage.py import_conversations and
    the upload page drop it (utf-8-sig); before, the API refused the file ("Unexpected UTF-8 BOM")."""
    items = conversations_without_responses()
    lines = how.startswith("JSON Lines")
    content = "\ufeff".encode() + (jsonl(items) if lines else json.dumps(items)).encode()
    if how.endswith("body"):
        answer = ingester.generic("POST", CONVERSATIONS, content,
                                  content_type="application/x-ndjson" if lines else "application/json")
    else:
        answer = upload(ingester, CONVERSATIONS + "upload/", content, name="c.jsonl" if lines else "c.json")
    assert answer.status_code == 200, answer.json()
    assert answer.json()["conversations_created"] == len(items)


def test_a_wrong_item_in_an_uploaded_file_is_named_as_in_a_json_body(ingester, turns_only):
    items = response_items()
    items[1]["turn_index"] = 9
    answer = upload(ingester, RESPONSES + "upload/", jsonl(items).encode() + b"not json\n")
    assert answer.status_code == 400
    assert [(e["index"], e["field"]) for e in answer.json()["errors"]] == [(1, "turn_index"), (len(items), "item")]
    assert ModelResponse.objects.count() == 0


def test_a_form_without_its_one_file_part_is_a_400(ingester):
    assert ingester.post(RESPONSES + "upload/", {"items": "[]"}, format="multipart").json()["detail"] == (
        'Send the file as the form\'s one part named "file" (multipart/form-data).')
    two = {"file": [SimpleUploadedFile("a.jsonl", b"{}\n"), SimpleUploadedFile("b.jsonl", b"{}\n")]}
    assert ingester.post(RESPONSES + "upload/", two, format="multipart").status_code == 400


def test_the_upload_paths_take_forms_only_and_the_json_paths_no_forms(ingester):
    assert ingester.post(RESPONSES + "upload/", response_items(), format="json").status_code == 415
    assert upload(ingester, RESPONSES, jsonl(response_items()).encode()).status_code == 415


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=2000)
def test_an_uploaded_file_over_the_limit_is_a_413(ingester):
    answer = upload(ingester, RESPONSES + "upload/", b" " * 3000)
    assert answer.status_code == 413
    assert "at most 2,000 bytes" in answer.json()["detail"]


# --- the judgments import -----------------------------------------------------------------------------------------


@pytest.fixture
def exported(study, coded):
    """The study's judgments in both formats, then none in the database: what the import must bring back."""
    files = {"csv": _export(study, "csv"), "jsonl": _export(study, "jsonl")}
    judgments_purge(judgments=Judgment.objects.all(), by=None, reason="test: import it again")
    return coded, files


def _export(study, fmt) -> bytes:
    from annotation import long_format

    return "".join(long_format.WRITERS[fmt](study=study)).encode()


@pytest.mark.parametrize(("fmt", "name", "content_type", "fields"), [
    ("csv", "judgments.csv", "application/octet-stream", {}),
    ("jsonl", "judgments.JSONL", "application/octet-stream", {}),
    ("jsonl", "judgments.ndjson", "text/plain", {}),
    ("csv", "upload", "text/csv", {}),
    ("jsonl", "upload", "application/x-ndjson; charset=utf-8", {}),
    ("jsonl", "judgments.csv", "text/csv", {"format": "jsonl"}),  # the form's field says it first
])
def test_the_import_reads_an_uploaded_file_in_the_format_its_form_name_or_type_says(
    admin_user, as_token, study, exported, fmt, name, content_type, fields
):
    rows, files = exported
    api = as_token(admin_user, scopes=["import"])
    answer = upload(api, IMPORT, files[fmt], name=name, content_type=content_type, **fields)
    assert answer.status_code == 200, answer.json()
    assert answer.json()["judgments_created"] == len(rows)
    assert list(judgment_rows(study=study)) == rows


@pytest.mark.parametrize("name", ["judgments", "judgments.txt"])
def test_an_import_whose_format_cannot_be_told_says_how_to_tell_it(admin_user, as_token, exported, name):
    """The message of `manage.py import_judgments` and `cab import` (common.file_formats), naming the file and this
    path's way of saying the format."""
    api = as_token(admin_user, scopes=["import"])
    answer = upload(api, IMPORT, exported[1]["csv"], name=name, content_type="text/plain")
    assert answer.status_code == 400
    assert answer.json()["fields"] == {"format": [f"{name}: its name does not say its format (.csv, .jsonl or "
                                                  ".ndjson): say it with the form's field format=csv|jsonl"]}
    answer = upload(api, IMPORT, exported[1]["csv"], name="judgments.csv", format="xlsx")
    assert answer.json()["fields"] == {"format": ["csv or jsonl, not 'xlsx'"]}
    assert Judgment.objects.count() == 0


def test_the_schema_s_help_for_format_says_a_file_it_cannot_tell_is_refused(admin_user, as_token, exported, client):
    """The OpenAPI schema's help for the form's ``format`` said how the format is found, not that a file whose name
    and part's Content-Type say none, sent without ``format``, is refused: a generated client's user learnt it from
    the 400. The help now says what the upload answers, and every Content-Type the parser reads."""
    api = as_token(admin_user, scopes=["import"])
    answer = upload(api, IMPORT, exported[1]["csv"], name="judgments.txt", content_type="text/plain")
    assert answer.status_code == 400 and list(answer.json()["fields"]) == ["format"]
    schema = client.get("/api/schema/?format=json").json()
    said = schema["components"]["schemas"]["JudgmentsFileInRequest"]["properties"]["format"]["description"]
    assert "refused" in said and f"{answer.status_code} naming the file under the field `format`" in said, said
    assert all(media in said for media in _CONTENT_TYPES), said


def test_a_resent_upload_with_its_idempotency_key_gets_the_first_answer(admin_user, as_token, exported):
    api = as_token(admin_user, scopes=["import"])
    first = upload(api, IMPORT, exported[1]["csv"], name="j.csv", headers={"Idempotency-Key": "import-1"})
    again = upload(api, IMPORT, exported[1]["csv"], name="j.csv", headers={"Idempotency-Key": "import-1"})
    assert again.json() == first.json() and again["Idempotent-Replayed"] == "true"
    other = upload(api, IMPORT, exported[1]["jsonl"], name="j.jsonl", headers={"Idempotency-Key": "import-1"})
    assert other.status_code == 422


def test_the_same_bytes_under_the_same_key_as_the_other_format_are_another_request(admin_user, as_token, exported):
    """The format is part of what the key stands for: before, the CSV's answer was replayed to the JSON Lines send
    of the same bytes (as a form's field or as the body's Content-Type), which nothing had read."""
    rows, files = exported
    api = as_token(admin_user, scopes=["import"])
    first = upload(api, IMPORT, files["csv"], name="j.txt", format="csv", headers={"Idempotency-Key": "import-2"})
    assert first.status_code == 200 and first.json()["judgments_created"] == len(rows)
    other = upload(api, IMPORT, files["csv"], name="j.txt", format="jsonl", headers={"Idempotency-Key": "import-2"})
    assert other.status_code == 422, other.json()
    body = api.generic("POST", IMPORT, files["csv"], content_type="application/x-ndjson",
                       headers={"Idempotency-Key": "import-2"})
    assert body.status_code == 422, body.json()
    again = api.generic("POST", IMPORT, files["csv"], content_type="text/csv", headers={"Idempotency-Key": "import-2"})
    assert again.json() == first.json() and again["Idempotent-Replayed"] == "true"


def test_an_import_body_at_the_limit_is_read_and_one_byte_over_is_a_413_naming_both_sizes(admin_user, as_token,
                                                                                           study, exported):
    rows, files = exported
    api = as_token(admin_user, scopes=["import"])
    content = files["csv"]
    with override_settings(JUDGMENTS_IMPORT_MAX_SIZE=len(content)):
        over = api.generic("POST", IMPORT, content + b"\n", content_type="text/csv")
        assert over.status_code == 413
        assert over.json()["detail"] == (f"The body is {len(content) + 1:,} bytes; at most {len(content):,} bytes "
                                         "are accepted per request. Import a larger file with manage.py "
                                         "import_judgments on the server (docs/api.md#importing-judgments).")
        assert Judgment.objects.count() == 0
        at = api.generic("POST", IMPORT, content, content_type="text/csv")
    assert at.status_code == 200, at.json()
    assert at.json()["judgments_created"] == len(rows)
