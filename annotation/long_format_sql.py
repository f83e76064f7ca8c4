"""The judgments of the long format written line by line by PostgreSQL: how every export writes them.

The Python writer (``annotation.long_format`` reads the rows and ``common.cells`` writes them) defines the file; at
ten times paper scale (seven million judgments) its formatting was the export's bottleneck, three times what
PostgreSQL spent finding the rows. So the judgment lines are made by the database: each cell that needs formatting
(a name, a conversation id, an attribute code, a model, a span's subcategory) is formatted once in Python, by the
same ``csv_field`` and ``json.dumps`` as the Python writer, and handed over in small lookup tables; PostgreSQL joins
each judgment to its cells, glues them with the separators below, and sorts on integer ranks (the lookups'
positions in PostgreSQL's own order of the names) instead of on text. Python only passes the lines on.

The lines are the Python writer's bytes exactly: ``tests/annotation/test_long_format_sql.py`` compares the two on
awkward names, and the Python writer (``long_format.file_tuples``) stays the file's definition. A judgment whose
cell is missing from a lookup makes a NULL line, which raises (``ExportIncomplete``): a row is never dropped
silently.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import re
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, NamedTuple

from django.contrib.auth import get_user_model
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connection, connections, models
from django.db.backends.base.base import BaseDatabaseWrapper

from annotation.models import AttributeDefinition, Judgment, Span, SpanSubcategory, Study, StudyMember
from annotation.selectors import study_coders
from benchmark.models import Conversation, Dataset, ModelResponse, Session, Turn
from common.cells import CHUNK, csv_field
from common.rounds import round_name

FETCH = 5000  # lines read from the database at a time
SORT_MEMORY = "256MB"  # PostgreSQL's memory for a slice's sort (``export_settings``)
DEFAULT_ROLE, GOLD_ROLE = StudyMember.Role.REVIEWER.value, StudyMember.Role.EXPERT.value  # as long_format's


log = logging.getLogger(__name__)


class ExportIncompleteError(RuntimeError):
    """A judgment's line could not be made (one of its cells missing from the lookups): the export stops."""


# Per format, the text between and around the cells of a line, and the spelling of an empty cell.
_GLUE = {
    "csv": {"sep": ",", "turn": ",", "model": ",", "attribute": ",", "score": ",", "count": ",", "spans": ",",
            "null": "", "no_spans": "", "span_open": '"[', "span_close": ']"', "span_start": '{""start"": ',
            "span_end": ', ""end"": ', "span_sub": ', ""subcategory"": ', "span_sep": "}, ", "span_last": "}",
            "end": ""},
    "jsonl": {"sep": ", ", "turn": ', "turn_index": ', "model": ', "model": ', "attribute": ', "attribute": ',
              "score": ', "score": ', "count": ', "instance_count": ', "spans": ', "spans": ', "null": "null",
              "no_spans": "[]", "span_open": "[", "span_close": "]", "span_start": '{"start": ',
              "span_end": ', "end": ', "span_sub": ', "subcategory": ', "span_sep": "}, ", "span_last": "}",
              "end": "}"},
}


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _cell(fmt: str, key: str, value: Any) -> str:
    """One cell as the Python writer writes it: a CSV field, or a JSON Lines ``"key": value``."""
    return csv_field(value) if fmt == "csv" else f"{_json(key)}: {_json(value)}"


def _quote(name: str) -> str:
    return connection.ops.quote_name(name)


def _table(model: type[models.Model]) -> str:
    return _quote(model._meta.db_table)


