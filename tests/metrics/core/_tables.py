"""Build the core's input tables from readable row tuples (tests only)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from metrics.core.report import JudgmentTable, SpanTable

# (round, coder, is_gold, dataset, conversation, turn, model, attribute, score)
JudgmentRow = tuple[str, str, bool, str, str, int, str, str, int]
# (round, coder, is_gold, dataset, conversation, turn, model, attribute, start, end, subcategory)
SpanRow = tuple[str, str, bool, str, str, int, str, str, int, int, str]


def judgment_table(rows: Sequence[JudgmentRow]) -> JudgmentTable:
    cols = list(zip(*rows, strict=True)) if rows else [()] * 9
    return JudgmentTable(
        round=np.array(cols[0], dtype=object),
        coder=np.array(cols[1], dtype=object),
        is_gold=np.array(cols[2], dtype=bool),
        dataset=np.array(cols[3], dtype=object),
        conversation=np.array(cols[4], dtype=object),
        turn=np.array(cols[5], dtype=np.int64),
        model=np.array(cols[6], dtype=object),
        attribute=np.array(cols[7], dtype=object),
        score=np.array(cols[8], dtype=np.int64),
    )


def span_table(rows: Sequence[SpanRow]) -> SpanTable:
    cols = list(zip(*rows, strict=True)) if rows else [()] * 11
    return SpanTable(
        round=np.array(cols[0], dtype=object),
        coder=np.array(cols[1], dtype=object),
        is_gold=np.array(cols[2], dtype=bool),
        dataset=np.array(cols[3], dtype=object),
        conversation=np.array(cols[4], dtype=object),
        turn=np.array(cols[5], dtype=np.int64),
        model=np.array(cols[6], dtype=object),
        attribute=np.array(cols[7], dtype=object),
        start=np.array(cols[8], dtype=np.int64),
        end=np.array(cols[9], dtype=np.int64),
        subcategory=np.array(cols[10], dtype=object),
    )
