"""An automated coder (a study member of role ``method``, such as an LLM judge) is never a reviewer of the report:
its labels, imported as the docs say (``role`` ``method``), leave every calibration figure and the main round's
indices as they were without them (docs/metrics.md, choice 16)."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from annotation import automated_coders, judgment_import
from annotation.long_format import judgment_rows
from annotation.models import Judgment, Study, StudyMember
from metrics import runs, selectors

pytestmark = pytest.mark.django_db

SLUG = "syn"
JUDGE = "llm-judge"


@pytest.fixture
def study() -> Study:
    call_command("generate_synthetic", "--conversations", "12", "--reviewers", "4", "--seed", "3",
                 "--calibration-turns", "3", "--slug", SLUG, "--agreement", "0.6")
    return Study.objects.get(slug=SLUG)


def _judge_codes_like(study: Study, reviewer: str) -> int:
    """The judge's labels: the reviewer's own rows of every round under the judge's name, imported with role
    ``method``; answers how many rows it labelled."""
    automated_coders.method_register(study=study, name=JUDGE, version="v1", by=None)
    rows = [row | {"reviewer": JUDGE, "role": "method"}
            for row in judgment_rows(study=study) if row["reviewer"] == reviewer and not row["is_gold"]]
    judgment_import.judgments_import(rows=enumerate(rows, 1), study_slug=SLUG, by=None)
    return len(rows)


def test_report_inputs_name_the_studys_methods(study):
    _judge_codes_like(study, f"{SLUG}-r01")
    assert selectors.report_inputs(study=study).methods == (JUDGE,)


@pytest.mark.parametrize("panel", ["retained", "none"])
def test_a_methods_labels_change_no_reviewer_figure_and_no_index(study, panel):
    if panel == "none":  # without a retained panel the indices read every non-gold coder of the main round
        StudyMember.objects.filter(study=study).update(retained=None)
    before = runs.report_build(study=study, bootstrap=20)
    assert (before["parameters"]["panel"] is None) == (panel == "none")
    labelled = _judge_codes_like(study, f"{SLUG}-r01")
    rounds = set(Judgment.objects.filter(coder__username=JUDGE).values_list("round__kind", flat=True))
    assert labelled > 0 and rounds == {"calibration", "main"}  # the judge coded calibration items and the main round

    after = runs.report_build(study=study, bootstrap=20)
    assert after["parameters"]["methods"] == [JUDGE]
    assert JUDGE not in after["calibration"]["reviewers"]
    assert JUDGE not in {row["reviewer"] for row in after["calibration"]["panel_ranking"]["ranking"]}
    # Every figure as it was without the judge: its rows are dropped before items and turns are numbered.
    assert after["calibration"] == before["calibration"]
    assert after["indices"] == before["indices"]