# The lookup tables of an export, for the length of its transaction (created once, filled again for each slice).
_TABLES = {
    "cab_export_coder": "id bigint PRIMARY KEY, prefix text NOT NULL, suffix text NOT NULL, rank int NOT NULL",
    "cab_export_conversation": "id bigint PRIMARY KEY, cells text NOT NULL, rank int NOT NULL",
    "cab_export_model": "slot text PRIMARY KEY, cell text NOT NULL, rank int NOT NULL",
    "cab_export_attribute": "id bigint PRIMARY KEY, cell text NOT NULL, position int NOT NULL",
    "cab_export_subcategory": "id bigint PRIMARY KEY, cell text NOT NULL, rank int NOT NULL",
}
# A slice's judgments: a round's non-gold rows of one coder, or its gold rows (parameters). Not a join to the coder
# lookup: a coder missing from it must make NULL lines, not fewer. Copied into a table of their own, which the
# slice's lookups, spans and lines then read: at ten times paper scale a slice's million rows lie scattered over
# 100,000 pages of the judgment table, and reading them there four times cost more than the lines themselves.
_SLICE = (
    "DROP TABLE IF EXISTS cab_export_slice; CREATE TEMP TABLE cab_export_slice ON COMMIT DROP AS "
    "SELECT id, coder_id, conversation_id, turn_id, response_id, session_id, attribute_id, score, instance_count "
    "FROM {judgment} WHERE round_id = %(round)s AND is_gold = %(gold)s AND score IS NOT NULL "
    "AND (%(gold)s OR coder_id = %(coder)s); ANALYZE cab_export_slice"
)


def _create_tables(cursor: Any) -> None:
    cursor.execute("".join(f"DROP TABLE IF EXISTS {name}; CREATE TEMP TABLE {name} ({columns}) ON COMMIT DROP; "
                           for name, columns in _TABLES.items()))


def _fill(cursor: Any, name: str, rows: list[tuple], *, analyse: bool = False) -> None:
    """Replace a lookup's rows (through COPY); with ``analyse``, its statistics for the planner too (a lookup whose
    size varies)."""
    cursor.execute(f"TRUNCATE {name}")
    with cursor.cursor.copy(f"COPY {name} FROM STDIN") as copy:  # noqa: S608  # nosec B608 - our own temp table
        for row in rows:
            copy.write_row(row)
    if analyse:
        cursor.execute(f"ANALYZE {name}")


def _schema_rows(study: Study, fmt: str) -> dict[str, list[tuple]]:
    """The rows of the schema's lookups: the formatted cells of its attribute codes and span subcategories, the
    subcategories ranked in PostgreSQL's order of their slugs. Read once, filled into each connection's tables."""
    attributes = [(pk, csv_field(code) if fmt == "csv" else _json(code), position) for pk, code, position in
                  AttributeDefinition.objects.filter(schema_id=study.schema_id).values_list("pk", "code", "position")]
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, slug FROM {_table(SpanSubcategory)} WHERE schema_id = %s ORDER BY slug",  # noqa: S608  # nosec B608
            [study.schema_id],
        )
        # A subcategory's JSON string, with its quotes doubled inside the CSV cell that holds the spans.
        subcategories = [(pk, _json(slug).replace('"', '""') if fmt == "csv" else _json(slug), rank)
                         for rank, (pk, slug) in enumerate(cursor.fetchall())]
    return {"cab_export_attribute": attributes, "cab_export_subcategory": subcategories}


def _slice_lookups(cursor: Any, fmt: str, conversation_cells: dict[int, str]) -> None:
    """The formatted cells of the slice's conversations and models, ranked in PostgreSQL's order of their names
    (read for each slice: the study's whole set would cost the first byte a scan of all its judgments).
    ``conversation_cells`` keeps each conversation's cells from one slice to the next."""
    cursor.execute(
        f"SELECT c.id, d.name, c.external_id FROM {_table(Conversation)} c "  # noqa: S608  # nosec B608 - model names
        f"JOIN {_table(Dataset)} d ON d.id = c.dataset_id "
        f"WHERE c.id IN (SELECT conversation_id FROM cab_export_slice) "
        f"ORDER BY d.name, c.external_id"
    )
    sep, rows = _GLUE[fmt]["sep"], []
    for rank, (pk, dataset, external) in enumerate(cursor.fetchall()):
        cells = conversation_cells.get(pk)
        if cells is None:
            cells = conversation_cells[pk] = (_cell(fmt, "dataset", dataset) + sep
                                              + _cell(fmt, "conversation_id", external))
        rows.append((pk, cells, rank))
    _fill(cursor, "cab_export_conversation", rows, analyse=True)
    cursor.execute(
        f"SELECT DISTINCT r.model_slot FROM {_table(ModelResponse)} r "  # noqa: S608  # nosec B608 - model names
        f"WHERE r.id IN (SELECT response_id FROM cab_export_slice) ORDER BY r.model_slot",
    )
    _fill(cursor, "cab_export_model", [(slot, csv_field(slot) if fmt == "csv" else _json(slot), rank)
                                       for rank, (slot,) in enumerate(cursor.fetchall())])


