"""Span evidence (docs/metrics.md#span-evidence) and span agreement with gold (character-overlap F1 per subcategory).

Offsets are character positions into the response text, end exclusive. A coder's spans of one subcategory
on one response are merged first, so overlapping highlights by the same coder are not counted twice in F1.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from .common import safe_divide

Interval = tuple[int, int]


def whitespace_tokens(text: str, start: int, end: int) -> int:
    """Whitespace tokens inside text[start:end] (a word cut by the span boundary counts as a token)."""
    return len(text[start:end].split())


def merge(intervals: Iterable[Interval]) -> list[Interval]:
    """Sorted, disjoint union of half-open intervals; empty intervals vanish."""
    merged: list[list[int]] = []
    for start, end in sorted((int(s), int(e)) for s, e in intervals if int(e) > int(s)):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(s, e) for s, e in merged]


def covered(intervals: Sequence[Interval]) -> int:
    """Characters covered by already-merged intervals."""
    return sum(e - s for s, e in intervals)


def overlap(a: Sequence[Interval], b: Sequence[Interval]) -> int:
    """Characters covered by both of two merged interval lists (two-pointer sweep)."""
    i = j = total = 0
    while i < len(a) and j < len(b):
        lo = max(a[i][0], b[j][0])
        hi = min(a[i][1], b[j][1])
        if hi > lo:
            total += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def f1_from_counts(both: int, first: int, second: int) -> float | None:
    """Dice/F1 = 2|A∩B| / (|A| + |B|); None when neither side highlighted anything (nothing to agree on)."""
    total = first + second
    return None if total == 0 else 2.0 * both / total


def character_f1(reviewer: Iterable[Interval], gold: Iterable[Interval]) -> float | None:
    """Character-overlap F1 between one reviewer's and gold's spans on one response."""
    a, b = merge(reviewer), merge(gold)
    return f1_from_counts(overlap(a, b), covered(a), covered(b))


def span_evidence(
    *,
    span_response: np.ndarray,
    span_subcategory: np.ndarray,
    span_tokens: np.ndarray,
    response_coders: np.ndarray,
    response_model: np.ndarray,
    n_models: int,
    n_subcategories: int,
) -> tuple[np.ndarray, np.ndarray]:
    """(models x subcategories) mean spans per response n(c) and mean highlighted tokens per response tok(c).

    A response's value is the mean over the coders who coded it, a coder without spans counting 0
    (docs/metrics.md#several-coders-on-one-unit: the unit's value is the mean of per-reviewer values), so each span
    weighs 1 / coders(response). Means run over the model's coded responses. Unknown text (NaN tokens) makes tok(c) NaN
    for that cell.
    """
    response_coders = np.asarray(response_coders, dtype=float)
    response_model = np.asarray(response_model, dtype=np.int64)
    coded = response_coders > 0
    n_responses = np.bincount(response_model[coded], minlength=n_models).astype(float)
    span_response = np.asarray(span_response, dtype=np.int64)
    keep = coded[span_response] if len(span_response) else np.zeros(0, dtype=bool)
    weight = 1.0 / response_coders[span_response[keep]]
    cell = response_model[span_response[keep]] * n_subcategories + np.asarray(span_subcategory)[keep]
    size = n_models * n_subcategories
    spans = np.bincount(cell, weights=weight, minlength=size).reshape(n_models, n_subcategories)
    tokens = np.asarray(span_tokens, dtype=float)[keep]
    unknown = np.bincount(cell, weights=np.isnan(tokens).astype(float), minlength=size)
    token_sum = np.bincount(cell, weights=np.nan_to_num(tokens) * weight, minlength=size)
    token_sum = np.where(unknown > 0, np.nan, token_sum).reshape(n_models, n_subcategories)
    return safe_divide(spans, n_responses[:, None]), safe_divide(token_sum, n_responses[:, None])


def subcategory_pairs(subcategory_attribute: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """(attribute, first, second) for attributes with exactly two subcategories, in mapping (schema) order.

    The ratio reported is second : first, which for the default schema reads directive : tentative and
    inaccurate : accurate (the schema lists the benign subcategory first).
    """
    by_attribute: dict[str, list[str]] = {}
    for slug, attribute in subcategory_attribute.items():
        by_attribute.setdefault(attribute, []).append(slug)
    return [(attr, slugs[0], slugs[1]) for attr, slugs in by_attribute.items() if len(slugs) == 2]
