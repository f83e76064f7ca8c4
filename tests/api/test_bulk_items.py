"""The responses of a bulk body are decoded straight from their slice of the body (benchmark/response_ingest.py,
``_ResponseItem``; the text stays the JSON string's bytes in the body when it has no escape). Every item must come
out exactly as the usual path (each item decoded to a dict, then checked field by field) gives it: the same cleaned
values and text bytes for a valid item, the same errors (index, field, why) for a wrong one, the same stored text."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from api import parsers
from benchmark import response_ingest
from benchmark.models import ModelResponse, Turn
from common.errors import RowErrors
from tests.factories import ConversationFactory, StudyFactory

SLOTS = ["GPT", "Claude"]

_TEXT = st.text(st.characters(codec=None, categories=None) | st.sampled_from(
    ["\ud800", "\udfff", "\x00", "\u2028", "😊", "\\", '"', "\t", "\n", "\r", "ç", "/"]), max_size=8)
_SHORT = st.sampled_from(["D", " D ", "D\t", "", " ", "D\x00", "D\ud800", "x" * 101, "😊"]) | _TEXT
_ANY = st.none() | st.booleans() | st.integers() | st.floats() | st.lists(st.integers(), max_size=2) | _TEXT
_FIELDS = {
    "dataset": _SHORT | _ANY,
    "conversation_id": _SHORT | _ANY,
    "turn_index": st.sampled_from([1, 2, 0, -1, True, False, 1.0, "3", " 4 ", 2**31 - 1, 2**31, 10**30, None]),
    "model": st.sampled_from(["GPT", "Claude", " GPT ", "Other", "", "GPT\x00"]) | _ANY,
    "model_version": st.sampled_from(["", "v1", " v1 ", "v" * 201]) | _ANY,
    "text": st.sampled_from(["", " ", "a", "a\nb", "tab\there", "back\\slash", "quote\"", "😊 ça", "\x00",
                             "\ud800", "x" * 300]) | _TEXT | _ANY,
}


@st.composite
def item_json(draw: st.DrawFn) -> bytes:
    """One item as a client might write it: fields present or not, in any order, sometimes an unknown field or a
    key given twice (json keeps the last), escaped or not."""
    names = draw(st.lists(st.sampled_from(list(_FIELDS) + ["extra"]), max_size=9))
    if draw(st.integers(0, 3)):
        names = ["dataset", "conversation_id", "turn_index", "model", "text", *names]
    ascii_only = draw(st.booleans())
    parts = []
    for name in names:
        value = draw(_FIELDS.get(name, _ANY))
        parts.append(json.dumps(name) + ": " + json.dumps(value, ensure_ascii=ascii_only))
    if not draw(st.integers(0, 9)):
        return json.dumps(draw(_ANY)).encode("utf-8", "surrogatepass")  # not an object
    return ("{" + ", ".join(parts) + "}").encode("utf-8", "surrogatepass")


def _validated(items: Any) -> tuple[list[Any], list[Any]]:
    valid, errors = response_ingest._response_items_validate(items, SLOTS)
    return [(index, key, version, bytes(text)) for index, key, version, text in valid], errors


def _both(parser: type[parsers.parsers.BaseParser], body: bytes) -> None:
    try:
        lazy = parser().parse(io.BytesIO(body), parser_context={}).items
    except Exception:  # noqa: BLE001 - a body refused whole never reaches the items
        return
    usual = _validated(list(lazy))  # a list: each item decoded to a dict and checked as before
    assert _validated(lazy) == usual


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=st.lists(item_json(), max_size=6))
def test_items_decoded_from_the_body_validate_as_the_usual_path(items):
    _both(parsers.BulkJSONParser, b"[" + b", ".join(items) + b"]")
    _both(parsers.BulkJSONLinesParser, b"\n".join(items))


@pytest.mark.parametrize("text", ["plain ça 😊", "a\nb\r\nc\td", "back\\slash \\n not a newline", '"quoted"',
                                  "\u2028 \x7f \x1f", "😊" * 3, "x" * 5000])
@pytest.mark.parametrize("ascii_only", [True, False])
@pytest.mark.django_db
def test_a_text_from_the_body_is_stored_exactly_and_its_resend_is_unchanged(text, ascii_only):
    study = StudyFactory(model_slots=SLOTS)
    conversation = ConversationFactory(dataset__name="Bulk", external_id="c1", kind="single", complexity=None)
    Turn.objects.create(conversation=conversation, index=1, client_text="hello")
    items = [{"dataset": "Bulk", "conversation_id": "c1", "turn_index": 1, "model": model, "text": f"{model}: {text}"}
             for model in SLOTS]
    for parser, body in ((parsers.BulkJSONParser, json.dumps(items, ensure_ascii=ascii_only).encode()),
                         (parsers.BulkJSONLinesParser,
                          b"\n".join(json.dumps(item, ensure_ascii=ascii_only).encode() for item in items))):
        parsed = parser().parse(io.BytesIO(body), parser_context={})
        summary = response_ingest.responses_ingest(items=parsed.items, study=study, model_slots=SLOTS)
        if parser is parsers.BulkJSONParser:
            assert (summary.created, summary.unchanged) == (2, 0)
        else:
            assert (summary.created, summary.unchanged) == (0, 2)
    assert sorted(ModelResponse.objects.values_list("model_slot", "text")) == sorted(
        (item["model"], item["text"]) for item in items)


@pytest.mark.django_db
def test_a_wrong_item_among_body_items_is_reported_as_before_and_nothing_is_written():
    study = StudyFactory(model_slots=SLOTS)
    conversation = ConversationFactory(dataset__name="Bulk", external_id="c1", kind="single", complexity=None)
    Turn.objects.create(conversation=conversation, index=1, client_text="hello")
    body = (b'[{"dataset": "Bulk", "conversation_id": "c1", "turn_index": 1, "model": "GPT", "text": "fine"},'
            b' {"dataset": "Bulk", "conversation_id": "c1", "turn_index": 1, "model": "Other", "text": "x"},'
            b' {"dataset": "Bulk", "conversation_id": "c1", "turn_index": 1, "model": "Claude", "text": "a\\u0000"},'
            b' {"dataset": "Bulk", "conversation_id": "c1", "turn_index": 1, "model": "GPT", "text": "again"}]')
    parsed = parsers.BulkJSONParser().parse(io.BytesIO(body), parser_context={})
    with pytest.raises(RowErrors) as raised:
        response_ingest.responses_ingest(items=parsed.items, study=study, model_slots=SLOTS)
    assert [error.as_dict() for error in raised.value.errors] == [
        {"row": 1, "field": "model", "message": "'Other' is not one of this study's model slots (GPT, Claude)"},
        {"row": 2, "field": "text", "message": "may not contain NUL characters"},
        {"row": 3, "field": "model", "message": "the GPT response to turn 1 of Bulk/c1 already appears as item 0"},
    ]
    assert not ModelResponse.objects.exists()