def round_coders(round_id: int) -> list[tuple[int, str]]:
    """(id, username) of everyone with a judgment in the round, by username: one index probe per coder on
    (round, coder, turn), not a scan of the round's judgments. (The export's slices, here and in ``long_format``.)"""
    judgments, users = _table(Judgment), _table(get_user_model())
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH RECURSIVE coders(id) AS ("  # noqa: S608  # nosec B608 - table names from the models
            f"  SELECT min(coder_id) FROM {judgments} WHERE round_id = %s"
            f"  UNION ALL"
            f"  SELECT (SELECT min(coder_id) FROM {judgments} WHERE round_id = %s AND coder_id > coders.id)"
            f"  FROM coders WHERE coders.id IS NOT NULL"
            f") SELECT users.id, users.username FROM coders JOIN {users} users ON users.id = coders.id"
            f" ORDER BY users.username",
            [round_id, round_id],
        )
        return list(cursor.fetchall())


def _spans_sql(fmt: str) -> str:
    """The statement that fills ``cab_export_span`` with one round's spans, a cell per judgment (parameters: the
    glue and the ``round``); the cell is NULL (and so the judgment's line) if a span's subcategory is missing from
    the lookup. A table of its own, indexed, rather than a subquery: a subquery per judgment cost more than all the
    rest together, and a join to an aggregate turns quadratic when the planner's statistics are stale (a study
    just generated or imported). Once per round, not per slice: each pass reads all the round's spans."""

    def g(name: str) -> str:
        return f"%({name})s"

    return (
        f"DROP TABLE IF EXISTS cab_export_span; "  # noqa: S608  # nosec B608 - model names, glue parameters
        f"CREATE TEMP TABLE cab_export_span ON COMMIT DROP AS "
        f"SELECT s.judgment_id, CASE WHEN count(*) = count(sc.id) THEN {g('span_open')} "
        f"|| string_agg({g('span_start')} || s.{_quote('start')} || {g('span_end')} || s.{_quote('end')} "
        f"|| {g('span_sub')} || sc.cell, {g('span_sep')} ORDER BY s.{_quote('start')}, s.{_quote('end')}, sc.rank) "
        f"|| {g('span_last')} || {g('span_close')} END AS cell "
        f"FROM {_table(Span)} s JOIN {_table(Judgment)} j ON j.id = s.judgment_id "
        f"LEFT JOIN cab_export_subcategory sc ON sc.id = s.subcategory_id "
        f"WHERE j.round_id = %(round)s AND j.score IS NOT NULL GROUP BY s.judgment_id; "
        f"ALTER TABLE cab_export_span ADD PRIMARY KEY (judgment_id); ANALYZE cab_export_span"
    )


