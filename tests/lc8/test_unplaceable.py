"""A trajectory stored without a study (``import_conversations``) with more sessions than the lc8 block's cannot
become an LC8 study's by another path (docs/lc8.md#trajectories-conversations-json-lines): a session label (four
paths), a judgment of the study's rounds (the judgments import) or a round's turn (a calibration set, sampled or
hand-built, and the main round's assignment). Each is refused by row and field, or left out of the turns a round
draws from, and nothing is written; before, each made the study's whole LC8 section unavailable."""

from __future__ import annotations

import io
import json

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation import judgment_import, long_format
from annotation.models import Assignment, Judgment, RoundItem, SessionLabel
from annotation.session_labels import session_labels_import
from benchmark import conversation_ingest
from benchmark.models import Session, Turn
from calibration import selectors as calibration_selectors
from calibration import services as calibration
from common.errors import RowErrors
from lc8.inputs import lc8_section
from tests.admin_form import form_fields
from tests.factories import RoundFactory, StudyMemberFactory, UserFactory
from tests.form_fuzz import fingerprint
from tests.lc8.label_paths import LINE
from tests.lc8.label_paths import label_paths as paths_of
from tests.lc8.test_data import DATASET, row, trajectory
from tests.lc8.test_data import study as study  # noqa: F401, PLC0414 - the fixture

pytestmark = pytest.mark.django_db

SIX = (f"{DATASET}/six sessions[5]: a LongCounsel-8 trajectory has at most 5 sessions (the sessions of the schema's "
       "lc8 block); this one has 6; the study's report could not place it, so it cannot become the study's")


@pytest.fixture
def stored_without_a_study(study):  # noqa: F811 - the fixture
    """``six`` (six sessions) and ``five`` (five), stored by an import without a study."""
    conversation_ingest.conversations_import(rows=[(1, trajectory("six", sessions=6)), (2, trajectory("five"))])
    return study


def _section_fine(study) -> bool:  # noqa: F811 - a study
    """The study's section is not made unavailable by a session outside its columns."""
    return "outside" not in (lc8_section(study=study, resamples=0).get("unavailable") or "")


@pytest.fixture
def label_paths(stored_without_a_study, tmp_path, admin_user, as_token):
    study = stored_without_a_study
    rows = [row(conversation="five"), row(conversation="six", session=2), row(conversation="six", session=6)]
    return study, paths_of(study, rows, as_token(admin_user, scopes=["import"]), tmp_path)


def test_a_label_on_a_trajectory_the_study_cannot_place_is_refused_by_every_label_path(label_paths):
    """Both rows of ``six`` (its session 6 too) are refused on their conversation; the row of ``five`` is fine but,
    all or nothing, not written either."""
    study, paths = label_paths
    for path, refuse in paths.items():
        assert refuse() == [(2, "conversation_id", SIX), (3, "conversation_id", SIX)], path
    assert not SessionLabel.objects.exists()
    assert _section_fine(study)


def test_a_label_on_a_trajectory_of_five_stored_without_a_study_is_taken(stored_without_a_study):
    summary = session_labels_import(study=stored_without_a_study, rows=[row(conversation="five")], by=None)
    assert summary.created == 1


def test_a_judgment_on_a_trajectory_the_study_cannot_place_is_refused_by_line(stored_without_a_study, reviewer):
    study = stored_without_a_study
    RoundFactory(study=study, kind="main", status="open")
    StudyMemberFactory(study=study, user=reviewer, role="reviewer")
    line = {"study": study.slug, "round": "main", "reviewer": "reviewer", "is_gold": False, "dataset": DATASET,
            "conversation_id": "six", "turn_index": None, "model": None, "attribute": "PHQ1", "score": 2,
            "instance_count": None, "spans": [], "role": "reviewer", "session_index": 1}
    text = json.dumps(line | {"conversation_id": "five"}) + "\n" + json.dumps(line) + "\n"
    with pytest.raises(RowErrors) as caught:
        judgment_import.judgments_import(rows=long_format.read_rows(io.StringIO(text), fmt="jsonl"),
                                         study_slug=study.slug, by=None)
    assert [(e.row, e.field, e.message) for e in caught.value.errors] == [(2, "conversation_id", SIX)]
    assert not Judgment.objects.exists()


