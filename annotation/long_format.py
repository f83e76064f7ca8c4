"""The SPEC §6 long format of judgments, in one place: its columns, reading a file (CSV or JSON Lines) into rows,
and writing a study's judgments. Every export (downloads, API, ``export_judgments``) and every import
(``import_judgments``, API) goes through here, so a file we write always reads back exactly.

CSV cells are written by ``common.cells`` (formula neutralisation) and read back with ``unneutralise``.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterator
from typing import IO, Any

from django.db import connection, transaction
from django.db.models import Exists, OuterRef, QuerySet

from annotation.models import Judgment, SessionLabel, Span, Study, StudyMember
from common.cells import csv_stream, jsonl_stream, unneutralise
from common.errors import RowError
from common.lookups import any_of
from common.rounds import round_name

COLUMNS = ("study", "round", "reviewer", "is_gold", "dataset", "conversation_id", "turn_index", "model",
           "attribute", "score", "instance_count", "spans", "role")
# SPEC §6's optional columns: a file may leave them out altogether (from the CSV header as from a JSON row).
OMITTABLE_COLUMNS = ("role",)
# Longitudinal studies (SPEC-CARE): the session of a row. Read when a file has it; written, after the columns
# above, only for a study whose schema codes sessions (so every other study's files stay exactly as they were).
SESSION_INDEX = "session_index"
# Keys a JSON row may leave out (an absent model, instance count or spans is an empty one).
OPTIONAL_COLUMNS = ("model", "instance_count", "spans", *OMITTABLE_COLUMNS)
# The `role` column: whose coding a row is. An expert's own coding is never counted as a reviewer's; a gold row
# (the panel's consensus) is recorded in the experts' name whoever typed it in.
ROLES = (StudyMember.Role.REVIEWER.value, StudyMember.Role.EXPERT.value)
# An automated coder (an LLM judge): never counted as a reviewer or an expert. A file may give it only for a
# method registered in the study (``annotation.methods.method_register``: its version and prompt id are known).
METHOD_ROLE = StudyMember.Role.METHOD.value
DEFAULT_ROLE = StudyMember.Role.REVIEWER.value
GOLD_ROLE = StudyMember.Role.EXPERT.value
# Session labels (SPEC-LC8, ``annotation.session_labels``): a method's run seed, empty for everyone else. Written
# only for a session-rated study (a schema with an ``lc8`` block), after session_index.
SEED = "seed"
FORMATS = ("csv", "jsonl")
JUDGMENT_ROWS_BATCH = 2000


# --- reading -----------------------------------------------------------------------------------------------------


# Names a JSON row must give as text (a number would be read as a name; the other columns check their values).
TEXT_COLUMNS = ("reviewer", "dataset", "conversation_id", "model")
# Text PostgreSQL cannot store (NUL; lone surrogates, which JSON escapes can make): refused before any query.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def read_rows(stream: IO[str], *, fmt: str) -> Iterator[tuple[int, Any]]:
    """(line number, row) pairs from a CSV (header required) or JSON Lines stream; a line that cannot be read
    is yielded as a RowError in place of its row (one per wrong column), and so is a file without rows."""
    rows = _read_jsonl(stream) if fmt == "jsonl" else _read_csv(stream)
    empty = True
    for number, row in rows:
        empty = False
        if isinstance(row, RowError):
            yield number, row
            continue
        problems = _cell_problems(number, row, typed=fmt == "jsonl") if isinstance(row, dict) else []
        yield from ((number, problem) for problem in problems) if problems else [(number, row)]
    if empty:
        yield 1, RowError(1, "file", "no judgment rows: the file is empty" + (" but for its header" if fmt == "csv"
                                                                                else ""))


def _read_jsonl(stream: IO[str]) -> Iterator[tuple[int, Any]]:
    for number, line in enumerate(stream, start=1):
        if line.strip():
            try:
                yield number, json.loads(line)
            except json.JSONDecodeError as error:
                yield number, RowError(number, "line", f"not valid JSON ({error.msg} at column {error.colno})")
            except RecursionError:
                yield number, RowError(number, "line", "not valid JSON (nested too deeply)")


def _read_csv(stream: IO[str]) -> Iterator[tuple[int, Any]]:
    reader = csv.DictReader(stream)
    try:
        fieldnames = reader.fieldnames or []
        missing = [c for c in COLUMNS if c not in fieldnames and c not in OMITTABLE_COLUMNS]
        if missing:
            yield 1, RowError(1, "header", f"missing column(s) {', '.join(missing)}; expected {', '.join(COLUMNS)}")
            return
        for row in reader:
            yield reader.line_num, {key: unneutralise(value) if isinstance(value, str) else value
                                    for key, value in row.items()}
    except csv.Error as error:  # e.g. a field over the csv module's 128 KiB limit: the rest cannot be read
        yield reader.line_num, RowError(reader.line_num, "line", f"not readable CSV ({error})")


def _cell_problems(number: int, row: dict, *, typed: bool) -> list[RowError]:
    """Cells no column can hold: unstorable text anywhere, and (JSON) a number, list or object in a text column."""
    problems = [RowError(number, str(key)[:50], "contains a NUL or lone surrogate character")
                for key, value in row.items() if isinstance(value, str) and _UNSTORABLE.search(value)]
    if typed:
        problems += [RowError(number, column, f"must be text, got {type(row[column]).__name__}")
                     for column in TEXT_COLUMNS if row.get(column) is not None and not isinstance(row[column], str)]
    return problems


# --- writing -----------------------------------------------------------------------------------------------------


def is_longitudinal(study: Study) -> bool:
    """Whether the study's schema codes sessions (a group with unit ``session``): its CSV files carry the
    session_index column. Read from the schema's definition, which the export pages and API load with the study."""
    return any(isinstance(group, dict) and group.get("unit") == "session"
               for group in study.schema.definition.get("groups", []))


