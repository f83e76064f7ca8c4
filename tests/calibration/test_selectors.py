"""Calibration selectors (calibration/selectors.py) through the protocol (tests/calibration/conftest.py: 3
reviewers, 2 experts; rounds 1 and 2 closed, round 3 open): blind while a round is open; after it closes, the
workshop (most disagreement first, reviewers anonymised), each reviewer's own feedback, and the panel ranking."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from annotation import services
from annotation.models import Assignment, FormerStudyMember, StudyMember
from annotation.selectors import turn_view
from calibration import selectors as calibration_selectors

pytestmark = pytest.mark.django_db

CLOSED_ROUNDS = 2  # for the protocol fixture: rounds 1 and 2 closed with their metric runs, round 3 open and coded
OPEN = 3


# --- while a round is open ---------------------------------------------------------------------------------------


def test_while_open_a_reviewer_sees_only_their_own_codings(protocol):
    reviewer = protocol.reviewers[0]
    view = turn_view(round_id=protocol.round(OPEN).pk, user=reviewer, position=1)
    judgments = [j for card in view.cards for j in card.judgments.values()]
    assert judgments and all(j.coder_id == reviewer.pk for j in judgments)


def test_feedback_waits_until_the_round_is_closed(protocol):
    with pytest.raises(ValidationError, match="once the round is closed"):
        calibration_selectors.reviewer_feedback(round=protocol.round(OPEN), user=protocol.reviewers[0])


def test_someone_without_an_assignment_sees_no_turn(protocol):
    assert turn_view(round_id=protocol.round(OPEN).pk, user=protocol.outsider, position=1) is None


# --- the workshop, once closed ---------------------------------------------------------------------------------


@pytest.mark.parametrize("number", [1, 2])
def test_workshop_lists_most_disagreement_first(protocol, number):
    items = calibration_selectors.workshop_items(round=protocol.round(number))
    disagreements = [item.disagreements for item in items]
    assert disagreements == sorted(disagreements, reverse=True) and disagreements[0] > disagreements[-1]


@pytest.mark.parametrize("number", [1, 2])
def test_workshop_anonymises_reviewers_unless_revealed(protocol, number):
    round_ = protocol.round(number)
    assert set(calibration_selectors.workshop_items(round=round_)[0].scores) == {"R1", "R2", "R3"}
    revealed = calibration_selectors.workshop_items(round=round_, reveal=True)
    assert set(revealed[0].scores) == {"rev-a", "rev-b", "rev-c"}


def test_workshop_letters_the_responses_of_a_turn_unless_model_names_are_shown(protocol):
    round_ = protocol.round(1)
    aliases = calibration_selectors.reviewer_aliases(study=protocol.study, reveal=False)

    def labels(model_names: bool) -> dict[int, dict[int, str]]:
        items = [item for item in calibration_selectors.workshop_items(round=round_) if item.response is not None]
        calibration_selectors.workshop_items_detail(round=round_, items=items, aliases=aliases,
                                                    model_names=model_names)
        by_turn: dict[int, dict[int, str]] = {}
        for item in items:
            assert by_turn.setdefault(item.turn.pk, {}).setdefault(item.response.pk, item.label) == item.label
        return by_turn

    hidden = labels(False)
    assert hidden and all(sorted(turn.values()) == [f"Response {c}" for c in "ABCDE"] for turn in hidden.values())
    assert labels(False) == hidden, "the same letters on every visit"
    assert {label for turn in labels(True).values() for label in turn.values()} <= set(protocol.study.model_slots)


def _workshop(round_, *, reveal: bool) -> list[tuple]:
    """What the workshop shows of a round: each item's scores and disagreements, spans and reviewers' notes."""
    items = calibration_selectors.workshop_items(round=round_, reveal=reveal)
    calibration_selectors.workshop_items_detail(
        round=round_, items=items, aliases=calibration_selectors.reviewer_aliases(study=round_.study, reveal=reveal))
    return [(item.turn.pk, item.response and item.response.pk, item.attribute.code, item.scores, item.disagreements,
             {who: [(s.start, s.end) for s in spans] for who, spans in item.spans.items()},
             [(note.who, note.comment) for note in item.reviewer_notes]) for item in items]


@pytest.mark.parametrize("reveal", [False, True])
def test_a_reviewer_taken_off_after_the_round_still_counts_in_its_workshop_under_their_alias(protocol, admin_user,
                                                                                             reveal):
    """The workshop discusses what the round's reviewers coded: one taken off since keeps their scores, spans and
    notes there, under the alias that named them (``FormerStudyMember.alias``). Before, only the members were read:
    the items' disagreements, their order and the "reviewer disagreeing" filter changed when someone left."""
    round_ = protocol.round(1)
    member = StudyMember.objects.get(study=protocol.study, user=protocol.reviewers[2])  # who disagrees with gold
    Assignment.objects.filter(round=round_, coder=member.user).update(comment="unsure about the anchor")
    before = _workshop(round_, reveal=reveal)
    who = member.user.username if reveal else member.alias
    assert any(who in scores for _, _, _, scores, _, _, _ in before)
    services.study_member_remove(member=member, by=admin_user)
    assert _workshop(round_, reveal=reveal) == before


