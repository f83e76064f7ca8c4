"""Cutting a text at every span boundary, so that several overlapping highlights can be drawn on one text.
Pure (no Django): used by the pages that overlay spans (feedback, workshop, the dashboards' span examples)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def text_segments(text: str, marks: Sequence[tuple[int, int, T]]) -> list[tuple[str, list[T]]]:
    """The text cut at every mark's start and end (clamped to the text): each piece with the labels of the marks
    that cover it whole, in the order the marks were given. Pieces are never empty; together they are the text."""
    cuts = sorted({0, len(text)} | {min(max(edge, 0), len(text)) for start, end, _ in marks for edge in (start, end)})
    return [(text[start:end], [label for s, e, label in marks if s <= start and e >= end])
            for start, end in zip(cuts, cuts[1:], strict=False) if end > start]
