"""One reading of a JSON Lines line (``common.errors.jsonl_rows``): a line that is not JSON is reported in the same
words by every path that reads JSON Lines, the conversations' (``import_conversations``, the upload page, the API's
JSON Lines body), the judgments' (``import_judgments``, the import API) and the session labels'
(``import_session_labels``), and nothing is written. Before, one line had four wordings, and a number of more
digits than Python reads was a traceback or a 500 on every conversations path."""

from __future__ import annotations

import html
import io
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from common.errors import json_unstorable
from tests import form_fuzz

pytestmark = pytest.mark.django_db

BAD_LINES = {
    "not JSON": "{not json}",
    "nested too deeply": "[" * 100_000,
    "a number too long": '{"n": ' + "1" * 5000 + "}",
    # a line ends at "\n" only on every path: the command split it at the "\r" too, and said the first half's fields
    "two values on one line": '{"a": 1}\r{"b": 2}',
}
_LINE_1 = re.compile(r"^line 1: (\w+): (.*)$", re.MULTILINE)


def _written() -> dict[str, tuple[int, str]]:
    """Every table the product writes, but the API tokens' (a token's use is recorded whatever the request)."""
    return {table: rows for table, rows in form_fuzz.fingerprint().items() if table != "cab_apitoken"}


def _command(tmp_path, name: str, content: str, *args: str) -> tuple[str, str]:
    path = tmp_path / "file.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(CommandError) as refused:
        call_command(name, str(path), *args, stdout=io.StringIO())
    found = _LINE_1.search(str(refused.value))
    assert found, str(refused.value)
    return found.group(1), found.group(2)


def _api_errors(response) -> tuple[str, str]:
    assert response.status_code == 400, response.content
    [error] = response.json()["errors"]
    return error["field"], error["message"]


@pytest.fixture
def paths(tmp_path, client, admin_user, as_token, study):
    """Each path's (field, message) for a file of one line."""
    client.force_login(admin_user)
    api = as_token(admin_user, scopes=["ingest", "import"])

    def upload_page(content: str) -> tuple[str, str]:
        answer = client.post(reverse("conversations-upload", args=[study.slug]),
                             {"file": SimpleUploadedFile("c.jsonl", content.encode())})
        found = _LINE_1.search(html.unescape(answer.content.decode()).replace("<li>", "\n").replace("</li>", "\n"))
        assert found, answer.content.decode()[:2000]
        return found.group(1), found.group(2)

    def api_body(url: str, content: str) -> tuple[str, str]:
        return _api_errors(api.generic("POST", url, content.encode(), content_type="application/x-ndjson"))

    return {
        "import_conversations": lambda content: _command(tmp_path, "import_conversations", content),
        "the conversations upload page": upload_page,
        "the conversations API": lambda content: api_body(f"/api/v1/studies/{study.slug}/conversations/", content),
        "import_judgments": lambda content: _command(tmp_path, "import_judgments", content, "--study", study.slug),
        "the judgments import API": lambda content: api_body(f"/api/v1/studies/{study.slug}/judgments/import/",
                                                             content),
        "import_session_labels": lambda content: _command(tmp_path, "import_session_labels", content, "--study",
                                                          study.slug),
    }


@pytest.mark.parametrize("label", list(BAD_LINES))
def test_a_line_that_is_not_json_is_said_alike_by_every_path(paths, label):
    before = _written()
    said = {}
    for path, send in paths.items():
        try:
            said[path] = send(BAD_LINES[label] + "\n")[1]
        except Exception as error:  # noqa: BLE001 - a traceback is what this test looks for
            said[path] = f"{type(error).__name__}: {str(error)[:100]}"
    assert len(set(said.values())) == 1, "\n".join(f"{path}: {message}" for path, message in said.items())
    assert next(iter(said.values())).startswith("not valid JSON")
    assert _written() == before


def test_a_number_too_long_in_a_json_array_body_is_a_400(admin_user, as_token, study):
    """The API's JSON array body is one document: its refusal is the body's 400, never a 500."""
    api = as_token(admin_user, scopes=["ingest"])
    before = _written()
    answer = api.generic("POST", f"/api/v1/studies/{study.slug}/conversations/",
                         f"[{BAD_LINES['a number too long']}]".encode(), content_type="application/json")
    assert answer.status_code == 400, answer.content
    assert answer.json()["detail"].startswith("Not valid JSON: ")
    assert _written() == before


@pytest.mark.parametrize(("value", "refusal"), [
    ({"a": [1, 2.5, None, True, "é"]}, None),
    (["a", {"b": "\x00"}], "contains a NUL or lone surrogate character"),
    ({"\ud800": 1}, "contains a NUL or lone surrogate character"),
    ([[[float("nan")]]], "holds NaN or Infinity, which JSON has no number for"),
    ({"x": -float("inf")}, "holds NaN or Infinity, which JSON has no number for"),
])
def test_a_json_value_no_column_can_store_is_named(value, refusal):
    """``common.errors.json_unstorable``, which the Django admin's JSON fields ask before a save."""
    assert json_unstorable(value) == refusal
