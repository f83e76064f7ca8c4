"""Synthetic LongCounsel-8 studies (lc8/synthetic.py, ``generate_lc8_synthetic``): exactly the sizes
asked for, predictions stored as drawn, and the magnitude-versus-direction rank reversal in the generated numbers,
checked here with plain numpy from the stored rows."""

from __future__ import annotations

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from annotation.models import Judgment, JudgmentRevision, SessionLabel, Study, StudyMember
from benchmark.models import Conversation, ModelResponse, Session, Turn
from tests import form_fuzz

pytestmark = pytest.mark.django_db

N, S = 60, 5


def _series(study: Study, coder: StudyMember, seed: int | None, code: str) -> np.ndarray:
    """The coder's values of one attribute as trajectories × sessions (conversation, session index order)."""
    rows = (SessionLabel.objects.filter(study=study, coder=coder, seed=seed, attribute__code=code)
            .order_by("session__conversation__external_id", "session__index").values_list("value", flat=True))
    return np.array(list(rows), dtype=float).reshape(-1, S)


def _mae_and_direction(predicted: np.ndarray, reference: np.ndarray) -> tuple[float, float]:
    mae = float(np.abs(predicted - reference).mean())
    dy, dp = np.diff(reference, axis=1), np.diff(predicted, axis=1)
    large = np.abs(dy) >= 5
    return mae, float((np.sign(dp[large]) == np.sign(dy[large])).mean())


def test_generate_lc8_synthetic_builds_exactly_what_was_asked(capsys):
    call_command("generate_lc8_synthetic", "--trajectories", str(N), "--sessions", str(S), "--methods", "2",
                 "--seeds", "3", "--turns-per-session", "2", "--raters", "2", "--rated-trajectories", "4",
                 "--seed", "7")
    study = Study.objects.get(slug="lc8-synthetic-7")
    assert study.is_synthetic and study.name.startswith("[SYNTHETIC]") and study.schema.slug == "lc8-v1"
    conversations = Conversation.objects.filter(study=study)
    assert conversations.count() == N and set(conversations.values_list("kind", flat=True)) == {"longitudinal"}
    assert all(c.is_synthetic and c.dataset.name == "LC8-synthetic" for c in conversations)
    sessions = Session.objects.filter(conversation__study=study)
    assert sessions.count() == N * S and set(sessions.values_list("kind", flat=True)) == {"counseling"}
    assert Turn.objects.filter(conversation__study=study).count() == N * S * 2
    assert Turn.objects.filter(conversation__study=study, session__isnull=True).count() == 0
    assert ModelResponse.objects.filter(turn__conversation__study=study, model_slot="Counselor").count() == N * S * 2

    block = study.schema.definition["lc8"]
    reference = StudyMember.objects.get(study=study, role="reference")
    assert not reference.user.is_active and not reference.user.has_usable_password()
    labels = SessionLabel.objects.filter(study=study, coder=reference)
    assert labels.count() == N * S * (len(block["items"]) + 1) and not labels.exclude(seed=None).exists()
    methods = list(StudyMember.objects.filter(study=study, role="method").order_by("user__username"))
    assert len(methods) == 2
    for method in methods:
        predictions = SessionLabel.objects.filter(study=study, coder=method)
        assert predictions.count() == N * S * 3
        assert set(predictions.values_list("seed", flat=True)) == {0, 1, 2}
        assert set(predictions.values_list("attribute__code", flat=True)) == {block["total"]}
    # 2 raters × 4 trajectories × 5 sessions × 8 items, unit session, in the main round, each with its history
    judgments = Judgment.objects.filter(round__study=study)
    assert judgments.count() == 2 * 4 * S * len(block["items"])
    assert set(judgments.values_list("round__kind", flat=True)) == {"main"}
    assert not judgments.filter(session__isnull=True).exists() and not judgments.filter(turn__isnull=False).exists()
    assert not judgments.filter(attribute__code=block["total"]).exists(), "the total is derived, never typed"
    assert JudgmentRevision.objects.filter(judgment__in=judgments).count() == judgments.count()
    assert study.rounds.get(kind="main").assignments.filter(completed_at__isnull=False).count() == 2 * 4 * S
    out = capsys.readouterr().out
    assert "[SYNTHETIC]" in out and f"{N * S} sessions" in out and " s" in out