def has_session_labels(study: Study) -> bool:
    """Whether the study's schema is session-rated (an ``lc8`` block, SPEC-LC8): its files carry the session labels
    (methods' predictions per seed, reference labels) after the judgments, and a ``seed`` column."""
    return isinstance(study.schema.definition.get("lc8"), dict)


def columns_for(study: Study) -> tuple[str, ...]:
    if has_session_labels(study):
        return (*COLUMNS, SESSION_INDEX, SEED)
    return (*COLUMNS, SESSION_INDEX) if is_longitudinal(study) else COLUMNS


def judgments_query(*, study: Study) -> QuerySet:
    """The export's one query: every scored judgment of the study with what its row names, in file order.

    The role comes from the coder's membership of the study (an expert member's rows are ``expert``, everyone
    else's ``reviewer``; gold rows are ``expert``), folded into the judgments query so it costs no query."""
    expert = StudyMember.objects.filter(study=study, user_id=OuterRef("coder_id"), role=StudyMember.Role.EXPERT)
    method = StudyMember.objects.filter(study=study, user_id=OuterRef("coder_id"), role=StudyMember.Role.METHOD)
    return (
        Judgment.objects.filter(round__study=study, score__isnull=False)
        .annotate(coder_is_expert=Exists(expert), coder_is_method=Exists(method))
        .order_by("round__kind", "round__number", "is_gold", "coder__username", "conversation__dataset__name",
                  "conversation__external_id", "turn__index", "response__model_slot", "attribute__position")
        .values_list("id", "round__kind", "round__number", "coder__username", "is_gold",
                     "conversation__dataset__name", "conversation__external_id", "turn__index",
                     "response__model_slot", "attribute__code", "score", "instance_count", "coder_is_expert",
                     "coder_is_method", "session__index", "turn__session__index")
    )


# PostgreSQL's memory for the export's sort: the default (4 MB) sends a paper-scale sort to disk.
_SORT_MEMORY = "256MB"


def judgment_rows(*, study: Study) -> Iterator[dict]:
    """The study's judgments as long-format rows, streamed: judgments come from a server-side cursor and their
    spans are fetched a batch of judgments at a time, so memory stays flat at any size. Unscored drafts (spans
    highlighted, score still to come) are not judgments yet and are left out.

    Outside a transaction (a download, ``export_judgments``) the rows are read in one of their own: one consistent
    snapshot, and a cursor that hands rows over as the query makes them. Without it Django declares the cursor
    WITH HOLD, and PostgreSQL then computes and stores the whole result before the first row (the first byte of a
    paper-scale export came after seconds). Read it to the end or close it, as a streamed response does."""
    if not connection.get_autocommit():  # the caller's transaction: the cursor already streams
        yield from _judgment_rows(study)
        return
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(f"SET LOCAL work_mem = '{_SORT_MEMORY}'")
        yield from _judgment_rows(study)


