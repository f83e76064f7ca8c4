"""``cab``: the researcher's command line, on the typed client generated from the API's schema (cab_cli.api_client).

    export CAB_URL=https://cab.example.org CAB_TOKEN=…  CAB_STUDY=my-study
    cab studies
    cab ingest conversations conversations.jsonl
    cab ingest responses responses.jsonl
    cab import judgments.csv
    cab run --bootstrap 1000            # start a metric run and wait for it
    cab download judgments -o judgments.csv
    cab download bundle                 # the newest succeeded run's study bundle (docs/bundle.md)
    cab download report -o report.json

The token comes from ``CAB_TOKEN`` (never from the command line, where other users of the machine could read it
in the process list), the server from ``CAB_URL``, the study from ``--study`` or ``CAB_STUDY``. Progress goes to
standard error on a terminal only; results to standard output. Exit status (common.command_files, as manage.py's
commands): 0 done, 1 the server refused (its error is printed: which item or line, which field, why) or could not be
reached, or what it sent could not be written (a full disk), 2 a usage error (a file missing, a folder to write
into missing…). docs/api.md#the-researcher-cli.
"""

from __future__ import annotations

import argparse
import codecs
import hashlib
import io
import json
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from http import HTTPStatus
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import parse_qs, urlsplit

import httpx

from cab_cli import retry
from cab_cli.api_client import AuthenticatedClient
from cab_cli.api_client.api.metric_runs import metric_runs_retrieve
from cab_cli.api_client.api.studies import (
    studies_conversations_upload_create,
    studies_judgments_import_create,
    studies_list,
    studies_metric_runs_create,
    studies_metric_runs_list,
    studies_responses_upload_create,
)
from cab_cli.api_client.models import (
    ErrorOut,
    FormatEnum,
    ItemErrorOut,
    ItemsFileInRequest,
    JudgmentsFileInRequest,
    MetricRunInRequest,
    MetricRunOut,
    MetricRunOutStatusEnum,
    StudiesMetricRunsListStatus,
)
from cab_cli.api_client.types import UNSET, File, Response, Unset
from cab_cli.download import DownloadError, download, provenance_write
from common import command_files, file_formats, progress

# A file of more items than this, or more bytes, is sent in parts (each part all or nothing): the server takes up
# to 50,000 items and 64 MiB a request; smaller parts keep each transaction and each answer short.
PART_ITEMS = 10_000
PART_BYTES = 16 * 1024 * 1024
ERRORS_SHOWN = 20


class Refused(Exception):
    """The server said no: its error answer, made readable; ``status``, its HTTP status (0: not the server's)."""

    def __init__(self, text: str, *, status: int = 0):
        super().__init__(text)
        self.status = status


class Usage(Exception):
    pass


def _input(name: str) -> Path:
    """The file to read, or the usage error saying why it cannot be (common.command_files: the words and the
    exit status of manage.py's commands)."""
    try:
        return command_files.input_file(Path(name))
    except command_files.FileUnusable as problem:
        raise Usage(str(problem)) from None


def _client() -> AuthenticatedClient:
    token = os.environ.get("CAB_TOKEN", "").strip()
    if not token:
        raise Usage("set CAB_TOKEN to an API token (made on the server's API tokens page)")
    url = os.environ.get("CAB_URL", "http://127.0.0.1:8000").rstrip("/")
    return AuthenticatedClient(base_url=url, token=token, timeout=httpx.Timeout(600, connect=15))


def _study(args: argparse.Namespace) -> str:
    study = args.study or os.environ.get("CAB_STUDY", "")
    if not study:
        raise Usage("name the study: --study SLUG, or set CAB_STUDY")
    return study


