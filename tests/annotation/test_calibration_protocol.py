"""The whole calibration protocol end to end: 3 reviewers and 2 experts through two calibration rounds
(consensus, closing with an automatic metrics run in a real worker, workshop, feedback), panel selection and
main-round assignment — with every state rule tried."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from access.services import user_ensure
from annotation import selectors, services
from annotation.models import Assignment, Judgment, Round, StudyMember
from annotation.selectors import turn_view
from audit.models import AuditEvent
from benchmark import services as benchmark_services
from calibration import selectors as calibration_selectors
from calibration import services as calibration_services
from metrics.models import MetricRun
from tests.celery_worker import celery_worker, wait_for

MODELS = ("GPT", "Claude", "Gemini", "Llama", "Qwen")


def records():
    rows = []
    for n in range(24):
        dataset = "CounselChat" if n % 2 else "PAIR"
        rows.append({"dataset": dataset, "conversation_id": f"c{n}", "kind": "single",
                     "topic": ["Anxiety", "Sleep", "Grief and Loss"][n % 3], "complexity": "low",
                     "turns": [{"index": 1, "client": f"client text {n}",
                                "responses": [{"model": m, "text": f"{m} answer number {n}, with words."}
                                              for m in MODELS]}]})
    for n in range(4):
        rows.append({"dataset": "HOPE", "conversation_id": f"m{n}", "kind": "multi", "topic": "Family Conflicts",
                     "complexity": None, "turns": [{"index": i, "client": f"multi {n} turn {i}",
                                                    "responses": [{"model": m, "text": f"{m} reply {n}.{i}"}
                                                                  for m in MODELS]} for i in (1, 2, 3)]})
    return rows


def truth(attribute, unit_key) -> int:
    return (hash((attribute.code, unit_key)) % (attribute.scale_max + 1))


def code_round(round_, coder, deviation) -> None:
    """Code every item of the round for one coder: ``deviation(attribute, value)`` returns their score."""
    judgments = []
    for item in round_.items.select_related("turn"):
        turn = item.turn
        for attribute in round_.study.schema.attributes.all():
            units = [None] if attribute.unit == "turn" else list(turn.responses.all())
            for response in units:
                value = truth(attribute, (turn.pk, response.pk if response else 0))
                judgments.append(Judgment(round=round_, coder=coder, attribute=attribute, turn=turn,
                                          response=response, conversation_id=turn.conversation_id,
                                          score=deviation(attribute, value)))
    Judgment.objects.bulk_create(judgments)


def flip(attribute, value):
    return attribute.scale_max - value if attribute.scale_max != 2 * value else (value + 1) % 3


@pytest.mark.worker
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_full_calibration_protocol(admin_user, expert):
    from tests.factories import UserFactory

    benchmark_services.conversations_import(rows=enumerate(records(), start=1))
    study = services.study_create(slug="protocol", name="Protocol", schema=services.Schema.objects.get(slug="cab-v1"),
                                  model_slots=list(MODELS), by=admin_user)
    reviewers = [user_ensure(username=f"rev-{c}", role="reviewer") for c in "abc"]
    second_expert = user_ensure(username="expert-2", role="expert")
    for r in reviewers:
        services.study_member_add(study=study, user=r, role=StudyMember.Role.REVIEWER, by=admin_user)
    for e in (expert, second_expert):
        services.study_member_add(study=study, user=e, role=StudyMember.Role.EXPERT, by=admin_user)
    outsider = UserFactory(username="nobody")

    with celery_worker():
        for number in (1, 2):
            round_ = services.round_ensure(study=study, kind=Round.Kind.CALIBRATION, number=number, by=admin_user)
            with pytest.raises(PermissionDenied, match="Only study admins"):
                calibration_services.calibration_set_sample(round=round_, by=reviewers[0], n=3, seed=number)
            with pytest.raises(ValidationError, match="has no calibration set yet"):
                calibration_services.calibration_round_open(round=round_, by=admin_user)
            turns = calibration_services.calibration_set_sample(round=round_, by=admin_user, n=3, seed=number)
            assert len({t.conversation.dataset.name for t in turns}) >= 2, "stratified across datasets"
            calibration_services.calibration_round_open(round=round_, by=admin_user)
            assert Assignment.objects.filter(round=round_).count() == 3 * 5
            with pytest.raises(ValidationError, match="its items are fixed"):
                calibration_services.calibration_set_sample(round=round_, by=admin_user, n=3, seed=9)

            # Experts: the first codes the truth, the second differs on the flags.
            code_round(round_, expert, lambda a, v: v)
            code_round(round_, second_expert, lambda a, v: flip(a, v) if a.group == "flag" else v)
            # Reviewers: a matches the truth, b misses flags, c misses everything on the response level.
            code_round(round_, reviewers[0], lambda a, v: v)
            code_round(round_, reviewers[1], lambda a, v: flip(a, v) if a.group == "flag" else v)
            code_round(round_, reviewers[2], lambda a, v: flip(a, v) if a.group != "user" else v)

            # Blind while open: a reviewer sees only their own codings, no feedback, no workshop, no gold.
            view = turn_view(round_id=round_.pk, user=reviewers[0], position=1)
            assert all(j.coder_id == reviewers[0].pk for c in view.cards for j in c.judgments.values())
            with pytest.raises(ValidationError, match="once the round is closed"):
                calibration_selectors.reviewer_feedback(round=round_, user=reviewers[0])
            assert turn_view(round_id=round_.pk, user=outsider, position=1) is None

            # Gold panel: unanimous items accepted at once, the rest decided one by one.
            accepted = calibration_services.gold_accept_unanimous(round=round_, by=admin_user)
            open_items = [i for i in calibration_selectors.consensus_items(round=round_) if i.gold is None]
            assert accepted > 0 and open_items and all(i.attribute.group == "flag" for i in open_items)
            for item in open_items:
                calibration_services.gold_record(round=round_, by=admin_user, attribute=item.attribute, turn=item.turn,
                                        response=item.response, score=item.expert_scores[expert.username],
                                        agreed_by=[expert, second_expert], note="the first reading holds")
            with pytest.raises(ValidationError, match="outside the scale"):
                item = open_items[0]
                calibration_services.gold_record(round=round_, by=admin_user, attribute=item.attribute, turn=item.turn,
                                        response=item.response, score=7)
            assert not [i for i in calibration_selectors.consensus_items(round=round_) if i.gold is None]

            calibration_services.round_close(round=round_, by=admin_user)
            run = MetricRun.objects.filter(study=study, trigger="round-closed").order_by("-pk").first()
            wait_for(lambda run=run: MetricRun.objects.get(pk=run.pk).status in {"succeeded", "failed"},
                     timeout=180)
            run.refresh_from_db()
            assert run.status == "succeeded", run.error

            # Closed: no edits; the workshop opens; reviewers get their feedback.
            round_.refresh_from_db()
            with pytest.raises(ValidationError, match="can no longer change"):
                services.judgment_save(round=round_, by=reviewers[0], attribute=open_items[0].attribute,
                                       response=open_items[0].response, score=0)
            items = calibration_selectors.workshop_items(round=round_)
            assert items[0].disagreements >= items[-1].disagreements
            assert set(items[0].scores) == {"R1", "R2", "R3"}, "reviewers are anonymised"
            revealed = calibration_selectors.workshop_items(round=round_, reveal=True)
            assert set(revealed[0].scores) == {r.username for r in reviewers}
            calibration_services.workshop_note_save(round=round_, by=admin_user, attribute=items[0].attribute,
                                           turn=items[0].turn, response=items[0].response,
                                           text=f"Round {number}: anchor 1 means hedged inference.")
            memo = calibration_selectors.calibration_memo_markdown(round=round_)
            assert f"Round {number}: anchor 1 means hedged inference." in memo and memo.startswith("# Calibration")
            good = calibration_selectors.reviewer_feedback(round=round_, user=reviewers[0])
            poor = calibration_selectors.reviewer_feedback(round=round_, user=reviewers[2])
            assert good.bucketed == 1.0 and not good.differences
            assert poor.bucketed < good.bucketed and poor.differences
            assert poor.differences[0]["gold_anchor"], "the anchors explain the gold value"
            if number == 2:
                assert good.previous_round == "calibration-1" and good.delta_pp == 0.0

    # Reopening is explicit and recorded.
    round_2 = Round.objects.get(study=study, kind="calibration", number=2)
    with pytest.raises(ValidationError, match="say why"):
        calibration_services.round_reopen(round=round_2, by=admin_user, reason=" ")
    calibration_services.round_reopen(round=round_2, by=admin_user, reason="a reviewer's codings were lost in transit")
    assert AuditEvent.objects.filter(action="round.reopen", data__reason__startswith="a reviewer").exists()
    Round.objects.filter(pk=round_2.pk).update(status="closed")

    # Panel selection from the round-2 report.
    ranking = calibration_selectors.panel_ranking(study=study)
    assert [row["reviewer"] for row in ranking["rows"]] == ["rev-a", "rev-b", "rev-c"]
    assert set(ranking["rows"][0]["top_k"]) == {"4", "5", "6"}
    calibration_services.panel_retain(study=study, by=admin_user, usernames=["rev-a", "rev-b"], k=2)
    with pytest.raises(ValidationError, match="give the reason"):
        calibration_services.panel_retain(study=study, by=admin_user, usernames=["rev-a", "rev-c"], k=2)
    calibration_services.panel_retain(study=study, by=admin_user, usernames=["rev-a", "rev-b"], k=2)

    # Main round: retained reviewers only, topic order, overlap, hidden check items.
    summary = calibration_services.main_round_assign(study=study, by=admin_user, overlap=0.5, check_items=2, seed=3)
    main = Round.objects.get(study=study, kind="main")
    coders = set(Assignment.objects.filter(round=main).values_list("coder__username", flat=True))
    assert coders == {"rev-a", "rev-b"}
    assert summary["double_coded_conversations"] > 0 and summary["check_items"] == 4
    calibration_turns = set(Round.objects.get(study=study, number=1, kind="calibration").items
                            .values_list("turn_id", flat=True))
    regular = Assignment.objects.filter(round=main, is_check_item=False)
    assert not regular.filter(turn_id__in=calibration_turns).exists(), "calibration turns come back only as checks"
    topics = [a.turn.conversation.topic for a in regular.filter(coder__username="rev-a").order_by("position")]
    assert topics == sorted(topics), "topic order"
    with pytest.raises(ValidationError, match="already has assignments"):
        calibration_services.main_round_assign(study=study, by=admin_user)


@pytest.mark.django_db
def test_check_item_agreement_below_threshold_alerts_the_admin(admin_user, reviewer):
    from tests.factories import ModelResponseFactory, RoundFactory, StudyFactory, attribute

    study = StudyFactory(status="open", check_min_items=2, check_threshold=0.75)
    cal = RoundFactory(study=study, kind="calibration", number=1, status="closed")
    main = RoundFactory(study=study, kind="main", number=1, status="open")
    response = ModelResponseFactory()
    for code, gold, mine in (("AUR", 2, 0), ("TD", 1, 0), ("FIX", 1, 1)):
        Judgment.objects.create(round=cal, coder=admin_user, is_gold=True, attribute=attribute(code),
                                turn=response.turn, response=response,
                                conversation_id=response.turn.conversation_id, score=gold)
        services.judgment_save(round=main, by=reviewer, attribute=attribute(code), response=response, score=mine)
    Assignment.objects.create(round=main, coder=reviewer, turn=response.turn, position=1,
                                           is_check_item=True)
    alert = services.check_alert_update(study=study, user=reviewer)
    assert alert is not None and alert.n_items == 3 and abs(alert.agreement - 1 / 3) < 1e-12
    assert services.check_alert_update(study=study, user=reviewer) is None, "one open alert at a time"
    services.alert_resolve(alert=alert, by=admin_user)
    services.judgment_save(round=main, by=reviewer, attribute=attribute("TD"), response=response, score=1)
    second = services.check_alert_update(study=study, user=reviewer)
    assert second is not None and abs(second.agreement - 2 / 3) < 1e-12, "2 of 3 is still below 0.75"
    services.alert_resolve(alert=second, by=admin_user)
    services.judgment_save(round=main, by=reviewer, attribute=attribute("AUR"), response=response, score=2)
    assert selectors.check_agreement(study=study, user=reviewer) == (1.0, 3)
    assert services.check_alert_update(study=study, user=reviewer) is None, "at or above the threshold: no alert"
