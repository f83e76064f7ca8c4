"""common/rounds.py: the interchange format's round names, ``calibration-N`` and ``main``."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from common.rounds import CALIBRATION, MAIN, NAME_PATTERN, calibration_number, round_name, round_parse

MAX_NUMBER = 999_999_999  # nine digits: always fits the database column


def test_round_name_of_each_kind():
    assert round_name(CALIBRATION, 1) == "calibration-1"
    assert round_name(CALIBRATION, 42) == "calibration-42"
    assert round_name(MAIN, 1) == "main"


@given(st.integers(min_value=1, max_value=MAX_NUMBER))
def test_a_calibration_round_name_parses_back_to_its_number(number):
    assert round_parse(round_name(CALIBRATION, number)) == (CALIBRATION, number)


def test_main_parses_back_to_main_one():
    assert round_parse(round_name(MAIN, 1)) == (MAIN, 1)


@given(st.one_of(st.just((MAIN, 1)), st.tuples(st.just(CALIBRATION), st.integers(1, MAX_NUMBER))))
def test_parse_then_name_gives_the_name_back(parsed):
    name = round_name(*parsed)
    assert round_name(*round_parse(name)) == name


@pytest.mark.parametrize("name", [
    "calibration-0",  # rounds count from 1
    "calibration-01",  # one spelling per number
    "calibration-1234567890",  # ten digits do not fit the column
    "calibration-",
    "calibration",
    "calibration--1",
    "calibration-+1",
    "calibration-1.0",
    "calibration-1 ",
    " calibration-1",
    "calibration-１",  # a full-width digit
    "Calibration-1",
    "Main",
    "MAIN",
    "main-1",
    " main",
    "main ",
    "",
])
def test_anything_but_calibration_n_or_main_is_refused(name):
    assert round_parse(name) is None
    assert calibration_number(name) is None


@pytest.mark.parametrize("name", ["main\n", "calibration-1\n"])
def test_a_trailing_newline_is_refused_not_a_crash_nor_a_second_spelling(name):
    """``$`` in the pattern matches before a final newline: "main\\n" must not raise and "calibration-1\\n" must
    not pass as calibration-1 (the importer would treat it as a round of its own name)."""
    assert round_parse(name) is None
    assert calibration_number(name) is None


@pytest.mark.parametrize("value", [None, 1, 1.0, b"main", ["main"], ("calibration", 1), {"main": 1}])
def test_a_value_that_is_not_a_string_is_refused(value):
    assert round_parse(value) is None
    assert calibration_number(value) is None


def test_calibration_number_is_the_number_of_a_calibration_round_only():
    assert calibration_number("calibration-1") == 1
    assert calibration_number("calibration-999999999") == MAX_NUMBER
    assert calibration_number("main") is None


def test_the_url_pattern_accepts_exactly_the_names_round_parse_accepts():
    pattern = re.compile(rf"(?:{NAME_PATTERN})")
    for name in ("calibration-1", "calibration-999999999", "main"):
        assert pattern.fullmatch(name) and round_parse(name) is not None
    for name in ("calibration-0", "calibration-01", "calibration-1234567890", "Main"):
        assert not pattern.fullmatch(name) and round_parse(name) is None
