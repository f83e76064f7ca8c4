"""Every command that is given a file (``manage.py import_judgments``, ``import_session_labels``,
``import_conversations``, ``import_study``, ``install_schema``, ``export_bundle``; ``cab import``, ``cab ingest``,
``cab download``) refuses one it cannot use alike: the same words (``PATH: no such file``), the same exit status
(2, a usage error, as a wrong argument), nothing read or written (common.command_files). A file read and refused is
1 on every path. Before, ``cab import`` of a missing file exited 2 with Python's "[Errno 2] No such file or
directory" while ``import_judgments`` exited 1, a folder was "no such file" to the one and "[Errno 21]" to the
other, and an empty file was a usage error to ``cab ingest`` ("no items") and the file's refusal to
``import_conversations``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.core.management import execute_from_command_line

from tests import form_fuzz
from tests.api.test_cli import SLUG
from tests.api.test_cli import cab as cab  # noqa: F401, PLC0414 - the fixture
from tests.factories import conversations_without_responses, jsonl, response_items

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

LOGGED = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ [A-Z]+ ")


@pytest.fixture
def manage(capsys):
    """Runs ``manage.py ARGS`` in this process as a shell would (its exit status as ``sys.exit`` gives it) and gives
    (exit status, standard output, standard error)."""

    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        try:
            execute_from_command_line(["manage.py", *args])
            status = 0
        except SystemExit as stop:
            status = stop.code if isinstance(stop.code, int) else 1
        out, err = capsys.readouterr()
        return status, out, err

    return run


# (path, the arguments before the file, the arguments after it, the file's name)
READERS = [
    ("manage.py import_judgments", ("import_judgments",), ("--study", SLUG), "judgments.csv"),
    ("manage.py import_session_labels", ("import_session_labels",), ("--study", SLUG), "labels.csv"),
    ("manage.py import_conversations", ("import_conversations",), (), "conversations.jsonl"),
    ("manage.py import_study", ("import_study",), (), "study.jsonl.gz"),
    ("manage.py install_schema", ("install_schema",), (), "schema.json"),
    ("cab import", ("import",), (), "judgments.csv"),
    ("cab ingest conversations", ("ingest", "conversations"), (), "conversations.jsonl"),
    ("cab ingest responses", ("ingest", "responses"), (), "responses.jsonl"),
]


def _written() -> dict[str, tuple[int, str]]:
    """Every table the product writes, but the API tokens' (a token's use is recorded whatever the request)."""
    return {table: rows for table, rows in form_fuzz.fingerprint().items() if table != "cab_apitoken"}


def _run(manage, cab, path: str, *args: str) -> tuple[int, str, str]:
    return cab(*args) if path.startswith("cab ") else manage(*args)


def _said(err: str) -> str:
    """The message alone: ``cab: `` or Django's ``CommandError: `` before it, and no line of the test process's own
    log (the client's requests, logged once a command in this process set Django's logging up)."""
    lines = [line for line in err.strip().splitlines() if not LOGGED.match(line)]
    return "\n".join(lines).removeprefix("cab: ").removeprefix("CommandError: ")


@pytest.mark.parametrize("unusable", ["missing", "a folder"])
def test_a_file_that_cannot_be_read_is_a_usage_error_alike_on_every_path(manage, cab, tmp_path, unusable):
    if unusable == "a folder":
        for _, _, _, name in READERS:
            (tmp_path / name).mkdir(exist_ok=True)
    why = {"missing": "no such file", "a folder": "a folder, not a file"}[unusable]
    before = _written()
    said = {}
    for path, head, tail, name in READERS:
        status, out, err = _run(manage, cab, path, *head, name, *tail)
        said[path] = (status, out, _said(err))
    expected = {path: (2, "", f"{name}: {why}") for path, _, _, name in READERS}
    assert said == expected
    assert _written() == before


def test_a_file_whose_name_says_no_format_is_a_usage_error_alike_on_every_path(manage, cab, tmp_path):
    (tmp_path / "judgments.txt").write_text("study,round\n")
    before = _written()
    said = {path: _run(manage, cab, path, *head, "judgments.txt", *tail)
            for path, head, tail in [("manage.py import_judgments", ("import_judgments",), ("--study", SLUG)),
                                     ("manage.py import_session_labels", ("import_session_labels",), ("--study", SLUG)),
                                     ("cab import", ("import",), ())]}
    message = ("judgments.txt: its name does not say its format (.csv, .jsonl or .ndjson): say it with --format "
               "csv|jsonl")
    assert {path: (status, out, _said(err)) for path, (status, out, err) in said.items()} == dict.fromkeys(
        said, (2, "", message))
    assert _written() == before


@pytest.mark.parametrize("content", ["", "\n \n\n"])
def test_a_file_without_an_item_is_refused_alike_by_cab_and_the_command(manage, cab, tmp_path, content):
    """The server's words ("no conversations: nothing to import", its line), exit status 1 as for any file refused:
    before, ``cab ingest`` said "no items" with the status of a usage error (2)."""
    (tmp_path / "conversations.jsonl").write_text(content)
    (tmp_path / "responses.jsonl").write_text(content)
    before = _written()
    status, out, err = manage("import_conversations", "conversations.jsonl")
    assert (status, out) == (1, "")
    assert "line 1: file: no conversations: nothing to import" in err
    for what in ("conversations", "responses"):
        status, out, err = cab("ingest", what, f"{what}.jsonl")
        assert (status, out) == (1, ""), err
        assert f"line 1: items: no {what}: nothing to import" in err
    assert _written() == before


def test_a_file_refused_by_its_rows_exits_1_on_every_path(manage, cab, tmp_path):
    """A file read and refused is not a usage error: 1 on the command and on cab alike, naming the line."""
    for what, items in (("conversations", conversations_without_responses()), ("responses", response_items())):
        (tmp_path / f"{what}.jsonl").write_text(jsonl(items))
        assert cab("ingest", what, f"{what}.jsonl")[0] == 0
    (tmp_path / "judgments.jsonl").write_text(json.dumps({"study": SLUG, "round": "main"}) + "\n")
    before = _written()
    for path, args in (("manage.py", ("import_judgments", "judgments.jsonl", "--study", SLUG)),
                       ("cab", ("import", "judgments.jsonl"))):
        status, out, err = _run(manage, cab, f"{path} ", *args)
        assert (status, out) == (1, ""), (path, err)
        assert "line 1: reviewer: required" in err, (path, err)
    assert _written() == before


def test_a_file_to_write_into_a_folder_that_does_not_exist_is_a_usage_error_alike(manage, cab, tmp_path):
    """``export_bundle`` and ``cab download`` name the missing folder before they ask for or build anything (the
    bundle of a paper-scale run takes 38 s to build); before, the command said "… is not a folder" with status 1
    after building it, and cab "[Errno 2] No such file or directory: '….part.etag'"."""
    target = Path("nowhere") / "bundle.zip"
    said = {"manage.py export_bundle": manage("export_bundle", SLUG, str(target)),
            "cab download bundle": cab("download", "bundle", "-o", str(target)),
            "cab download judgments": cab("download", "judgments", "-o", str(target))}
    assert {path: (status, out, _said(err)) for path, (status, out, err) in said.items()} == dict.fromkeys(
        said, (2, "", "nowhere: no such folder"))
    assert not (tmp_path / "nowhere").exists()


def test_a_wrong_item_of_a_json_array_is_named_by_its_index_as_the_api_names_it(cab, tmp_path, monkeypatch):
    """``cab ingest`` of a JSON array names a wrong element by its place in the array, the ``index`` the API's
    answer gives for the same array sent as one request; before, every element of an array was "line 1"."""
    from cab_cli import main as cli

    monkeypatch.setattr(cli, "PART_ITEMS", 3)  # the wrong element is in the second part: its index is the file's
    (tmp_path / "conversations.jsonl").write_text(jsonl(conversations_without_responses()))
    assert cab("ingest", "conversations", "conversations.jsonl")[0] == 0
    responses = response_items()[:7]
    responses[4] = {**responses[4], "turn_index": 999}
    (tmp_path / "responses.json").write_text(json.dumps(responses, indent=1))
    before = _written()
    import httpx

    answer = httpx.post(f"{cab.url}/api/v1/studies/{SLUG}/responses/", json=responses,
                        headers={"Authorization": f"Bearer {cab.token}"})
    assert answer.status_code == 400
    [error] = answer.json()["errors"]
    assert (error["index"], error["field"]) == (4, "turn_index")
    assert _written() == before
    status, out, err = cab("ingest", "responses", "responses.json")
    assert (status, out) == (1, "")
    assert f"  item 4: turn_index: {error['message']}" in err.splitlines()
    assert "part 1 of 3 was written; part 2 (items 3–5) and after were not" in err


def test_a_json_array_that_is_not_json_is_refused_as_the_files_fault_alike(manage, cab, tmp_path):
    """A file read and refused, exit 1 on ``cab ingest`` as on ``import_conversations``; before, cab called it a
    usage error (2)."""
    (tmp_path / "conversations.jsonl").write_text('[{"dataset": "D",\n')
    before = _written()
    status, out, err = manage("import_conversations", "conversations.jsonl")
    assert (status, out) == (1, "") and "not valid JSON" in err
    status, out, err = cab("ingest", "conversations", "conversations.jsonl")
    assert (status, out) == (1, "") and "not valid JSON" in err
    assert _written() == before



IMPORT_PATHS = ["manage.py import_judgments", "the API, the file as the body", "the API, a form upload", "cab import"]


@pytest.mark.parametrize("path", IMPORT_PATHS)
def test_the_same_export_imported_by_any_path_stores_the_same_judgments(manage, cab, tmp_path, path):
    """A study's export imported back into it emptied of judgments, by each path: the same judgments (its export
    byte for byte, both formats), each one's history starting with the import, one audit event counting them; sent
    again, nothing written and every row counted unchanged, or (``cab import``, whose Idempotency-Key is the file's)
    the first answer, said to be replayed; before, cab gave the first answer's "created" counts as its own."""
    import httpx

    from annotation import long_format
    from annotation.models import Judgment, JudgmentRevision, Study
    from annotation.services import judgments_purge
    from audit.models import AuditEvent
    from tests.api.test_cli import coded_study

    coded_study(cab, tmp_path)
    study = Study.objects.get(slug=SLUG)
    exported = {fmt: "".join(long_format.WRITERS[fmt](study=study)).encode() for fmt in ("csv", "jsonl")}
    judgments_purge(judgments=Judgment.objects.filter(round__study=study), by=None, reason="test: import it again")
    (tmp_path / "judgments.jsonl").write_bytes(exported["jsonl"])
    rows = exported["jsonl"].count(b"\n")

    def send() -> dict:
        if path.startswith("manage.py"):
            status, out, err = manage("import_judgments", "judgments.jsonl", "--study", SLUG)
            assert status == 0, err
            created, unchanged = re.search(r"(\d+) judgments and \d+ spans imported .*; (\d+) unchanged", out).groups()
            return {"judgments_created": int(created), "judgments_unchanged": int(unchanged)}
        if path == "cab import":
            status, out, err = cab("import", "judgments.jsonl")
            assert status == 0, err
            return json.loads(out)
        url, auth = f"{cab.url}/api/v1/studies/{SLUG}/judgments/import/", {"Authorization": f"Bearer {cab.token}"}
        answer = (httpx.post(url, content=exported["jsonl"], headers={**auth, "Content-Type": "application/x-ndjson"})
                  if path == "the API, the file as the body" else
                  httpx.post(url, files={"file": ("judgments.jsonl", exported["jsonl"])}, headers=auth))
        assert answer.status_code == 200, answer.text
        return answer.json()

    first = send()
    assert (first["judgments_created"], first["judgments_unchanged"]) == (rows, 0)
    assert {fmt: "".join(long_format.WRITERS[fmt](study=study)).encode() for fmt in exported} == exported
    assert set(JudgmentRevision.objects.filter(judgment__round__study=study).values_list("source", flat=True)) == {
        JudgmentRevision.Source.IMPORT}
    event = AuditEvent.objects.filter(action="judgments.import", study_slug=SLUG).order_by("-pk").first()
    assert (event.data["created"], event.data["unchanged"]) == (rows, 0)
    before = _written()
    again = send()
    if path == "cab import":  # the same file under the same Idempotency-Key: the first answer, said to be it
        assert again == {**first, "replayed": True}
    else:
        assert (again["judgments_created"], again["judgments_unchanged"]) == (0, rows)
    assert "replayed" not in first
    assert {t: v for t, v in _written().items() if t != "audit_auditevent"} == {
        t: v for t, v in before.items() if t != "audit_auditevent"}


def test_cab_ingest_sent_again_says_its_parts_were_answered_with_their_first_answers(cab, tmp_path):
    from cab_cli import main as cli

    (tmp_path / "conversations.jsonl").write_text(jsonl(conversations_without_responses()))
    status, out, err = cab("ingest", "conversations", "conversations.jsonl")
    assert status == 0, err
    first = json.loads(out)
    assert "replayed_parts" not in first and first["conversations_created"] > 0
    status, out, err = cab("ingest", "conversations", "conversations.jsonl")
    assert status == 0, err
    assert json.loads(out) == {**first, "replayed_parts": 1}
    assert first["items"] <= cli.PART_ITEMS  # one part


@pytest.mark.parametrize("output, said", [
    ("nowhere/study.jsonl", "nowhere: no such folder"),
    ("nowhere/", "nowhere/ is not a folder: make it first, or name a file without the final /"),
    ("a-folder", "a-folder: a folder, not a file"),
])
def test_export_study_refuses_a_file_it_cannot_write_as_export_bundle_does(manage, cab, tmp_path, output, said):
    """``export_study -o`` is a command that writes a file too (common.command_files): a folder not made yet is
    refused before anything is read, in the words and with the exit status of ``export_bundle`` and ``cab
    download``. Before, ``-o nowhere/`` wrote the archive as a file named ``nowhere`` (the next write into
    ``nowhere/`` over it), ``-o nowhere/study.jsonl`` said Python's "No such file or directory" of a ``.partial`` file
    with status 1, and ``-o a-folder`` exported the whole study before failing on the folder with status 1."""
    (tmp_path / "a-folder").mkdir()
    status, out, err = manage("export_study", SLUG, "-o", output)
    assert (status, out, _said(err)) == (2, "", said)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a-folder"]
    assert list((tmp_path / "a-folder").iterdir()) == []


@pytest.mark.parametrize("output, said", [
    ("nowhere/judgments.csv", "nowhere: no such folder"),
    ("a-folder", "a-folder: a folder, not a file"),
])
def test_export_judgments_refuses_a_file_it_cannot_write_as_export_study_does(manage, tmp_path, monkeypatch, output,
                                                                               said):
    """``export_judgments -o`` names a file, as ``export_study -o`` does (common.command_files.output_file): a folder
    is refused before anything is read, in the same words and status. Before, ``-o a-folder`` was taken for a file
    to write (its temporary file made beside the folder, to be renamed onto it at the end), and refused later or not
    in these words."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-folder").mkdir()
    status, out, err = manage("export_judgments", "--study", SLUG, "-o", output)
    assert (status, out, _said(err)) == (2, "", said)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a-folder"]
    assert list((tmp_path / "a-folder").iterdir()) == []


def test_a_lone_surrogate_escape_in_a_json_array_is_the_servers_refusal_as_in_json_lines(cab, tmp_path):
    """JSON's ``\\ud800`` escape reads as a lone surrogate, which no UTF-8 holds: ``cab ingest`` sent a JSON Lines
    line with it as it is, for the server to refuse by its line ("may not contain lone surrogate characters"), but
    re-encoded each element of a JSON array as UTF-8 and stopped with a Python traceback (UnicodeEncodeError),
    nothing said of the file. The element is sent as the file gives it, and refused alike, by its index."""
    (tmp_path / "conversations.jsonl").write_text(jsonl(conversations_without_responses()))
    assert cab("ingest", "conversations", "conversations.jsonl")[0] == 0
    responses = response_items()[:3]
    responses[1] = {**responses[1], "text": "a lone \ud800 surrogate"}
    (tmp_path / "responses.jsonl").write_text("".join(json.dumps(item) + "\n" for item in responses))
    (tmp_path / "responses.json").write_text(json.dumps(responses))
    before = _written()
    said = {}
    for name, where in (("responses.jsonl", "line 2"), ("responses.json", "item 1")):
        status, out, err = cab("ingest", "responses", name)
        said[name] = (status, out, [line.removeprefix(f"  {where}: ") for line in err.splitlines()
                                    if line.startswith(f"  {where}: ")])
    [message] = said["responses.jsonl"][2]
    assert message.startswith("text: ") and "lone surrogate" in message
    assert said == dict.fromkeys(("responses.jsonl", "responses.json"), (1, "", [message]))
    assert _written() == before
