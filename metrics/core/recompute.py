"""Recompute a study bundle's report without Django, a database or a server (docs/bundle.md#recompute):

    python -m metrics.core.recompute BUNDLE.zip [-o report.json]

reads the bundle's judgments (``data/judgments.csv``, the long format: docs/reference.md#long-format-of-judgments),
the texts their spans point into (``data/responses.csv``), the conversations' kinds (``data/conversations.csv``)
and the run's parameters, schema and provenance (``run.json``), computes the report with the core's entry point the
server's run uses (``report.report_prepare`` → ``report_complete`` → ``report_finish``) and writes ``report.json``
as the server writes it (``report_file.report_file_text``): for a study of the default kind, byte for byte the
bundle's own ``report.json``. It then says whether the two are identical (exit status 0) or not (1); a bundle it
cannot read is exit status 2 with the reason.

The same reading (``bundle_tables``) serves the server when it builds a bundle: the fingerprint of what it wrote must
be the run's ``input.fingerprint``, or the bundle is refused (the study's judgments changed since the run).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
import time
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from common.cells import unneutralise

from .tables import AttributeSpec, JudgmentTable, ReportParams, SpanTable

FORMAT = "cab-study-bundle"
VERSION = 1
RUN_FILE = "run.json"
REPORT_FILE = "report.json"
JUDGMENTS_FILE = "data/judgments.csv"
RESPONSES_FILE = "data/responses.csv"
CONVERSATIONS_FILE = "data/conversations.csv"
# The kinds whose whole report the recompute writes; a CARE or LC8 bundle's sections come from loaders that still
# need the database (metrics.care_inputs, metrics.lc8_inputs): docs/bundle.md#what-each-kind-gets.
RECOMPUTABLE_KINDS = ("default",)
# Long-format columns the main report reads (the rest: study, instance_count, role, session_index, seed).
_TEXT_COLUMNS = ("round", "reviewer", "dataset", "conversation_id", "model", "attribute", "spans")


class BundleError(ValueError):
    """A bundle this code cannot read, with what is wrong and where."""


@dataclass(frozen=True)
class Bundle:
    """What the recompute reads from a bundle."""

    run_file: dict[str, Any]
    judgments_csv: str
    responses_csv: str
    conversations_csv: str
    report_text: str | None  # the bundle's report.json, to compare with


def _members(path: Path) -> Mapping[str, bytes] | Path:
    if path.is_dir():
        return path
    try:
        with zipfile.ZipFile(path) as archive:
            return {name: archive.read(name) for name in archive.namelist()
                    if name in (RUN_FILE, REPORT_FILE, JUDGMENTS_FILE, RESPONSES_FILE, CONVERSATIONS_FILE)}
    except (zipfile.BadZipFile, OSError) as error:
        raise BundleError(f"{path}: not a readable zip file ({error})") from error


def bundle_open(path: Path) -> Bundle:
    """A bundle from its zip file or from the folder it was unzipped into."""
    members = _members(path)

    def text(name: str, *, required: bool = True) -> str | None:
        if isinstance(members, Path):
            file = members / name
            data = file.read_bytes() if file.is_file() else None
        else:
            data = members.get(name)
        if data is None:
            if required:
                raise BundleError(f"{path}: the bundle has no {name}")
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise BundleError(f"{path}: {name} is not UTF-8 ({error})") from error

    try:
        run_file = json.loads(text(RUN_FILE) or "")
    except json.JSONDecodeError as error:
        raise BundleError(f"{path}: {RUN_FILE} is not JSON ({error})") from error
    if not isinstance(run_file, dict) or run_file.get("format") != FORMAT:
        raise BundleError(f"{path}: {RUN_FILE} does not describe a {FORMAT}")
    if run_file.get("version") != VERSION:
        raise BundleError(f"{path}: bundle version {run_file.get('version')!r}; this code reads version {VERSION}")
    return Bundle(run_file, text(JUDGMENTS_FILE) or "", text(RESPONSES_FILE) or "", text(CONVERSATIONS_FILE) or "",
                  text(REPORT_FILE, required=False))


def _csv_rows(text: str, name: str, required: Iterable[str]) -> Iterator[tuple[int, dict[str, str]]]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = [column for column in required if column not in (reader.fieldnames or [])]
    if missing:
        raise BundleError(f"{name}: no column {', '.join(missing)}")
    for row in reader:
        yield reader.line_num, row


def _int(cell: str, name: str, line: int, column: str) -> int:
    try:
        return int(cell)
    except ValueError as error:
        raise BundleError(f"{name} line {line}: {column} {cell!r} is not a whole number") from error


def bundle_tables(judgments_csv: str) -> tuple[JudgmentTable, SpanTable]:
    """The scored judgments of a long-format CSV and their spans, as the core's tables (the rows the server's run
    read: docs/metrics.md#provenance). A row without a round (an LC8 study's session label) is not a judgment."""
    judgment: dict[str, list[Any]] = {key: [] for key in JudgmentTable.__dataclass_fields__}
    span: dict[str, list[Any]] = {key: [] for key in SpanTable.__dataclass_fields__}
    required = ("round", "reviewer", "is_gold", "dataset", "conversation_id", "turn_index", "model", "attribute",
                "score", "spans")
    for line, row in _csv_rows(judgments_csv, JUDGMENTS_FILE, required):
        cells = {column: unneutralise(row[column] or "") for column in _TEXT_COLUMNS}
        if not cells["round"]:
            continue
        if row["is_gold"] not in ("true", "false"):
            raise BundleError(f"{JUDGMENTS_FILE} line {line}: is_gold must be true or false")
        key = {"round": cells["round"], "coder": cells["reviewer"], "is_gold": row["is_gold"] == "true",
               "dataset": cells["dataset"], "conversation": cells["conversation_id"],
               "turn": _int(row["turn_index"], JUDGMENTS_FILE, line, "turn_index") if row["turn_index"] else 0,
               "model": cells["model"], "attribute": cells["attribute"]}
        for name, value in key.items():
            judgment[name].append(value)
        judgment["score"].append(_int(row["score"], JUDGMENTS_FILE, line, "score"))
        if cells["spans"]:
            _spans(cells["spans"], key, span, line)

    def columns(values: dict[str, list[Any]], ints: tuple[str, ...]) -> dict[str, np.ndarray]:
        out = {}
        for name, column in values.items():
            if name == "is_gold":
                out[name] = np.array(column, dtype=bool)
            elif name in ints:
                out[name] = np.array(column, dtype=np.int64)
            else:
                out[name] = np.array(column, dtype=object)
        return out

    return (JudgmentTable(**columns(judgment, ("turn", "score"))),
            SpanTable(**columns(span, ("turn", "start", "end"))))


