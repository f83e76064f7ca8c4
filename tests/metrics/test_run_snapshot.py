"""A metric run reads the study on one snapshot (``common.snapshot``): a judgment saved while the run is reading is
in every read of it or in none, so the report's counts add up (docs/metrics.md#report-keys: ``input.judgments`` =
``used`` + the dropped ones)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from metrics import runs, selectors
from tests.factories import JudgmentFactory, RoundFactory, StudyFactory

# the run's own transaction, a writer on a connection of its own; the installed schemas put back after the flush
pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def test_a_judgment_saved_while_the_run_reads_is_in_all_of_its_reads_or_in_none(monkeypatch):
    study = StudyFactory(slug="snapshot")
    round_ = RoundFactory(study=study)
    JudgmentFactory(round=round_, score=2)
    JudgmentFactory(round=round_, score=None)  # a span highlighted before its score
    read = selectors.report_inputs

    def reads_then_a_save_lands(**kwargs):
        inputs = read(**kwargs)

        def save() -> None:
            try:
                JudgmentFactory(round=round_, score=None)
            finally:
                connection.close()

        writer = threading.Thread(target=save)
        writer.start()
        writer.join()
        return inputs

    monkeypatch.setattr(selectors, "report_inputs", reads_then_a_save_lands)
    counted = runs.report_build(study=study, bootstrap=5)["input"]
    assert counted["dropped"]["unscored"] == 1
    spans_apart = {reason: n for reason, n in counted["dropped"].items() if reason != "span_unusable"}
    assert counted["judgments"] == counted["used"] + sum(spans_apart.values()) == 2