def _error_text(status: int, error: ErrorOut | None, content: bytes, *, lines: list[int] | None = None,
                word: str = "line") -> str:
    """The server's error answer as lines a person can act on; ``lines``: the place in the user's file of each item
    of the part that was sent, its line (``word`` "line") or, in a JSON array, its index ("item"), so an item's
    error names it where the user's file has it."""
    if error is None:
        return f"HTTP {status}: {content[:300].decode(errors='replace')}"
    out = [f"HTTP {status}: {error.detail}"]
    if not isinstance(error.fields, Unset) and error.fields:
        out += [f"  {field}: {'; '.join(messages)}" for field, messages in error.fields.to_dict().items()]
    if isinstance(error.errors, list) and error.errors:
        for item in error.errors[:ERRORS_SHOWN]:
            out.append(f"  {_where(item, lines, word)}: {item.field}: {item.message}")
        count = error.error_count if isinstance(error.error_count, int) else len(error.errors)
        if count > ERRORS_SHOWN:
            out.append(f"  … and {count - ERRORS_SHOWN:,} more")
    return "\n".join(out)


def _where(item: ItemErrorOut, lines: list[int] | None, word: str = "line") -> str:
    if isinstance(item.line, int):
        return f"line {item.line}"
    if isinstance(item.index, int):
        if lines is not None and 0 <= item.index < len(lines):
            return f"{word} {lines[item.index]}"
        return f"item {item.index}"
    return "file"


def _ok(answer: Response[Any], *, lines: list[int] | None = None, word: str = "line") -> Any:
    if 200 <= answer.status_code < 300 and not isinstance(answer.parsed, ErrorOut) and answer.parsed is not None:
        return answer.parsed
    parsed = answer.parsed if isinstance(answer.parsed, ErrorOut) else None
    raise Refused(_error_text(int(answer.status_code), parsed, answer.content, lines=lines, word=word),
                  status=int(answer.status_code))


# --- studies ------------------------------------------------------------------------------------------------------

def cmd_studies(args: argparse.Namespace) -> None:
    for study in _ok(studies_list.sync_detailed(client=_client())):
        print(f"{study.slug}\t{study.status.value}\t{study.schema} v{study.schema_version}\t{study.name}")


# --- ingest -------------------------------------------------------------------------------------------------------

def _data(path: Path) -> bytes:
    """The file's bytes, without the UTF-8 byte order mark that may begin it, as the server's paths drop it."""
    return path.read_bytes().removeprefix(codecs.BOM_UTF8)


def _is_array(data: bytes) -> bool:
    return data.lstrip()[:1] == b"["


def _records(path: Path) -> Iterator[tuple[int, bytes]]:
    """The file's items with their places: JSON Lines, each with its line number (blank lines skipped), or one JSON
    array, each element with its index in the array (from 0), which the API's answer gives for the array sent as one
    request (``item N``). Lines end at "\n" only, as the server's do (common.errors.JSON_LINES_NEWLINE: a "\r" is
    JSON's whitespace), so a line number is the server's. An array that is not JSON is refused as the file's fault
    (``Refused``), as the server refuses it."""
    data = _data(path)
    if _is_array(data):
        try:
            items = json.loads(data)
        except ValueError as problem:
            raise Refused(f"{path}: not valid JSON ({problem})") from problem
        for index, item in enumerate(items):
            yield index, _element(item)
        return
    for number, line in enumerate(data.split(b"\n"), start=1):
        if line.strip():
            yield number, line.strip()


