"""The LongCounsel-8 demo study (lc8/demo.py, ``load_demo --lc8``): labelled synthetic, all four
reference trajectory types, float predictions stored exactly, session assignments in the reviewer's queue, and
loading it twice changes nothing."""

from __future__ import annotations

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from annotation.models import Assignment, Judgment, Round, SessionLabel, Study, StudyMember
from audit.models import AuditEvent
from benchmark.models import Conversation, ModelResponse, Session, Turn
from lc8 import demo as lc8_demo

pytestmark = pytest.mark.django_db


def snapshot():
    return (Conversation.objects.count(), Session.objects.count(), Turn.objects.count(),
            ModelResponse.objects.count(), Study.objects.count(), StudyMember.objects.count(),
            Round.objects.count(), Assignment.objects.count(), Judgment.objects.count(),
            SessionLabel.objects.count(), get_user_model().objects.count(), AuditEvent.objects.count(),
            sorted(SessionLabel.objects.values_list("coder_id", "seed", "session_id", "attribute_id", "value")))


def _reference_totals(study: Study) -> np.ndarray:
    total = study.schema.definition["lc8"]["total"]
    rows = (SessionLabel.objects.filter(study=study, coder__role="reference", attribute__code=total)
            .order_by("session__conversation__external_id", "session__index").values_list("value", flat=True))
    return np.array(list(rows)).reshape(-1, 5)


def test_load_demo_lc8_twice_changes_nothing(capsys):
    call_command("load_demo", "--lc8")
    assert "LC8 demo study 'lc8-demo' (/studies/lc8-demo/) created: eight SYNTHETIC" in capsys.readouterr().out
    first = snapshot()
    call_command("load_demo", "--lc8")
    assert snapshot() == first
    said = capsys.readouterr().out
    assert "LC8 demo study 'lc8-demo' (/studies/lc8-demo/) already present, left as it is: " in said
    assert "created" not in said


def test_the_lc8_demo_is_labelled_synthetic_and_shaped_as_asked():
    call_command("load_demo", "--lc8", "--quiet")
    study = Study.objects.get(slug="lc8-demo")
    assert study.is_synthetic and "synthetic" in study.name.lower() and study.schema.slug == "lc8-v1"
    assert study.description.startswith("SYNTHETIC")
    trajectories = Conversation.objects.filter(study=study)
    assert 6 <= trajectories.count() <= 8
    assert set(trajectories.values_list("kind", flat=True)) == {"longitudinal"}
    assert all(c.is_synthetic and "synthetic" in c.dataset.name.lower() and "[SYNTHETIC]" in c.title
               for c in trajectories)
    for conversation in trajectories:
        sessions = list(conversation.sessions.order_by("index"))
        assert [s.index for s in sessions] == [1, 2, 3, 4, 5] and {s.kind for s in sessions} == {"counseling"}
        for session in sessions:
            turns = list(session.turns.order_by("index"))
            assert 6 <= len(turns) <= 10
            assert "[SYNTHETIC demo]" in turns[0].client_text
            assert all(t.responses.get().model_slot == "Counselor" for t in turns)


def test_the_reference_covers_all_four_trajectory_types_and_the_text_follows_it():
    call_command("load_demo", "--lc8", "--quiet")
    study = Study.objects.get(slug="lc8-demo")
    block = study.schema.definition["lc8"]
    reference = StudyMember.objects.get(study=study, role="reference")
    assert not reference.user.is_active and not reference.user.has_usable_password()
    items = SessionLabel.objects.filter(coder=reference, attribute__code__in=block["items"])
    assert items.count() == Session.objects.filter(conversation__study=study).count() * len(block["items"])
    assert set(items.values_list("value", flat=True)) <= {0.0, 1.0, 2.0, 3.0}
    totals = _reference_totals(study)
    delta, spread = totals[:, -1] - totals[:, 0], totals.max(axis=1) - totals.min(axis=1)
    types = ["improving" if d <= -5 else "worsening" if d >= 5 else "fluctuating" if r >= 5 else "stable"
             for d, r in zip(delta, spread, strict=True)]
    assert set(types) == {"improving", "worsening", "fluctuating", "stable"}
    # A session at the worst state says the client's "hopeless nearly every day" line; one at a low state does not.
    sessions = (Session.objects.filter(conversation__study=study)
                .order_by("conversation__external_id", "index"))
    feeling_down = block["items"][1]
    scores = dict(SessionLabel.objects.filter(coder=reference, attribute__code=feeling_down)
                  .values_list("session_id", "value"))
    for session in sessions:
        text = " ".join(session.turns.values_list("client_text", flat=True))
        assert ("hopeless nearly every day" in text) == (scores[session.pk] == 3)


def test_the_methods_predictions_are_floats_stored_exactly():
    call_command("load_demo", "--lc8", "--quiet")
    study = Study.objects.get(slug="lc8-demo")
    methods = StudyMember.objects.filter(study=study, role="method")
    assert methods.count() == 2
    expected = lc8_demo.lc8_demo_predictions()
    stored_all = []
    for (name, seed), values in expected.items():
        rows = (SessionLabel.objects.filter(coder__user__username=name, seed=seed)
                .order_by("session__conversation__external_id", "session__index").values_list("value", flat=True))
        stored = np.array(list(rows)).reshape(values.shape)
        assert np.array_equal(stored, values)  # bit for bit: not rounded, not clipped
        stored_all.append(stored)
    everything = np.concatenate([s.ravel() for s in stored_all])
    assert not np.array_equal(everything, np.rint(everything))
    assert {seed for _, seed in expected} == {0, 1, 2}


def test_the_reviewer_and_expert_queues_hold_one_assignment_per_session():
    call_command("load_demo", "--lc8", "--quiet")
    study = Study.objects.get(slug="lc8-demo")
    main = study.rounds.get(kind="main")
    assert main.status == "open" and study.status == "open"
    sessions = Session.objects.filter(conversation__study=study)
    for username in ("demo-reviewer", "demo-expert"):
        queue = list(Assignment.objects.filter(round=main, coder__username=username).order_by("position")
                     .select_related("turn"))
        assert len(queue) == sessions.count()
        assert {a.turn.session_id for a in queue} == set(sessions.values_list("pk", flat=True))
        firsts = {session.pk: min(session.turns.values_list("index", flat=True)) for session in sessions}
        assert all(a.turn.index == firsts.get(a.turn.session_id or 0) for a in queue), \
            "a session's assignment is keyed by its first turn"
