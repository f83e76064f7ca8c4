"""Synthetic studies (annotation/synthetic.py, ``generate_synthetic``): exactly the sizes asked for, agreement
around the requested level, impossible sizes refused before anything is written."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Judgment, Round, Span, Study, StudyMember
from benchmark.models import Conversation, ModelResponse, Turn
from tests import form_fuzz

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


def test_synthetic_history_starts_with_each_judgments_value():
    """The bulk path writes each judgment's first revision itself: it must be what ``judgment_value`` says."""
    from annotation.models import JudgmentRevision
    from annotation.services import judgment_value

    call_command("generate_synthetic", "--conversations", "12", "--reviewers", "3", "--seed", "6",
                 "--calibration-turns", "2", "--slug", "hist", "--span-rate", "0.9")
    judgments = Judgment.objects.filter(round__study__slug="hist").prefetch_related("spans__subcategory")
    revisions = {r.judgment_id: r for r in JudgmentRevision.objects.filter(judgment__round__study__slug="hist")}
    assert len(revisions) == judgments.count() > 1000
    with_spans = 0
    for judgment in judgments:
        spans = [(s.start, s.end, s.subcategory.slug) for s in judgment.spans.all()]
        with_spans += bool(spans)
        revision = revisions[judgment.pk]
        assert (revision.version, revision.changed_by_id, revision.source, revision.before) == (
            1, None, JudgmentRevision.Source.IMPORT, None)
        assert revision.after == judgment_value(judgment, spans=spans)
    assert with_spans > 100


def _small_study_codings(slug: str):
    """A generated study and fresh codings for its main round (one reviewer, one turn), not yet saved."""
    import numpy as np

    from annotation.synthetic import Codings, TurnUnits, codings_generate

    call_command("generate_synthetic", "--conversations", "6", "--reviewers", "2", "--seed", "2",
                 "--calibration-turns", "1", "--slug", slug)
    study = Study.objects.get(slug=slug)
    main = study.rounds.get(kind="main")
    turn = Turn.objects.filter(conversation__external_id__startswith=f"{slug}-", responses__isnull=False).first()
    coder = StudyMember.objects.filter(study=study, role="expert").first().user_id
    codings = Codings()
    codings_generate(codings, round=main, turns=[TurnUnits(turn.pk, turn.conversation_id,
                                                           [(r.pk, r.text) for r in turn.responses.all()])],
                     attributes=list(study.schema.attributes.prefetch_related("subcategories")),
                     coders_of=lambda _turn: [coder], accuracy={coder: 0.9}, gold_coder=None, span_rate=1.0,
                     rng=np.random.default_rng(1))
    return study, codings


@pytest.mark.parametrize(("break_it", "message"), [
    (lambda rows, spans: rows.__setitem__(0, (*rows[0][:7], 99, rows[0][8])), "score off the scale"),
    (lambda rows, spans: rows.__setitem__(0, (*rows[0][:4], 10**9, *rows[0][5:])), "conversation refers to a missing"),
    (lambda rows, spans: spans.__setitem__(0, (*spans[0][:3], 10**6)), "outside the text"),
])
def test_bulk_written_codings_are_checked_and_a_bad_one_writes_nothing(break_it, message):
    """Bulk rows skip the per-row triggers (as a superuser) but get the same rules checked set-based: a broken row
    fails the whole save, naming the rule, and nothing of it is left."""
    from django.db import IntegrityError, transaction

    from annotation.models import JudgmentRevision

    study, codings = _small_study_codings("bulkbad")
    assert codings.spans
    before = (Judgment.objects.count(), Span.objects.count(), JudgmentRevision.objects.count())
    break_it(codings.rows, codings.spans)
    with pytest.raises(IntegrityError, match=message), transaction.atomic():
        codings.save()
    assert (Judgment.objects.count(), Span.objects.count(), JudgmentRevision.objects.count()) == before


def test_bulk_written_codings_that_are_right_are_kept():
    study, codings = _small_study_codings("bulkgood")
    main = study.rounds.get(kind="main")
    before = Judgment.objects.filter(round=main).count()
    codings.save()
    assert Judgment.objects.filter(round=main).count() == before + len(codings)


def test_the_same_seed_gives_the_same_study():
    def codings(slug: str) -> list[tuple]:
        call_command("generate_synthetic", "--conversations", "10", "--reviewers", "3", "--seed", "4",
                     "--calibration-turns", "2", "--coders-per-turn", "2", "--slug", slug)
        return sorted(
            (j.round.name, j.coder.username.removeprefix(slug), j.is_gold, j.attribute.code,
             j.conversation.external_id.removeprefix(slug), j.turn.index, j.response.model_slot if j.response else "",
             j.score, j.instance_count, sorted((s.start, s.end, s.subcategory.slug) for s in j.spans.all()))
            for j in Judgment.objects.filter(round__study__slug=slug)
            .select_related("round", "coder", "attribute", "conversation", "turn", "response")
            .prefetch_related("spans__subcategory"))

    first = codings("one")
    assert first == codings("two")
    assert sum(bool(row[-1]) for row in first) > 50


def test_the_bulk_checks_cover_every_trigger_an_insert_would_fire():
    # annotation.bulk skips the per-row triggers of the tables the generator fills and checks their rules itself
    # (the foreign keys from the models, the guards in bulk._GUARDS): a new insert trigger on one of these tables
    # must be added there too, or the generator would skip it unseen.
    from django.db import connection

    from annotation import bulk
    from annotation.models import JudgmentRevision

    tables = [m._meta.db_table for m in (Judgment, Span, JudgmentRevision)]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
            "WHERE NOT t.tgisinternal AND c.relname = ANY(%s) AND (t.tgtype::int & 4) <> 0",  # 4: fires on INSERT
            [tables],
        )
        insert_triggers = set(cursor.fetchall())
    assert insert_triggers == {("annotation_judgment", "cab_judgment_guard"), ("annotation_span", "cab_span_guard")}
    assert set(bulk._GUARDS) == {Judgment, Span}


@pytest.mark.parametrize(("slug", "message"), form_fuzz.REFUSED_SLUGS)
def test_generate_synthetic_refuses_a_slug_no_study_may_have_without_writing(slug, message):
    assert form_fuzz.command_refusal("generate_synthetic", "--conversations", "4", "--slug", slug) == \
        f"--slug: {message}"
