"""The autosave's locked read (``services._round_and_judgment_locked``), written as SQL of its own for speed, must
find exactly the judgment that ``Judgment.objects.filter(**lookup)`` finds, with every column as the ORM reads it,
and say the round's status and whether the coder is still a member."""

from __future__ import annotations

import pytest
from django.db import transaction

from annotation import services
from annotation.models import AttributeDefinition, Judgment, Round
from annotation.services import SpanInput
from tests.factories import attribute

pytestmark = pytest.mark.django_db


def _columns(judgment: Judgment | None) -> dict | None:
    if judgment is None:
        return None
    return {f.attname: getattr(judgment, f.attname) for f in Judgment._meta.concrete_fields}


def test_the_locked_read_finds_what_the_orm_filter_finds(round_, reviewer, other_reviewer, expert, response):
    aur = attribute("AUR")
    turn_attribute = AttributeDefinition.objects.filter(schema=round_.study.schema,
                                                        unit=AttributeDefinition.Unit.TURN).first()
    turn = response.turn
    services.judgment_save(round=round_, by=reviewer, attribute=aur, response=response, score=1,
                           instance_count=2, spans=[SpanInput(0, 4, aur.subcategories.first().slug)])
    services.judgment_save(round=round_, by=other_reviewer, attribute=aur, response=response, score=2)
    services.judgment_save(round=round_, by=reviewer, attribute=turn_attribute, turn=turn, score=0)
    base = {"round": round_, "turn": turn, "is_gold": False}
    lookups = [
        base | {"attribute": aur, "response": response, "coder": reviewer},
        base | {"attribute": aur, "response": response, "coder": other_reviewer},
        base | {"attribute": aur, "response": response, "coder": expert},  # none yet
        base | {"attribute": turn_attribute, "response": None, "coder": reviewer},
        base | {"attribute": turn_attribute, "response": response, "coder": reviewer},  # none: a turn's unit
        # the other spellings a unit is named by (a session's, a conversation's id)
        base | {"attribute": turn_attribute, "response": None, "coder": reviewer, "session": None},
        base | {"attribute": aur, "response": response, "coder": reviewer,
                "conversation_id": turn.conversation_id},
        base | {"attribute": aur, "response": response, "coder": reviewer, "conversation_id": -1},
    ]
    found_some = 0
    for lookup in lookups:
        with transaction.atomic():
            state, found = services._round_and_judgment_locked(round=round_, coder=lookup["coder"], lookup=lookup)
        expected = Judgment.objects.filter(**lookup).first()
        assert _columns(found) == _columns(expected), lookup
        assert state == {"status": Round.Status.OPEN, "member": True}
        found_some += found is not None
    assert found_some == 5


def test_the_locked_read_says_status_and_membership(round_, reviewer, outsider, response):
    lookup = {"round": round_, "attribute": attribute("AUR"), "turn": response.turn, "response": response,
              "is_gold": False, "coder": outsider}
    Round.objects.filter(pk=round_.pk).update(status=Round.Status.CLOSED)
    with transaction.atomic():
        state, found = services._round_and_judgment_locked(round=round_, coder=outsider, lookup=lookup)
    assert state == {"status": Round.Status.CLOSED, "member": False} and found is None
    Round.objects.filter(pk=round_.pk).delete()
    with pytest.raises(Round.DoesNotExist), transaction.atomic():
        services._round_and_judgment_locked(round=round_, coder=outsider, lookup=lookup)
