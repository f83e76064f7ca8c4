"""Bulk bodies (api/parsers.py) are split with msgspec and each item is decoded when the ingestion reads it: the
items and every 400 must be exactly what the former parser gave (the body decoded whole, then the standard
library's json), and an ingestion must hold about the body, not the body decoded as one string nor every item
decoded at once."""

from __future__ import annotations

import io
import json
import tracemalloc
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework import exceptions

from api import parsers
from benchmark import response_ingest
from benchmark.models import ModelResponse, Turn
from common.errors import RowError
from tests.factories import ConversationFactory, StudyFactory

# --- the former parser, as the reference --------------------------------------------------------------------------


def former_array(body: bytes) -> tuple[str, Any]:
    try:
        text = body.decode("utf-8").removeprefix("\ufeff")  # a leading byte order mark is dropped (utf-8-sig)
    except UnicodeDecodeError as error:
        return "400", f"The body is not UTF-8 ({error.reason} at byte {error.start})."
    try:
        items = json.loads(text)
    except json.JSONDecodeError as error:
        return "400", f"Not valid JSON: {error.msg} at line {error.lineno}, column {error.colno}."
    except RecursionError:
        return "400", "Not valid JSON: nested too deeply."
    if not isinstance(items, list):
        return "400", "The body must be a JSON array of items (or JSON Lines, one item a line)."
    return "items", repr(items)


def former_lines(body: bytes) -> tuple[str, Any]:
    try:
        text = body.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as error:
        return "400", f"The body is not UTF-8 ({error.reason} at byte {error.start})."
    items: list[Any] = []
    for line in text.split("\n"):
        if not line.strip():
            continue
        try:
            items.append(json.loads(line))
        except json.JSONDecodeError as error:
            items.append(RowError(len(items), "item", f"not valid JSON ({error.msg} at column {error.colno})"))
        except RecursionError:
            items.append(RowError(len(items), "item", "not valid JSON (nested too deeply)"))
    return "items", repr(items)


def parsed(parser: type[parsers.parsers.BaseParser], body: bytes) -> tuple[str, Any]:
    try:
        result = parser().parse(io.BytesIO(body), parser_context={})
        return "items", repr(list(result.items))  # every item read, as an ingestion reads them
    except exceptions.ParseError as error:
        return "400", str(error.detail)


# --- bodies: JSON the way clients write it, with what json and msgspec might read differently ----------------------

_ODD_TEXT = st.text(st.characters(codec=None, categories=None) | st.sampled_from(
    ["\ud800", "\udfff", "\x00", "\u2028", "\xa0", "\x1c", "\ufeff", "😊", "\\", '"', "\t", "\n", "\r"]), max_size=12)
_SCALARS = (st.none() | st.booleans() | st.integers() | st.integers(min_value=-(10**40), max_value=10**40)
            | st.floats(allow_nan=True, allow_infinity=True) | _ODD_TEXT)
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4)
                       | st.dictionaries(_ODD_TEXT, inner, max_size=4), max_leaves=12)
# Bytes that make a JSON text wrong, or right again, in interesting ways.
_EDIT_BYTES = [b'"', b"\\", b"[", b"]", b"{", b"}", b",", b":", b" ", b"\n", b"\r", b"\x00", b"\x01", b"\xff",
               b"\xc3", b"\xe2\x80", b"\xa0", b"0", b"1", b"-", b".", b"e", b"E", b"+", b"u", b"n", b"t", b"N",
               b"\xef\xbb\xbf", b"\\u", b"\\ud800", b"1e400", b"NaN", b"Infinity"]


def _encode(value: Any, ascii_only: bool) -> bytes:
    return json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")


@st.composite
def edited(draw: st.DrawFn, body: bytes) -> bytes:
    """The body with a few bytes replaced, inserted or removed (or unchanged)."""
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(body)))
        cut = draw(st.integers(0, 2))
        body = body[:at] + draw(st.sampled_from(_EDIT_BYTES) | st.just(b"")) + body[at + cut:]
    return body


@st.composite
def array_bodies(draw: st.DrawFn) -> bytes:
    items = draw(st.lists(_VALUES, max_size=6))
    body = _encode(items, draw(st.booleans()))
    if draw(st.booleans()):
        body = b" \n" + body.replace(b", ", draw(st.sampled_from([b",", b" , ", b",\r\n\t"]))) + b"\n "
    return draw(edited(body))


@st.composite
def lines_bodies(draw: st.DrawFn) -> bytes:
    items = draw(st.lists(_VALUES, max_size=6))
    ascii_only = draw(st.booleans())
    separators = st.sampled_from([b"\n", b"\r\n", b"\n\n", b"\n \t\n", "\n\xa0\n".encode(), b"\n\x1c\x1f\n",
                                  "\n\u2028\n".encode(), "\n\u3000 x\n".encode(), b"\n\x0b\x0c\n"])
    body = b""
    for item in items:
        body += _encode(item, ascii_only) + draw(separators)
    return draw(edited(body))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=array_bodies())
def test_a_json_array_gives_the_items_or_the_400_the_former_parser_gave(body):
    assert parsed(parsers.BulkJSONParser, body) == former_array(body)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=lines_bodies())
def test_json_lines_give_the_items_and_line_errors_the_former_parser_gave(body):
    assert parsed(parsers.BulkJSONLinesParser, body) == former_lines(body)


