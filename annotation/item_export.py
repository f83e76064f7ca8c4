"""A study's items as its coders left them: one row per assignment (round, reviewer, turn, position), with when it
was completed, the active time on it, and the coder's comment and flags (Assignment.FLAGS). Comments and flags are
per item, not per judgment, so they are a file of their own beside the long-format judgments.

Cells are written by ``common.cells`` (the one writer: a CSV cell a spreadsheet would run as a formula starts with
a quote). In CSV, the flags are a JSON list (empty when none), like the long format's spans.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from annotation.models import Assignment, Study
from common.cells import csv_stream, jsonl_stream
from common.rounds import round_name

COLUMNS = ("study", "round", "reviewer", "dataset", "conversation_id", "turn_index", "position", "completed_at",
           "active_seconds", "comment", "flags")


def item_rows(*, study: Study) -> Iterator[dict[str, Any]]:
    """Every assignment of the study, streamed from one query (a server-side cursor on PostgreSQL)."""
    rows = (
        Assignment.objects.filter(round__study=study)
        .order_by("round__kind", "round__number", "coder__username", "position", "id")
        .values_list("round__kind", "round__number", "coder__username", "turn__conversation__dataset__name",
                     "turn__conversation__external_id", "turn__index", "position", "completed_at",
                     "active_seconds", "comment", "flags")
        .iterator(chunk_size=5000)
    )
    for kind, number, coder, dataset, conversation, turn, position, completed_at, seconds, comment, flags in rows:
        yield {
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


def _csv_cells(row: dict[str, Any]) -> list[Any]:
    flat = row | {"flags": json.dumps(row["flags"], ensure_ascii=False) if row["flags"] else ""}
    return [flat[column] for column in COLUMNS]


def items_csv(*, study: Study) -> Iterator[str]:
    return csv_stream(COLUMNS, (_csv_cells(row) for row in item_rows(study=study)))


def items_jsonl(*, study: Study) -> Iterator[str]:
    return jsonl_stream(item_rows(study=study))


WRITERS = {"csv": items_csv, "jsonl": items_jsonl}
