"""Synthetic studies (annotation/synthetic.py, ``generate_synthetic``): exactly the sizes asked for, agreement
around the requested level, impossible sizes refused before anything is written."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Judgment, Round, Span, Study, StudyMember
from benchmark.models import Conversation, ModelResponse, Turn

pytestmark = pytest.mark.django_db


def test_generate_synthetic_builds_exactly_what_was_asked(capsys):
    call_command("generate_synthetic", "--conversations", "30", "--responses", "400", "--reviewers", "4",
                 "--seed", "3", "--calibration-turns", "3", "--panel-size", "3")
    study = Study.objects.get(slug="synthetic-3")
    assert study.is_synthetic and study.name.startswith("[SYNTHETIC]")
    conversations = Conversation.objects.filter(external_id__startswith="synthetic-3-")
    assert conversations.count() == 30 and all(c.is_synthetic for c in conversations)
    assert ModelResponse.objects.filter(turn__conversation__in=conversations).count() == 400
    assert conversations.filter(kind="multi").count() == 6
    names = sorted(r.name for r in study.rounds.all())
    assert names == ["calibration-1", "calibration-2", "main"]
    calibration = study.rounds.get(number=1, kind="calibration")
    # 3 turns × (5 user-level + 5 responses × 15) items, coded by 4 reviewers + 2 experts, plus gold.
    assert Judgment.objects.filter(round=calibration).count() == 3 * 80 * 7
    assert Judgment.objects.filter(round=calibration, is_gold=True).count() == 3 * 80
    main = study.rounds.get(kind="main")
    main_turns = Turn.objects.filter(conversation__in=conversations, responses__isnull=False).distinct().count() - 6
    assert Judgment.objects.filter(round=main, attribute__unit="turn").count() == main_turns * 5
    assert StudyMember.objects.filter(study=study, retained=True).count() == 3
    assert Span.objects.filter(judgment__round__study=study).exists()
    assert "[SYNTHETIC]" in capsys.readouterr().out


def test_synthetic_agreement_follows_the_requested_level():
    call_command("generate_synthetic", "--conversations", "40", "--reviewers", "3", "--seed", "1",
                 "--agreement", "1.0", "--calibration-turns", "5", "--slug", "perfect")
    calibration = Round.objects.get(study__slug="perfect", kind="calibration", number=1)
    pairs = Judgment.objects.filter(round=calibration, is_gold=False).values_list(
        "attribute_id", "turn_id", "response_id", "score")
    gold_by_unit = {(a, t, r): s for a, t, r, s in Judgment.objects.filter(round=calibration, is_gold=True)
                    .values_list("attribute_id", "turn_id", "response_id", "score")}
    assert gold_by_unit
    matches = [gold_by_unit[(a, t, r)] == s for a, t, r, s in pairs]
    # Accuracy is drawn around the requested level and capped at 0.99.
    assert sum(matches) / len(matches) > 0.9


def test_generate_synthetic_refuses_impossible_sizes_without_writing():
    with pytest.raises(CommandError, match="cannot be spread"):
        call_command("generate_synthetic", "--conversations", "10", "--responses", "20", "--seed", "9")
    with pytest.raises(CommandError, match="out of range: --agreement"):
        call_command("generate_synthetic", "--conversations", "10", "--agreement", "1.5")
    assert not Study.objects.filter(is_synthetic=True).exists()
    assert not Conversation.objects.exists()
