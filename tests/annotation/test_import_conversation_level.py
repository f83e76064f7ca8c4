"""Judgments of a conversation-level attribute go through the long format both ways: an export (its turn_index
empty) imports into another study as the same judgments, again without a change, and a row of a conversation
that is not imported is refused by its line (docs/api.md: an export imported into an empty study reproduces the
same judgments)."""

from __future__ import annotations

import io
import json

import pytest

from annotation import judgment_import, long_format, services
from annotation.judgment_import import RowErrors
from annotation.models import AttributeDefinition, Judgment, Schema
from annotation.schema_document import SCHEMA_DIR
from tests.factories import JudgmentFactory, RoundFactory, StudyFactory, TurnFactory, UserFactory

pytestmark = pytest.mark.django_db


def _schema_with_a_conversation_attribute() -> Schema:
    """cab-v1's U1 (a turn's) and ARC, the same scale once per conversation."""
    document = json.loads((SCHEMA_DIR / "cab-v1.json").read_text(encoding="utf-8"))
    u1 = next(a for a in document["attributes"] if a["code"] == "U1")
    document |= {"slug": "conv-v1", "name": "Conversation arcs", "indices": {},
                 "groups": [*document["groups"], {"code": "conv", "name": "Conversation", "unit": "conversation",
                                                  "description": "once per conversation"}],
                 "attributes": [u1, dict(u1, code="ARC", name="Arc", group="conv")]}
    return services.schema_install(document=document, by=None)


def _copy(text: str, fmt: str) -> list:
    return [(line, row | {"study": "conv-copy"}) for line, row in
            long_format.read_rows(io.StringIO(text, newline=""), fmt=fmt)]


def _values(slug: str) -> set[tuple]:
    return set(Judgment.objects.filter(round__study__slug=slug).values_list(
        "coder__username", "attribute__code", "conversation__external_id", "turn__index", "score"))


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_conversation_level_judgments_survive_an_export_and_an_import(fmt):
    schema = _schema_with_a_conversation_attribute()
    study = StudyFactory(slug="conv-origin", schema=schema)
    main = RoundFactory(study=study, kind="main", number=1, status="closed")
    coder = UserFactory(username="rev1")
    arc, u1 = (AttributeDefinition.objects.get(schema=schema, code=code) for code in ("ARC", "U1"))
    for score, turn in enumerate([TurnFactory(), TurnFactory()]):  # two conversations: one ARC judgment each
        JudgmentFactory(round=main, coder=coder, attribute=arc, response=None, turn=None,
                        conversation=turn.conversation, score=score)
        JudgmentFactory(round=main, coder=coder, attribute=u1, response=None, turn=turn, score=1)
    text = "".join(long_format.WRITERS[fmt](study=study))
    assert text.count("ARC") == 2

    StudyFactory(slug="conv-copy", schema=schema)
    summary = judgment_import.judgments_import(rows=_copy(text, fmt), study_slug="conv-copy", by=None)
    assert summary.judgments_created == 4
    assert _values("conv-copy") == _values("conv-origin")
    again = judgment_import.judgments_import(rows=_copy(text, fmt), study_slug="conv-copy", by=None)
    assert (again.judgments_created, again.judgments_unchanged) == (0, 4)


def test_a_conversation_level_row_of_a_conversation_not_imported_is_refused_by_its_line():
    schema = _schema_with_a_conversation_attribute()
    StudyFactory(slug="conv-copy", schema=schema)
    row = {"study": "conv-copy", "round": "main", "reviewer": "rev1", "is_gold": False, "dataset": "Nowhere",
           "conversation_id": "c-404", "turn_index": "", "model": "", "attribute": "ARC", "score": 1,
           "instance_count": None, "spans": []}
    with pytest.raises(RowErrors) as refused:
        judgment_import.judgments_import(rows=[(3, row)], study_slug="conv-copy", by=None, typed=True)
    assert [(e.row, e.field) for e in refused.value.errors] == [(3, "conversation_id")]
    assert "Nowhere/c-404 is not imported" in refused.value.errors[0].message
    assert not Judgment.objects.filter(round__study__slug="conv-copy").exists()
