"""Character-overlap F1 and span evidence, worked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from metrics.core.spans import (
    character_f1,
    merge,
    overlap,
    span_evidence,
    subcategory_pairs,
    whitespace_tokens,
)


def test_merge_unions_overlapping_and_touching_spans() -> None:
    assert merge([(5, 8), (0, 3), (2, 4), (8, 9), (10, 10)]) == [(0, 4), (5, 9)]


def test_overlap_and_f1_by_hand() -> None:
    assert overlap([(0, 10)], [(5, 15)]) == 5
    assert overlap([(0, 2), (4, 6), (8, 10)], [(1, 9)]) == 1 + 2 + 1
    assert character_f1([(0, 10)], [(5, 15)]) == pytest.approx(2 * 5 / 20)
    assert character_f1([(0, 10), (2, 6)], [(0, 10)]) == 1.0  # the reviewer's own overlap is not double counted
    assert character_f1([(0, 4)], []) == 0.0
    assert character_f1([], []) is None


def test_whitespace_tokens_count_partial_words() -> None:
    text = "I hear how hard this is"
    assert whitespace_tokens(text, 0, 6) == 2
    assert whitespace_tokens(text, 3, 9) == 2  # "ear how"
    assert whitespace_tokens(text, 1, 2) == 0


def test_span_evidence_averages_over_coders_then_responses() -> None:
    # model 0 has responses 0 (2 coders) and 1 (1 coder); model 1 has response 2 (1 coder); response 3 uncoded
    n_spans, n_tokens = span_evidence(
        span_response=np.array([0, 0, 0, 1, 3]),
        span_subcategory=np.array([0, 0, 1, 1, 0]),
        span_tokens=np.array([2.0, 1.0, 1.0, 2.0, 9.0]),
        response_coders=np.array([2.0, 1.0, 1.0, 0.0]),
        response_model=np.array([0, 0, 1, 0]),
        n_models=2,
        n_subcategories=2,
    )
    assert n_spans[0].tolist() == pytest.approx([(2 / 2) / 2, (1 / 2 + 1) / 2])
    assert n_tokens[0].tolist() == pytest.approx([(3 / 2) / 2, (1 / 2 + 2) / 2])
    assert n_spans[1].tolist() == [0.0, 0.0]


def test_unknown_text_makes_token_evidence_undefined() -> None:
    _, n_tokens = span_evidence(
        span_response=np.array([0]),
        span_subcategory=np.array([0]),
        span_tokens=np.array([np.nan]),
        response_coders=np.array([1.0]),
        response_model=np.array([0]),
        n_models=1,
        n_subcategories=1,
    )
    assert np.isnan(n_tokens[0, 0])


def test_ratio_pairs_follow_schema_order() -> None:
    pairs = subcategory_pairs({"tentative": "TD", "directive": "TD", "accurate": "EMP", "inaccurate": "EMP", "x": "Z"})
    assert pairs == [("TD", "tentative", "directive"), ("EMP", "accurate", "inaccurate")]
