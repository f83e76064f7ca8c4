"""A LongCounsel-8 session that took a reply after it was rated, before ingestion refused one (7 December 2026):
its ratings are of a transcript without that reply. The report names it by trajectory and session index
(``lc8.input.grown_after_rating``) and says so in its warnings; its ratings stay in the figures, and the study bundle
carries the sessions and recomputes the same report
(docs/lc8-metrics.md#a-session-that-grew-after-it-was-rated). Before, the report counted them without a word.
Material ingested in one go and rated after is never named, whatever the times its rows share."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.test import override_settings

from annotation.models import Judgment, Study
from annotation.selectors import sessions_grown_after_coding
from benchmark import conversation_ingest
from benchmark.models import ModelResponse, Turn
from lc8 import inputs as loader
from lc8.core.section import warning
from tests.lc8.test_rated_session_grows import _rate, _record
from tests.lc8.test_rating_pages import SLOT, labels_store, lc8_study, trajectory_sessions
from tests.reports.test_bundle_kinds import _bundled, _recompute_without_django
from tests.study_archive.test_archive import export, truncate_everything_archived, write

pytestmark = pytest.mark.django_db

NAME = "lc8-study-traj-1"
SAID = (f"1 session took a reply after its first LongCounsel-8 rating ({NAME} session 5): the LongCounsel-8 ratings "
        "given before it are of a transcript without that reply, which their coder never saw, and are counted in the "
        "figures all the same (docs/lc8-metrics.md#a-session-that-grew-after-it-was-rated).")


@pytest.fixture(autouse=True)
def bundle_dir(tmp_path):
    with override_settings(BUNDLE_DIR=str(tmp_path / "bundles")):
        yield


def _reply_added(turn: Turn) -> ModelResponse:
    """A reply written as every ingestion wrote one before the freeze (``docs/sessions.md``): a new row, now."""
    return ModelResponse.objects.create(turn=turn, model_slot=SLOT, text="A late reply.")


def test_a_session_that_took_a_reply_after_its_rating_is_named_said_and_kept(tmp_path):
    study = lc8_study(trajectories=1)
    last = trajectory_sessions(study)[4]  # turns 9 and 10; turn 10's reply comes after the rating
    ModelResponse.objects.filter(turn__session=last, turn__index=10).delete()
    labels_store(study, last)
    _rate(study, last)
    before = loader.lc8_section(study=study, resamples=20)
    assert "grown_after_rating" not in before["input"]
    assert "took a reply" not in (warning(before) or "")

    _reply_added(Turn.objects.get(session=last, index=10))
    files = _bundled(study)
    report = json.loads(files["report.json"])
    section = report["lc8"]
    assert section["input"] == {**before["input"], "grown_after_rating": {NAME: [5]}}
    # the ratings stay in the figures: every judgment read is used, as before the reply
    assert section["input"]["used"] == section["input"]["judgments"] == 8
    assert {k: v for k, v in section.items() if k != "input"} == {k: v for k, v in before.items() if k != "input"}
    assert {"section": "lc8", "message": warning(section)} in report["warnings"]
    assert SAID in warning(section)
    assert json.loads(files["run.json"])["lc8"]["grown_after_rating"] == {NAME: [5]}
    done, recomputed = _recompute_without_django(files, tmp_path)
    assert done.returncode == 0, done.stderr
    assert recomputed == files["report.json"]


def test_replies_of_one_ingestion_or_of_later_sessions_are_no_growth():
    """Rated session 4 (turns 7 and 8; its page shows sessions 1 to 3 too): replies stamped with the very time of its
    first rating (one bulk ingestion's time, as a synthetic study's), and a reply added to session 5 after, name
    nothing; a reply added after it to session 3, which its page shows, names it."""
    study = lc8_study(trajectories=1)
    sessions = trajectory_sessions(study)
    fourth = sessions[3]
    ModelResponse.objects.filter(turn__index__in=(6, 10)).delete()
    _rate(study, fourth)
    rated_at = Judgment.objects.filter(session=fourth).order_by("created_at").values_list("created_at", flat=True)[0]
    ModelResponse.objects.update(created_at=rated_at, updated_at=rated_at)
    ids = [session.pk for session in sessions]
    assert sessions_grown_after_coding(study=study, session_ids=ids) == set()
    _reply_added(Turn.objects.get(index=10))  # session 5, not rated, not shown on session 4's page
    assert sessions_grown_after_coding(study=study, session_ids=ids) == set()
    assert "grown_after_rating" not in loader.lc8_section(study=study, resamples=0)["input"]
    _reply_added(Turn.objects.get(index=6))  # session 3, shown on session 4's page
    assert sessions_grown_after_coding(study=study, session_ids=ids) == {fourth.pk}
    assert loader.lc8_section(study=study, resamples=0)["input"]["grown_after_rating"] == {NAME: [4]}
    # another study's ratings of the session are no rating of this one
    other = lc8_study(slug="lc8-other", trajectories=1)
    assert sessions_grown_after_coding(study=other, session_ids=ids) == set()


def test_ratings_restored_onto_material_stored_here_later_are_no_growth(tmp_path):
    """A study archive keeps its rows' times; restored onto trajectories this installation stored after the ratings
    were given (reused: each turn and reply as archived, which the import checks), every reply here is later than
    the ratings, yet none came after them: nothing is named. Before the conversation's own time was asked, every
    rated session of such a study was named."""
    study = lc8_study(trajectories=1)
    _rate(study, trajectory_sessions(study)[4])
    text = export(study.slug)
    record = _record(trajectory_sessions(study)[4].conversation)
    truncate_everything_archived()
    conversation_ingest.conversations_import(rows=[(1, record)])
    call_command("import_study", str(write(tmp_path, text)), stdout=io.StringIO())
    restored = Study.objects.get(slug=study.slug)
    sessions = trajectory_sessions(restored)
    rated_at = Judgment.objects.filter(round__study=restored).order_by("created_at")[0].created_at
    assert ModelResponse.objects.filter(created_at__lte=rated_at).count() == 0  # every reply here is later
    assert sessions_grown_after_coding(study=restored, session_ids=[s.pk for s in sessions]) == set()
    assert "grown_after_rating" not in loader.lc8_section(study=restored, resamples=0)["input"]