def _element(item: Any) -> bytes:
    """An element of a JSON array as a line of the JSON Lines sent: UTF-8, or, when it holds a lone surrogate (JSON's
    ``\\ud800`` escape, which no UTF-8 can hold), with JSON's escapes, as the file gives it: the server refuses it by
    its index in its own words, as it refuses the same line of a JSON Lines file, where encoding it stopped the
    command with a traceback."""
    try:
        return json.dumps(item, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return json.dumps(item).encode()


def _parts(path: Path) -> Iterator[tuple[bytes, list[int]]]:
    part: list[bytes] = []
    lines: list[int] = []
    size = 0
    for number, record in _records(path):
        if part and (len(part) >= PART_ITEMS or size + len(record) + 1 > PART_BYTES):
            yield b"\n".join(part) + b"\n", lines
            part, lines, size = [], [], 0
        part.append(record)
        lines.append(number)
        size += len(record) + 1
    if part:
        yield b"\n".join(part) + b"\n", lines


def _replayed(answer: Response[Any]) -> dict[str, bool]:
    """``{"replayed": true}`` when the server answered with the first answer to this Idempotency-Key (the same file
    sent before): its counts are that first import's, and this one wrote nothing; else nothing. Without it, a second
    ``cab import`` said "created" of what ``manage.py import_judgments`` calls unchanged."""
    return {"replayed": True} if answer.headers.get("Idempotent-Replayed") == "true" else {}


def _key(kind: str, study: str, body: Iterable[bytes]) -> str:
    """The same part of the same file (``body``, its bytes in chunks) to the same study is the same request: a
    resend after a lost answer gets the first answer again instead of being applied twice (the server's
    Idempotency-Key)."""
    digest = hashlib.sha256(study.encode() + b"\0")
    for chunk in body:
        digest.update(chunk)
    return f"cab-cli-{kind}-" + digest.hexdigest()[:48]


def _chunks(path: Path) -> Iterator[bytes]:
    """The file's bytes a MiB at a time: a large file is never read whole."""
    with path.open("rb") as opened:
        while chunk := opened.read(1 << 20):
            yield chunk


def cmd_ingest(args: argparse.Namespace) -> None:
    client, study, path = _client(), _study(args), _input(args.file)
    operation = {"conversations": studies_conversations_upload_create,
                 "responses": studies_responses_upload_create}[args.what]
    totals: dict[str, int] = {}
    replayed = 0
    # A file without an item is sent as it is, for the server to refuse in its words ("no conversations: nothing
    # to import", its line 1), as import_conversations and the upload page refuse it.
    word = "item" if _is_array(_data(path)) else "line"  # an array's elements by their index, as the API names them
    parts = list(_parts(path)) or [(b"", [0 if word == "item" else 1])]
    items = sum(len(lines) for body, lines in parts if body)
    with progress.bar(desc=f"ingest {args.what}", total=items, unit="item") as bar:
        for number, (body, lines) in enumerate(parts, start=1):
            upload = ItemsFileInRequest(file=File(payload=io.BytesIO(body), file_name=f"{path.stem}.jsonl",
                                                  mime_type="application/x-ndjson"))
            try:
                answer = operation.sync_detailed(study, client=client, body=upload,
                                                 idempotency_key=_key(args.what, study, [body]))
                summary = _ok(answer, lines=lines, word=word)
            except Refused as refused:
                done = {1: "", 2: f"part 1 of {len(parts)} was written; "}.get(
                    number, f"parts 1–{number - 1} of {len(parts)} were written; ")
                # a part the server could not take just then is no fault of the file: sending it again is safe
                remedy = ("the server was unavailable, not the file at fault: send the same file again" if
                          refused.status in retry.UNAVAILABLE else "fix the file and send it again")
                raise Refused(f"{refused}\n{done}part {number} ({word}s {lines[0]}–{lines[-1]}) and after were not; "
                              f"{remedy} (what was written counts as unchanged)", status=refused.status) from None
            replayed += bool(_replayed(answer))
            for name, value in summary.to_dict().items():
                if isinstance(value, int) and not isinstance(value, bool):
                    totals[name] = totals.get(name, 0) + value
            bar.update(len(lines))
    # parts sent before and answered with their first answer: their counts are those of the first send
    print(json.dumps({"file": str(path), "items": items, "parts": len(parts), **totals,
                      **({"replayed_parts": replayed} if replayed else {})}))


# --- import judgments ---------------------------------------------------------------------------------------------

# Answers after which the import surely did not land, so it is sent again: the server's own 503 (its database or
# broker unreachable: the import's one transaction did not commit) and 429 (refused before the import ran). A 502 or
# 504 comes from a proxy, whose server may have run the import: it is never sent again by itself.
NOT_LANDED = {HTTPStatus.SERVICE_UNAVAILABLE, HTTPStatus.TOO_MANY_REQUESTS}
IMPORT_ASKS = 5


def cmd_import(args: argparse.Namespace) -> None:
    """The file as one form upload, streamed from the disk (never read whole: a paper-scale file is 200 MB), in the
    format ``--format`` or its name says (common.file_formats, the server's rule), under an Idempotency-Key made of
    that format, the study and the file's bytes. Answered 503 or 429, it is sent again as late as the answer's
    Retry-After asks; with no answer, or a proxy's 502 or 504, it may have landed, so the command stops and
    says that running it again is safe: the key gets the first answer back, and an identical file's rows that
    landed count unchanged (docs/api.md#the-researcher-cli)."""
    client, study, path = _client(), _study(args), _input(args.file)
    try:
        fmt = FormatEnum(file_formats.file_format(str(path), given=args.format, say="--format csv|jsonl"))
    except file_formats.FormatUnknown as problem:
        raise Usage(str(problem)) from None
    # the format is part of the request: the same bytes sent again as the other format are another import
    key = _key(f"import-{fmt.value}", study, _chunks(path))
    with path.open("rb") as opened:
        for ask in range(1, IMPORT_ASKS + 1):
            opened.seek(0)
            upload = JudgmentsFileInRequest(file=File(payload=opened, file_name=path.name), format_=fmt)
            try:
                answer = studies_judgments_import_create.sync_detailed(study, client=client, body=upload,
                                                                       idempotency_key=key)
            except httpx.TransportError as problem:
                raise Refused(f"no answer from the server ({problem}): the import may have landed. Run the same "
                              "command again: what landed counts as unchanged, nothing is written twice") from None
            if answer.status_code not in NOT_LANDED or ask == IMPORT_ASKS:
                break
            retry_after = retry.retry_after(answer.headers)
            print(f"cab: the server could not take the import just then (HTTP {int(answer.status_code)}); sending "
                  f"it again{retry.asked(retry_after)}", file=sys.stderr)
            time.sleep(retry.pause(retry.backoff(ask), retry_after))
    if answer.status_code in {HTTPStatus.BAD_GATEWAY, HTTPStatus.GATEWAY_TIMEOUT}:
        raise Refused(f"{_error_text(int(answer.status_code), None, answer.content)}\nthe import may have landed "
                      "(a proxy answered, not the server): run the same command again: what landed counts as "
                      "unchanged, nothing is written twice", status=int(answer.status_code))
    summary = _ok(answer)
    print(json.dumps({"file": str(path), **summary.to_dict(), **_replayed(answer)}))


# --- metric runs --------------------------------------------------------------------------------------------------

FINAL = {MetricRunOutStatusEnum.SUCCEEDED, MetricRunOutStatusEnum.FAILED}


def _wait(client: AuthenticatedClient, run: MetricRunOut | int, *, timeout: float, every: float) -> MetricRunOut:
    """Poll the run (or the run of that id, read first at once) until it is finished or ``timeout`` has passed. A
    poll the server answers 503 (its database briefly unreachable) or does not answer at all (restarting) is no
    refusal, the first read's included: the run goes on on the server, so the wait goes on, said once per outage on
    standard error (docs/api.md#the-researcher-cli)."""
    run_id, current = (run, None) if isinstance(run, int) else (run.id, run)
    deadline = time.monotonic() + timeout
    outage, pause = False, every
    with progress.fraction_bar(f"metric run {run_id}") as report:
        while current is None or current.status not in FINAL:
            if time.monotonic() > deadline:
                state = "unread: the server was unavailable" if current is None else current.status.value
                raise Refused(f"metric run {run_id} is still {state} after {timeout:g} s (it goes on; "
                              f"wait again with: cab wait {run_id})")
            if current is not None or outage:  # the first read of a run given by its id is at once
                time.sleep(max(0.0, min(pause, deadline - time.monotonic())))
            now, unavailable, retry_after = _poll(client, run_id)
            pause = retry.pause(every, retry_after)
            if now is None:
                if not outage:
                    print(f"cab: the server is briefly unavailable ({unavailable}); metric run {run_id} goes on "
                          f"there: still waiting, polling again{retry.asked(retry_after)}", file=sys.stderr)
                outage = True
                continue
            if outage:
                print("cab: the server answers again", file=sys.stderr)
            current, outage = now, False
            report(current.progress, current.progress_message)
    return current


def _poll(client: AuthenticatedClient, run_id: int) -> tuple[MetricRunOut | None, str, float | None]:
    """The run as the server has it now; or None and why the server is briefly unavailable: a 503 (the server's
    answer to an outage of its database or broker, after which nothing was changed) or no answer at all. Last, the
    seconds the 503's Retry-After asks the client to wait (None: it asks nothing)."""
    try:
        answer = metric_runs_retrieve.sync_detailed(run_id, client=client)
    except httpx.TransportError as problem:
        return None, f"no answer: {problem}", None
    if answer.status_code == HTTPStatus.SERVICE_UNAVAILABLE:
        return (None, f"HTTP 503: {answer.content[:200].decode(errors='replace')}",
                retry.retry_after(answer.headers))
    return _ok(answer), "", None


def _run_line(run: MetricRunOut) -> str:
    return json.dumps({"run": run.id, "study": run.study, "status": run.status.value,
                       "parameters": run.parameters.to_dict(), "error": run.error or None})


def _finished(run: MetricRunOut) -> None:
    print(_run_line(run))
    if run.status == MetricRunOutStatusEnum.FAILED:
        raise Refused(f"metric run {run.id} failed: {run.error}")


def _started(client: AuthenticatedClient, study: str, body: MetricRunInRequest, *, timeout: float,
             every: float) -> MetricRunOut:
    """Ask for the run under an Idempotency-Key of this command's own, and ask again with it while the server is
    briefly unavailable (503, 502, 504, 429) or its answer is lost: the server makes one run however often it is
    asked (docs/api.md#the-researcher-cli). A second ``cab run`` is another key, so another run. Between two asks
    it waits ``every`` seconds, or as long as the answer's Retry-After says (``retry.pause``), never past
    ``timeout``."""
    key = f"cab-cli-run-{uuid.uuid4().hex}"
    deadline = time.monotonic() + timeout
    said = False
    while True:
        retry_after = None
        try:
            answer = studies_metric_runs_create.sync_detailed(study, client=client, body=body, idempotency_key=key)
        except httpx.TransportError as problem:
            status, unavailable = 0, f"no answer: {problem}"
        else:
            if answer.status_code not in retry.UNAVAILABLE:
                return _ok(answer)
            status, retry_after = int(answer.status_code), retry.retry_after(answer.headers)
            unavailable = f"HTTP {status}: {answer.content[:200].decode(errors='replace')}"
        if time.monotonic() > deadline:
            raise Refused(f"the server could not take the run after {timeout:g} s ({unavailable}); ask again with "
                          "cab run", status=status)
        if not said:
            print(f"cab: the server is briefly unavailable ({unavailable}); asking again for the same run"
                  f"{retry.asked(retry_after)}", file=sys.stderr)
            said = True
        time.sleep(max(0.0, min(retry.pause(every, retry_after), deadline - time.monotonic())))


def cmd_run(args: argparse.Namespace) -> None:
    client, study = _client(), _study(args)
    parameters = {name: value for name, value in (("seed", args.seed), ("bootstrap", args.bootstrap),
                                                   ("top_k", args.top_k)) if value is not None}
    run = _started(client, study, MetricRunInRequest.from_dict(parameters), timeout=args.timeout, every=args.every)
    if args.no_wait:
        print(_run_line(run))
        return
    _finished(_wait(client, run, timeout=args.timeout, every=args.every))


def cmd_wait(args: argparse.Namespace) -> None:
    _finished(_wait(_client(), args.run, timeout=args.timeout, every=args.every))


# --- downloads ----------------------------------------------------------------------------------------------------

def _read(ask: Callable[[], Response[Any]], *, retries: int) -> Any:
    """What ``ask()`` answers (as ``_ok`` reads it), asked again up to ``retries`` times while the server is briefly
    unavailable (``retry.UNAVAILABLE``, as late as its Retry-After asks) or its answer does not come (the connection
    refused or dropped, as while the server restarts): a read changes nothing, as ``cab download``'s file reads."""
    attempt = 0
    while True:
        attempt += 1
        try:
            answer = ask()
        except httpx.TransportError as problem:
            if attempt > retries:
                raise
            said, wait = f"no answer: {problem}", None
        else:
            if answer.status_code not in retry.UNAVAILABLE or attempt > retries:
                return _ok(answer)
            said, wait = f"HTTP {int(answer.status_code)}", retry.retry_after(answer.headers)
        print(f"cab: the server is briefly unavailable ({said}); asking again (attempt {attempt + 1})"
              f"{retry.asked(wait)}", file=sys.stderr)
        time.sleep(retry.pause(retry.backoff(attempt), wait))


def _newest_succeeded(client: AuthenticatedClient, study: str, *, retries: int) -> int:
    """The study's newest succeeded run as the server counts it (``metrics.selectors.NEWEST_FIRST``): the one that
    finished last, then the highest id, whose report the report pages show and the report's download without
    ``?run=`` and ``manage.py export_bundle`` take. The runs list goes by id (the order they were asked for), so every
    succeeded run is read: one asked for earlier may have finished later (sent again after an outage, a larger
    bootstrap on another worker), and the list's first was then an older report."""
    newest: tuple[tuple[bool, float, int], int] | None = None
    cursor: str | Unset = UNSET
    while True:
        def ask(at: str | Unset = cursor) -> Response[Any]:
            return studies_metric_runs_list.sync_detailed(
                study, client=client, status=StudiesMetricRunsListStatus.SUCCEEDED, page_size=1000, cursor=at)

        page = _read(ask, retries=retries)
        for run in page.results:
            # NULLS FIRST, as PostgreSQL orders ``-finished_at`` (a succeeded run always has one)
            key = (run.finished_at is None, run.finished_at.timestamp() if run.finished_at else 0.0, int(run.id))
            newest = max(newest, (key, int(run.id))) if newest is not None else (key, int(run.id))
        following = parse_qs(urlsplit(page.next_).query).get("cursor") if isinstance(page.next_, str) else None
        if not following:
            break
        cursor = following[0]
    if newest is None:
        raise Refused(f"{study} has no succeeded metric run: start one with `cab run`")
    return newest[1]


def _succeeded_run_of(client: AuthenticatedClient, study: str, run_id: int, *, retries: int) -> int:
    """``run_id`` when it is a succeeded run of the study. The bundle's URL names the run only: without this, a run
    of another study would be downloaded under this study's name, where the report's download (``?run=``), the
    reports page and ``manage.py export_bundle`` refuse it."""
    run = _read(lambda: metric_runs_retrieve.sync_detailed(run_id, client=client), retries=retries)
    if run.study != study or run.status != MetricRunOutStatusEnum.SUCCEEDED:
        raise Refused(f"{study} has no succeeded metric run {run_id}: start one with `cab run`")
    return run_id


def cmd_download(args: argparse.Namespace) -> None:
    """The file under ``-o``, else (or in the folder ``-o`` names) under the name the server's answer gives it (its
    Content-Disposition, as a browser saves it); ``name`` is what the server is expected to call it, which the part
    is kept under until the answer says (docs/api.md#the-researcher-cli)."""
    client, study = _client(), _study(args)
    if args.output is not None and not Path(args.output).is_dir():  # before the run is read or anything is asked
        try:
            command_files.output_folder(args.output)
        except command_files.FileUnusable as problem:
            raise Usage(str(problem)) from None
    if args.what == "judgments":
        url, name = f"/api/v1/studies/{study}/exports/judgments.{args.format}", f"{study}-judgments.{args.format}"
    else:  # a run's bundle or report: the same run read the same way, refused with the same words
        run = (_newest_succeeded(client, study, retries=args.retries) if args.run is None
               else _succeeded_run_of(client, study, args.run, retries=args.retries))
        url, name = ((f"/api/v1/metric-runs/{run}/bundle.zip", f"{study}-run{run}-bundle.zip") if args.what == "bundle"
                     else (f"/api/v1/studies/{study}/exports/report.json?run={run}", f"{study}-report-run{run}.json"))
    # -o FOLDER: the file goes there under the server's name, as with no -o into the current folder
    folder = args.output is None or Path(args.output).is_dir()
    target = Path(args.output or ".") / name if folder else Path(args.output)
    try:
        done = download(client.get_httpx_client(), url, target, retries=args.retries, desc=f"{args.what}",
                        server_name=folder)
    except DownloadError as problem:
        raise Refused(f"{target}: {problem}") from None
    try:
        kept = provenance_write(done)  # the run, software, parameters, input and digest, beside the file
    except OSError as problem:  # the file came and was written: not a usage error
        raise Refused(f"{done.path}: downloaded ({done.size:,} bytes), but where it came from could not be written "
                      f"beside it: {problem}") from None
    print(json.dumps({"file": str(done.path), "bytes": done.size, "resumed_from": done.resumed_from,
                      "provenance": str(kept)}))


# --- the command line ---------------------------------------------------------------------------------------------

def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="cab", description="The CAB researcher's command line (CAB_URL, CAB_TOKEN, "
                                  "CAB_STUDY from the environment; docs/api.md#the-researcher-cli).")
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, handler: Any, text: str, *, study: bool = True) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=text, description=text)
        if study:
            sub.add_argument("--study", help="the study's slug (default: CAB_STUDY)")
        sub.set_defaults(handler=handler)
        return sub

    command("studies", cmd_studies, "list the studies your token can see", study=False)
    ingest = command("ingest", cmd_ingest, "ingest conversations or model responses from a JSON Lines file (or a "
                     "JSON array), in parts of up to 10,000 items; a resend writes nothing twice")
    ingest.add_argument("what", choices=["conversations", "responses"])
    ingest.add_argument("file")
    imported = command("import", cmd_import, "import judgments in the long format (CSV or JSON Lines), all or nothing")
    imported.add_argument("file")
    imported.add_argument("--format", choices=file_formats.FORMATS, help="default: from the file's name (.csv; "
                          ".jsonl or .ndjson); another name is refused without it")
    for name, handler, text in (("run", cmd_run, "start a metric run and wait for it"),
                                ("wait", cmd_wait, "wait for a metric run to finish")):
        sub = command(name, handler, text, study=name == "run")
        if name == "run":
            sub.add_argument("--seed", type=int)
            sub.add_argument("--bootstrap", type=int, help="bootstrap resamples (server default: the study's)")
            sub.add_argument("--top-k", type=int, help="panel size k")
            sub.add_argument("--no-wait", action="store_true", help="start it and return")
        else:
            sub.add_argument("run", type=int)
        sub.add_argument("--timeout", type=float, default=3600, help="seconds to wait at most (default 3600)")
        sub.add_argument("--every", type=float, default=1.0, help="seconds between polls (default 1)")
    downloads = command("download", cmd_download, "download a study's judgments or a run's study bundle (both "
                        "resumable), or its metrics report")
    downloads.add_argument("what", choices=["judgments", "bundle", "report"])
    downloads.add_argument("-o", "--output", help="the file to write, or a folder to write it into (default: the "
                           "name the server gives it, as a browser saves it: STUDY-judgments.FORMAT, "
                           "STUDY-runN-bundle.zip, STUDY-report-runN.json)")
    downloads.add_argument("--format", choices=["csv", "jsonl"], default="csv", help="judgments: the file format "
                           "(default: csv; manage.py export_judgments writes jsonl unless told)")
    downloads.add_argument("--run", type=int, help="bundle, report: this run's (default: the newest succeeded)")
    downloads.add_argument("--retries", type=int, default=5, help="resume a dropped connection, or ask again a server "
                           "briefly unavailable (503: as late as its Retry-After asks), this often")
    return top


def fail(message: str, status: int) -> NoReturn:
    print(f"cab: {message}", file=sys.stderr)
    raise SystemExit(status)


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        args.handler(args)
    except Usage as problem:
        fail(str(problem), command_files.EXIT_USAGE)
    except Refused as problem:
        fail(str(problem), command_files.EXIT_REFUSED)
    except httpx.TransportError as problem:
        fail(f"cannot reach {os.environ.get('CAB_URL', 'http://127.0.0.1:8000')}: {problem}",
             command_files.EXIT_REFUSED)
    except OSError as problem:
        fail(str(problem), command_files.EXIT_USAGE)
    return command_files.EXIT_DONE
