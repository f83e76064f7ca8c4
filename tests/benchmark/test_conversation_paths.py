"""The paths that import conversations (``manage.py import_conversations``, a study's upload page, the ingestion API
with a JSON body or a file) go through one service, ``conversation_ingest.conversations_upload``/``_ingest``, and
answer alike: here, a file or request without a conversation is refused by each, with the same words, nothing
written. Before, the command refused it, the page and the API imported nothing and said it was done, and an empty
file on the page was Django's "The submitted file is empty.\""""

from __future__ import annotations

import html
import io
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from tests import form_fuzz

pytestmark = pytest.mark.django_db

NOTHING = "no conversations: nothing to import"
EMPTY_FILES = {"empty": "", "blank lines": "\n \n\n"}


def _written() -> dict[str, tuple[int, str]]:
    """Every table the product writes, but the API tokens' (a token's use is recorded whatever the request)."""
    return {table: rows for table, rows in form_fuzz.fingerprint().items() if table != "cab_apitoken"}


@pytest.fixture
def paths(tmp_path, client, admin_user, as_token, study):
    """Each path's (field, message) of its one error for a file (or, the API's JSON body, its items)."""
    client.force_login(admin_user)
    api = as_token(admin_user, scopes=["ingest"])
    url = f"/api/v1/studies/{study.slug}/conversations/"

    def command(content: str) -> tuple[str, str]:
        path = tmp_path / "conversations.jsonl"
        path.write_text(content, encoding="utf-8")
        with pytest.raises(CommandError) as refused:
            call_command("import_conversations", str(path), stdout=io.StringIO())
        return _one(str(refused.value))

    def page(content: str) -> tuple[str, str]:
        answer = client.post(reverse("conversations-upload", args=[study.slug]),
                             {"file": SimpleUploadedFile("conversations.jsonl", content.encode())})
        assert answer.status_code == 200, answer.status_code  # the form again, with the errors
        return _one(html.unescape(answer.content.decode()).replace("<li>", "\n").replace("</li>", "\n"))

    def api_answer(answer) -> tuple[str, str]:
        assert answer.status_code == 400, answer.content
        [error] = answer.json()["errors"]
        return error["field"], error["message"]

    return {
        "import_conversations": command,
        "the upload page": page,
        "the API, JSON Lines": lambda content: api_answer(
            api.generic("POST", url, (content or "\n").encode(), content_type="application/x-ndjson")),
        "the API, a JSON array": lambda content: api_answer(api.post(url, [], format="json")),
        "the API, a file": lambda content: api_answer(api.post(
            url + "upload/", {"file": SimpleUploadedFile("conversations.jsonl", content.encode())},
            format="multipart")),
    }


def _one(text: str) -> tuple[str, str]:
    found = re.findall(r"^(?:line|item) \d+: ([\w.\[\]]+): (.*)$", text, re.MULTILINE)
    assert len(found) == 1, text[:2000]
    return found[0]


@pytest.mark.parametrize("label", list(EMPTY_FILES))
def test_no_conversation_is_refused_alike_by_every_path(paths, label):
    before = _written()
    said = {}
    for path, send in paths.items():
        said[path] = send(EMPTY_FILES[label])[1]
    assert set(said.values()) == {NOTHING}, "\n".join(f"{path}: {message}" for path, message in said.items())
    assert _written() == before


@pytest.mark.parametrize("label", list(EMPTY_FILES))
def test_no_response_is_refused_alike_by_every_path_of_the_api(client, admin_user, as_token, study, label):
    """The responses' paths (a JSON Lines body, a JSON array, a file) answer a request without a response as the
    conversations' do, and as ``cab ingest responses`` refuses an empty file; before, they imported nothing and
    said it was done."""
    api = as_token(admin_user, scopes=["ingest"])
    url = f"/api/v1/studies/{study.slug}/responses/"
    before = _written()
    answers = [api.generic("POST", url, (EMPTY_FILES[label] or "\n").encode(), content_type="application/x-ndjson"),
               api.post(url, [], format="json"),
               api.post(url + "upload/", {"file": SimpleUploadedFile("responses.jsonl", EMPTY_FILES[label].encode())},
                        format="multipart")]
    for answer in answers:
        assert answer.status_code == 400, answer.content
        [error] = answer.json()["errors"]
        assert (error["field"], error["message"]) == ("items", "no responses: nothing to import")
    assert _written() == before
