"""The span drill-down lists the highlights the span-evidence figure reads (docs/metrics.md, choices 15 and 16):
of scored judgments only (an unscored draft is not a judgment yet), of the retained panel when there is one, and
never an automated coder's."""

from __future__ import annotations

import pytest

from reports.selectors import span_examples
from tests.factories import (
    JudgmentFactory,
    ModelResponseFactory,
    RoundFactory,
    SpanFactory,
    StudyFactory,
    StudyMemberFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


def _highlight(main, *, role: str = "reviewer", retained: bool | None = None, score: int | None = 1):  # noqa: ANN001, ANN202
    """A coder of that role highlights a GPT response of their own in the main round; answers the response."""
    coder = UserFactory()
    StudyMemberFactory(study=main.study, user=coder, role=role, retained=retained)
    judgment = JudgmentFactory(round=main, coder=coder, response=ModelResponseFactory(model_slot="GPT"), score=score)
    SpanFactory(judgment=judgment)
    return judgment


@pytest.mark.parametrize("panel", [False, True])
def test_the_drill_down_counts_what_the_figure_reads(panel):
    main = RoundFactory(study=StudyFactory(), kind="main", number=1)
    counted = _highlight(main, retained=True if panel else None)
    _highlight(main, retained=True if panel else None, score=None)  # a draft: spans highlighted, score to come
    _highlight(main, role="method")  # an LLM judge's labels
    outside = _highlight(main, retained=False if panel else None)  # not on the panel, when there is one
    sub = counted.attribute.subcategories.first().slug

    total, examples = span_examples(study=main.study, model="GPT", subcategory=sub)

    shown = {example.response.pk for example in examples}
    expected = {counted.response_id} | (set() if panel else {outside.response_id})
    assert (total, shown) == (len(expected), expected)
