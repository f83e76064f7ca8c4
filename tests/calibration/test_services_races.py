"""Two admins acting at once on the calibration protocol (calibration/services.py), on real PostgreSQL connections
(tests/races.py): the second sees what the first did and is refused in words, never a duplicate or a silent
overwrite. Gold recorded meanwhile is kept by "accept unanimous" (a stale read, simulated)."""

from __future__ import annotations

from unittest import mock

import pytest
from django.core.exceptions import ValidationError

from annotation import services as annotation_services
from annotation.models import Judgment, Round, RoundItem
from annotation.services import ChangedMeanwhile
from calibration import selectors, services
from tests import scenarios
from tests.races import meet_at, together

threads = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def _drafts(protocol: scenarios.Protocol, *numbers: int) -> list[Round]:
    return [annotation_services.round_ensure(study=protocol.study, kind=Round.Kind.CALIBRATION, number=n,
                                             by=protocol.admin) for n in numbers]


@threads
def test_two_calibration_rounds_opened_at_once_open_one_and_refuse_the_other():
    protocol = scenarios.protocol_study()
    first, second = _drafts(protocol, 1, 2)
    services.calibration_set_sample(round=first, by=protocol.admin, n=2, seed=1)
    services.calibration_set_sample(round=second, by=protocol.admin, n=2, seed=2)

    def open_(pk: int):
        return lambda: services.round_open(round=Round.objects.get(pk=pk), by=protocol.admin)

    with meet_at(annotation_services, "round_open"):
        results = together(open_(first.pk), open_(second.pk))
    refused = [r for r in results if isinstance(r, ValidationError)]
    assert len(refused) == 1, results
    assert "is still open; close it first" in refused[0].messages[0]
    assert Round.objects.filter(study=protocol.study, status=Round.Status.OPEN).count() == 1


@threads
def test_two_calibration_sets_drawn_at_once_never_share_a_turn():
    protocol = scenarios.protocol_study()
    first, second = _drafts(protocol, 1, 2)
    every_turn = len(selectors.calibration_candidates(study=protocol.study))

    def sample(pk: int):
        return lambda: services.calibration_set_sample(round=Round.objects.get(pk=pk), by=protocol.admin,
                                                       n=every_turn, seed=pk)

    with meet_at(annotation_services, "round_items_set"):
        results = together(sample(first.pk), sample(second.pk))
    refused = [r for r in results if isinstance(r, ValidationError)]
    assert len(refused) == 1 and "only 0 unused turns are available" in refused[0].messages[0], results
    turns = list(RoundItem.objects.filter(round__study=protocol.study).values_list("turn_id", flat=True))
    assert len(turns) == len(set(turns)) == every_turn


@pytest.mark.django_db
def test_accepting_unanimous_items_keeps_gold_another_admin_recorded_meanwhile():
    protocol = scenarios.protocol_study()
    round_ = scenarios.calibration_round_open(protocol, 1)
    scenarios.calibration_round_code(protocol, round_)
    shown = selectors.consensus_items(round=round_)  # what the first admin's page was built from
    item = next(i for i in shown if i.unanimous and i.gold is None)
    other_value = (next(iter(item.expert_scores.values())) + 1) % (item.attribute.scale_max + 1)
    services.gold_record(round=round_, by=protocol.admin, attribute=item.attribute, turn=item.turn,
                         response=item.response, score=other_value, note="decided otherwise", expected_version=0)

    with mock.patch.object(services.selectors, "consensus_items", return_value=shown), \
            pytest.raises(ChangedMeanwhile, match="changed meanwhile; reload"):
        services.gold_accept_unanimous(round=round_, by=protocol.admin)
    gold = Judgment.objects.get(round=round_, is_gold=True, attribute=item.attribute, turn=item.turn,
                                response=item.response)
    assert (gold.score, gold.note) == (other_value, "decided otherwise")
    assert Judgment.objects.filter(round=round_, is_gold=True).count() == 1  # all or nothing


@pytest.mark.django_db
def test_no_round_opens_or_reopens_in_a_study_archived_meanwhile():
    protocol = scenarios.protocol_study()
    draft, closed = _drafts(protocol, 1, 2)
    services.calibration_set_sample(round=draft, by=protocol.admin, n=2, seed=1)
    services.calibration_set_sample(round=closed, by=protocol.admin, n=2, seed=2)
    services.round_open(round=closed, by=protocol.admin)
    services.round_close(round=closed, by=protocol.admin)
    annotation_services.study_archive(study=protocol.study, by=protocol.admin)  # another admin's page, meanwhile

    with pytest.raises(ValidationError, match="is archived: its rounds no longer change"):
        services.round_open(round=Round.objects.get(pk=draft.pk), by=protocol.admin)
    with pytest.raises(ValidationError, match="is archived: its rounds no longer change"):
        services.round_reopen(round=Round.objects.get(pk=closed.pk), by=protocol.admin, reason="one more look")
    assert sorted(Round.objects.filter(study=protocol.study).values_list("status", flat=True)) == ["closed", "draft"]


