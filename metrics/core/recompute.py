"""Recompute a study bundle's report without Django, a database or a server (docs/bundle.md#recompute):

    python -m metrics.core.recompute BUNDLE.zip [-o report.json]

reads the bundle's judgments (``data/judgments.csv``, the long format: docs/reference.md#long-format-of-judgments),
the texts their spans point into (``data/responses.csv``), the conversations' kinds (``data/conversations.csv``),
the run's parameters, schema and provenance (``run.json``), and for a study of a kind with a section the rows it reads
(its files under ``data/`` and the kind's block of ``run.json``: ``metrics.core.kind_sections``),
computes the report with the core's entry point the server's run uses (``report.report_prepare`` →
``report_complete`` → ``report_finish``) and writes ``report.json`` as the server writes it
(``report_file.report_file_text``): byte for byte the bundle's own ``report.json``. It then says whether the two are
identical (exit status 0) or not (1); a bundle it cannot read is exit status 2 with the reason.

The same reading (``bundle_tables``) serves the server when it builds a bundle: the fingerprint of what it wrote (with
a kind's section rows: ``provenance.fingerprint_rows``) must be the run's ``input.fingerprint``, or the bundle is
refused (the study's judgments changed since the run).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
import time
import zipfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from common.cells import unneutralise

from .kind_sections import DEFAULT_KIND, core_section
from .provenance import KindRows
from .tables import AttributeSpec, Categorical, JudgmentTable, ReportParams, SpanTable

FORMAT = "cab-study-bundle"
VERSION = 1
RUN_FILE = "run.json"
REPORT_FILE = "report.json"
JUDGMENTS_FILE = "data/judgments.csv"
RESPONSES_FILE = "data/responses.csv"
CONVERSATIONS_FILE = "data/conversations.csv"
# The rows a kind's section reads, beside the judgments, are files of the bundle's data folder that its core section
# names (metrics.core.kind_sections; docs/bundle.md#what-each-kind-gets).
DATA_FOLDER = "data/"


class BundleError(ValueError):
    """A bundle this code cannot read, with what is wrong and where."""


@dataclass(frozen=True)
class Bundle:
    """What the recompute reads from a bundle."""

    run_file: dict[str, Any]
    judgments_csv: str
    responses_csv: str | None  # None: the bundle has none (a study without model responses: no rows, no file)
    conversations_csv: str
    report_text: str | None  # the bundle's report.json, to compare with
    kind_files: Mapping[str, str] | None = None  # the kind's own rows (its core section's files), by path


def _members(path: Path) -> Mapping[str, bytes] | Path:
    if path.is_dir():
        return path
    try:
        with zipfile.ZipFile(path) as archive:
            return {name: archive.read(name) for name in archive.namelist()
                    if name in (RUN_FILE, REPORT_FILE) or (name.startswith(DATA_FOLDER) and name.endswith(".csv"))}
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
    kind = (run_file.get("study") or {}).get("kind")
    section = core_section(kind) if isinstance(kind, str) else None
    return Bundle(run_file, text(JUDGMENTS_FILE) or "", text(RESPONSES_FILE, required=False),
                  text(CONVERSATIONS_FILE) or "",
                  text(REPORT_FILE, required=False),
                  {name: text(name) or "" for name in section.files} if section is not None else None)


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


_KEY_TEXT = (("round", "round"), ("coder", "reviewer"), ("dataset", "dataset"), ("conversation", "conversation_id"),
             ("model", "model"), ("attribute", "attribute"))


def _categorical(cells: Sequence[str], *, written: bool = True) -> Categorical:
    """A text column as integer codes into its distinct cells (first appearance first), each distinct cell read back
    as written (``unneutralise``; ``written`` false: values that were no CSV cells): the ``Categorical`` a database
    hands the core, whose integer paths it then takes instead of a Python string per row."""
    index: dict[str, int] = {}
    codes = [index.setdefault(cell, len(index)) for cell in cells]
    return Categorical(np.array(codes, dtype=np.int64), [unneutralise(cell) if written else cell for cell in index])


def _whole_numbers(cells: Sequence[str], lines: Sequence[int], column: str, *, empty: int | None = None) -> np.ndarray:
    try:
        return np.array([int(cell) if cell or empty is None else empty for cell in cells], dtype=np.int64)
    except ValueError:
        for cell, line in zip(cells, lines, strict=True):
            if cell or empty is None:
                _int(cell, JUDGMENTS_FILE, line, column)
        raise


def bundle_tables(judgments_csv: str) -> tuple[JudgmentTable, SpanTable]:
    """The scored judgments of a long-format CSV and their spans, as the core's tables (the rows the server's run
    read: docs/metrics.md#provenance). A row without a round (a session label) is not a judgment."""
    reader = csv.reader(io.StringIO(judgments_csv, newline=""))
    header = next(reader, [])
    required = ("round", "reviewer", "is_gold", "dataset", "conversation_id", "turn_index", "model", "attribute",
                "score", "spans")
    missing = [column for column in required if column not in header]
    if missing:
        raise BundleError(f"{JUDGMENTS_FILE}: no column {', '.join(missing)}")
    at = {column: header.index(column) for column in required}
    rows, lines = [], []
    for row in reader:
        if len(row) != len(header):
            raise BundleError(f"{JUDGMENTS_FILE} line {reader.line_num}: {len(row)} cells, the header has "
                              f"{len(header)}")
        if row[at["round"]]:
            rows.append(row)
            lines.append(reader.line_num)
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(header)
    gold_cells = columns[at["is_gold"]]
    if not set(gold_cells) <= {"true", "false"}:
        line = next(n for cell, n in zip(gold_cells, lines, strict=True) if cell not in ("true", "false"))
        raise BundleError(f"{JUDGMENTS_FILE} line {line}: is_gold must be true or false")
    keys: dict[str, Any] = {name: _categorical(columns[at[column]]) for name, column in _KEY_TEXT}
    judgments = JudgmentTable(
        **keys, is_gold=np.array([cell == "true" for cell in gold_cells], dtype=bool),
        turn=_whole_numbers(columns[at["turn_index"]], lines, "turn_index", empty=0),
        score=_whole_numbers(columns[at["score"]], lines, "score"))

    span_rows, start, end, slugs = [], [], [], []
    for position, cell in enumerate(columns[at["spans"]]):
        if cell:
            for one_start, one_end, slug in _spans(unneutralise(cell), lines[position]):
                span_rows.append(position)
                start.append(one_start)
                end.append(one_end)
                slugs.append(slug)
    picked = np.array(span_rows, dtype=np.int64)
    spans = SpanTable(
        **{name: Categorical(np.asarray(column.codes)[picked], column.categories) for name, column in keys.items()},
        is_gold=judgments.is_gold[picked], turn=judgments.turn[picked], start=np.array(start, dtype=np.int64),
        end=np.array(end, dtype=np.int64),
        subcategory=_categorical(slugs, written=False))  # JSON inside the (read back) cell
    return judgments, spans