def _line_sql(fmt: str, columns: int) -> str:
    """The statement that makes one slice's lines: its parameters are the glue (by name), the slice's ``round`` and
    ``gold`` flag; its coders are in the table ``cab_export_coder``."""

    def g(name: str) -> str:
        return f"%({name})s"

    session = "coalesce(se.{index}, ts.{index})".format(index=_quote("index"))
    # Past the thirteen columns (a study whose schema codes sessions): session_index, and in CSV the seed column a
    # judgment leaves empty; in JSON Lines the key is on a history's row only.
    tail = ""
    if columns > 13 and fmt == "csv":
        tail = f" || ',' || coalesce({session}::text, '')" + " || ','" * (columns - 14)
    elif columns > 13:
        tail = f" || CASE WHEN {session} IS NULL THEN '' ELSE ', \"session_index\": ' || {session} END"
    line = (
        f"co.prefix || cv.cells || {g('turn')} || coalesce(t.{_quote('index')}::text, {g('null')}) || {g('model')} "
        f"|| CASE WHEN j.response_id IS NULL THEN {g('null')} ELSE m.cell END || {g('attribute')} || a.cell "
        f"|| {g('score')} || j.score || {g('count')} || coalesce(j.instance_count::text, {g('null')}) "
        f"|| {g('spans')} || CASE WHEN sp.judgment_id IS NULL THEN {g('no_spans')} ELSE sp.cell END "
        f"|| co.suffix{tail} || {g('end')}"
    )
    sql = (
        f"SELECT {line} FROM cab_export_slice j "  # noqa: S608  # nosec B608 - model names, glue parameters
        f"LEFT JOIN cab_export_coder co ON co.id = j.coder_id "
        f"LEFT JOIN cab_export_conversation cv ON cv.id = j.conversation_id "
        f"LEFT JOIN cab_export_attribute a ON a.id = j.attribute_id "
        f"LEFT JOIN {_table(Turn)} t ON t.id = j.turn_id "
        f"LEFT JOIN {_table(ModelResponse)} r ON r.id = j.response_id "
        f"LEFT JOIN cab_export_model m ON m.slot = r.model_slot "
        f"LEFT JOIN {_table(Session)} se ON se.id = j.session_id "
        f"LEFT JOIN {_table(Session)} ts ON ts.id = t.session_id "
        f"LEFT JOIN cab_export_span sp ON sp.judgment_id = j.id "
        f"ORDER BY co.rank, cv.rank, t.{_quote('index')}, m.rank, a.position, se.{_quote('index')}"
    )
    return sql


class _Slice(NamedTuple):
    """A round's non-gold rows of one coder, or its gold rows (then with every coder of the round)."""

    round_id: int
    gold: bool
    coders: list[tuple[int, str, str]]  # (id, prefix of the line, suffix of the line)


def _plan(study: Study, fmt: str) -> Iterator[_Slice]:
    """The file's slices in its order (``long_format._slices``): rounds by kind and number; in each, every coder's
    non-gold rows by username, then the round's gold rows. Lazily, a round at a time: a round's coders and gold
    rows are looked up only when its first slice is wanted, so the first line never waits for the last round's
    (at ten times paper scale, a round of 6.8 million judgments)."""
    # Each coder's role in the study, or the one they had when taken off it (selectors.study_coders).
    roles = {coder.user_id: coder.role for coder in study_coders(study=study)
             if coder.role in (StudyMember.Role.EXPERT, StudyMember.Role.METHOD)}
    for round_id, kind, number in study.rounds.order_by("kind", "number").values_list("id", "kind", "number"):
        name = round_name(kind, number)
        coders = round_coders(round_id)
        for coder_id, username in coders:
            yield _Slice(round_id, False, [(coder_id, _prefix(fmt, study.slug, name, username, False),
                                            _suffix(fmt, roles.get(coder_id, DEFAULT_ROLE)))])
        if Judgment.objects.filter(round_id=round_id, is_gold=True, score__isnull=False).exists():
            yield _Slice(round_id, True, [(coder_id, _prefix(fmt, study.slug, name, username, True),
                                           _suffix(fmt, GOLD_ROLE)) for coder_id, username in coders])


class _Planned:
    """The slices of ``_plan``, read from it only as far as asked for."""

    def __init__(self, slices: Iterator[_Slice]):
        self.slices = slices
        self.read: list[_Slice] = []

    def get(self, k: int) -> _Slice | None:
        while len(self.read) <= k:
            piece = next(self.slices, None)
            if piece is None:
                return None
            self.read.append(piece)
        return self.read[k]


