"""Bulk writes through PostgreSQL's COPY, for generated data (``annotation.synthetic``): millions of rows at once.

Rows go as COPY text lines, written in large blocks. With ``checked_in_bulk`` the per-row checks that PostgreSQL
makes on insert (the guard triggers of migration 0002 and the foreign keys' triggers, which together cost far more
than the writes) are made once, set-based, over the rows written, before the caller's transaction can commit: the
same rules, the same all-or-nothing outcome (an IntegrityError rolls everything back), no table locked and no
constraint dropped. That needs the right to set ``session_replication_role`` (a superuser, as in the test and
benchmark databases); without it the rows go through the triggers as any insert does.
"""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from django.db import IntegrityError, connection, models

from annotation.models import Judgment, Span

BLOCK = 1 << 20  # characters per write to the COPY stream

_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def copy_text(value: Any) -> str:
    r"""One value in COPY's text format: ``\N`` for NULL, t/f, ISO timestamps, text with its escapes."""
    if value is None:
        return r"\N"
    if isinstance(value, bool):
        return "t" if value else "f"
    if isinstance(value, datetime.datetime | datetime.date):
        return value.isoformat()
    if isinstance(value, int | float):
        return str(value)
    return str(value).translate(_ESCAPES)


def copy_lines(cursor: Any, model: type[models.Model], columns: Sequence[str], lines: Iterable[str]) -> int:
    """COPY ``lines`` (one row each, in COPY text format, the database ``columns`` in order) into ``model``'s
    table; returns how many. ``cursor`` is a Django cursor on PostgreSQL."""
    quote = connection.ops.quote_name
    table = quote(model._meta.db_table)
    names = ", ".join(quote(c) for c in columns)
    n, block, size = 0, [], 0
    with cursor.cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
        for line in lines:
            block.append(line)
            size += len(line) + 1
            n += 1
            if size >= BLOCK:
                block.append("")
                copy.write("\n".join(block))
                block, size = [], 0
        if block:
            block.append("")
            copy.write("\n".join(block))
    return n


def _max_ids(cursor: Any, tables: Sequence[type[models.Model]]) -> dict[type[models.Model], int]:
    found = {}
    for model in tables:
        cursor.execute(f"SELECT COALESCE(MAX(id), 0) FROM {connection.ops.quote_name(model._meta.db_table)}")  # noqa: S608  # nosec B608 - table name from the model
        (found[model],) = cursor.fetchone()
    return found


@contextlib.contextmanager
def checked_in_bulk(cursor: Any, tables: Sequence[type[models.Model]]) -> Iterator[Any]:
    """Within the caller's transaction: rows inserted into ``tables`` inside the block skip the per-row triggers
    and are checked afterwards, set-based, against the same rules (``_violations``); an IntegrityError names the
    first broken rule. Without the right to do so (not a superuser), the triggers run as usual. Yields ``cursor``.
    """
    if not connection.in_atomic_block:
        raise RuntimeError("bulk writes belong inside a transaction")
    cursor.execute("SELECT current_setting('is_superuser') = 'on', current_setting('session_replication_role')")
    allowed, previous = cursor.fetchone()
    if not allowed:
        yield cursor
        return
    before = _max_ids(cursor, tables)
    cursor.execute("SELECT set_config('session_replication_role', 'replica', true)")
    yield cursor
    # Only reached when the block succeeded; on an error the caller's rollback undoes the setting with the rows.
    cursor.execute("SELECT set_config('session_replication_role', %s, true)", [previous])
    for model in tables:
        problem = _violations(cursor, model, before[model])
        if problem:
            raise IntegrityError(f"{model._meta.db_table}: {problem}")


def _violations(cursor: Any, model: type[models.Model], after_id: int) -> str | None:
    """The first rule that a row of ``model`` with an id above ``after_id`` breaks, or None: each foreign key (from
    the model), and for judgments and spans the guards of migration 0002 (``cab_judgment_guard``,
    ``cab_span_guard``) as set-based queries."""
    quote = connection.ops.quote_name
    keys = [f for f in model._meta.concrete_fields if f.is_relation and getattr(f, "db_constraint", False)]
    joins, broken = [], []
    for n, f in enumerate(keys):
        target = f.target_field  # type: ignore[attr-defined]
        column = f"x.{quote(str(f.column))}"
        joins.append(f"LEFT JOIN {quote(target.model._meta.db_table)} k{n} ON k{n}.{quote(target.column)} = {column}")
        broken.append(f"WHEN {column} IS NOT NULL AND k{n}.{quote(target.column)} IS NULL THEN {n}")
    if keys:
        # One pass over the rows for every foreign key; an aggregate rather than LIMIT 1, so that the planner
        # takes hash joins over the whole range instead of an index probe per row and key.
        sql = (f"SELECT {{}} FROM {quote(model._meta.db_table)} x {' '.join(joins)} "  # noqa: S608  # nosec B608 - names from the models
               f"WHERE x.id > %s AND CASE {' '.join(broken)} END IS NOT NULL")
        cursor.execute(sql.format("MIN(x.id)"), [after_id])
        (first,) = cursor.fetchone()
        if first is not None:
            cursor.execute(sql.format(f"CASE {' '.join(broken)} END") + " AND x.id = %s", [after_id, first])
            f = keys[cursor.fetchone()[0]]
            return f"row {first}: {f.name} refers to a missing {f.target_field.model._meta.model_name}"
    guard = _GUARDS.get(model)
    if guard:
        cursor.execute(guard[0], [after_id])
        (first,) = cursor.fetchone()
        if first is not None:
            return f"row {first}: {guard[1]}"
    return None


# The guards of migration 0002, as one query each over the rows written (their messages name what is checked).
_GUARDS: dict[type[models.Model], tuple[str, str]] = {
    Judgment: ("""
        SELECT MIN(j.id) FROM annotation_judgment j
        JOIN annotation_attributedefinition a ON a.id = j.attribute_id
        LEFT JOIN annotation_round r ON r.id = j.round_id
        LEFT JOIN annotation_study s ON s.id = r.study_id
        LEFT JOIN benchmark_modelresponse m ON m.id = j.response_id
        LEFT JOIN benchmark_turn t ON t.id = j.turn_id
        WHERE j.id > %s AND (
            j.score < a.scale_min OR j.score > a.scale_max
            OR (a.unit = 'response' AND j.response_id IS NULL)
            OR (a.unit = 'turn' AND (j.turn_id IS NULL OR j.response_id IS NOT NULL))
            OR (a.unit = 'conversation' AND j.turn_id IS NOT NULL)
            OR (j.response_id IS NOT NULL AND m.turn_id IS DISTINCT FROM j.turn_id)
            OR (j.turn_id IS NOT NULL AND t.conversation_id IS DISTINCT FROM j.conversation_id)
            OR s.schema_id IS DISTINCT FROM a.schema_id)""",
        "score off the scale, unit not the attribute's, or parts of different conversations or schemas"),
    Span: ("""
        SELECT MIN(sp.id) FROM annotation_span sp
        JOIN annotation_judgment j ON j.id = sp.judgment_id
        LEFT JOIN annotation_spansubcategory sc ON sc.id = sp.subcategory_id
        LEFT JOIN benchmark_modelresponse m ON m.id = j.response_id
        WHERE sp.id > %s AND (j.response_id IS NULL OR sc.attribute_id IS DISTINCT FROM j.attribute_id
                              OR sp."end" > char_length(m.text))""",
        "a span of a judgment without a response, of another attribute, or outside the text"),
}
