"""common/cells.py: formula neutralisation (an exact inverse pair), CSV cells of every value type, and the
chunked CSV stream being exactly csv.writer's output."""

from __future__ import annotations

import csv
import io
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from common.cells import CHUNK, FORMULA_TRIGGERS, csv_cell, csv_stream, neutralise, unneutralise

# Text that often begins with a trigger or with (several) quotes, besides arbitrary text.
PREFIXES = st.lists(st.sampled_from([*FORMULA_TRIGGERS, "'"]), max_size=4).map("".join)
TRICKY_TEXT = st.builds(lambda prefix, rest: prefix + rest, PREFIXES, st.text())
ANY_TEXT = st.one_of(st.text(), TRICKY_TEXT)


@given(ANY_TEXT)
def test_unneutralise_undoes_neutralise_for_every_string(value):
    assert unneutralise(neutralise(value)) == value


@given(ANY_TEXT, ANY_TEXT)
def test_neutralise_never_maps_two_strings_to_one_cell(a, b):
    if a != b:
        assert neutralise(a) != neutralise(b)


@given(ANY_TEXT)
def test_a_neutralised_cell_never_begins_with_a_formula_trigger(value):
    assert not neutralise(value).startswith(FORMULA_TRIGGERS)


@pytest.mark.parametrize("trigger", FORMULA_TRIGGERS)
def test_a_cell_beginning_with_a_formula_trigger_gets_one_leading_quote(trigger):
    assert neutralise(trigger + "SUM(A1)") == "'" + trigger + "SUM(A1)"
    assert neutralise(trigger) == "'" + trigger


def test_a_cell_beginning_with_a_quote_gets_one_more_quote_so_import_can_undo_exactly():
    assert neutralise("'quoted") == "''quoted"
    assert neutralise("'=x") == "''=x"
    assert unneutralise("''quoted") == "'quoted"


def test_ordinary_cells_and_triggers_after_the_first_character_are_left_alone():
    for value in ("", "plain", "a=b", " =x", "1-2", "mail@example.org", "a'b"):
        assert neutralise(value) == value


def test_unneutralise_keeps_a_quote_that_neutralise_could_not_have_added():
    assert unneutralise("'abc") == "'abc"
    assert unneutralise("'") == "'"
    assert unneutralise("'-1") == "-1"


@pytest.mark.parametrize(("value", "cell"), [
    (None, ""),
    (True, "true"),
    (False, "false"),
    (0, "0"),
    (-1, "-1"),  # a number is not a formula: no quote
    (2**40, "1099511627776"),
    (1.5, "1.5"),
    (-0.25, "-0.25"),
    ("", ""),
    ("plain", "plain"),
    ("-1", "'-1"),  # the same characters as text are neutralised
    ("=HYPERLINK(\"x\")", "'=HYPERLINK(\"x\")"),
    ("Ça va 😊", "Ça va 😊"),
    ({"start": 0, "end": 3, "subcategory": "assumes"}, '{"start": 0, "end": 3, "subcategory": "assumes"}'),
    ({"note": "é"}, '{"note": "é"}'),  # JSON without ASCII escapes
    ([{"start": 1, "end": 2}], '[{"start": 1, "end": 2}]'),
])
def test_csv_cell_of_each_value_type(value, cell):
    assert csv_cell(value) == cell


def test_a_text_cell_is_neutralised_by_its_first_character_only():
    assert csv_cell("@x") == "'@x"
    assert csv_cell(json.dumps("=x")) == '"=x"'  # a JSON string begins with a double quote, not a trigger


def _expected_csv(header, rows) -> str:
    """What csv.writer writes for the same cells: text neutralised, numbers as repr, None empty, bools lower."""

    def cell(value):
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int | float):
            return repr(value)
        return neutralise(value)

    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow([cell(name) for name in header])
    for row in rows:
        writer.writerow([cell(value) for value in row])
    return buffer.getvalue()


VALUES = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), ANY_TEXT)


