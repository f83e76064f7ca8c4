"""Issue 33 item 2: the researcher CLI ``cab`` against a live server with a real token — ingest in parts (a resend
writes nothing twice; a wrong line is named by its line in the user's file), import, a metric run waited for,
downloads that resume (after a connection cut by a real proxy, from a ``.part`` of an earlier run, and from scratch
when the file changed on the server), a corrupt part refused, and the installed console script itself."""

from __future__ import annotations

import base64
import contextlib
import datetime
import hashlib
import json
import os
import re
import socket
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import httpx
import pytest

from access import roles
from access.services import user_ensure
from annotation import long_format
from annotation.models import Judgment, Study
from api import services as api_services
from api.models import IdempotencyRecord
from benchmark.models import ModelResponse
from cab_cli import main as cli
from metrics import selectors as metrics_selectors
from metrics.models import MetricRun
from tests.api.test_generated_client import judgments_csv
from tests.factories import MetricRunFactory, StudyFactory, conversations_without_responses, jsonl, response_items

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

SLUG = "cab-demo"


@pytest.fixture
def cab(live_server, monkeypatch, capsys, tmp_path):
    """Runs ``cab ARGS`` in this process as a researcher's shell would (CAB_URL, CAB_TOKEN, CAB_STUDY set) and gives
    (exit status, standard output, standard error)."""
    admin = user_ensure(username="cli-admin", role=roles.ADMIN)
    StudyFactory(slug=SLUG)
    _, token = api_services.api_token_create(user=admin, name="cli", by=None,
                                             scopes=["ingest", "import", "read", "metrics"])
    monkeypatch.setenv("CAB_URL", live_server.url)
    monkeypatch.setenv("CAB_TOKEN", token)
    monkeypatch.setenv("CAB_STUDY", SLUG)
    monkeypatch.setenv("CAB_PROGRESS", "0")
    monkeypatch.chdir(tmp_path)

    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        try:
            status = cli.main(list(args))
        except SystemExit as stop:
            status = int(stop.code or 0)
        out, err = capsys.readouterr()
        return status, out, err

    run.token = token
    run.url = live_server.url
    return run