def _spans(cell: str, line: int) -> list[tuple[int, int, str]]:
    """A row's spans cell (a JSON list of {start, end, subcategory}) as (start, end, subcategory)."""
    try:
        return [(int(one["start"]), int(one["end"]), str(one["subcategory"])) for one in json.loads(cell)]
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
    if kind != DEFAULT_KIND and (not isinstance(kind, str) or core_section(kind) is None):
        raise BundleError(f"a {kind} study's bundle cannot be recomputed by this code: it writes the reports of "
                          "default studies and of the kinds whose core section it has "
                          "(docs/bundle.md#what-each-kind-gets)")
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
    if bundle.responses_csv is None and with_spans:
        # The writer leaves out a table without rows; highlights need their responses' texts.
        raise BundleError(f"the bundle has no {RESPONSES_FILE}, and {len(with_spans)} responses have highlights "
                          "in its judgments: their texts are needed")
    rows = _csv_rows(bundle.responses_csv, RESPONSES_FILE, ("dataset", "conversation_id", "turn_index", "model",
                                                            "text")) if bundle.responses_csv is not None else ()
    for line, row in rows:
        key = (unneutralise(row["dataset"]), unneutralise(row["conversation_id"]),
               _int(row["turn_index"], RESPONSES_FILE, line, "turn_index"), unneutralise(row["model"]))
        if key in with_spans:
            texts[key] = unneutralise(row["text"])

    single_blas_thread()  # as the server's worker computes: the same last bits
    prepared = report_prepare(attributes=_attributes(run_file), judgments=judgments, spans=spans,
                              response_texts=texts, conversation_kinds=kinds,
                              subcategory_attribute=subcategory_attribute, params=params)
    sections, kind_rows = _sections(kind, bundle, params)
    report_complete(prepared.report, study=study, software=software, unscored=unscored, sections=sections,
                    kind_rows=kind_rows)
    boot = prepared.bootstrap
    report = report_finish(prepared, [boot.chunk_samples(chunk) for chunk in range(boot.chunks)])
    from .report_file import report_file_text

    return report_file_text(run, report)


def _sections(kind: str, bundle: Bundle, params: ReportParams) -> tuple[dict[str, dict | None], KindRows | None]:
    """The section of the study's kind (its core section's), computed from its rows as the server's run computes it
    from the database (``metrics.runs.report_prepare``: the run's seed, its bootstrap as the resamples, no
    reference named), and the rows as the input fingerprint covers them; nothing for the default kind."""
    section = core_section(kind)
    if section is None:
        return {}, None
    files = bundle.kind_files or {}
    try:
        found, rows = section.compute(bundle.run_file[kind], [files.get(name, "") for name in section.files],
                                      seed=params.seed, resamples=params.bootstrap)
    except KeyError as error:
        raise BundleError(f"{RUN_FILE}: no {kind} block ({error!r})") from error
    except ValueError as error:  # the rows' reader names the file and line
        raise BundleError(f"the {kind} section's rows: {error}") from error
    return {kind: found}, rows


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
