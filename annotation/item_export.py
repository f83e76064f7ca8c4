"""A study's items as its coders left them: one row per assignment (round, reviewer, turn, position), with when it
was completed, the active time on it, and the coder's comment and flags (Assignment.FLAGS). Comments and flags are
per item, not per judgment, so they are a file of their own beside the long-format judgments.

Cells are written by ``common.cells`` (the one writer: a CSV cell a spreadsheet would run as a formula starts with
a quote). In CSV, the flags are a JSON list (empty when none), like the long format's spans.

A study whose schema codes sessions (``long_format.is_longitudinal``: its judgments carry ``session_index``) has a
last column ``session_index``, the session of the item's turn (a session-rated study's item is a session, keyed by
its first turn), so an item's comment meets its session's judgments; every other study's file is as before.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from annotation.long_format import SESSION_INDEX, is_longitudinal
from annotation.models import Assignment, Study
from common.cells import csv_stream, jsonl_stream
from common.rounds import round_name

COLUMNS = ("study", "round", "reviewer", "dataset", "conversation_id", "turn_index", "position", "completed_at",
           "active_seconds", "comment", "flags")


def columns_for(study: Study) -> tuple[str, ...]:
    """The columns of the study's items file, the same in CSV and JSON Lines."""
    return (*COLUMNS, SESSION_INDEX) if is_longitudinal(study) else COLUMNS


def item_rows(*, study: Study) -> Iterator[dict[str, Any]]:
    """Every assignment of the study, streamed from one query (a server-side cursor on PostgreSQL), with the keys
    of ``columns_for``."""
    with_session = SESSION_INDEX in columns_for(study)
    rows = (
        Assignment.objects.filter(round__study=study)
        .order_by("round__kind", "round__number", "coder__username", "position", "id")
        .values_list("round__kind", "round__number", "coder__username", "turn__conversation__dataset__name",
                     "turn__conversation__external_id", "turn__index", "position", "completed_at",
                     "active_seconds", "comment", "flags", "turn__session__index")
        .iterator(chunk_size=5000)
    )
    for (kind, number, coder, dataset, conversation, turn, position, completed_at, seconds, comment, flags,
         session) in rows:
        row = {
            "study": study.slug,
            "round": round_name(kind, number),
            "reviewer": coder,
            "dataset": dataset,
            "conversation_id": conversation,
            "turn_index": turn,
            "position": position,
            "completed_at": completed_at.isoformat() if completed_at else None,
            "active_seconds": seconds,
            "comment": comment,
            "flags": list(flags or []),
        }
        yield row | {SESSION_INDEX: session} if with_session else row


def _csv_cells(row: dict[str, Any], columns: tuple[str, ...]) -> list[Any]:
    flat = row | {"flags": json.dumps(row["flags"], ensure_ascii=False) if row["flags"] else ""}
    return [flat[column] for column in columns]


def items_csv(*, study: Study) -> Iterator[str]:
    columns = columns_for(study)
    return csv_stream(columns, (_csv_cells(row, columns) for row in item_rows(study=study)))


def items_jsonl(*, study: Study) -> Iterator[str]:
    return jsonl_stream(item_rows(study=study))


WRITERS = {"csv": items_csv, "jsonl": items_jsonl}