@pytest.fixture
def eager(settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True


def export(fmt: str = "csv") -> bytes:
    return "".join(long_format.WRITERS[fmt](study=Study.objects.get(slug=SLUG))).encode()


def coded_study(cab, tmp_path: Path) -> int:
    (tmp_path / "conversations.jsonl").write_text(jsonl(conversations_without_responses()))
    (tmp_path / "responses.jsonl").write_text(jsonl(response_items()))
    content, rows = judgments_csv()
    (tmp_path / "judgments.csv").write_bytes(content)
    for args in (("ingest", "conversations", "conversations.jsonl"), ("ingest", "responses", "responses.jsonl"),
                 ("import", "judgments.csv")):
        status, out, err = cab(*args)
        assert status == 0, err
    return rows


def test_ingest_in_parts_import_run_and_download(cab, tmp_path, monkeypatch, eager):
    monkeypatch.setattr(cli, "PART_ITEMS", 4)  # the demo's responses go in several parts
    conversations, responses = conversations_without_responses(), response_items()
    (tmp_path / "conversations.jsonl").write_text(jsonl(conversations))
    (tmp_path / "responses.jsonl").write_text("\n" + jsonl(responses))  # a blank first line: line numbers shift

    status, out, err = cab("ingest", "conversations", "conversations.jsonl")
    assert status == 0, err
    summary = json.loads(out)
    assert (summary["items"], summary["conversations_created"]) == (len(conversations), len(conversations))
    status, out, err = cab("ingest", "responses", "responses.jsonl")
    assert status == 0, err
    summary = json.loads(out)
    assert summary["parts"] == -(-len(responses) // 4) and summary["created"] == len(responses)
    assert ModelResponse.objects.count() == len(responses)

    # Sent again: the same parts with the same keys get their first answers back, and nothing is written twice.
    status, out, err = cab("ingest", "responses", "responses.jsonl")
    assert status == 0, err
    assert ModelResponse.objects.count() == len(responses)

    content, rows = judgments_csv()
    (tmp_path / "judgments.csv").write_bytes(content)
    status, out, err = cab("import", "judgments.csv")
    assert status == 0, err
    assert json.loads(out)["judgments_created"] == rows == Judgment.objects.count()

    status, out, err = cab("run", "--bootstrap", "20", "--seed", "3")
    assert status == 0, err
    run = json.loads(out)
    assert (run["status"], run["parameters"]["bootstrap"], run["parameters"]["seed"]) == ("succeeded", 20, 3)
    status, out, err = cab("download", "report", "-o", "report.json")
    assert status == 0, err
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["run"]["id"] == run["run"] and report["input"]["judgments"] == rows
    # The provenance headers travel with the file (docs/metrics.md#provenance): FILE.provenance.json beside it.
    assert json.loads(out)["provenance"] == "report.json.provenance.json"
    said = json.loads((tmp_path / "report.json.provenance.json").read_text())
    software = json.dumps(report["software"], sort_keys=True, separators=(",", ":"))
    assert said == {"CAB-Run": str(run["run"]), "CAB-Run-Finished": report["run"]["finished_at"][:19] + "Z",
                    "CAB-Parameters": json.dumps(report["parameters"], sort_keys=True, separators=(",", ":")),
                    "CAB-Software": software, "CAB-Input-Fingerprint": report["input"]["fingerprint"]}
    status, out, err = cab("download", "bundle")  # the newest succeeded run's
    assert status == 0, err
    bundle_path = tmp_path / f"{SLUG}-run{run['run']}-bundle.zip"
    with zipfile.ZipFile(bundle_path) as bundle:
        assert bundle.read("report.json") == (tmp_path / "report.json").read_bytes()
    bundle_said = json.loads(Path(json.loads(out)["provenance"]).read_text())
    digest = base64.b64encode(hashlib.sha256(bundle_path.read_bytes()).digest()).decode()
    assert bundle_said == {**said, "Repr-Digest": f"sha-256=:{digest}:"}

    for fmt in ("csv", "jsonl"):
        status, out, err = cab("download", "judgments", "--format", fmt)
        assert status == 0, err
        done = json.loads(out)
        assert (tmp_path / f"{SLUG}-judgments.{fmt}").read_bytes() == export(fmt)
        assert done["resumed_from"] == 0 and not list(tmp_path.glob("*.part*"))
        said = json.loads((tmp_path / f"{SLUG}-judgments.{fmt}.provenance.json").read_text())
        assert done["provenance"] == f"{SLUG}-judgments.{fmt}.provenance.json"
        assert set(said) == {"CAB-Software", "CAB-Exported", "Repr-Digest"} and json.loads(said["CAB-Software"])
        assert said["Repr-Digest"] == f"sha-256=:{base64.b64encode(hashlib.sha256(export(fmt)).digest()).decode()}:"


@pytest.mark.slow(30)
def test_an_import_whose_name_says_no_format_is_refused_and_format_says_it(cab, tmp_path):
    """The server's rule (common.file_formats), as `manage.py import_judgments` and the API's upload refuse such a
    file: before, `cab import` sent any name but .csv as JSON Lines, and a CSV named .txt was refused by "line 1:
    not JSON". The Idempotency-Key carries the format: the same bytes sent again as the other format are another
    request, not the first answer replayed (before, the JSON Lines send below was answered with the CSV's
    summary)."""
    (tmp_path / "conversations.jsonl").write_text(jsonl(conversations_without_responses()))
    (tmp_path / "responses.jsonl").write_text(jsonl(response_items()))
    for what in ("conversations", "responses"):
        assert cab("ingest", what, f"{what}.jsonl")[0] == 0
    content, rows = judgments_csv()
    (tmp_path / "judgments.txt").write_bytes(content)
    status, out, err = cab("import", "judgments.txt")
    assert (status, out) == (2, "")
    assert err == ("cab: judgments.txt: its name does not say its format (.csv, .jsonl or .ndjson): say it with "
                   "--format csv|jsonl\n")
    assert Judgment.objects.count() == 0
    status, out, err = cab("import", "judgments.txt", "--format", "csv")
    assert status == 0, err
    assert json.loads(out)["judgments_created"] == rows == Judgment.objects.count()
    status, out, err = cab("import", "judgments.txt", "--format", "jsonl")
    assert status == 1 and "line 1" in err and "JSON" in err, (status, out, err)
    assert Judgment.objects.count() == rows


def test_an_import_over_the_body_limit_lands_streamed(cab, tmp_path):
    """Before, `cab import` read the file whole and the server refused any over 64 MiB (413): a paper-scale study's
    judgments (203 MB as JSON Lines) could not be imported without shell access to the server. The file here is the
    study's own export padded with blank lines; the command and the live server (one process) hold no copy of it."""
    import tracemalloc

    from annotation.services import judgments_purge
    from common.uploads import MIB
    from tests.api.test_import_streamed import padded

    coded_study(cab, tmp_path)
    rows = list(long_format.judgment_rows(study=Study.objects.get(slug=SLUG)))
    content = padded(export("jsonl"), 64 * MIB)
    judgments_purge(judgments=Judgment.objects.all(), by=None, reason="test: import it again")
    (tmp_path / "judgments.jsonl").write_bytes(content)
    del content
    tracemalloc.start()
    try:
        status, out, err = cab("import", "judgments.jsonl")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert status == 0, err
    assert json.loads(out)["judgments_created"] == len(rows)
    assert list(long_format.judgment_rows(study=Study.objects.get(slug=SLUG))) == rows
    assert peak < 16 * MIB, f"{peak:,} bytes at the peak"

    # Sent again: the Idempotency-Key gets the first answer back; under another key (another token, the key's day
    # gone) an identical file is all unchanged, and nothing is written twice.
    status, out, err = cab("import", "judgments.jsonl")
    assert status == 0 and json.loads(out)["judgments_created"] == len(rows), err
    IdempotencyRecord.objects.all().delete()
    status, out, err = cab("import", "judgments.jsonl")
    assert status == 0, err
    assert (json.loads(out)["judgments_created"], json.loads(out)["judgments_unchanged"]) == (0, len(rows))
    assert list(long_format.judgment_rows(study=Study.objects.get(slug=SLUG))) == rows


def test_an_import_the_server_could_not_take_is_sent_again_as_late_as_its_retry_after(cab, tmp_path, monkeypatch):
    content, rows = judgments_csv()
    (tmp_path / "judgments.csv").write_bytes(content)
    (tmp_path / "conversations.jsonl").write_text(jsonl(conversations_without_responses()))
    (tmp_path / "responses.jsonl").write_text(jsonl(response_items()))
    for args in (("ingest", "conversations", "conversations.jsonl"), ("ingest", "responses", "responses.jsonl")):
        assert cab(*args)[0] == 0
    asked: list[float] = []
    with _in_front(monkeypatch, _busy_once(cab.url, asked)):
        status, out, err = cab("import", "judgments.csv")
    assert status == 0, err
    assert json.loads(out)["judgments_created"] == rows == Judgment.objects.count()
    assert len(asked) == 2 and asked[1] - asked[0] >= 1.0, asked
    assert "sending it again in 1 s (the server's Retry-After)" in err, err


@pytest.mark.parametrize("lost", ["no answer", "a proxy's 504"])
def test_an_import_that_may_have_landed_is_not_sent_again(cab, tmp_path, monkeypatch, lost):
    (tmp_path / "judgments.csv").write_bytes(judgments_csv()[0])
    asked: list[bytes] = []

    def landed_perhaps(headers, path: str, body: bytes):  # noqa: ANN001, ANN202
        asked.append(body)
        return None if lost == "no answer" else (504, "text/plain", b"upstream timed out")

    with _in_front(monkeypatch, landed_perhaps):
        status, out, err = cab("import", "judgments.csv")
    assert status == 1 and out == "" and len(asked) == 1
    assert "the import may have landed" in err and "Run the same command again".lower() in err.lower(), err


def test_a_file_that_begins_with_a_utf8_bom_is_read_as_without_it(tmp_path):
    """As the server's paths read it (utf-8-sig); before, a JSON array with the mark was split as JSON Lines."""
    items = conversations_without_responses()[:2]
    for name, text in (("c.jsonl", jsonl(items)), ("c.json", json.dumps(items, indent=1))):
        plain, marked = tmp_path / name, tmp_path / f"bom-{name}"
        plain.write_text(text, encoding="utf-8")
        marked.write_text(text, encoding="utf-8-sig")
        assert list(cli._records(marked)) == list(cli._records(plain))
        assert [json.loads(record) for _, record in cli._records(marked)] == items


def test_a_line_ends_at_a_newline_only_as_on_the_server(tmp_path):
    """A "\r" is JSON's whitespace, not a line's end (common.errors.JSON_LINES_NEWLINE): a record with one between
    its fields is one record, and the lines after it keep the numbers the server gives them. Before, the CLI split
    there and numbered every later line one higher than the server's error named it."""
    first, second = conversations_without_responses()[:2]
    path = tmp_path / "c.jsonl"
    path.write_bytes(json.dumps(first).replace(", ", ",\r", 1).encode() + b"\r\n\n" + json.dumps(second).encode())
    assert [(number, json.loads(record)) for number, record in cli._records(path)] == [(1, first), (3, second)]


def test_a_refused_part_names_its_lines_and_what_was_written(cab, tmp_path, monkeypatch):
    monkeypatch.setattr(cli, "PART_ITEMS", 3)
    (tmp_path / "conversations.jsonl").write_text(jsonl(conversations_without_responses()))
    assert cab("ingest", "conversations", "conversations.jsonl")[0] == 0
    responses = response_items()[:7]
    responses[4] = {**responses[4], "turn_index": 999}
    (tmp_path / "responses.jsonl").write_text(jsonl(responses))
    status, out, err = cab("ingest", "responses", "responses.jsonl")
    assert status == 1 and out == ""
    line = next(line for line in err.splitlines() if line.strip().startswith("line 5:"))
    assert "turn_index" in line
    assert "part 1 of 3 was written; part 2 (lines 4–6) and after were not" in err
    assert ModelResponse.objects.count() == 3  # part 1 only: part 2 was refused whole, part 3 never sent


@contextlib.contextmanager
def _in_front(monkeypatch, answer):  # noqa: ANN001, ANN202
    """A server of the test's own in front of (or instead of) the live one, for the CLI's CAB_URL: each POST (and
    GET, its body empty) is answered by ``answer(headers, path, body)``, a (status, content type, content) with
    optionally a dict of more headers, or None to close the connection without an answer (an answer lost on its way
    back)."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class InFront(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the standard library's name
            answered = answer(self.headers, self.path, self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            if answered is None:
                self.close_connection = True
                return
            status, content_type, content, *more = answered
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(content)))
            for name, value in (more[0] if more else {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(content)

        do_GET = do_POST  # noqa: N815 - the standard library's name

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), InFront)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("CAB_URL", f"http://127.0.0.1:{server.server_address[1]}")
        yield
    finally:
        server.shutdown()


def test_a_part_the_server_could_not_take_says_the_file_is_not_at_fault(cab, tmp_path, monkeypatch):
    """A proxy in front of a server that is away answers 503 (as the server itself does while its database is
    unreachable): nothing was written and the file is fine, so the advice is to send it again, not to fix it."""
    with _in_front(monkeypatch, lambda *_: (503, "text/plain", b"the upstream server is restarting")):
        (tmp_path / "conversations.jsonl").write_text(jsonl(conversations_without_responses()))
        status, out, err = cab("ingest", "conversations", "conversations.jsonl")
    assert status == 1 and out == ""
    assert "HTTP 503: the upstream server is restarting" in err
    assert "the server was unavailable, not the file at fault: send the same file again" in err
    assert "fix the file" not in err


def test_usage_errors_name_what_is_missing(cab, monkeypatch, tmp_path):
    monkeypatch.delenv("CAB_STUDY")
    status, _, err = cab("download", "judgments")
    assert status == 2 and "--study SLUG, or set CAB_STUDY" in err
    monkeypatch.delenv("CAB_TOKEN")
    status, _, err = cab("studies")
    assert status == 2 and "set CAB_TOKEN" in err
    monkeypatch.setenv("CAB_TOKEN", "not-a-token")
    status, _, err = cab("studies")
    assert status == 1 and "HTTP 401" in err


class CuttingProxy:
    """A TCP proxy in front of the live server that cuts its first connection after ``cut`` bytes of the answer,
    as a dropped connection would; every later connection is passed through whole."""

    def __init__(self, upstream: str, cut: int) -> None:
        host, port = upstream.removeprefix("http://").split(":")
        self.upstream, self.cut, self.connections = (host, int(port)), cut, 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self) -> None:
        while True:
            try:
                downstream, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            limit = self.cut if self.connections == 1 else None
            upstream = socket.create_connection(self.upstream)
            threading.Thread(target=self.pump, args=(downstream, upstream, None), daemon=True).start()
            threading.Thread(target=self.pump, args=(upstream, downstream, limit), daemon=True).start()

    @staticmethod
    def pump(source: socket.socket, target: socket.socket, limit: int | None) -> None:
        sent = 0
        try:
            while block := source.recv(4096):
                if limit is not None and sent + len(block) >= limit:
                    target.sendall(block[:limit - sent])
                    break
                target.sendall(block)
                sent += len(block)
        except OSError:
            pass
        for side in (source, target):
            with contextlib.suppress(OSError):
                side.shutdown(socket.SHUT_RDWR)
            side.close()

    def close(self) -> None:
        self.listener.close()


def test_a_download_resumes_after_a_dropped_connection_and_across_runs(cab, tmp_path, monkeypatch):
    coded_study(cab, tmp_path)
    whole = export("jsonl")
    assert len(whole) > 4000
    etag = f'"sha256-{hashlib.sha256(whole).hexdigest()}"'

    # The connection drops after about 3 kB: the command resumes with a range and the file is whole.
    proxy = CuttingProxy(cab.url, cut=3000)
    monkeypatch.setenv("CAB_URL", proxy.url)
    monkeypatch.setattr("cab_cli.download._pause", lambda seconds: None)
    try:
        status, out, err = cab("download", "judgments", "--format", "jsonl", "-o", "cut.jsonl")
    finally:
        proxy.close()
    assert status == 0, err
    done = json.loads(out)
    assert "resuming (attempt 2)" in err and 0 < done["resumed_from"] < 3000
    assert (tmp_path / "cut.jsonl").read_bytes() == whole and proxy.connections == 2
    monkeypatch.setenv("CAB_URL", cab.url)

    # An earlier run left a part: only the rest is asked for.
    (tmp_path / "again.jsonl.part").write_bytes(whole[:1234])
    (tmp_path / "again.jsonl.part.etag").write_text(etag + "\n")
    status, out, err = cab("download", "judgments", "--format", "jsonl", "-o", "again.jsonl")
    assert status == 0, err
    assert json.loads(out)["resumed_from"] == 1234 and (tmp_path / "again.jsonl").read_bytes() == whole

    # The file changed on the server since that part was written: the whole new file comes instead.
    (tmp_path / "old.jsonl.part").write_bytes(whole[:1234])
    (tmp_path / "old.jsonl.part.etag").write_text('"sha256-' + "0" * 64 + '"\n')
    status, out, err = cab("download", "judgments", "--format", "jsonl", "-o", "old.jsonl")
    assert status == 0, err
    assert "changed on the server" in err and json.loads(out)["resumed_from"] == 0
    assert (tmp_path / "old.jsonl").read_bytes() == whole

    # A part whose bytes are not the file's (the same ETag): the checksum refuses the result, nothing is left.
    (tmp_path / "bad.jsonl.part").write_bytes(b"x" * 1234)
    (tmp_path / "bad.jsonl.part.etag").write_text(etag + "\n")
    status, out, err = cab("download", "judgments", "--format", "jsonl", "-o", "bad.jsonl")
    assert status == 1 and "does not match the server's checksum" in err
    assert not any((tmp_path / name).exists() for name in ("bad.jsonl", "bad.jsonl.part", "bad.jsonl.part.etag"))

    # A part that is already whole (the earlier run stopped before renaming it): finished without a byte sent.
    (tmp_path / "whole.jsonl.part").write_bytes(whole)
    (tmp_path / "whole.jsonl.part.etag").write_text(etag + "\n")
    status, out, err = cab("download", "judgments", "--format", "jsonl", "-o", "whole.jsonl")
    assert status == 0, err
    assert (tmp_path / "whole.jsonl").read_bytes() == whole
    # Resumed or finished without a byte (a 416), the digest of the whole file is kept beside it all the same.
    digest = f"sha-256=:{base64.b64encode(hashlib.sha256(whole).digest()).decode()}:"
    for name in ("cut.jsonl", "again.jsonl", "whole.jsonl"):
        assert json.loads((tmp_path / f"{name}.provenance.json").read_text())["Repr-Digest"] == digest, name
    assert not (tmp_path / "bad.jsonl.provenance.json").exists()


def _served_name(cab, url: str) -> str:
    """The file name the server's answer to ``url`` gives (its Content-Disposition), as a browser would save it."""
    answer = httpx.get(cab.url + url, headers={"Authorization": f"Bearer {cab.token}"}, timeout=60)
    assert answer.status_code == 200, answer.text
    disposition = answer.headers["Content-Disposition"]
    assert disposition.startswith("attachment; filename="), disposition
    return disposition.split("filename=", 1)[1].strip('"')


def test_every_file_a_download_writes_is_named_as_the_server_names_it(cab, tmp_path, eager):
    """``cab download`` without ``-o`` saves each file under the name of the server's Content-Disposition for the
    same download (what a browser or ``curl -OJ`` saves): the bundle was ``STUDY-run-N-bundle.zip`` and the report
    ``STUDY-report.json`` where the server says ``STUDY-runN-bundle.zip`` and ``STUDY-report-runN.json``. Nothing
    else is left beside it but its provenance."""
    coded_study(cab, tmp_path)
    runs = []
    for _ in range(2):
        status, out, err = cab("run", "--bootstrap", "5")
        assert status == 0, err
        runs.append(json.loads(out)["run"])
    first, newest = runs
    cases = [(("judgments", "--format", "csv"), f"/api/v1/studies/{SLUG}/exports/judgments.csv"),
             (("judgments", "--format", "jsonl"), f"/api/v1/studies/{SLUG}/exports/judgments.jsonl"),
             (("bundle",), f"/api/v1/metric-runs/{newest}/bundle.zip"),
             (("bundle", "--run", str(first)), f"/api/v1/metric-runs/{first}/bundle.zip"),
             (("report",), f"/api/v1/studies/{SLUG}/exports/report.json"),
             (("report", "--run", str(first)), f"/api/v1/studies/{SLUG}/exports/report.json?run={first}")]
    for args, url in cases:
        before = set(tmp_path.iterdir())
        status, out, err = cab("download", *args)
        assert status == 0, err
        done = json.loads(out)
        name = _served_name(cab, url)
        assert Path(done["file"]).name == name, (args, done["file"], name)
        assert Path(done["provenance"]).name == f"{name}.provenance.json"
        assert {p.name for p in set(tmp_path.iterdir()) - before} == {name, f"{name}.provenance.json"}, args
    assert {f"{SLUG}-run{first}-bundle.zip", f"{SLUG}-report-run{newest}.json"} <= {p.name for p in
                                                                                     tmp_path.iterdir()}

    # -o names the file whatever the server calls it.
    status, out, err = cab("download", "bundle", "-o", "mine.zip")
    assert status == 0, err
    assert json.loads(out)["file"] == "mine.zip" and zipfile.is_zipfile(tmp_path / "mine.zip")


def test_a_download_without_run_takes_the_run_the_server_calls_newest(cab, tmp_path, eager):
    """The study's newest succeeded run is the one that finished last (``metrics.selectors.NEWEST_FIRST``): the
    report pages, the report's download without ``?run=`` and ``manage.py export_bundle`` take it. ``cab download
    report`` and ``bundle`` took the first of the runs list, which is by id: a run asked for earlier that finished
    later (sent again after an outage, a larger bootstrap on another worker) was passed over for an older report."""
    coded_study(cab, tmp_path)
    runs = []
    for _ in range(2):
        status, out, err = cab("run", "--bootstrap", "5")
        assert status == 0, err
        runs.append(json.loads(out)["run"])
    earlier, later = runs
    MetricRun.objects.filter(pk=earlier).update(
        finished_at=MetricRun.objects.get(pk=later).finished_at + datetime.timedelta(seconds=1))
    newest = metrics_selectors.metric_run_latest_succeeded(study=Study.objects.get(slug=SLUG))
    assert newest is not None and newest.pk == earlier
    assert _served_name(cab, f"/api/v1/studies/{SLUG}/exports/report.json") == f"{SLUG}-report-run{earlier}.json"
    for what, name in (("report", f"{SLUG}-report-run{earlier}.json"), ("bundle", f"{SLUG}-run{earlier}-bundle.zip")):
        status, out, err = cab("download", what)
        assert status == 0, err
        assert Path(json.loads(out)["file"]).name == name, (what, out)
        assert json.loads((tmp_path / f"{name}.provenance.json").read_text())["CAB-Run"] == str(earlier), what


def test_the_newest_run_is_found_past_the_runs_lists_first_page(cab):
    """The runs list goes by id, a page of at most 1000 at a time: the run that finished last is found on any page
    (here the oldest of 1001, on the second)."""
    from django.utils import timezone

    study = Study.objects.get(slug=SLUG)
    now = timezone.now()
    runs = MetricRun.objects.bulk_create([MetricRun(study=study, status=MetricRun.Status.SUCCEEDED, result={},
                                                    finished_at=now - datetime.timedelta(seconds=1001 - n))
                                          for n in range(1001)])
    oldest = min(run.pk for run in runs)
    MetricRun.objects.filter(pk=oldest).update(finished_at=now + datetime.timedelta(seconds=1))
    assert metrics_selectors.metric_run_latest_succeeded(study=study).pk == oldest
    assert cli._newest_succeeded(cli._client(), SLUG, retries=0) == oldest


def test_a_report_and_a_bundle_of_a_study_without_a_run_are_refused_alike(cab):
    """``cab download bundle`` said "STUDY has no succeeded metric run: start one with `cab run`", ``cab download
    report`` the server's 404 under a file name ("STUDY-report.json: HTTP 404: No succeeded metric run for this
    study."): both read the run first now, and are refused with the same words, naming what to do."""
    said = {}
    for what in ("bundle", "report"):
        status, out, err = cab("download", what)
        assert (status, out) == (1, ""), (what, status, out)
        said[what] = err
    assert said["bundle"] == said["report"] == f"cab: {SLUG} has no succeeded metric run: start one with `cab run`\n"


def test_a_download_into_a_folder_takes_the_servers_name_there(cab, tmp_path, eager):
    """``-o FOLDER`` downloaded the whole file beside the folder, as ``FOLDER.part``, then failed to put it in the
    folder's place (exit 2, the part kept, and every run again the same); it is now written in the folder under the
    server's name, as ``manage.py export_bundle STUDY FOLDER`` writes it."""
    coded_study(cab, tmp_path)
    status, out, err = cab("run", "--bootstrap", "5")
    assert status == 0, err
    run = json.loads(out)["run"]
    folder = tmp_path / "downloads"
    folder.mkdir()
    for args, url in ((("judgments",), f"/api/v1/studies/{SLUG}/exports/judgments.csv"),
                      (("bundle",), f"/api/v1/metric-runs/{run}/bundle.zip")):
        status, out, err = cab("download", *args, "-o", "downloads")
        assert status == 0, err
        name = _served_name(cab, url)
        assert json.loads(out)["file"] == str(Path("downloads") / name)
        assert (folder / name).is_file() and (folder / f"{name}.provenance.json").is_file()
    assert not list(tmp_path.glob("downloads.*")) and not list(folder.glob("*.part*"))


def test_a_download_into_a_folder_not_made_yet_is_refused_and_writes_nothing(cab, tmp_path):
    """``-o downloads/``, a name ending in "/" (a folder) that is not one yet, wrote the file as a file named
    ``downloads``, which the next ``-o downloads/`` then wrote over (a bundle replaced by judgments, say): refused
    now, before anything is asked or written."""
    before = set(tmp_path.iterdir())
    for what in ("judgments", "report"):
        status, out, err = cab("download", what, "-o", "downloads/")
        assert (status, out) == (2, ""), (what, status, out, err)  # a usage error (common.command_files)
        assert err == "cab: downloads/ is not a folder: make it first, or name a file without the final /\n", err
    assert set(tmp_path.iterdir()) == before


def test_a_served_name_that_would_leave_the_folder_is_not_taken():
    from cab_cli.download import served_name

    def named(header: str) -> str | None:
        return served_name(httpx.Response(200, headers={"Content-Disposition": header}))

    assert named('attachment; filename="s-run3-bundle.zip"') == "s-run3-bundle.zip"
    assert named("attachment; filename*=UTF-8''s%C3%A9-report-run3.json") == "s\u00e9-report-run3.json"
    for header in ('attachment; filename="../x.zip"', 'attachment; filename="/etc/x"', 'attachment; filename=".x"',
                   'attachment; filename="a\\\\b.zip"', "attachment", 'attachment; filename=""'):
        assert named(header) is None, header


@pytest.mark.slow(10)
def test_the_installed_console_script_runs_a_metric_run_and_waits(cab, tmp_path, eager):
    """``cab`` as installed by the project (pyproject [project.scripts]), in its own process."""
    coded_study(cab, tmp_path)
    script = Path(sys.executable).with_name("cab")
    assert script.exists(), "the project's install makes the console script (scripts/bootstrap.sh)"
    env = {**os.environ, "CAB_URL": cab.url, "CAB_TOKEN": cab.token, "CAB_STUDY": SLUG, "CAB_PROGRESS": "0"}
    listed = subprocess.run([script, "studies"], env=env, capture_output=True, text=True, timeout=60, check=True)
    assert listed.stdout.split("\t")[0] == SLUG
    started = subprocess.run([script, "run", "--bootstrap", "10"], env=env, capture_output=True, text=True,
                             timeout=120)
    assert started.returncode == 0, started.stderr
    assert json.loads(started.stdout)["status"] == "succeeded"


def test_a_run_of_another_study_is_no_bundle_of_this_one_on_any_path(cab, tmp_path, eager, client, admin_user):
    """``cab download bundle --study S --run N`` fetched run N's bundle whatever its study, under S's name, where
    ``export_bundle S --run N``, the reports page's link and ``cab download report --run N`` refuse a run that is not a
    succeeded run of S."""
    from django.core.management import CommandError, call_command

    coded_study(cab, tmp_path)
    status, out, err = cab("run", "--bootstrap", "5")
    assert status == 0, err
    run = json.loads(out)["run"]
    StudyFactory(slug="other-study")

    status, out, err = cab("download", "bundle", "--study", "other-study", "--run", str(run))
    assert (status, out) == (1, ""), (status, out)
    assert f"other-study has no succeeded metric run {run}" in err, err
    assert not list(tmp_path.glob("other-study*"))
    with pytest.raises(CommandError, match=f"study other-study has no succeeded metric run {run}"):
        call_command("export_bundle", "other-study", str(tmp_path / "other.zip"), "--run", str(run))
    client.force_login(admin_user)
    assert client.get(f"/studies/other-study/reports/runs/{run}/bundle.zip").status_code == 404
    status, out, err = cab("download", "report", "--study", "other-study", "--run", str(run))
    assert (status, out) == (1, "") and f"other-study has no succeeded metric run {run}" in err, err
    assert not list(tmp_path.glob("other*"))


def test_a_run_whose_answer_is_lost_is_asked_for_again_as_the_same_run(cab, monkeypatch):
    """A proxy passes the request on and the server makes the run, but the answer is lost on the way back. Before,
    `cab run` failed, and running it again made a second run; now it asks again under the same Idempotency-Key and
    the server answers with the run it made."""
    import urllib.error
    import urllib.request
    keys: list[str] = []

    def pass_on_losing_the_first_answer(headers, path: str, body: bytes):  # noqa: ANN001, ANN202
        keys.append(headers.get("Idempotency-Key", ""))
        sent = urllib.request.Request(cab.url + path, data=body, method="POST",  # noqa: S310 - the live server
                                      headers={name: value for name, value in headers.items()
                                               if name.lower() not in {"host", "content-length"}})
        try:
            with urllib.request.urlopen(sent, timeout=60) as answer:  # noqa: S310 - the test's live server
                status, content = answer.status, answer.read()
        except urllib.error.HTTPError as refused:
            status, content = refused.code, refused.read()
        return None if len(keys) == 1 else (status, "application/json", content)  # the first: the run is made

    with _in_front(monkeypatch, pass_on_losing_the_first_answer):
        status, out, err = cab("run", "--bootstrap", "5", "--no-wait", "--every", "0.1")
    (run,) = MetricRun.objects.all()
    assert status == 0, err
    assert json.loads(out)["run"] == run.pk
    assert len(keys) == 2 and keys[0] == keys[1] and keys[0].startswith("cab-cli-run-"), keys
    assert "the server is briefly unavailable (no answer:" in err and "asking again for the same run" in err


def _passed_on(url: str, method: str, headers, path: str, body: bytes) -> tuple[int, str, bytes]:  # noqa: ANN001
    """The live server's answer to the request the CLI sent to the test's server."""
    import urllib.error
    import urllib.request
    sent = urllib.request.Request(url + path, data=body if method == "POST" else None, method=method,  # noqa: S310
                                  headers={name: value for name, value in headers.items()
                                           if name.lower() not in {"host", "content-length"}})
    try:
        with urllib.request.urlopen(sent, timeout=60) as answer:  # noqa: S310 - the test's live server
            return answer.status, "application/json", answer.read()
    except urllib.error.HTTPError as refused:
        return refused.code, "application/json", refused.read()


BUSY = (503, "application/json", b'{"detail": "The service is briefly unavailable"}')


def _busy_once(url: str, asked: list[float]):  # noqa: ANN202
    """An answerer for ``_in_front``: a 503 asking to wait 1 s to the first POST, the live server's answer after;
    each POST's time in ``asked``."""
    import time

    def answer(headers, path: str, body: bytes):  # noqa: ANN001, ANN202
        asked.append(time.monotonic())
        if len(asked) == 1:
            return (*BUSY, {"Retry-After": "1"})
        return _passed_on(url, "POST", headers, path, body)

    return answer


def test_a_run_asked_for_again_waits_as_long_as_the_servers_retry_after_says(cab, monkeypatch):
    """Before, `cab run` asked again every --every seconds, whatever the 503's Retry-After said."""
    asked: list[float] = []
    with _in_front(monkeypatch, _busy_once(cab.url, asked)):
        status, out, err = cab("run", "--bootstrap", "5", "--no-wait", "--every", "0.05")
    assert status == 0, err
    assert json.loads(out)["run"] == MetricRun.objects.get().pk
    assert len(asked) == 2 and asked[1] - asked[0] >= 1.0, asked
    assert "asking again for the same run in 1 s (the server's Retry-After)" in err, err


def test_a_wait_polls_again_as_late_as_the_servers_retry_after_says(cab, monkeypatch):
    """Before, `cab wait` polled again every --every seconds, whatever the 503's Retry-After said."""
    import time
    run = MetricRunFactory(study=Study.objects.get(slug=SLUG))  # queued: no worker computes it here
    polled: list[float] = []

    def unavailable_once(headers, path: str, body: bytes):  # noqa: ANN001, ANN202
        polled.append(time.monotonic())
        if len(polled) == 2:  # the first is the wait's own first read; the second its first poll
            return (*BUSY, {"Retry-After": "1"})
        answer = _passed_on(cab.url, "GET", headers, path, body)
        if len(polled) == 3:  # the run as a worker would have finished it meanwhile
            return answer[0], answer[1], json.dumps(json.loads(answer[2]) | {"status": "succeeded"}).encode()
        return answer

    with _in_front(monkeypatch, unavailable_once):
        status, out, err = cab("wait", str(run.pk), "--every", "0.05")
    assert status == 0, err
    assert len(polled) == 3 and polled[2] - polled[1] >= 1.0, polled
    assert "polling again in 1 s (the server's Retry-After)" in err, err


def test_a_wait_started_while_the_server_answers_503_waits_it_out(cab, monkeypatch):
    """Before, `cab wait` read the run once before its polls, outside them: a 503 there (its database down as the
    command started) ended the command at once, "cab: HTTP 503: …", exit 1 (tests/integration/test_outage.py met
    it on a loaded host, its CLI starting after PostgreSQL was stopped)."""
    run = MetricRunFactory(study=Study.objects.get(slug=SLUG))  # queued: no worker computes it here
    asked: list[str] = []

    def unavailable_first(headers, path: str, body: bytes):  # noqa: ANN001, ANN202
        asked.append(path)
        if len(asked) <= 2:  # the server's database is down as the wait starts
            return (*BUSY, {"Retry-After": "0"})
        answer = _passed_on(cab.url, "GET", headers, path, body)
        return answer[0], answer[1], json.dumps(json.loads(answer[2]) | {"status": "succeeded"}).encode()

    with _in_front(monkeypatch, unavailable_first):
        status, out, err = cab("wait", str(run.pk), "--every", "0.05")
    assert status == 0, err
    assert json.loads(out)["status"] == "succeeded"
    assert len(asked) == 3, asked
    assert err.count("the server is briefly unavailable (HTTP 503") == 1 and "the server answers again" in err, err


def test_a_retry_after_longer_than_the_timeout_is_not_waited_out(cab, monkeypatch):
    """A Retry-After of an hour is waited at most cab_cli.retry.RETRY_AFTER_MOST seconds, and never past --timeout."""
    import time
    started = time.monotonic()
    with _in_front(monkeypatch, lambda *_: (*BUSY, {"Retry-After": "3600"})):
        status, _, err = cab("run", "--bootstrap", "5", "--no-wait", "--every", "0.05", "--timeout", "1.5")
    assert status == 1 and "could not take the run after 1.5 s" in err, err
    assert time.monotonic() - started < 10
    assert not MetricRun.objects.exists()


_HOP_HEADERS = {"content-type", "content-length", "date", "server", "connection", "transfer-encoding"}


def _passed_on_with_headers(url: str, headers, path: str) -> tuple[int, str, bytes, dict[str, str]]:  # noqa: ANN001
    """The live server's answer to the CLI's GET, with the headers a download reads (ETag, Content-Range, …)."""
    import urllib.error
    import urllib.request
    sent = urllib.request.Request(url + path, headers={name: value for name, value in headers.items()  # noqa: S310
                                                       if name.lower() not in {"host", "content-length"}})
    try:
        with urllib.request.urlopen(sent, timeout=60) as answer:  # noqa: S310 - the test's live server
            status, said, content = answer.status, answer.headers, answer.read()
    except urllib.error.HTTPError as refused:
        status, said, content = refused.code, refused.headers, refused.read()
    more = {name: value for name, value in said.items() if name.lower() not in _HOP_HEADERS}
    return status, said.get("Content-Type", "application/octet-stream"), content, more


def test_a_download_the_server_could_not_take_is_asked_again_as_late_as_its_retry_after_and_resumes(
        cab, tmp_path, monkeypatch):
    """Before, `cab download` gave up at the first 503 (the server's database briefly away), where `cab run` and
    `cab wait` ask again. Now the same request goes again after the Retry-After, and resumes the part an earlier run
    left (never the whole file again)."""
    coded_study(cab, tmp_path)
    whole = export("jsonl")
    (tmp_path / "late.jsonl.part").write_bytes(whole[:1234])
    (tmp_path / "late.jsonl.part.etag").write_text(f'"sha256-{hashlib.sha256(whole).hexdigest()}"\n')
    paused: list[float] = []
    monkeypatch.setattr("cab_cli.download._pause", paused.append)
    asked: list[str] = []

    def unavailable_once(headers, path: str, body: bytes):  # noqa: ANN001, ANN202
        asked.append(headers.get("Range", ""))
        if len(asked) == 1:
            return (*BUSY, {"Retry-After": "7"})
        return _passed_on_with_headers(cab.url, headers, path)

    with _in_front(monkeypatch, unavailable_once):
        status, out, err = cab("download", "judgments", "--format", "jsonl", "-o", "late.jsonl")
    assert status == 0, err
    assert (tmp_path / "late.jsonl").read_bytes() == whole and json.loads(out)["resumed_from"] == 1234
    assert asked == ["bytes=1234-", "bytes=1234-"] and paused == [7.0], (asked, paused)
    assert ("late.jsonl: HTTP 503: The service is briefly unavailable; resuming (attempt 2) in 7 s (the server's "
            "Retry-After)") in err, err
    assert not list(tmp_path.glob("late.jsonl.part*"))


def test_a_download_the_server_never_takes_stops_after_its_retries_and_keeps_the_part(cab, tmp_path, monkeypatch):
    """Each wait is the Retry-After at most cab_cli.retry.RETRY_AFTER_MOST; the part is left as it was for the next
    run, and no file takes the target's name."""
    part, tag = tmp_path / "away.csv.part", tmp_path / "away.csv.part.etag"
    part.write_bytes(b"x" * 100)
    tag.write_text('"sha256-' + "0" * 64 + '"\n')
    paused: list[float] = []
    monkeypatch.setattr("cab_cli.download._pause", paused.append)
    with _in_front(monkeypatch, lambda *_: (*BUSY, {"Retry-After": "3600"})):
        status, out, err = cab("download", "judgments", "-o", "away.csv", "--retries", "2")
    assert status == 1 and out == ""
    assert paused == [60.0, 60.0], paused
    assert ("away.csv: HTTP 503: The service is briefly unavailable; the part downloaded so far is kept in "
            "away.csv.part: run the command again to resume") in err, err
    assert not (tmp_path / "away.csv").exists()
    assert (part.read_bytes(), tag.read_text()) == (b"x" * 100, '"sha256-' + "0" * 64 + '"\n')


def test_a_bundles_run_whose_answer_was_lost_is_read_again(cab, monkeypatch):
    """The connection dropped before the run's read was answered (a server restarting, a proxy ending it): the read
    changes nothing, so it is asked again, as the file's own reads are. Before, the command ended with "cannot
    reach" at the first drop, retries or not."""
    run = MetricRunFactory(study=Study.objects.get(slug=SLUG))
    asked: list[str] = []

    def dropped_once(headers, path: str, body: bytes):  # noqa: ANN001, ANN202
        asked.append(path)
        return None if len(asked) == 1 else _passed_on(cab.url, "GET", headers, path, body)

    with _in_front(monkeypatch, dropped_once):
        status, _, err = cab("download", "bundle", "--run", str(run.pk))
    assert asked == [f"/api/v1/metric-runs/{run.pk}/"] * 2, asked
    assert "cab: the server is briefly unavailable (no answer: " in err and "asking again (attempt 2)" in err, err
    assert status == 1 and f"{SLUG} has no succeeded metric run {run.pk}" in err, err
    with _in_front(monkeypatch, lambda *_: None):
        status, _, err = cab("download", "bundle", "--run", str(run.pk), "--retries", "1")
    assert status == 1 and "cannot reach http://127.0.0.1:" in err and "(attempt 2)" in err, err


def test_a_bundles_run_the_server_could_not_read_just_then_is_read_again(cab, monkeypatch):
    """The bundle's run is read before the download: a 503 there is asked again too, not the command's end."""
    run = MetricRunFactory(study=Study.objects.get(slug=SLUG))  # queued: no bundle, which the second read says
    asked: list[str] = []

    def unavailable_once(headers, path: str, body: bytes):  # noqa: ANN001, ANN202
        asked.append(path)
        if len(asked) == 1:
            return (*BUSY, {"Retry-After": "1"})
        return _passed_on(cab.url, "GET", headers, path, body)

    with _in_front(monkeypatch, unavailable_once):
        status, _, err = cab("download", "bundle", "--run", str(run.pk))
    assert asked == [f"/api/v1/metric-runs/{run.pk}/"] * 2, asked
    assert "cab: the server is briefly unavailable (HTTP 503); asking again (attempt 2) in 1 s" in err, err
    assert status == 1 and f"{SLUG} has no succeeded metric run {run.pk}" in err, err


def test_a_download_that_cannot_be_written_exits_1_saying_what_came(cab, tmp_path):
    """A write error during a download (here a disk full: the part is /dev/full) came after the request was sent
    and answered: it exited 2, "usage error", which the docs keep for "nothing was sent". It now exits 1, saying how
    many bytes came from the server and that they were not written, and names no file as downloaded."""
    (tmp_path / "out.csv.part").symlink_to("/dev/full")
    status, out, err = cab("download", "judgments", "-o", "out.csv")
    assert (status, out) == (1, ""), (status, out, err)
    assert re.fullmatch(r"cab: out\.csv: [\d,]+ bytes came from the server but could not be written to "
                        r"out\.csv\.part: \[Errno 28\] No space left on device\n", err), err
    received = int(re.search(r"([\d,]+) bytes came", err)[1].replace(",", ""))
    assert received == len(export())
    assert not (tmp_path / "out.csv").exists() and not (tmp_path / "out.csv.provenance.json").exists()