def _spans(cell: str, key: Mapping[str, Any], span: dict[str, list[Any]], line: int) -> None:
    """A row's spans cell (a JSON list of {start, end, subcategory}) as span rows with the judgment's key."""
    try:
        for one in json.loads(cell):
            for name, value in key.items():
                span[name].append(value)
            span["start"].append(int(one["start"]))
            span["end"].append(int(one["end"]))
            span["subcategory"].append(str(one["subcategory"]))
    except (ValueError, TypeError, KeyError) as error:
        raise BundleError(f"{JUDGMENTS_FILE} line {line}: spans is not a list of {{start, end, subcategory}} "
                          f"({error})") from error


def _attributes(run_file: Mapping[str, Any]) -> list[AttributeSpec]:
    try:
        return [AttributeSpec(code=a["code"], group=a["group"], cluster=a["cluster"], scale=tuple(a["scale"]),
                              level=a["level"], bucket={int(k): int(v) for k, v in a["bucket"].items()},
                              risk=None if a["risk"] is None else {int(k): float(v) for k, v in a["risk"].items()},
                              uiri=bool(a["uiri"]), unit=a["unit"])
                for a in run_file["attributes"]]
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise BundleError(f"{RUN_FILE}: attributes are not a list of attribute specs ({error!r})") from error