@given(st.lists(ANY_TEXT, min_size=1, max_size=4), st.lists(st.lists(VALUES, max_size=5), max_size=20))
def test_csv_stream_is_exactly_csv_writer_output_of_the_neutralised_cells(header, rows):
    assert "".join(csv_stream(header, rows)) == _expected_csv(header, rows)


def test_a_large_csv_stream_comes_in_chunks_of_whole_rows_that_join_to_csv_writer_output():
    header = ["=id", "text", "n"]
    rows = [[f"-{i}", f"@row {i} " + "x" * 200 + "\nsecond line", i] for i in range(2000)]
    chunks = list(csv_stream(header, rows))
    assert len(chunks) >= 3
    assert all(len(chunk) >= CHUNK for chunk in chunks[:-1])
    assert all(len(chunk) < CHUNK + 1024 for chunk in chunks)  # a chunk holds at most one row past the threshold
    assert all(chunk.endswith("\r\n") for chunk in chunks)
    joined = "".join(chunks)
    assert joined == _expected_csv(header, rows)
    read = list(csv.reader(io.StringIO(joined, newline="")))
    assert [unneutralise(cell) for cell in read[0]] == header
    assert [[unneutralise(a), unneutralise(b), int(c)] for a, b, c in read[1:]] == rows


def test_an_empty_csv_stream_is_the_header_alone():
    assert list(csv_stream(["a", "+b"], [])) == ["a,'+b\r\n"]


def test_csv_stream_writes_the_bytes_of_csv_writer_whatever_it_remembers(monkeypatch):
    """csv_stream formats each distinct value once (and forgets them all when its memory is full): the text must be
    exactly csv.writer's over csv_cell, quoting, empty cells and one-column rows included."""
    import csv
    import io
    import random

    from common import cells

    def reference(header, rows):
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow([cells.csv_cell(name) for name in header])
        for row in rows:
            writer.writerow([cells.csv_cell(value) for value in row])
        return buffer.getvalue()

    values = ["", "a", "a,b", 'q"uote', "=SUM(1)", "'x", "-1", "line\nbreak", "cr\rx", " sp ", "tab\tx", "ü😊",
              None, True, False, 0, 1, -3, 2.5, [], [{"start": 0, "end": 3, "subcategory": "x,y"}], "@", ","]
    rng = random.Random(0)
    for limit in (3, 4096):
        monkeypatch.setattr(cells, "_CACHED_CELLS", limit)
        for _ in range(500):
            width = rng.choice([0, 1, 2, 13])
            rows = [[rng.choice(values) for _ in range(width)] for _ in range(rng.randint(0, 30))]
            header = [f"c{n}" for n in range(width)]
            assert "".join(cells.csv_stream(header, rows)) == reference(header, rows), rows


def test_jsonl_stream_with_keys_writes_json_dumps_of_each_row_whatever_it_remembers(monkeypatch):
    """With keys, jsonl_stream encodes each distinct value of a key once (and forgets them all when its memory is
    full): each line must be exactly json.dumps of the row as a dict, values that compare equal but encode
    differently (True, 1, 1.0; 0.0 and -0.0) and rows shorter than the keys included."""
    import json
    import random

    from common import cells

    values = ["", "a", 'q"uote', "ü😊", "line\nbreak", "1", None, True, False, 0, 1, -3, 1.0, 0.0, -0.0, 2.5,
              float("nan"), [], {}, [{"start": 0, "end": 3, "subcategory": "x,y"}], {"k": [1, None]}, [1]]
    keys = ["study", "n", "ü", "spans", 'q"k']
    rng = random.Random(1)
    for limit in (2, 4096):
        monkeypatch.setattr(cells, "_CACHED_CELLS", limit)
        for _ in range(300):
            rows = [tuple(rng.choice(values) for _ in range(rng.randint(0, len(keys))))
                    for _ in range(rng.randint(0, 30))]
            expected = "".join(json.dumps(dict(zip(keys, row, strict=False)), ensure_ascii=False) + "\n"
                               for row in rows)
            assert "".join(cells.jsonl_stream(rows, keys=keys)) == expected, rows
