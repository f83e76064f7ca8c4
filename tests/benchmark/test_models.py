"""The benchmark's data model: the database keeps one response per (turn, model slot), and (PostgreSQL triggers)
refuses to change what reviewers coded against, even to raw SQL. The services' side, with the messages users see,
is in test_conversation_ingest.py and tests/annotation/test_apis.py."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

from tests.factories import (
    AssignmentFactory,
    JudgmentFactory,
    ModelResponseFactory,
    RoundFactory,
    RoundItemFactory,
    TurnFactory,
    attribute,
)

pytestmark = pytest.mark.django_db

def test_database_refuses_a_second_response_for_a_model_slot():
    response = ModelResponseFactory(model_slot="GPT")
    with pytest.raises(IntegrityError, match="response_unique_model_slot"), transaction.atomic():
        ModelResponseFactory(turn=response.turn, model_slot="GPT")


def _sql(statement: str, *params) -> None:
    with connection.cursor() as cursor:
        cursor.execute(statement, params)


def _client_text(turn) -> str:
    turn.refresh_from_db()
    return turn.client_text


# --- turn text ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("unit", ["turn", "response"])
def test_raw_sql_cannot_change_the_client_text_of_a_judged_turn(unit):
    response = ModelResponseFactory()
    if unit == "turn":
        JudgmentFactory(response=None, turn=response.turn, attribute=attribute("U1"))
    else:
        JudgmentFactory(response=response)
    for column in ("client_text", "therapist_reference"):
        with pytest.raises(IntegrityError, match="cannot change once the turn or a later turn of its conversation "
                                                 "has judgments"), transaction.atomic():
            _sql(f"UPDATE benchmark_turn SET {column} = 'rewritten' WHERE id = %s", response.turn_id)  # noqa: S608
    assert _client_text(response.turn) == TurnFactory.client_text


def test_raw_sql_cannot_change_an_earlier_turn_that_a_judged_turn_shows_but_may_change_later_ones():
    first = TurnFactory(index=1)
    second, third = TurnFactory(conversation=first.conversation, index=2), TurnFactory(conversation=first.conversation,
                                                                                      index=3)
    JudgmentFactory(response=None, turn=second, attribute=attribute("U1"))
    with pytest.raises(IntegrityError, match="has judgments"), transaction.atomic():
        _sql("UPDATE benchmark_turn SET client_text = 'rewritten' WHERE id = %s", first.pk)
    _sql("UPDATE benchmark_turn SET client_text = 'rewritten' WHERE id = %s", third.pk)
    assert (_client_text(first), _client_text(third)) == (TurnFactory.client_text, "rewritten")


@pytest.mark.parametrize("placed_by", [RoundItemFactory, AssignmentFactory])
def test_raw_sql_cannot_change_turn_text_in_an_open_round_but_can_once_it_closes(placed_by):
    turn = TurnFactory()
    round_ = RoundFactory(status="open")
    placed_by(round=round_, turn=turn)
    frozen = "while the turn or a later turn of its conversation is in an open round"
    with pytest.raises(IntegrityError, match=frozen), transaction.atomic():
        _sql("UPDATE benchmark_turn SET client_text = 'rewritten' WHERE id = %s", turn.pk)
    round_.status = "closed"
    round_.save()
    _sql("UPDATE benchmark_turn SET client_text = 'rewritten' WHERE id = %s", turn.pk)
    assert _client_text(turn) == "rewritten"


# --- response text and conversation fields ------------------------------------------------------------------------


@pytest.mark.parametrize("placed_by", [RoundItemFactory, AssignmentFactory])
def test_raw_sql_cannot_change_response_text_in_an_open_round(placed_by):
    response = ModelResponseFactory()
    round_ = RoundFactory(status="draft")
    placed_by(round=round_, turn=response.turn)
    _sql("UPDATE benchmark_modelresponse SET text = 'draft rounds do not freeze' WHERE id = %s", response.pk)
    round_.status = "open"
    round_.save()
    with pytest.raises(IntegrityError, match="cannot change while its turn is in an open round"), transaction.atomic():
        _sql("UPDATE benchmark_modelresponse SET text = 'rewritten' WHERE id = %s", response.pk)
    _sql("UPDATE benchmark_modelresponse SET model_version = 'v2' WHERE id = %s", response.pk)
    response.refresh_from_db()
    assert (response.text, response.model_version) == ("draft rounds do not freeze", "v2")


def test_raw_sql_cannot_change_the_fields_of_a_judged_conversation():
    judgment = JudgmentFactory()
    for assignment in ("title = 'rewritten'", "topic = 'Sleep'", "complexity = 'high'", "external_id = 'other'"):
        with pytest.raises(IntegrityError, match="cannot change once it has judgments"), transaction.atomic():
            _sql(f"UPDATE benchmark_conversation SET {assignment} WHERE id = %s", judgment.conversation_id)  # noqa: S608
    _sql("UPDATE benchmark_conversation SET is_synthetic = true, study_id = NULL WHERE id = %s",
         judgment.conversation_id)
