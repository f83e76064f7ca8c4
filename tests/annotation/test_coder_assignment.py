"""``selectors.coder_assignment``: the autosave's one-statement read of the coder's assignment with its round,
study, schema and turn, against the queryset it stands for (same rows, same values after Django's converters)."""

from __future__ import annotations

import pytest

from annotation import selectors
from annotation.models import Assignment, Round, Schema, Study, StudyMember
from benchmark.models import Conversation, Dataset, Turn
from tests.factories import AssignmentFactory, TurnFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def assignments(round_, reviewer, other_reviewer):
    """Three of the reviewer's assignments and one of the other reviewer's, in the calibration round."""
    Study.objects.filter(pk=round_.study_id).update(model_slots=["GPT", "Claude"])
    mine = [AssignmentFactory(round=round_, coder=reviewer, turn=TurnFactory(), position=p) for p in (1, 2, 5)]
    AssignmentFactory(round=round_, coder=other_reviewer, turn=mine[0].turn, position=1)
    return mine


def orm_reading(*, user, round_id: int, position: int, page: bool = False) -> Assignment | None:
    found = selectors.coder_assignments(user=user).filter(round_id=round_id, position=position)
    if page:  # what the turn page read before
        return found.select_related("round__study__schema", "turn__conversation__dataset").first()
    return found.select_related("round__study__schema", "turn").defer("round__study__schema__definition").first()


def values(instance) -> dict:
    """Every loaded concrete field's value, by attribute name (a deferred one is left out)."""
    deferred = instance.get_deferred_fields()
    return {f.attname: getattr(instance, f.attname) for f in instance._meta.concrete_fields
            if f.attname not in deferred}


def chain(assignment: Assignment, page: bool = False) -> list:
    made = [assignment, assignment.round, assignment.round.study, assignment.round.study.schema, assignment.turn]
    return made + ([assignment.turn.conversation, assignment.turn.conversation.dataset] if page else [])


def assert_same(found: Assignment | None, expected: Assignment | None, page: bool = False) -> None:
    assert (found is None) == (expected is None)
    if expected is None:
        return
    for mine, theirs in zip(chain(found, page), chain(expected, page), strict=True):
        assert type(mine) is type(theirs)
        assert values(mine) == values(theirs), type(mine).__name__
        assert {k: type(v) for k, v in values(mine).items()} == {k: type(v) for k, v in values(theirs).items()}
        assert mine._state.adding is False and mine._state.db == theirs._state.db


def test_the_same_assignment_round_study_schema_and_turn(assignments, other_reviewer, django_assert_num_queries):
    assignment = assignments[0]
    user, round_id = assignment.coder, assignment.round_id
    for position in (1, 2, 5):
        found = selectors.coder_assignment(user=user, round_id=round_id, position=position)
        assert_same(found, orm_reading(user=user, round_id=round_id, position=position))
        assert found.position == position and found.coder_id == user.pk
        on_page = selectors.coder_assignment(user=user, round_id=round_id, position=position, page=True)
        assert_same(on_page, orm_reading(user=user, round_id=round_id, position=position, page=True), page=True)
    # The relations are loaded, not read again on use; the schema's document is deferred as in the queryset.
    found = selectors.coder_assignment(user=other_reviewer, round_id=round_id, position=1)
    assert found.coder_id == other_reviewer.pk and found.turn_id == assignment.turn_id
    assert found.round.study.model_slots == ["GPT", "Claude"]  # JSON converted, as the ORM converts it
    assert "definition" in found.round.study.schema.get_deferred_fields()
    assert found.round.study.schema.definition == Schema.objects.get(pk=found.round.study.schema_id).definition
    on_page = selectors.coder_assignment(user=other_reviewer, round_id=round_id, position=1, page=True)
    assert not on_page.round.study.schema.get_deferred_fields()
    assert isinstance(on_page.round.study.schema.definition, dict) and on_page.round.study.schema.definition
    with django_assert_num_queries(0):  # every relation the page uses is loaded
        assert on_page.turn.conversation.dataset.pk == assignment.turn.conversation.dataset_id


def test_nothing_for_another_position_round_or_coder(assignments, expert, outsider):
    assignment = assignments[0]
    user, round_id = assignment.coder, assignment.round_id
    for who, rid, position in [(user, round_id, 3), (user, round_id + 1000, 1), (expert, round_id, 1),
                               (outsider, round_id, 1)]:
        assert selectors.coder_assignment(user=who, round_id=rid, position=position) is None
        assert selectors.coder_assignment(user=who, round_id=rid, position=position, page=True) is None
        assert orm_reading(user=who, round_id=rid, position=position) is None


def test_a_member_removed_from_the_study_finds_nothing(assignments):
    assignment = assignments[1]
    user = assignment.coder
    found = selectors.coder_assignment(user=user, round_id=assignment.round_id, position=assignment.position)
    assert found is not None
    StudyMember.objects.filter(study_id=found.round.study_id, user=user).delete()
    assert selectors.coder_assignment(user=user, round_id=assignment.round_id, position=assignment.position) is None
    assert orm_reading(user=user, round_id=assignment.round_id, position=assignment.position) is None


def test_the_models_read_are_the_ones_the_statement_names():
    # A new concrete field on one of these models is read too (the column list comes from the models).
    for page in (False, True):
        sql, parts = selectors._coder_assignment_statement(page=page)
        assert [columns.model for columns, _ in parts] == [Assignment, Round, Study, Schema, Turn] + (
            [Conversation, Dataset] if page else [])
        for columns, _ in parts:
            deferred = {"definition"} if columns.model is Schema and not page else set()
            every = {f.column for f in columns.model._meta.concrete_fields}
            assert {f.column for f in columns.fields} == every - deferred