def test_a_hand_built_calibration_set_refuses_a_turn_of_a_trajectory_the_study_cannot_place(stored_without_a_study,
                                                                                             admin_user):
    study = stored_without_a_study
    round_ = calibration.calibration_round_create(study=study, by=admin_user, number=1)
    with pytest.raises(ValidationError) as caught:
        calibration.calibration_set_from_refs(round=round_, by=admin_user,
                                              refs=f"{DATASET}/five#1\n{DATASET}/six#3\n{DATASET}/t1#1")
    assert caught.value.messages == [f"line 2: {SIX}"]
    assert not RoundItem.objects.exists()


def test_rounds_draw_no_turn_of_a_trajectory_the_study_cannot_place(stored_without_a_study, admin_user):
    """The sampler and the main round take their turns from the same candidates, which leave ``six`` out: every
    other stored trajectory's turns are there."""
    study = stored_without_a_study
    candidates = calibration_selectors.calibration_candidates(study=study)
    assert {turn.conversation.external_id for turn in candidates} == {"t1", "t2", "five"}
    assert calibration_selectors.calibration_candidates_count(study=study) == len(candidates) == 30
    round_ = calibration.calibration_round_create(study=study, by=admin_user, number=1)
    drawn = calibration.calibration_set_sample(round=round_, by=admin_user, n=30, seed=3)
    assert "six" not in {turn.conversation.external_id for turn in drawn}
    RoundItem.objects.all().delete()
    StudyMemberFactory(study=study, user=UserFactory(username="rater"), role="reviewer", retained=True)
    calibration.main_round_assign(study=study, by=admin_user)
    assigned = set(Assignment.objects.values_list("turn__conversation__external_id", flat=True))
    assert assigned == {"t1", "t2", "five"}
    assert _section_fine(study)


def test_a_trajectory_an_lc8_study_labelled_cannot_be_given_a_sixth_session_without_a_study(stored_without_a_study,
                                                                                            tmp_path):
    """A session label makes the trajectory the study's (``conversations_of_study``), so an import without a study
    may no longer change it (README, "Study isolation and frozen text"): before, labels did not count as a use, and
    resending ``five`` with a sixth session made the study's section unavailable."""
    study = stored_without_a_study
    session_labels_import(study=study, rows=[row(conversation="five")], by=None)
    path = tmp_path / "six.jsonl"
    path.write_text(json.dumps(trajectory("five", sessions=6)), encoding="utf-8")
    with pytest.raises(CommandError) as refused:
        call_command("import_conversations", str(path), stdout=io.StringIO())
    assert LINE.findall(str(refused.value)) == [
        ("1", "conversation_id", f"{DATASET}/five belongs to a study: only that study's ingestion may change it, not "
                                 "an import without a study")]
    assert Session.objects.filter(conversation__external_id="five").count() == 5
    assert _section_fine(study)


def test_the_admin_adds_no_round_item_or_queue_item_of_a_trajectory_the_study_cannot_place(stored_without_a_study,
                                                                                          client, admin_user):
    """A draft round's items and queues may be added by hand in the Django admin: a turn of ``six`` is refused on
    its field, nothing saved; a turn of ``five`` is taken."""
    study = stored_without_a_study
    draft = RoundFactory(study=study, kind="calibration", status="draft")
    client.force_login(admin_user)
    coder = UserFactory(username="rater")
    six, five = (Turn.objects.get(conversation__external_id=name, index=3) for name in ("six", "five"))
    item_add, queue_add = reverse("admin:annotation_rounditem_add"), reverse("admin:annotation_assignment_add")
    before = fingerprint()
    for url, fields in ((item_add, {"round": draft.pk, "turn": six.pk, "position": "1"}),
                        (queue_add, form_fields(client, queue_add) | {
                            "round": str(draft.pk), "coder": str(coder.pk), "turn": str(six.pk), "position": "1"})):
        answer = client.post(url, fields)
        assert answer.status_code == 200
        assert answer.context["adminform"].form.errors["turn"] == [SIX]
    assert fingerprint() == before
    assert client.post(item_add, {"round": draft.pk, "turn": five.pk, "position": "1"}).status_code == 302
    assert RoundItem.objects.get(round=draft).turn == five
