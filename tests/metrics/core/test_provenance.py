"""The input fingerprint (metrics.core.provenance): what the rows say counts, how they were handed over does not."""

from __future__ import annotations

import dataclasses

import numpy as np

from metrics.core.provenance import fingerprint, fingerprint_rows
from metrics.core.report import ReportParams, build_report, report_complete
from metrics.core.synthetic import DEFAULT_SCHEMA, DEFAULT_SUBCATEGORIES, generate
from metrics.core.tables import Categorical

from ._tables import judgment_table, span_table

ROWS = [("calibration-1", "ann", False, "A", "c1", 1, "GPT", "U1", 2),
        ("calibration-1", "bob", False, "A", "c1", 1, "GPT", "U1", 3),
        ("main", "ann", False, "B", "c2", 2, "Claude", "AUR", 0)]
SPANS = [("main", "ann", False, "B", "c2", 2, "Claude", "AUR", 0, 12, "advice")]


def _as_categorical(table, shuffle_categories: bool = False, unused: str = ""):
    """The same rows with every text column as codes into categories (as the database hands them over), the
    categories in another order and with an unused one when asked."""
    columns = {}
    for field in dataclasses.fields(table):
        column = np.asarray(getattr(table, field.name))
        if column.dtype.kind == "O":
            categories = sorted(set(column.tolist()), reverse=shuffle_categories) + ([unused] if unused else [])
            codes = np.array([categories.index(value) for value in column.tolist()], dtype=np.int64)
            columns[field.name] = Categorical(codes, categories)
        else:
            columns[field.name] = column
    return type(table)(**columns)


def test_the_same_rows_handed_over_differently_have_one_fingerprint():
    plain = fingerprint(judgment_table(ROWS), span_table(SPANS))
    assert plain.startswith("sha256:") and len(plain) == len("sha256:") + 64
    assert fingerprint(_as_categorical(judgment_table(ROWS)), span_table(SPANS)) == plain
    assert fingerprint(_as_categorical(judgment_table(ROWS), shuffle_categories=True, unused="never"),
                       _as_categorical(span_table(SPANS))) == plain
    assert fingerprint(judgment_table(ROWS[::-1]), span_table(SPANS)) == plain, "row order does not count"
    as_floats = dataclasses.replace(judgment_table(ROWS), score=np.array([2.0, 3.0, 0.0]))
    assert fingerprint(as_floats, span_table(SPANS)) == plain, "a score counts by its value"


def test_any_change_of_a_row_changes_the_fingerprint():
    plain = fingerprint(judgment_table(ROWS), span_table(SPANS))
    seen = {plain}
    for row in range(len(ROWS)):
        for column in range(9):
            changed = [list(r) for r in ROWS]
            value = changed[row][column]
            changed[row][column] = (not value if isinstance(value, bool) else value + 1 if isinstance(value, int)
                                    else value + "x")
            seen.add(fingerprint(judgment_table([tuple(r) for r in changed]), span_table(SPANS)))
    assert len(seen) == 1 + len(ROWS) * 9
    assert fingerprint(judgment_table(ROWS)) != plain, "the spans count"
    assert fingerprint(judgment_table(ROWS + ROWS[:1]), span_table(SPANS)) != plain, "a duplicate row counts"
    # two columns swapping values between rows is another input
    swapped = [ROWS[0][:1] + ("bob",) + ROWS[0][2:], ROWS[1][:1] + ("ann",) + ROWS[1][2:8] + (2,), ROWS[2]]
    assert fingerprint(judgment_table(swapped), span_table(SPANS)) != plain


def test_the_report_states_the_fingerprint_of_what_it_read():
    study = generate(DEFAULT_SCHEMA, subcategory_attribute=DEFAULT_SUBCATEGORIES, seed=5, single_turn_conversations=6,
                     multi_turn_conversations=2, multi_turn_turns=3, calibration_turns=3, reviewers=3, main_coders=2)
    report = build_report(attributes=DEFAULT_SCHEMA, judgments=study.judgments, spans=study.spans,
                          response_texts=study.response_texts, conversation_kinds=study.conversation_kinds,
                          subcategory_attribute=DEFAULT_SUBCATEGORIES, params=ReportParams(bootstrap=10, seed=1))
    assert report["input"]["fingerprint"] == fingerprint(study.judgments, study.spans)


# The fingerprint of ROWS and SPANS as every version since the fingerprint began computes it: a study of the default
# kind (no CARE or LC8 rows) keeps its fingerprint, so its runs' bundles stay fresh.
PINNED = "sha256:6bfd433f08af24c3a5281e68e3ea62202b9f8af2ac7b9d6b31aef120a6fe3825"


def _lc8_rows(value: str = "3.0", order: int = 1):
    sessions = [("d", "t1", 1), ("d", "t1", 2)]
    labels = [("ref", None, 1, "P1", value), ("ref", None, 2, "P1", "4.0")][::order]
    return ({"lc8": {"block": {"items": ["P1"]}, "members": [["ref", "reference"]]}},
            {"data/lc8_sessions.csv": (("dataset", "conversation_id", "session_index"), sessions),
             "data/lc8_labels.csv": (("coder", "seed", "session", "attribute", "value"), labels)})


def test_a_study_without_section_rows_keeps_its_fingerprint_bytes():
    base = fingerprint(judgment_table(ROWS), span_table(SPANS))
    assert base == PINNED
    assert fingerprint_rows(base, None) == PINNED
    assert fingerprint_rows(base, ({}, {})) == PINNED
    report = {"input": {"fingerprint": base, "judgments": 3, "dropped": {}}}
    report_complete(report, study={}, software={}, unscored=0, sections={"care": None, "lc8": None})
    assert report["input"]["fingerprint"] == PINNED


def test_the_section_rows_count_their_values_their_order_and_their_block():
    base = fingerprint(judgment_table(ROWS), span_table(SPANS))
    with_rows = fingerprint_rows(base, _lc8_rows())
    assert with_rows.startswith("sha256:") and with_rows != base
    assert fingerprint_rows(base, _lc8_rows()) == with_rows
    assert fingerprint_rows(base, _lc8_rows(value="2.0")) != with_rows
    assert fingerprint_rows(base, _lc8_rows(order=-1)) != with_rows, "a later judgment replaces an earlier one"
    blocks, tables = _lc8_rows()
    assert fingerprint_rows(base, ({"lc8": {**blocks["lc8"], "members": [["ref", "method"]]}}, tables)) != with_rows
    other = fingerprint(judgment_table(ROWS[:2]), span_table(SPANS))
    assert fingerprint_rows(other, _lc8_rows()) != with_rows
