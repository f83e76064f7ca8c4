"""annotation/rules.py against the installed cab-v1 attributes: every rule's exact message, and the units each
attribute is coded on."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wcwidth import iter_graphemes

from annotation.models import AttributeDefinition
from annotation.rules import MAX_INSTANCE_COUNT, MAX_SPANS, grapheme_cuts, judgment_problems, units_of
from tests.factories import attribute

pytestmark = pytest.mark.django_db

TEXT = "A response of forty characters, in ASCII"
TEXT_LENGTH = len(TEXT)


def problems(code: str, *, score=1, required=False, turn=True, response=None, instance_count=None, spans=(),
             text=TEXT):
    """The problems of a judgment of ``code`` on its own unit (unless told otherwise), with its own subcategories."""
    a = attribute(code)
    if response is None:
        response = a.unit == AttributeDefinition.Unit.RESPONSE
    return judgment_problems(
        attribute=a, score=score, score_required=required, has_turn=turn, has_response=response,
        instance_count=instance_count, spans=spans, subcategories=[s.slug for s in a.subcategories.all()],
        text_length=len(text) if response else None, text=text if response else None,
    )


def conversation_attribute() -> AttributeDefinition:
    """cab-v1 codes nothing per conversation; a schema may (the rules only read the definition)."""
    return AttributeDefinition(code="SES", name="Session arc", group="session", unit="conversation", position=99,
                               scale_min=0, scale_max=3, level="ordinal", definition="", bucket={})


def test_a_valid_judgment_on_each_unit_has_no_problems():
    assert problems("U1", score=2) == {}
    assert problems("AUR", score=0, instance_count=0) == {}
    assert problems("SEN", score=1, instance_count=MAX_INSTANCE_COUNT,
                    spans=[(0, TEXT_LENGTH, "safety-language"), (3, 4, "overreaction")]) == {}
    assert problems("F5", score=1) == {}


# --- scores -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("code", "score", "message"), [
    ("U1", 3, "U1: score 3 is outside the scale 0–2"),
    ("U1", 7, "U1: score 7 is outside the scale 0–2"),
    ("U1", -1, "U1: score -1 is outside the scale 0–2"),
    ("U3", 2, "U3: score 2 is outside the scale 0–1"),
    ("SEN", 2, "SEN: score 2 is outside the scale 0–1"),
    ("F1", 2**31, "F1: score 2147483648 is outside the scale 0–1"),
])
def test_a_score_off_the_scale_names_the_attribute_the_score_and_the_scale(code, score, message):
    assert problems(code, score=score) == {"score": message}


@pytest.mark.parametrize("score", [1.5, 1.0, "1", True, False, [1]])
def test_a_score_that_is_not_a_whole_number_says_so(score):
    assert problems("U1", score=score) == {"score": "U1: score must be a whole number"}


def test_a_missing_score_is_a_problem_only_where_it_is_required():
    assert problems("U1", score=None, required=True) == {"score": "U1: a score is required"}
    assert problems("U1", score=None, required=False) == {}  # a draft: spans highlighted, score to come


# --- units ------------------------------------------------------------------------------------------------------


def test_a_turn_attribute_on_a_response_or_without_a_turn_is_a_unit_problem():
    message = "U1 is coded once per turn: give the turn and no model response"
    assert problems("U1", response=True) == {"unit": message}
    assert problems("U1", turn=False) == {"unit": message}
    assert problems("U1", turn=False, response=True) == {"unit": message}


def test_a_response_attribute_without_a_response_is_a_unit_problem():
    message = "AUR is coded once per model response: a model response is required"
    assert problems("AUR", response=False) == {"unit": message}
    assert problems("F1", response=False, turn=False) == {
        "unit": "F1 is coded once per model response: a model response is required"}


def test_a_conversation_attribute_on_a_turn_or_a_response_is_a_unit_problem():
    message = "SES is coded once per conversation: give neither a turn nor a model response"
    ses = conversation_attribute()
    for has_turn, has_response in ((True, False), (True, True), (False, True)):
        assert judgment_problems(attribute=ses, score=1, score_required=True, has_turn=has_turn,
                                 has_response=has_response) == {"unit": message}
    assert judgment_problems(attribute=ses, score=1, score_required=True, has_turn=False, has_response=False) == {}


def test_every_problem_of_one_judgment_is_reported_together():
    assert problems("U1", score=9, response=True, instance_count=1) == {
        "score": "U1: score 9 is outside the scale 0–2",
        "unit": "U1 is coded once per turn: give the turn and no model response",
        "instance_count": "U1 takes no instance count",
    }


# --- instance counts --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("code", ["U1", "F3"])
def test_an_instance_count_on_an_attribute_without_one_is_refused(code):
    assert problems(code, instance_count=0) == {"instance_count": f"{code} takes no instance count"}


@pytest.mark.parametrize("count", [-1, 2**31, 10**20, 1.5, "2", True])
def test_an_instance_count_must_be_a_whole_number_that_fits_the_column(count):
    assert problems("AUR", instance_count=count) == {
        "instance_count": "AUR: instance count must be a whole number from 0 to 2147483647"}


@pytest.mark.parametrize("count", [None, 0, 1, 2**31 - 1])
def test_an_instance_count_from_zero_to_the_column_maximum_is_accepted(count):
    assert problems("AUR", instance_count=count) == {}


# --- spans ------------------------------------------------------------------------------------------------------


def test_a_span_of_another_attributes_subcategory_lists_the_allowed_ones():
    assert problems("AUR", spans=[(0, 3, "directive")]) == {
        "spans[0]": "AUR: subcategory 'directive' is not one of this attribute's (assumes, explores)"}
    assert problems("FIX", spans=[(0, 3, "nope")]) == {
        "spans[0]": "FIX: subcategory 'nope' is not one of this attribute's (invites-own-solution, problem-solving)"}


def test_a_span_on_an_attribute_without_subcategories_says_none_are_allowed():
    assert problems("F1", spans=[(0, 3, "assumes")]) == {
        "spans[0]": "F1: subcategory 'assumes' is not one of this attribute's (none)"}


@pytest.mark.parametrize(("start", "end"), [(0, TEXT_LENGTH + 1), (-1, 3), (5, 5), (6, 5),
                                            (TEXT_LENGTH, TEXT_LENGTH + 1)])
def test_a_span_outside_the_text_or_empty_gives_its_offsets_and_the_text_length(start, end):
    assert problems("AUR", spans=[(start, end, "assumes")]) == {
        "spans[0]": f"AUR: span [{start}, {end}) is outside the response text (0–{TEXT_LENGTH} characters)"}


@pytest.mark.parametrize(("start", "end"), [(0.0, 3), (0, 3.5), ("0", "3"), (True, 3), (0, False), (None, 3)])
def test_a_span_with_offsets_that_are_not_whole_numbers_says_so(start, end):
    assert problems("AUR", spans=[(start, end, "assumes")]) == {
        "spans[0]": "AUR: a span's start and end must be whole numbers"}


def test_a_span_that_says_its_passage_is_checked_against_the_text_in_code_points():
    text = "One \U0001F9E0 idea.\r\nNext line " + "x" * 60
    aur = attribute("AUR")

    def quoted(start, end, quote):
        return judgment_problems(attribute=aur, score=1, score_required=True, has_turn=True, has_response=True,
                                 spans=[(start, end, "assumes")], subcategories=["assumes"], text_length=len(text),
                                 quotes=[quote], text=text)

    assert quoted(4, 10, "\U0001F9E0 idea") == {}
    assert quoted(4, 11, "\U0001F9E0 idea") == {"spans[0]": (
        "AUR: span [4, 11) marks '\U0001F9E0 idea.' in the response text, not '\U0001F9E0 idea' (offsets count "
        "characters as code points: an emoji is one, a CRLF two)")}
    assert quoted(8, 80, "idea")["spans[0]"].startswith(
        f"AUR: span [8, 80) marks {text[8:58]!r}… in the response text, not 'idea' (")
    with pytest.raises(ValueError, match="the caller gives it"):
        judgment_problems(attribute=aur, score=1, score_required=True, has_turn=True, has_response=True,
                          spans=[(4, 10, "assumes")], subcategories=["assumes"], text_length=len(text),
                          quotes=["\U0001F9E0 idea"])


def test_the_subcategory_is_checked_before_the_offsets():
    assert problems("AUR", spans=[("x", 10**9, "nope")]) == {
        "spans[0]": "AUR: subcategory 'nope' is not one of this attribute's (assumes, explores)"}


def test_spans_on_a_unit_without_text_say_the_unit_has_none():
    u1 = attribute("U1")
    assert judgment_problems(attribute=u1, score=1, score_required=True, has_turn=True, has_response=False,
                             spans=[(0, 3, "assumes")], subcategories=["assumes"], text_length=None) == {
        "spans[0]": "U1: spans mark a model response's text; this unit has none"}


def test_only_the_bad_spans_are_reported_each_under_its_own_index():
    spans = [(0, 3, "assumes"), (0, 99, "assumes"), (1, 2, "explores"), (1, 2, "directive")]
    assert problems("AUR", spans=spans) == {
        "spans[1]": f"AUR: span [0, 99) is outside the response text (0–{TEXT_LENGTH} characters)",
        "spans[3]": "AUR: subcategory 'directive' is not one of this attribute's (assumes, explores)",
    }


def test_spans_of_a_judgment_on_the_wrong_unit_are_not_reported_twice():
    # A response attribute given on the turn: the unit is wrong, and its spans would only repeat that.
    assert problems("AUR", response=False, spans=[(0, 99, "nope"), (0.5, 1, "assumes")]) == {
        "unit": "AUR is coded once per model response: a model response is required"}
    assert problems("U1", response=True, spans=[(0, 3, "assumes")]) == {
        "unit": "U1 is coded once per turn: give the turn and no model response"}


def test_the_same_span_twice_is_refused_at_its_second_place():
    spans = [(0, 3, "assumes"), (4, 9, "assumes"), (0, 3, "assumes"), (0, 3, "explores")]
    assert problems("AUR", spans=spans) == {"spans[2]": "AUR: span [0, 3) assumes is given twice"}


def test_more_spans_than_the_limit_are_refused_with_one_message():
    many = [(i % 30, i % 30 + 1, "assumes") for i in range(MAX_SPANS + 1)]
    assert problems("AUR", spans=many) == {
        "spans": f"AUR: at most {MAX_SPANS} spans per judgment, {MAX_SPANS + 1} were given"}
    assert problems("AUR", spans=[(i % 39, i % 39 + 1, "assumes") for i in range(39)]) == {}


# --- user-perceived characters ---------------------------------------------------------------------------------

# A reviewer reads each of these as one character (one grapheme cluster); Python counts several code points.
CLUSTERS = ("Accent: cafe\u0301. Family: \U0001F468\u200d\U0001F469\u200d\U0001F467. Heart: \u2764\uFE0F. "
            "Thumb: \U0001F44D\U0001F3FD. Flags: \U0001F1EB\U0001F1F7\U0001F1E9\U0001F1EA. Line\r\nend. "
            "Hindi: \u0915\u094D\u0937.")
INSIDE = "; a span starts and ends between whole characters as the reader sees them (a letter with its accents, " \
         "a whole emoji or flag, a CRLF)"


def on_clusters(*spans, kept=()):
    return judgment_problems(attribute=attribute("AUR"), score=1, score_required=True, has_turn=True,
                             has_response=True, spans=list(spans), subcategories=["assumes", "explores"],
                             text_length=len(CLUSTERS), text=CLUSTERS, kept_spans=kept)


@pytest.mark.parametrize(("after", "where", "shown"), [
    ("cafe", "start", "'e\u0301' (e + U+0301)"),
    ("\U0001F468", "end", "'\U0001F468\\u200d\U0001F469\\u200d\U0001F467' (U+1F468 + U+200D + U+1F469 + U+200D "
                        "+ U+1F467)"),
    ("\U0001F468\u200d\U0001F469\u200d", "start", "'\U0001F468\\u200d\U0001F469\\u200d\U0001F467' (U+1F468 + "
                                                  "U+200D + U+1F469 + U+200D + U+1F467)"),
    ("\u2764", "end", "'\u2764\uFE0F' (U+2764 + U+FE0F)"),
    ("\U0001F44D", "start", "'\U0001F44D\U0001F3FD' (U+1F44D + U+1F3FD)"),
    ("\U0001F1EB", "end", "'\U0001F1EB\U0001F1F7' (U+1F1EB + U+1F1F7)"),
    ("\U0001F1EB\U0001F1F7\U0001F1E9", "start", "'\U0001F1E9\U0001F1EA' (U+1F1E9 + U+1F1EA)"),
    ("Line\r", "end", "'\\r\\n' (U+000D + U+000A)"),
    ("\u0915\u094D", "start", "'\u0915\u094D\u0937' (U+0915 + U+094D + U+0937)"),
])
def test_a_span_that_would_cut_a_character_in_two_names_the_offset_and_the_character(after, where, shown):
    offset = CLUSTERS.index(after) + len(after)
    start, end = (offset, len(CLUSTERS)) if where == "start" else (0, offset)
    assert on_clusters((start, end, "assumes")) == {
        "spans[0]": f"AUR: span [{start}, {end}): offset {offset} falls inside {shown}{INSIDE}"}


def test_a_span_cutting_characters_at_both_ends_names_both_and_whole_characters_are_a_span():
    start, end = CLUSTERS.index("\u0301"), CLUSTERS.index("\uFE0F")
    assert on_clusters((start, end, "assumes")) == {"spans[0]": (
        f"AUR: span [{start}, {end}): offset {start} falls inside 'e\u0301' (e + U+0301) and offset {end} falls "
        f"inside '\u2764\uFE0F' (U+2764 + U+FE0F){INSIDE}")}
    whole = [(CLUSTERS.index(c), CLUSTERS.index(c) + len(c), "assumes") for c in (
        "e\u0301", "\U0001F468\u200d\U0001F469\u200d\U0001F467", "\u2764\uFE0F", "\U0001F1E9\U0001F1EA", "\r\n",
        "\u0915\u094D\u0937")]
    assert on_clusters(*whole, (0, len(CLUSTERS), "explores")) == {}


def test_a_span_the_judgment_holds_already_is_kept_though_it_cuts_a_character():
    """Stored before the rule, it stays, and the page sends it again with each save of its judgment; a new one, or
    the same offsets with another subcategory, is refused."""
    old = (0, CLUSTERS.index("\u0301"), "assumes")
    assert on_clusters(old, kept=[old]) == {}
    assert set(on_clusters(old, (old[0], old[1], "explores"), kept=[old])) == {"spans[1]"}
    assert set(on_clusters(old)) == {"spans[0]"}


def test_the_rules_need_the_text_of_spans_to_see_its_characters():
    with pytest.raises(ValueError, match="the caller gives it"):
        judgment_problems(attribute=attribute("AUR"), score=1, score_required=True, has_turn=True,
                          has_response=True, spans=[(0, 3, "assumes")], subcategories=["assumes"], text_length=40)


def whole_text_boundaries(text: str) -> set[int]:
    """The boundaries of the text segmented from its start: the reference the local segmentation must equal."""
    bounds, at = {0}, 0
    for cluster in iter_graphemes(text):
        at += len(cluster)
        bounds.add(at)
    return bounds


# Characters every rule of UAX #29 turns on: controls and CR/LF, combining marks, ZWJ, emoji and their modifiers and
# variation selectors, regional indicators, Hangul jamo, prepended and spacing marks, Indic conjuncts, ASCII.
ALPHABET = ["a", "b", " ", ".", "\n", "\r", "\t", "\x01", "\u0301", "\u200d", "\uFE0F", "\U0001F468",
            "\U0001F469", "\U0001F3FD", "\U0001F1EB", "\U0001F1F7", "\u1100", "\u1161", "\u11A8", "\uAC00",
            "\u0600", "\u0903", "\u0915", "\u094D", "\u0937", "\u0E33", "\u00e9", "\u00a0", "\U000E0067"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(ALPHABET), max_size=40).map("".join))
def test_the_offsets_that_cut_a_character_are_those_the_text_segmented_from_its_start_has_no_boundary_at(text):
    bounds = whole_text_boundaries(text)
    assert set(grapheme_cuts(text, range(-1, len(text) + 2))) == set(range(len(text) + 1)) - bounds


# --- units_of ---------------------------------------------------------------------------------------------------


def test_a_response_attribute_is_coded_on_each_response_in_the_order_given():
    responses = ["Qwen", "GPT", "Claude"]
    assert units_of(attribute("AUR"), responses) == ["Qwen", "GPT", "Claude"]
    assert units_of(attribute("F1"), responses[:1]) == ["Qwen"]
    assert units_of(attribute("AUR"), []) == []


def test_a_turn_attribute_is_coded_once_on_the_turn_itself():
    assert units_of(attribute("U1"), ["GPT", "Claude"]) == [None]
    assert units_of(attribute("U5"), []) == [None]


def test_a_conversation_attribute_is_not_coded_per_turn():
    assert units_of(conversation_attribute(), ["GPT", "Claude"]) == []


def test_every_installed_attribute_is_on_the_unit_its_group_says():
    units = {a.code: a.unit for a in AttributeDefinition.objects.filter(schema__slug="cab-v1")}
    assert {code for code, unit in units.items() if unit == "turn"} == {"U1", "U2", "U3", "U4", "U5"}
    assert len([code for code, unit in units.items() if unit == "response"]) == 15
