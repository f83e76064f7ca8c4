"""A study whose schema codes no sessions (the default kind's cab-v1) over history conversations: its judgments
export has the same columns in CSV and JSON Lines, without ``session_index``
(docs/care-data.md#care-labels-in-the-long-format: only a study whose schema has a ``session`` group adds it), and
each reads back into another study as the same judgments. Before, the JSON Lines rows of history turns carried
``session_index`` and the CSV did not."""

from __future__ import annotations

import csv
import io
import json

import pytest

from annotation import judgment_import, long_format
from annotation.models import Judgment, Study
from benchmark.models import Session
from tests.factories import (
    ConversationFactory,
    JudgmentFactory,
    ModelResponseFactory,
    RoundFactory,
    StudyFactory,
    TurnFactory,
    UserFactory,
    attribute,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def cab_study_of_histories() -> Study:
    """A cab-v1 study coding two turns of a history of two sessions: a user code and a response code on each."""
    study = StudyFactory(slug="cab-histories")
    main = RoundFactory(study=study, kind="main", number=1, status="closed")
    coder = UserFactory(username="rev1")
    history = ConversationFactory(kind="longitudinal", complexity=None, external_id="history-1")
    for index in (1, 2):
        session = Session.objects.create(conversation=history, index=index, kind=Session.Kind.CHAT)
        turn = TurnFactory(conversation=history, index=index, session=session)
        JudgmentFactory(round=main, coder=coder, attribute=attribute("U1"), response=None, turn=turn, score=index)
        JudgmentFactory(round=main, coder=coder, response=ModelResponseFactory(turn=turn, model_slot="GPT"), score=1)
    return Study.objects.select_related("schema").get(pk=study.pk)


def _values(slug: str) -> set[tuple]:
    return set(Judgment.objects.filter(round__study__slug=slug).values_list(
        "coder__username", "attribute__code", "conversation__external_id", "turn__index", "response__model_slot",
        "score"))


def test_csv_and_json_lines_have_the_same_columns(cab_study_of_histories):
    study = cab_study_of_histories
    assert long_format.columns_for(study) == long_format.COLUMNS
    header = next(csv.reader(io.StringIO("".join(long_format.WRITERS["csv"](study=study)))))
    lines = "".join(long_format.WRITERS["jsonl"](study=study)).splitlines()
    assert len(lines) == 4
    assert header == list(long_format.COLUMNS)
    assert [list(json.loads(line)) for line in lines] == [list(long_format.COLUMNS)] * 4
    assert [tuple(row) for row in long_format.judgment_rows(study=study)] == [long_format.COLUMNS] * 4


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_each_format_reads_back_as_the_same_judgments(cab_study_of_histories, fmt):
    text = "".join(long_format.WRITERS[fmt](study=cab_study_of_histories))
    StudyFactory(slug="cab-histories-copy")
    rows = [(line, row | {"study": "cab-histories-copy"})
            for line, row in long_format.read_rows(io.StringIO(text, newline=""), fmt=fmt)]
    summary = judgment_import.judgments_import(rows=rows, study_slug="cab-histories-copy", by=None)
    assert summary.judgments_created == 4
    assert _values("cab-histories-copy") == _values("cab-histories")
