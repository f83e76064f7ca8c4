"""The judgments import over the API takes a file larger than a request body (DATA_UPLOAD_MAX_MEMORY_SIZE, 64 MiB):
it is streamed to a temporary file, never held in memory, and imported by the same code as ``manage.py
import_judgments``, with the same answer; past its own limit (JUDGMENTS_IMPORT_MAX_SIZE) it is a 413 naming both
sizes. Before, any file over 64 MiB was a 413, so a paper-scale study's judgments (203 MB as JSON Lines) needed
shell access to the server.

The large file is a real export of a study padded with blank lines (lines of spaces, which every JSON Lines reader
skips): a file just over 64 MiB without generating the 240,000 judgments that would fill it."""

from __future__ import annotations

import json
import tracemalloc

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import override_settings
from django.test.client import ClientHandler, RequestFactory

from annotation import long_format
from annotation.long_format import judgment_rows
from annotation.models import Judgment
from annotation.services import judgments_purge
from audit.models import AuditEvent
from common.uploads import MIB

pytestmark = pytest.mark.django_db

IMPORT = "/api/v1/studies/cab-demo/judgments/import/"
BODY_LIMIT = 64 * MIB
BLANK = b" " * (64 * 1024 - 1) + b"\n"  # a blank line of 64 KiB


def padded(content: bytes, size: int) -> bytes:
    """``content`` (JSON Lines) with blank lines between its rows, until it is just over ``size`` bytes."""
    rows = content.splitlines(keepends=True)
    blanks = -(-(size + 1 - len(content)) // len(BLANK))
    per_row, extra = divmod(blanks, len(rows))
    return b"".join(BLANK * (per_row + (number < extra)) + row for number, row in enumerate(rows))


@pytest.fixture
def exported(study, coded):
    """The study's judgments as JSON Lines padded to just over 64 MiB, then none in the database."""
    content = padded("".join(long_format.WRITERS["jsonl"](study=study)).encode(), BODY_LIMIT)
    judgments_purge(judgments=Judgment.objects.all(), by=None, reason="test: import it again")
    return coded, content


def send(api, content: bytes, how: str):
    if how == "body":
        return api.generic("POST", IMPORT, content, content_type="application/x-ndjson")
    return api.post(IMPORT, {"file": SimpleUploadedFile("judgments.jsonl", content)}, format="multipart")


def emptied() -> None:
    judgments_purge(judgments=Judgment.objects.all(), by=None, reason="test: import it again")


@pytest.mark.slow(20)
@pytest.mark.parametrize("how", ["body", "form upload"])
def test_a_file_over_the_body_limit_is_imported_as_the_command_imports_it(admin_user, as_token, study, exported,
                                                                         tmp_path, how):
    rows, content = exported
    assert BODY_LIMIT < len(content) < BODY_LIMIT + MIB
    answer = send(as_token(admin_user, scopes=["import"]), content, how)
    assert answer.status_code == 200, answer.content[:500]
    assert answer.json()["judgments_created"] == len(rows)
    over_the_api = list(judgment_rows(study=study))
    assert over_the_api == rows
    assert AuditEvent.objects.filter(action="judgments.import").count() == 1

    emptied()
    (tmp_path / "judgments.jsonl").write_bytes(content)
    call_command("import_judgments", str(tmp_path / "judgments.jsonl"), "--study", study.slug)
    assert list(judgment_rows(study=study)) == over_the_api


@pytest.mark.slow(15)
@pytest.mark.parametrize("how", ["body", "form upload"])
def test_a_wrong_row_deep_in_a_large_file_is_a_400_naming_its_line_and_nothing_is_written(
    admin_user, as_token, exported, how
):
    _, content = exported
    last = content.splitlines(keepends=True)[-1]
    content = content.removesuffix(last) + json.dumps(json.loads(last) | {"score": 7}).encode() + b"\n"
    answer = send(as_token(admin_user, scopes=["import"]), content, how)
    assert answer.status_code == 400, answer.content[:500]
    line = content.count(b"\n")
    assert [(error["line"], error["field"]) for error in answer.json()["errors"]] == [(line, "score")]
    assert not Judgment.objects.exists()


@pytest.mark.parametrize("how", ["body", "form upload"])
def test_a_file_over_the_import_limit_is_a_413_naming_both_sizes_and_nothing_is_written(admin_user, as_token,
                                                                                      exported, how):
    _, content = exported
    content = content[-200_000:]  # its last rows, some blank lines before them
    api = as_token(admin_user, scopes=["import"])
    with override_settings(JUDGMENTS_IMPORT_MAX_SIZE=len(content) - 1):
        answer = send(api, content, how)
    assert answer.status_code == 413
    if how == "body":
        assert answer.json()["detail"] == (
            f"The body is {len(content):,} bytes; at most {len(content) - 1:,} bytes are accepted per request. "
            "Import a larger file with manage.py import_judgments on the server (docs/api.md#importing-judgments).")
    else:  # the form's length is more than the file's: its parts' headers
        assert f"at most {len(content) - 1:,} bytes are accepted per request" in answer.json()["detail"]
    assert not Judgment.objects.exists()
    with override_settings(JUDGMENTS_IMPORT_MAX_SIZE=len(content) + 1_000):
        assert send(api, content, how).status_code == 200


def test_the_other_endpoints_keep_the_body_limit(ingester, exported):
    _, content = exported
    answer = ingester.generic("POST", "/api/v1/studies/cab-demo/responses/", content,
                              content_type="application/x-ndjson")
    assert answer.status_code == 413
    assert f"at most {BODY_LIMIT:,} bytes are accepted per request" in answer.json()["detail"]


@pytest.mark.slow(15)
def test_a_large_import_holds_no_copy_of_the_body_in_memory(admin_user, as_token, study, exported, tmp_path):
    """The request's Python allocations at their peak: a few MiB (a chunk of the body, a line, the rows), not the
    body's 64 MiB. The body comes from a file, through Django's WSGI request, as a server streams it (the test
    client would hold a copy of it)."""
    rows, content = exported
    (tmp_path / "judgments.jsonl").write_bytes(content)
    token = as_token(admin_user, scopes=["import"])._credentials["HTTP_AUTHORIZATION"]
    with (tmp_path / "judgments.jsonl").open("rb") as body:  # read by the request as a server reads its socket
        environ = RequestFactory()._base_environ(
            PATH_INFO=IMPORT, REQUEST_METHOD="POST", CONTENT_TYPE="application/x-ndjson",
            CONTENT_LENGTH=str(len(content)), HTTP_AUTHORIZATION=token, **{"wsgi.input": body})
        del content
        tracemalloc.start()
        try:
            answer = ClientHandler()(environ)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert answer.status_code == 200, answer.content[:500]
    assert json.loads(answer.content)["judgments_created"] == len(rows)
    assert peak < 8 * MIB, f"{peak:,} bytes at the peak for a body of {BODY_LIMIT:,} and more"