@threads
def test_a_save_that_waited_for_the_reopening_of_a_calibration_round_is_refused_on_a_compared_item():
    """A save arriving while a calibration round is being reopened waits for the round's lock; when it goes on, the
    item it saves into has been compared with gold and locked by that reopening, and the save is refused (it must
    not judge the lock by what the items were when its statement began)."""
    import threading
    import time

    from django.db import close_old_connections, connections

    from annotation.models import Assignment

    protocol = scenarios.protocol_study()
    round_ = scenarios.calibration_round_open(protocol, 1)
    assignment = Assignment.objects.filter(round=round_).select_related("coder", "turn").order_by("pk").first()
    attribute = protocol.study.schema.attributes.filter(unit="turn").order_by("pk").first()
    annotation_services.judgment_save(round=round_, by=assignment.coder, attribute=attribute, turn=assignment.turn,
                                      score=0)
    annotation_services.round_close(round=round_, by=None)
    reopening_holds = threading.Event()
    original_audit = services.audit_record

    def audit_and_linger(*args, **kwargs):
        reopening_holds.set()  # the round is open again and the items are locked, but not yet committed
        time.sleep(1.0)
        return original_audit(*args, **kwargs)

    def reopen():
        with mock.patch.object(services, "audit_record", audit_and_linger):
            return services.round_reopen(round=Round.objects.get(pk=round_.pk), by=protocol.admin, reason="late")

    def save():
        close_old_connections()
        assert reopening_holds.wait(timeout=30)
        try:
            return annotation_services.judgment_save(
                round=Round.objects.get(pk=round_.pk), by=assignment.coder, attribute=attribute,
                turn=assignment.turn, score=1, expected_version=1)
        except ValidationError as error:
            return error
        finally:
            connections.close_all()

    results = together(reopen, save)
    assert isinstance(results[0], annotation_services.RoundReopen), results
    assert isinstance(results[1], ValidationError), results
    assert "compared with gold" in str(results[1])
    assert Judgment.objects.get(round=round_, coder=assignment.coder, turn=assignment.turn,
                                attribute=attribute, is_gold=False).score == 0


@threads
def test_a_reviewer_taken_off_while_the_main_round_is_assigned_gets_no_queue_after_leaving():
    """The assignment reads the retained panel under the study's lock, and the removal takes the same lock first:
    the removal waits for the assignment and ends its queue's membership after it, or comes first and leaves them
    out; before, the removal went through between the panel's read and the queues' write, and someone no longer a
    member was given a main-round queue."""
    import threading

    from django.db import close_old_connections, connections

    from annotation.models import Assignment, StudyMember
    from audit.models import AuditEvent
    from tests.races import WAIT

    protocol = scenarios.protocol_study()
    leaving = protocol.reviewers[1]
    services.panel_retain(study=protocol.study, by=protocol.admin, reason="the race's panel",
                          usernames=[r.username for r in protocol.reviewers[:2]])
    panel_read, removed = threading.Event(), threading.Event()
    original_round_ensure = annotation_services.round_ensure

    def round_ensure_after_the_removal(**kwargs):  # called by the assignment right after it read the panel
        panel_read.set()
        removed.wait(timeout=WAIT)
        return original_round_ensure(**kwargs)

    def assign():
        with mock.patch.object(annotation_services, "round_ensure", round_ensure_after_the_removal):
            return services.main_round_assign(study=protocol.study, by=protocol.admin)

    def remove():
        close_old_connections()
        try:
            assert panel_read.wait(timeout=30)
            member = StudyMember.objects.get(study=protocol.study, user=leaving)
            return annotation_services.study_member_remove(member=member, by=protocol.admin)
        finally:
            removed.set()
            connections.close_all()

    results = together(assign, remove)
    assert isinstance(results[0], dict) and results[1] is None, results
    assert not StudyMember.objects.filter(study=protocol.study, user=leaving).exists()
    events = {e.action: e.pk for e in AuditEvent.objects.filter(action__in=("main_round.assign", "member.remove"))}
    queued = Assignment.objects.filter(round__study=protocol.study, round__kind=Round.Kind.MAIN, coder=leaving)
    # Queued only by an assignment that came before the removal.
    assert not queued.exists() or events["main_round.assign"] < events["member.remove"], events