def recompute(bundle: Bundle) -> str:
    """The bundle's report file, computed again from its data (see the module's docstring)."""
    from .report import report_complete, report_finish, report_prepare, single_blas_thread

    run_file = bundle.run_file
    kind = run_file.get("study", {}).get("kind")
    if kind not in RECOMPUTABLE_KINDS:
        raise BundleError(f"a {kind} study's bundle cannot be recomputed yet: its section is loaded from the "
                          f"database (docs/bundle.md#what-each-kind-gets); this recompute writes the reports of "
                          f"{', '.join(RECOMPUTABLE_KINDS)} studies")
    try:
        params = ReportParams.from_dict(run_file["parameters"])
        study = {name: run_file["study"][name] for name in ("slug", "schema", "schema_version")}
        software, run, unscored = run_file["software"], run_file["run"], int(run_file["unscored_judgments"])
        subcategory_attribute = dict(run_file["subcategories"])
    except (KeyError, TypeError, ValueError) as error:
        raise BundleError(f"{RUN_FILE}: {error!r} is missing or malformed") from error
    judgments, spans = bundle_tables(bundle.judgments_csv)

    # what the server hands the core beside the judgments: the kinds of the judged conversations, the texts of the
    # responses with spans (token counts)
    judged = set(zip(judgments.dataset.tolist(), judgments.conversation.tolist(), strict=True))
    kinds: dict[tuple[str, str], str] = {}
    for _, row in _csv_rows(bundle.conversations_csv, CONVERSATIONS_FILE, ("dataset", "conversation_id", "kind")):
        conversation = (unneutralise(row["dataset"]), unneutralise(row["conversation_id"]))
        if conversation in judged:
            kinds[conversation] = row["kind"]
    with_spans = set(zip(spans.dataset.tolist(), spans.conversation.tolist(), spans.turn.tolist(),
                         spans.model.tolist(), strict=True))
    texts: dict[tuple[str, str, int, str], str] = {}
    for line, row in _csv_rows(bundle.responses_csv, RESPONSES_FILE,
                               ("dataset", "conversation_id", "turn_index", "model", "text")):
        key = (unneutralise(row["dataset"]), unneutralise(row["conversation_id"]),
               _int(row["turn_index"], RESPONSES_FILE, line, "turn_index"), unneutralise(row["model"]))
        if key in with_spans:
            texts[key] = unneutralise(row["text"])

    single_blas_thread()  # as the server's worker computes: the same last bits
    prepared = report_prepare(attributes=_attributes(run_file), judgments=judgments, spans=spans,
                              response_texts=texts, conversation_kinds=kinds,
                              subcategory_attribute=subcategory_attribute, params=params)
    report_complete(prepared.report, study=study, software=software, unscored=unscored)
    boot = prepared.bootstrap
    report = report_finish(prepared, [boot.chunk_samples(chunk) for chunk in range(boot.chunks)])
    from .report_file import report_file_text

    return report_file_text(run, report)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m metrics.core.recompute",
        description="Compute a study bundle's report.json again from the bundle alone, and compare it with the "
                    "bundle's own (docs/bundle.md#recompute).")
    parser.add_argument("bundle", type=Path, help="the bundle's zip file, or the folder it was unzipped into")
    parser.add_argument("-o", "--output", type=Path, default=Path("report.json"),
                        help="where to write the recomputed report (default: report.json; - for standard output)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    try:
        bundle = bundle_open(args.bundle)
        text = recompute(bundle)
    except BundleError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if str(args.output) == "-":
        sys.stdout.write(text)
    else:
        args.output.write_text(text, encoding="utf-8")
    seconds = time.perf_counter() - started
    where = "standard output" if str(args.output) == "-" else str(args.output)
    if bundle.report_text is None:
        print(f"wrote {where} in {seconds:.1f} s; the bundle has no report.json to compare with", file=sys.stderr)
        return 1
    if bundle.report_text == text:
        print(f"wrote {where} in {seconds:.1f} s: byte for byte the bundle's report.json", file=sys.stderr)
        return 0
    print(f"wrote {where} in {seconds:.1f} s: it DIFFERS from the bundle's report.json", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