def test_a_reviewer_0_2_0_took_off_is_named_in_the_workshop_by_no_other_reviewers_alias(protocol):
    """0.2.0 deleted the row of someone it took off a study, alias and all; migration 0022 gives them back their
    former membership without an alias (0.2.0 recorded none). The workshop names such a reviewer by a name no other
    reviewer has: it keyed each item's scores, spans and notes by the name, and the stand-in it gave (``R`` and the
    record's id) was a member's alias as soon as the ids met, as the installation's first record (id 1) meets R1.
    One of the two reviewers' scores overwrote the other's, and the item's disagreements were counted without it."""
    round_ = protocol.round(1)
    revealed = _workshop(round_, reveal=True)
    gone, stays = (StudyMember.objects.get(study=protocol.study, user=user) for user in protocol.reviewers[2::-2])
    gone.delete()  # as 0.2.0 took someone off
    FormerStudyMember.objects.create(pk=int(stays.alias.removeprefix("R")), study=protocol.study, user=gone.user,
                                     role="reviewer", alias="", retained=None)  # as 0022 gave it back
    aliases = calibration_selectors.reviewer_aliases(study=protocol.study, reveal=False)
    assert len(set(aliases.values())) == len(aliases) == 3, aliases
    assert aliases[stays.user_id] == stays.alias
    assert _workshop(round_, reveal=True) == revealed
    hidden = _workshop(round_, reveal=False)
    assert [(len(scores), disagreements) for _, _, _, scores, disagreements, _, _ in hidden] == [
        (len(scores), disagreements) for _, _, _, scores, disagreements, _, _ in revealed]


# --- a reviewer's feedback ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("number", [1, 2])
def test_feedback_shows_own_agreement_with_gold_after_close(protocol, number):
    round_ = protocol.round(number)
    good = calibration_selectors.reviewer_feedback(round=round_, user=protocol.reviewers[0])
    poor = calibration_selectors.reviewer_feedback(round=round_, user=protocol.reviewers[2])
    assert good.bucketed == 1.0 and not good.differences
    assert poor.bucketed < good.bucketed and poor.differences


def test_feedback_explains_each_difference_with_the_gold_anchor(protocol):
    poor = calibration_selectors.reviewer_feedback(round=protocol.round(1), user=protocol.reviewers[2])
    assert poor.differences[0]["gold_anchor"]


def test_feedback_names_each_response_as_the_reviewer_saw_it_and_links_to_the_item(protocol):
    reviewer = protocol.reviewers[2]
    round_ = protocol.round(1)
    poor = calibration_selectors.reviewer_feedback(round=round_, user=reviewer)
    on_responses = [d for d in poor.differences if d["response"] is not None]
    assert on_responses
    for difference in on_responses:
        view = turn_view(round_id=round_.pk, user=reviewer, position=difference["position"])
        assert view.turn.pk == difference["turn"].pk, "the link opens the item in the reviewer's own queue"
        seen = {card.response.pk: card.label for card in view.cards}
        assert difference["label"] == seen[difference["response"].pk]
        assert difference["label"].startswith("Response "), "a blinded study never names the model"


def test_feedback_shows_the_change_since_the_previous_round(protocol):
    first = calibration_selectors.reviewer_feedback(round=protocol.round(1), user=protocol.reviewers[0])
    second = calibration_selectors.reviewer_feedback(round=protocol.round(2), user=protocol.reviewers[0])
    assert first.previous_round is None and first.delta_pp is None
    assert second.previous_round == "calibration-1" and second.delta_pp == 0.0


# --- the panel ranking -------------------------------------------------------------------------------------------


def test_panel_ranking_orders_reviewers_by_agreement_with_gold(protocol):
    ranking = calibration_selectors.panel_ranking(study=protocol.study)
    assert ranking["round"] == "calibration-2", "the latest closed round's report"
    assert [row["reviewer"] for row in ranking["rows"]] == ["rev-a", "rev-b", "rev-c"]


def test_panel_ranking_gives_each_reviewer_their_bootstrap_top_k_shares(protocol):
    ranking = calibration_selectors.panel_ranking(study=protocol.study)
    assert all(set(row["top_k"]) == {"4", "5", "6"} for row in ranking["rows"])