class _Lines:
    """One database connection's share of an export: its lookup tables (they live in its transaction), and one
    slice's lines at a time, through a server-side cursor. ``open`` runs the slice's statements and its first
    ``FETCH``, which is where PostgreSQL does the work (it joins, makes every line and sorts them before the first
    row); ``blocks`` then hands the sorted lines on."""

    def __init__(self, db: BaseDatabaseWrapper, *, fmt: str, columns: int, schema_rows: dict[str, list[tuple]],
                 conversation_cells: dict[int, str]):
        self.db, self.fmt, self.schema_rows, self.conversation_cells = db, fmt, schema_rows, conversation_cells
        self.line_sql, self.spans_sql = _line_sql(fmt, columns), _spans_sql(fmt)
        self.created = False
        self.spans_of: int | None = None  # the round whose spans cab_export_span holds

    def open(self, piece: _Slice) -> tuple[Any, list[tuple[str | None]]]:
        params = _GLUE[self.fmt] | {"round": piece.round_id, "gold": piece.gold,
                                    "coder": None if piece.gold else piece.coders[0][0]}
        with self.db.cursor() as cursor:
            if not self.created:
                _create_tables(cursor)
                for name, rows in self.schema_rows.items():
                    _fill(cursor, name, rows)
                self.created = True
            if self.spans_of != piece.round_id:
                cursor.execute(self.spans_sql, params)
                self.spans_of = piece.round_id
            _fill(cursor, "cab_export_coder", [(coder_id, prefix, suffix, rank)
                                               for rank, (coder_id, prefix, suffix) in enumerate(piece.coders)])
            cursor.execute(_SLICE.format(judgment=_table(Judgment)), params)
            _slice_lookups(cursor, self.fmt, self.conversation_cells)
        lines = self.db.connection.cursor(name="cab_export_lines")
        try:
            lines.execute(self.line_sql, params)
            return lines, lines.fetchmany(FETCH)
        except BaseException:
            with contextlib.suppress(Exception):  # a failed transaction refuses even the CLOSE
                lines.close()
            raise

    def blocks(self, opened: tuple[Any, list[tuple[str | None]]], ending: str) -> Iterator[str]:
        """The slice's lines in blocks of about ``CHUNK`` characters (as the Python writer's); a NULL line raises."""
        lines, rows = opened
        parts: list[str] = []
        size = 0
        with lines:
            while rows:
                for (line,) in rows:
                    if line is None:
                        raise ExportIncompleteError("a judgment's line could not be made (a cell missing from the "
                                                    "export's lookups)")
                    parts.append(line)
                    size += len(line)
                    if size >= CHUNK:
                        parts.append("")
                        yield ending.join(parts)
                        parts, size = [], 0
                rows = lines.fetchmany(FETCH)
        if parts:
            parts.append("")
            yield ending.join(parts)


def judgment_lines(*, study: Study, fmt: str, columns: int, helpers: int = 0) -> Iterator[str]:
    """The study's judgment lines of the file (CSV or JSON Lines, with ``columns`` columns: ``session_index`` only
    past the long format's thirteen), in the file's order, in blocks of about ``CHUNK`` characters. Call it inside
    a transaction (``long_format`` does): its lookup tables live until the transaction ends.

    With ``helpers`` (only in a REPEATABLE READ transaction: ``long_format`` opens one for a download), up to that
    many more connections make the next slices' lines while this one's are handed on, each in a
    transaction on this transaction's snapshot (``pg_export_snapshot``), so every line comes from the same moment
    of the database. On two cores this nearly doubles the rate: PostgreSQL makes one slice's lines on one core while
    another's are made on the other. Where a helper cannot be had (``EXPORT_CONNECTIONS``, the server's connection
    limit), the export goes on alone."""
    ending = "\r\n" if fmt == "csv" else "\n"
    snapshot = _exported_snapshot() if helpers > 0 else None
    plan = _Planned(_plan(study, fmt))
    make = functools.partial(_Lines, fmt=fmt, columns=columns, schema_rows=_schema_rows(study, fmt),
                             conversation_cells={})
    own = make(connection)
    wanted = next((k for k in range(1, helpers + 1) if plan.get(k) is None), helpers + 1) - 1  # slices after the first
    extra = _helper_connections(snapshot, wanted) if snapshot and wanted > 0 else []
    if not extra:
        k = 0
        while (piece := plan.get(k)) is not None:
            yield from own.blocks(own.open(piece), ending)
            k += 1
        return
    # Slice k is made on connection k mod n. While slice k's lines are handed on, the other connections make the
    # next slices' lines, each on its own thread (a connection is used by one thread at a time: a slice is opened
    # only once the slice before it on the same connection has been read to its end).
    readers = [own, *(make(db) for db in extra)]
    pool = ThreadPoolExecutor(max_workers=len(extra), thread_name_prefix="export-slices")
    pending: dict[int, Future] = {}
    try:
        for k in range(1, len(readers)):
            if (piece := plan.get(k)) is not None:  # every one is: helpers are made for slices that exist
                pending[k] = pool.submit(readers[k].open, piece)
        k = 0
        while (piece := plan.get(k)) is not None:
            reader = readers[k % len(readers)]
            opened = pending.pop(k).result() if k in pending else reader.open(piece)
            yield from reader.blocks(opened, ending)
            after = k + len(readers)
            if reader is not own and (following := plan.get(after)) is not None:
                pending[after] = pool.submit(reader.open, following)
            k += 1
    finally:  # normally nothing is pending here; when the download was abandoned, or failed, stop what is
        for k, future in pending.items():
            if future.cancel():
                continue
            with contextlib.suppress(Exception):
                readers[k % len(readers)].db.connection.cancel_safe(timeout=5)  # the slice being made
        pool.shutdown(wait=True)
        for db in extra:  # closing a connection ends its transaction, and drops its cursors and tables
            db.close()
            db.dec_thread_sharing()