def _judgment_rows(study: Study) -> Iterator[dict]:
    batch: list[tuple] = []
    for row in judgments_query(study=study).iterator(chunk_size=5000):
        batch.append(row)
        if len(batch) == JUDGMENT_ROWS_BATCH:
            yield from _rows(study, batch)
            batch = []
    yield from _rows(study, batch)


def session_label_rows(*, study: Study) -> Iterator[dict]:
    """The study's session labels as long-format rows (SPEC-LC8), streamed from one query: no round, turn or model;
    ``score`` the float as stored, ``role`` method or reference, ``reviewer`` the coder's name, ``seed`` the
    method's run seed (null for none) and ``session_index``. ``annotation.session_labels`` reads them back."""
    for (coder, role, seed, dataset, conversation, session, code, value) in (
        SessionLabel.objects.filter(study=study)
        .order_by("coder__role", "coder__user__username", "seed", "session__conversation__dataset__name",
                  "session__conversation__external_id", "session__index", "attribute__position")
        .values_list("coder__user__username", "coder__role", "seed", "session__conversation__dataset__name",
                     "session__conversation__external_id", "session__index", "attribute__code", "value")
        .iterator(chunk_size=5000)
    ):
        yield {"study": study.slug, "round": "", "reviewer": coder, "is_gold": False, "dataset": dataset,
               "conversation_id": conversation, "turn_index": None, "model": None, "attribute": code,
               "score": value, "instance_count": None, "spans": [], "role": role, SESSION_INDEX: session,
               SEED: seed}


def _rows(study: Study, batch: list[tuple]) -> Iterator[dict]:
    spans: dict[int, list[dict]] = {}
    if batch:
        for judgment_id, start, end, slug in (
            Span.objects.filter(any_of("judgment_id", [row[0] for row in batch]))  # one array, not 2,000 parameters
            .order_by("judgment_id", "start", "end", "subcategory__slug")
            .values_list("judgment_id", "start", "end", "subcategory__slug")
        ):
            spans.setdefault(judgment_id, []).append({"start": start, "end": end, "subcategory": slug})
    for (judgment_id, kind, number, coder, is_gold, dataset, conversation, turn, model, code, score,
         instance_count, coder_is_expert, coder_is_method, session, turn_session) in batch:
        row = {
            "study": study.slug,
            "round": round_name(kind, number),
            "reviewer": coder,
            "is_gold": is_gold,
            "dataset": dataset,
            "conversation_id": conversation,
            "turn_index": turn,
            "model": model,
            "attribute": code,
            "score": score,
            "instance_count": instance_count,
            "spans": spans.get(judgment_id, []),
            "role": GOLD_ROLE if is_gold or coder_is_expert else METHOD_ROLE if coder_is_method else DEFAULT_ROLE,
        }
        if session is not None or turn_session is not None:  # a history's row; no other study's row changes
            row[SESSION_INDEX] = session if session is not None else turn_session
        yield row


def csv_cells(row: dict, columns: tuple[str, ...] = COLUMNS) -> list[Any]:
    """A row as CSV cells: empty for no model, no instance count and no spans; spans as a JSON list."""
    flat = row | {"model": row["model"] or "",
                  "spans": json.dumps(row["spans"], ensure_ascii=False) if row["spans"] else ""}
    return [flat.get(column) if column in (SESSION_INDEX, SEED) else flat[column] for column in columns]


def file_rows(*, study: Study) -> Iterator[dict]:
    """Every row of the study's long-format file: its judgments, then (a session-rated study) its session labels."""
    yield from judgment_rows(study=study)
    if has_session_labels(study):
        yield from session_label_rows(study=study)


def judgments_csv(*, study: Study) -> Iterator[str]:
    columns = columns_for(study)
    return csv_stream(columns, (csv_cells(row, columns) for row in file_rows(study=study)))


def judgments_jsonl(*, study: Study) -> Iterator[str]:
    return jsonl_stream(file_rows(study=study))


WRITERS = {"csv": judgments_csv, "jsonl": judgments_jsonl}
CONTENT_TYPES = {"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson; charset=utf-8"}