def test_reference_items_sum_to_the_total_and_cover_all_four_types():
    call_command("generate_lc8_synthetic", "--trajectories", "200", "--methods", "0", "--seed", "1")
    study = Study.objects.get(slug="lc8-synthetic-1")
    reference = StudyMember.objects.get(study=study, role="reference")
    block = study.schema.definition["lc8"]
    items = np.stack([_series(study, reference, None, code) for code in block["items"]], axis=-1)
    total = _series(study, reference, None, block["total"])
    assert np.array_equal(items.sum(axis=-1), total)
    assert items.min() >= 0 and items.max() <= 3 and np.array_equal(items, np.rint(items))
    delta, spread = total[:, -1] - total[:, 0], total.max(axis=1) - total.min(axis=1)
    improving, worsening = delta <= -5, delta >= 5
    fluctuating = ~improving & ~worsening & (spread >= 5)
    stable = ~improving & ~worsening & ~fluctuating
    assert all(kind.sum() >= 20 for kind in (improving, worsening, fluctuating, stable))


def test_the_lower_mae_method_has_the_worse_direction_accuracy():
    call_command("generate_lc8_synthetic", "--trajectories", "400", "--methods", "2", "--seeds", "3",
                 "--seed", "2")
    study = Study.objects.get(slug="lc8-synthetic-2")
    total = study.schema.definition["lc8"]["total"]
    reference = _series(study, StudyMember.objects.get(study=study, role="reference"), None, total)
    lagging, tracker = StudyMember.objects.filter(study=study, role="method").order_by("user__username")
    scores = {name: [_mae_and_direction(_series(study, m, seed, total), reference) for seed in range(3)]
              for name, m in (("lagging", lagging), ("tracker", tracker))}
    for seed in range(3):
        (mae_l, dir_l), (mae_t, dir_t) = scores["lagging"][seed], scores["tracker"][seed]
        assert mae_l < mae_t and dir_l < dir_t - 0.2
    predictions = np.array(list(SessionLabel.objects.filter(coder=lagging).values_list("value", flat=True)))
    assert not np.array_equal(predictions, np.rint(predictions)), "predictions are floats, not rounded"
    tracker_values = np.array(list(SessionLabel.objects.filter(coder=tracker).values_list("value", flat=True)))
    assert tracker_values.max() > 24 or predictions.min() < 0, "predictions are not clipped to the scale"


def test_an_existing_slug_or_a_bad_size_is_refused_and_writes_nothing():
    call_command("generate_lc8_synthetic", "--trajectories", "3", "--slug", "taken", "--methods", "0")
    before = (Conversation.objects.count(), SessionLabel.objects.count(), Study.objects.count())
    with pytest.raises(CommandError, match="exists already"):
        call_command("generate_lc8_synthetic", "--trajectories", "3", "--slug", "taken")
    with pytest.raises(CommandError, match="--sessions"):
        call_command("generate_lc8_synthetic", "--trajectories", "3", "--sessions", "1", "--slug", "other")
    with pytest.raises(CommandError, match="--sessions 6; a trajectory of lc8-v1 has at most 5"):
        call_command("generate_lc8_synthetic", "--trajectories", "3", "--sessions", "6", "--slug", "other")
    get_user_model().objects.create_user(username="clash-reference", password="a-person-1")  # noqa: S106
    with pytest.raises(CommandError, match="person's account"):
        call_command("generate_lc8_synthetic", "--trajectories", "3", "--slug", "clash")
    assert (Conversation.objects.count(), SessionLabel.objects.count(), Study.objects.count()) == before


@pytest.mark.parametrize(("slug", "message"), form_fuzz.REFUSED_SLUGS)
def test_generate_lc8_synthetic_refuses_a_slug_no_study_may_have_without_writing(slug, message):
    assert form_fuzz.command_refusal("generate_lc8_synthetic", "--trajectories", "2", "--slug", slug) == \
        f"--slug: {message}"