@pytest.mark.parametrize("body", [
    b'[NaN, -Infinity, 1e400, -1e999, 123456789012345678901234567890, 1.0, -0.0, 5e-324]',
    b'["\\ud800", "\\udc00x", "a\\u0000b", "\\ud83d\\ude0a"]',
    b'[{"a": 1, "b": 2, "a": 3}, {"": null}]',
    "[\"\xa0\u2028\"]".encode(), "\ufeff[1]".encode(), b'[1,]', b'[01]', b'{"rows": []}', b'"x"', b"[] []",
    b'[1] \x00', b'["\xed\xa0\x80"]', b'["ok", "\xc3"]', b'["a\tb"]', b"",
])
def test_bodies_json_and_msgspec_read_differently(body):
    assert parsed(parsers.BulkJSONParser, body) == former_array(body)
    lines = body[1:-1].replace(b", ", b"\n") if body.startswith(b"[") else body
    assert parsed(parsers.BulkJSONLinesParser, lines) == former_lines(lines)


def test_a_utf8_bom_that_begins_a_body_is_dropped_by_every_parser_and_one_elsewhere_is_not():
    """As the file paths read a file (utf-8-sig: manage.py import_conversations, the upload page)."""
    bom = "\ufeff".encode()
    for parser, body in ((parsers.BulkJSONParser, b'[{"a": 1}, 2]'), (parsers.BulkJSONLinesParser, b'{"a": 1}\n2\n')):
        assert parsed(parser, bom + body) == parsed(parser, body) == ("items", repr([{"a": 1}, 2]))
    assert parsed(parsers.BulkJSONParser, bom + bom + b"[1]")[0] == "400"
    assert parsed(parsers.BulkJSONParser, b"[1, " + bom + b"2]")[0] == "400"
    assert parsed(parsers.BulkJSONLinesParser, b"1\n" + bom + b"2\n")[1] != repr([1, 2])
    assert parsers.BoundedJSONParser().parse(io.BytesIO(bom + b'{"rows": []}'), parser_context={}) == {"rows": []}
    with pytest.raises(exceptions.ParseError, match=r"not UTF-8 \(invalid start byte at byte 4\)"):
        parsers.BoundedJSONParser().parse(io.BytesIO(bom + b'{\xff}'), parser_context={})


@pytest.mark.parametrize("depth", [5, 99, 100, 101, 102, 150, 600, 3000, 20000])
def test_deep_nesting_is_answered_as_json_answers_it(depth):
    item = b"[" * depth + b"]" * depth
    for body in (b"[" + item + b"]", b'[{"a": ' + item + b"}, 1]"):
        assert parsed(parsers.BulkJSONParser, body) == former_array(body)
    for body in (item, b"1\n" + item + b"\n2"):
        assert parsed(parsers.BulkJSONLinesParser, body) == former_lines(body)


@settings(max_examples=400, deadline=None)
@given(body=st.binary(max_size=40) | st.text(max_size=12).map(lambda t: t.encode("utf-8", "surrogatepass")),
       chunk=st.integers(1, 6))
def test_a_body_that_is_not_utf8_names_the_same_byte_and_reason_however_it_is_chunked(body, chunk):
    try:
        body.decode("utf-8")
        expected = None
    except UnicodeDecodeError as error:
        expected = f"The body is not UTF-8 ({error.reason} at byte {error.start})."
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(parsers, "_UTF8_CHUNK", chunk)
        try:
            parsers._utf8_check(body)
            found = None
        except exceptions.ParseError as error:
            found = str(error.detail)
    assert found == expected


def test_items_are_decoded_when_read_and_index_like_a_list():
    items = parsers.BulkJSONParser().parse(io.BytesIO(b'[{"a": 1}, [2], "3", 1e400]'), parser_context={}).items
    assert isinstance(items, parsers.LazyItems)  # 1e400 alone is read by json (msgspec refuses it); still split
    assert (len(items), items[0], items[-3], items[2], items[3]) == (4, {"a": 1}, [2], "3", float("inf"))
    assert items[1:3] == [[2], "3"]
    assert items[0] is not items[0]  # not kept: read again, decoded again
    with pytest.raises(IndexError):
        items[4]


# --- what an ingestion holds ------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_ingest_and_its_resend_hold_about_the_body_not_its_text_decoded():
    """The former path held the body decoded as one string and every item's text as a str (4 bytes a character
    once a text has an emoji: each about 4 times the body), and its resend read every stored text back."""
    study = StudyFactory(model_slots=["GPT", "Claude", "Gemini", "Llama", "Qwen"])
    conversation = ConversationFactory(dataset__name="Bulk", external_id="bulk", kind="multi", complexity=None)
    Turn.objects.bulk_create(Turn(conversation=conversation, index=i, client_text=f"turn {i}") for i in range(1, 201))
    items = [{"dataset": "Bulk", "conversation_id": "bulk", "turn_index": i, "model": model,
              "text": f"{model} {i}: " + "ça va, merci — " * 250 + "😊"}
             for i in range(1, 201) for model in study.model_slots]
    body = json.dumps(items, ensure_ascii=False).encode()
    peaks = []
    for expected in ({"created": 1000, "unchanged": 0}, {"created": 0, "unchanged": 1000}):
        tracemalloc.start()
        try:
            parsed_body = parsers.BulkJSONParser().parse(io.BytesIO(body), parser_context={})
            summary = response_ingest.responses_ingest(items=parsed_body.items, study=study,
                                                       model_slots=study.model_slots)
            del parsed_body
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
        assert {key: summary.as_dict()[key] for key in expected} == expected
    assert ModelResponse.objects.filter(text=items[7]["text"], model_slot=items[7]["model"]).exists()
    assert max(peaks) < 2 * len(body), (peaks, len(body))
