"""The autosave's locked read (``services._round_and_judgment_locked``), written as SQL of its own for speed, must
find exactly the judgment that ``Judgment.objects.filter(**lookup)`` finds, with every column as the ORM reads it,
and say the round's status and whether the coder is still a member."""

from __future__ import annotations

import pytest
from django.db import transaction

from annotation import services
from annotation.models import Assignment, AttributeDefinition, Judgment, Round, StudyMember
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
        role = StudyMember.Role.EXPERT if lookup["coder"] == expert else StudyMember.Role.REVIEWER
        assert state == {"status": Round.Status.OPEN, "member": True, "role": role}
        found_some += found is not None
    assert found_some == 5


def test_the_locked_read_says_status_and_membership(round_, reviewer, outsider, response):
    lookup = {"round": round_, "attribute": attribute("AUR"), "turn": response.turn, "response": response,
              "is_gold": False, "coder": outsider}
    Round.objects.filter(pk=round_.pk).update(status=Round.Status.CLOSED)
    with transaction.atomic():
        state, found = services._round_and_judgment_locked(round=round_, coder=outsider, lookup=lookup)
    assert state == {"status": Round.Status.CLOSED, "member": False, "role": None} and found is None
    Round.objects.filter(pk=round_.pk).delete()
    with pytest.raises(Round.DoesNotExist), transaction.atomic():
        services._round_and_judgment_locked(round=round_, coder=outsider, lookup=lookup)


def test_the_span_read_finds_what_the_orm_finds(round_, reviewer, response):
    aur = attribute("AUR")
    slugs = [sub.slug for sub in aur.subcategories.all()]
    judgment = services.judgment_save(round=round_, by=reviewer, attribute=aur, response=response, score=1,
                                      spans=[SpanInput(5, 9, slugs[-1]), SpanInput(0, 4, slugs[0]),
                                             SpanInput(0, 4, slugs[-1]), SpanInput(0, 2, slugs[0])])
    expected = list(judgment.spans.values_list("start", "end", "subcategory__slug"))
    assert services._span_values(judgment) == expected
    assert len(expected) == 4 and expected[0][:2] == (0, 2)
    assert services._span_values(Judgment(pk=judgment.pk + 1000)) == []


@pytest.mark.parametrize("unit", ["turn", "session", "conversation"])
def test_the_feedback_lock_read_finds_what_the_orm_finds(round_, reviewer, other_reviewer, response, unit):
    from benchmark.models import Session
    from tests.factories import AssignmentFactory, TurnFactory

    turn = response.turn
    session = Session.objects.create(conversation=turn.conversation, index=1, kind=Session.Kind.CHAT)
    turn.session = session
    turn.save(update_fields=["session"])
    other_turn = TurnFactory(conversation=turn.conversation, index=turn.index + 1, session=session)
    mine = AssignmentFactory(round=round_, coder=reviewer, turn=other_turn, position=1)
    AssignmentFactory(round=round_, coder=other_reviewer, turn=turn, position=1, feedback_locked=True)
    lookups = {"turn": {"turn": turn}, "session": {"turn__session_id": session.pk},
               "conversation": {"turn__conversation_id": turn.conversation_id}}

    def both(coder) -> tuple[bool, bool]:
        orm = Assignment.objects.filter(round=round_, coder=coder, feedback_locked=True, **lookups[unit]).exists()
        return services._feedback_locked(round=round_, coder=coder, unit=lookups[unit]), orm

    assert both(reviewer) == (False, False)
    assert both(other_reviewer) == (True, True)
    Assignment.objects.filter(pk=mine.pk).update(feedback_locked=True)
    # The reviewer's locked item is another turn of the same session and conversation.
    assert both(reviewer) == ((unit != "turn"),) * 2
