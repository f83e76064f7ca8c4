"""The long format of judgments (docs/reference.md#long-format-of-judgments), in one place: its columns, reading a file
(CSV or JSON Lines) into rows, and writing a study's judgments. Every export (downloads, API, ``export_judgments``) and
every import (``import_judgments``, API) goes through here, so a file we write always reads back exactly.

CSV cells are written by ``common.cells`` (formula neutralisation) and read back with ``unneutralise``.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterator
from typing import IO, Any

from django.conf import settings
from django.db import connection
from django.db.models import Exists, OuterRef, Q, QuerySet

from annotation import long_format_sql
from annotation.kinds import kind_of
from annotation.models import FormerStudyMember, Judgment, SessionLabel, Span, Study, StudyMember
from annotation.selectors import study_coders
from common import file_formats
from common.cells import csv_stream, jsonl_stream, unneutralise
from common.errors import UNSTORABLE, UNSTORABLE_MESSAGE, RowError, jsonl_rows
from common.lookups import any_of
from common.rounds import round_name
from common.snapshot import one_snapshot

COLUMNS = ("study", "round", "reviewer", "is_gold", "dataset", "conversation_id", "turn_index", "model",
           "attribute", "score", "instance_count", "spans", "role")
# The optional columns: a file may leave them out altogether (from the CSV header as from a JSON row).
OMITTABLE_COLUMNS = ("role",)
# Longitudinal studies: the session of a row. Read when a file has it; written, after the columns
# above, only for a study whose schema codes sessions (so every other study's files stay exactly as they were).
SESSION_INDEX = "session_index"
# Keys a JSON row may leave out (an absent model, instance count or spans is an empty one).
OPTIONAL_COLUMNS = ("model", "instance_count", "spans", *OMITTABLE_COLUMNS)
# The `role` column: whose coding a row is. An expert's own coding is never counted as a reviewer's; a gold row
# (the panel's consensus) is recorded in the experts' name whoever typed it in.
ROLES = (StudyMember.Role.REVIEWER.value, StudyMember.Role.EXPERT.value)
# An automated coder (an LLM judge): never counted as a reviewer or an expert. A file may give it only for a
# method registered in the study (``annotation.automated_coders.method_register``: its version and prompt id are known).
METHOD_ROLE = StudyMember.Role.METHOD.value
DEFAULT_ROLE = StudyMember.Role.REVIEWER.value
GOLD_ROLE = StudyMember.Role.EXPERT.value
# Session labels (``annotation.session_labels``): a method's run seed, empty for everyone else. Written only for
# a study whose kind has session labels, after session_index.
SEED = "seed"
FORMATS = file_formats.FORMATS  # the long format's two encodings: one list, with the import's rule
JUDGMENT_ROWS_BATCH = 2000


# --- reading -----------------------------------------------------------------------------------------------------


# Names a JSON row must give as text (a number would be read as a name; the other columns check their values).
TEXT_COLUMNS = ("reviewer", "dataset", "conversation_id", "model")


def read_rows(stream: IO[str], *, fmt: str) -> Iterator[tuple[int, Any]]:
    """(line number, row) pairs from a CSV (header required) or JSON Lines stream; a line that cannot be read
    is yielded as a RowError in place of its row (one per wrong column), and so is a file without rows."""
    rows = jsonl_rows(stream) if fmt == "jsonl" else _read_csv(stream)
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
    problems = [RowError(number, str(key)[:50], UNSTORABLE_MESSAGE)
                for key, value in row.items() if isinstance(value, str) and UNSTORABLE.search(value)]
    if typed:
        problems += [RowError(number, column, f"must be text, got {type(row[column]).__name__}")
                     for column in TEXT_COLUMNS if row.get(column) is not None and not isinstance(row[column], str)]
    return problems


# --- writing -----------------------------------------------------------------------------------------------------


def is_longitudinal(study: Study) -> bool:
    """Whether the study's schema codes sessions (a group with unit ``session``): its files carry the
    session_index column, CSV and JSON Lines alike (any other study's do not, over histories too: a turn's index
    names it in its conversation). Read from the schema's definition, which the export pages and API load with the
    study."""
    return any(isinstance(group, dict) and group.get("unit") == "session"
               for group in study.schema.definition.get("groups", []))


def has_session_labels(study: Study) -> bool:
    """Whether the study's kind has session labels: its files carry them (methods' predictions per seed, reference
    labels) after the judgments, and a ``seed`` column."""
    return kind_of(study).session_labels


def columns_for(study: Study) -> tuple[str, ...]:
    """The columns of the study's judgments file, the same in CSV and JSON Lines (where a row leaves out the keys
    past ``COLUMNS`` it has no value for)."""
    if has_session_labels(study):
        return (*COLUMNS, SESSION_INDEX, SEED)
    return (*COLUMNS, SESSION_INDEX) if is_longitudinal(study) else COLUMNS


# The file's order within one slice of it (one round's non-gold rows of one coder, or its gold rows): the unit, then
# the attribute; a history's session-level rows (no turn, no model) follow their session.
_UNIT_ORDER = ("conversation__dataset__name", "conversation__external_id", "turn__index", "response__model_slot",
               "attribute__position", "session__index")
_UNIT_VALUES = ("id", "conversation__dataset__name", "conversation__external_id", "turn__index",
                "response__model_slot", "attribute__code", "score", "instance_count", "session__index",
                "turn__session__index")


def row_role(coder_role: str | None, *, is_gold: bool) -> str:
    """The role column of a judgment's row, from its coder's role in the study (``selectors.study_coders``: a coder
    taken off it keeps theirs; None for a coder who never was a member): an expert's or a method's own, ``expert``
    for a gold row, ``reviewer`` for everyone else."""
    if is_gold or coder_role == GOLD_ROLE:
        return GOLD_ROLE
    return METHOD_ROLE if coder_role == METHOD_ROLE else DEFAULT_ROLE


def judgments_query(*, study: Study) -> QuerySet:
    """Every scored judgment of the study with what its row names, in file order, as one query: the export reads
    the same rows a slice at a time (``_slices``); this one statement is the benchmark's COPY baseline.

    The role comes from the coder's membership of the study, or the one they had when taken off it (an expert
    member's rows are ``expert``, everyone else's ``reviewer``; gold rows are ``expert``)."""

    def had_role(role: str) -> Q:
        return Exists(StudyMember.objects.filter(study=study, user_id=OuterRef("coder_id"), role=role)) | Exists(
            FormerStudyMember.objects.filter(study=study, user_id=OuterRef("coder_id"), role=role))

    return (
        Judgment.objects.filter(round__study=study, score__isnull=False)
        .annotate(coder_is_expert=had_role(StudyMember.Role.EXPERT), coder_is_method=had_role(StudyMember.Role.METHOD))
        .order_by("round__kind", "round__number", "is_gold", "coder__username", *_UNIT_ORDER)
        .values_list("id", "round__kind", "round__number", "coder__username", "is_gold",
                     "conversation__dataset__name", "conversation__external_id", "turn__index",
                     "response__model_slot", "attribute__code", "score", "instance_count", "coder_is_expert",
                     "coder_is_method", "session__index", "turn__session__index")
    )


def judgment_rows(*, study: Study) -> Iterator[dict]:
    """The study's judgments as long-format rows (dicts of ``COLUMNS``, and ``session_index`` for a history's row
    of a study whose files carry it: ``columns_for``), streamed as ``judgment_tuples`` reads them."""
    keys = (*COLUMNS, SESSION_INDEX)
    for row in judgment_tuples(study=study):
        yield dict(zip(keys, row, strict=False))  # a tuple without a session index stops before its key


def judgment_tuples(*, study: Study) -> Iterator[tuple]:
    """The study's judgments as tuples of the ``COLUMNS`` values in that order (spans a list of dicts), with the
    session index after them for a history's row of a study whose files carry it (``columns_for``); streamed:
    judgments come from server-side cursors and their spans are fetched a batch of judgments at a time, so memory
    stays flat at any size. Unscored drafts (spans highlighted, score still to come) are not judgments yet and are
    left out.

    The rows are read in the file's order one slice at a time (a round's non-gold rows of one coder, then its gold
    rows), so PostgreSQL sorts a slice, never the whole study, before the first row.

    Outside a transaction (a download, ``export_judgments``) the rows are read in one of their own: one consistent
    snapshot, and cursors that hand rows over as the query makes them. Without it Django declares a cursor
    WITH HOLD, and PostgreSQL then computes and stores its whole result before the first row. Read it to the end or
    close it, as a streamed response does."""
    yield from _in_snapshot(lambda _: _judgment_tuples(study))


def _in_snapshot(read: Callable[[int], Iterator[Any]]) -> Iterator[Any]:
    """What ``read(helpers)`` yields, read in one transaction: the caller's (``helpers`` 0), or (outside one) one of
    its own, REPEATABLE READ, with the export's settings (``long_format_sql.export_settings``), whose snapshot up
    to ``EXPORT_CONNECTIONS`` - 1 helper connections may share."""
    with one_snapshot() as own:  # the caller's transaction: the cursors already stream
        if not own:
            yield from read(0)
            return
        with connection.cursor() as cursor:
            long_format_sql.export_settings(cursor)
        yield from read(max(settings.EXPORT_CONNECTIONS - 1, 0))


def _slices(study: Study) -> Iterator[tuple[tuple, str | None, QuerySet]]:
    """The file in slices, in its order: (the row's first cells, its role or None for a gold slice, the query of
    the slice's rows). Rounds by kind and number; in each, every coder's non-gold rows by username, then the
    round's gold rows (each row with its coder's name, role ``expert``). The role of a non-gold row is its coder's
    in the study (``selectors.study_coders``: a coder taken off the study keeps theirs), read once."""
    roles = {coder.user_id: coder.role for coder in study_coders(study=study)}
    scored = Judgment.objects.filter(score__isnull=False)
    for round_id, kind, number in study.rounds.order_by("kind", "number").values_list("id", "kind", "number"):
        name = round_name(kind, number)
        for coder_id, username in long_format_sql.round_coders(round_id):
            yield ((study.slug, name, username, False), row_role(roles.get(coder_id), is_gold=False),
                   scored.filter(round_id=round_id, coder_id=coder_id, is_gold=False).order_by(*_UNIT_ORDER)
                   .values_list(*_UNIT_VALUES))
        yield ((study.slug, name), None,
               scored.filter(round_id=round_id, is_gold=True).order_by("coder__username", *_UNIT_ORDER)
               .values_list("coder__username", *_UNIT_VALUES))


def _judgment_tuples(study: Study) -> Iterator[tuple]:
    with_session = SESSION_INDEX in columns_for(study)
    batch: list[tuple] = []  # (first cells, role, row) across slices: one span query per JUDGMENT_ROWS_BATCH rows
    for first, role, query in _slices(study):
        for row in query.iterator(chunk_size=5000):
            batch.append((first, role, row))
            if len(batch) >= JUDGMENT_ROWS_BATCH:
                yield from _tuples(batch, with_session=with_session)
                batch = []
    yield from _tuples(batch, with_session=with_session)


def _tuples(batch: list[tuple], *, with_session: bool) -> Iterator[tuple]:
    spans: dict[int, list[dict]] = {}
    if batch:
        for judgment_id, start, end, slug in (
            Span.objects.filter(any_of("judgment_id", [row[0] if role else row[1] for _, role, row in batch]))
            .order_by("judgment_id", "start", "end", "subcategory__slug")
            .values_list("judgment_id", "start", "end", "subcategory__slug")
        ):
            spans.setdefault(judgment_id, []).append({"start": start, "end": end, "subcategory": slug})
    for first, role, row in batch:
        if role is None:  # a gold row: its coder's name leads the row
            username, (judgment_id, dataset, conversation, turn, model, code, score, instance_count, session,
                       turn_session) = row[0], row[1:]
            first, role = (*first, username, True), GOLD_ROLE
        else:
            (judgment_id, dataset, conversation, turn, model, code, score, instance_count, session,
             turn_session) = row
        cells = (*first, dataset, conversation, turn, model, code, score, instance_count,
                 spans.get(judgment_id, []), role)
        if with_session and (session is not None or turn_session is not None):  # a history's row
            cells = (*cells, session if session is not None else turn_session)
        yield cells


def session_label_rows(*, study: Study) -> Iterator[dict]:
    """The study's session labels as long-format rows (docs/sessions.md#long-format-exports), streamed from one query:
    no round, turn or model; ``score`` the float as stored, ``role`` method or reference, ``reviewer`` the coder's name,
    ``seed`` the method's run seed (null for none) and ``session_index``. ``annotation.session_labels`` reads them
    back."""
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


# The keys of a file's rows, in order: a row as a tuple holds the values of the first len(row) of them.
FILE_KEYS = (*COLUMNS, SESSION_INDEX, SEED)
_SPANS = COLUMNS.index("spans")


def file_tuples(*, study: Study) -> Iterator[tuple]:
    """``file_rows`` as tuples of values in ``FILE_KEYS`` order (no dict per row): written by ``csv_stream`` (through
    ``_csv_rows``) or ``jsonl_stream``, the Python writer, the file's definition that the database's lines
    (``long_format_sql``) are tested against."""
    yield from judgment_tuples(study=study)
    yield from _session_label_tuples(study)


def _session_label_tuples(study: Study) -> Iterator[tuple]:
    if has_session_labels(study):
        for row in session_label_rows(study=study):
            yield tuple(row.values())


def _csv_rows(rows: Iterator[tuple], width: int) -> Iterator[tuple]:
    """Tuples as the file's CSV cells (``csv_cells``): no spans as an empty cell, columns past ``width`` left out
    and missing ones empty."""
    missing = (None,) * width
    for row in rows:
        yield (*row[:_SPANS], row[_SPANS] or "", *row[_SPANS + 1:width], *missing[len(row):])


def judgments_csv(*, study: Study) -> Iterator[str]:
    columns = columns_for(study)
    # The database writes the judgments' lines (annotation.long_format_sql: the Python writer's bytes, several
    # times faster).
    yield from csv_stream(columns, ())
    yield from _in_snapshot(lambda helpers: long_format_sql.judgment_lines(study=study, fmt="csv", columns=len(columns),
                                                                          helpers=helpers))
    yield from csv_stream(columns, _csv_rows(_session_label_tuples(study), len(columns)), with_header=False)


def judgments_jsonl(*, study: Study) -> Iterator[str]:
    columns = len(columns_for(study))  # the CSV's columns: session_index only where the CSV has it
    yield from _in_snapshot(lambda helpers: long_format_sql.judgment_lines(study=study, fmt="jsonl", columns=columns,
                                                                          helpers=helpers))
    yield from jsonl_stream(_session_label_tuples(study), keys=FILE_KEYS)


WRITERS = {"csv": judgments_csv, "jsonl": judgments_jsonl}
CONTENT_TYPES = {"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson; charset=utf-8"}