_SNAPSHOT_ID = re.compile(r"[0-9A-F]+-[0-9A-F]+-[0-9]+")


def _exported_snapshot() -> str | None:
    """This transaction's snapshot, for other connections to read the same moment (None when PostgreSQL refuses:
    a transaction that has already run a query under READ COMMITTED has no snapshot to share)."""
    with connection.cursor() as cursor:
        cursor.execute("SHOW transaction_isolation")
        if cursor.fetchone()[0] not in ("repeatable read", "serializable"):
            return None
        cursor.execute("SELECT pg_export_snapshot()")
        snapshot = cursor.fetchone()[0]
    return snapshot if _SNAPSHOT_ID.fullmatch(snapshot) else None


def _helper_connections(snapshot: str, count: int) -> list[BaseDatabaseWrapper]:
    """Up to ``count`` new connections, each in a transaction on ``snapshot`` with the export's settings; fewer when
    the server refuses more (they are an optimisation: the export never depends on them)."""
    made: list[BaseDatabaseWrapper] = []
    for _ in range(count):
        db = connections.create_connection(DEFAULT_DB_ALIAS)
        try:
            with db.cursor() as cursor:  # the connection is in autocommit mode: BEGIN opens the transaction here
                cursor.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
                cursor.execute(f"SET TRANSACTION SNAPSHOT '{snapshot}'")  # checked by _SNAPSHOT_ID
                export_settings(cursor)
        except DatabaseError:
            log.warning("export: a helper connection could not be opened; going on with %s", len(made) + 1)
            db.close()
            break
        db.inc_thread_sharing()  # used from the pool's thread, then closed from this one
        made.append(db)
    return made


def export_settings(cursor: Any) -> None:
    """The export transaction's settings: PostgreSQL's sort memory raised (its default, 4 MB, sends a large slice's
    sort to disk), JIT off (compiling a slice's query took 0.7 s of the 2 s it ran: its expressions run once per
    row)."""
    cursor.execute(f"SET LOCAL work_mem = '{SORT_MEMORY}'")
    cursor.execute("SET LOCAL jit = off")


def _prefix(fmt: str, study: str, round_: str, username: str, gold: bool) -> str:
    if fmt == "csv":
        return ",".join(csv_field(value) for value in (study, round_, username, gold)) + ","
    return "{" + ", ".join(_cell(fmt, key, value) for key, value in
                           (("study", study), ("round", round_), ("reviewer", username), ("is_gold", gold))) + ", "


def _suffix(fmt: str, role: str) -> str:
    return "," + csv_field(role) if fmt == "csv" else ", " + _cell(fmt, "role", role)
