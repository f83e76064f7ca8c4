"""``manage.py requeue_short_turns`` (README, "Upgrading"): the completed turns of open rounds that are short of what
completing them wants, by the check *Complete turn* makes (``annotation.services._turn_check``), as 0.2.0 left them
(its saves could clear a score of a completed turn and keep it completed). A dry run, the default, lists them and
changes nothing; ``--fix`` takes them out of the completed ones in one transaction (the queue counters with them),
with an audit event per round. Items compared with gold in feedback, items of coders taken off their study and
closed rounds' items stay as they are. Before, such a turn stayed completed until its coder happened to press
*Complete turn* on it again, and the score it lacks was coded by nobody."""

from __future__ import annotations

import io
from unittest import mock

import pytest
from django.core.management import call_command
from django.utils import timezone

from annotation import services
from annotation.models import Assignment, Judgment, QueueProgress, Round, StudyMember
from audit.models import AuditEvent
from benchmark.demo import demo_records
from benchmark.models import Turn
from tests.annotation.test_response_added import code_and_complete
from tests.factories import RoundFactory

pytestmark = pytest.mark.django_db

ACTION = "round.turns_short_requeue"


@pytest.fixture
def short(ingester, study, reviewer, other_reviewer, admin_user) -> Round:
    """cab-demo's conversations and responses; its main round open with two turns for both reviewers, each coded
    and completed; then, as 0.2.0's autosave did, each reviewer's score of a response-level attribute on their
    second turn cleared, the turn kept completed. Returns the round."""
    assert ingester.post("/api/v1/studies/cab-demo/conversations/", demo_records(), format="json").status_code == 200
    round_ = RoundFactory(study=study, kind="main", status="open")
    turns = list(Turn.objects.order_by("pk")[:2])
    for coder in (reviewer, other_reviewer):
        services.assignments_ensure(round=round_, coder=coder, turns=turns, by=admin_user)
        assert code_and_complete(round_, coder, 1).completed and code_and_complete(round_, coder, 2).completed
        judgment = Judgment.objects.filter(round=round_, coder=coder, turn=turns[1], response__isnull=False,
                                           is_gold=False).order_by("pk").first()
        services.judgment_save(round=round_, by=coder, attribute=judgment.attribute, turn=turns[1],
                               response=judgment.response, score=None)  # 0.2.0's save: no check of the turn
    assert not Assignment.objects.filter(completed_at__isnull=True).exists()
    return round_


def _run(*args: str) -> str:
    out = io.StringIO()
    call_command("requeue_short_turns", *args, stdout=out)
    return out.getvalue()


def _state() -> tuple:
    """What a run could change: every completion, the queue counters, the audit trail."""
    return (sorted(Assignment.objects.values_list("pk", "completed_at")),
            sorted(QueueProgress.objects.values_list("round_id", "coder_id", "total", "done")),
            AuditEvent.objects.count())


def test_the_dry_run_lists_the_short_turns_and_changes_nothing(short):
    before = _state()
    out = _run()
    assert out.splitlines() == [
        "study\tround\tcoder\tposition\tcodes missing",
        "cab-demo\tmain\tother-reviewer\t2\t1",
        "cab-demo\tmain\treviewer\t2\t1",
        "4 completed turn(s) of open rounds checked.",
        "2 completed turn(s) are short of what completing them wants. Dry run: nothing changed; run with --fix to "
        "send them back to their coders' queues.",
    ]
    assert _state() == before


def test_fix_sends_them_back_in_one_transaction_recorded(short, reviewer, other_reviewer):
    out = _run("--fix")
    assert out.splitlines()[-1] == ("2 completed turn(s) went back to their coders' queues (audit event "
                                    "round.turns_short_requeue).")
    assert set(Assignment.objects.filter(completed_at__isnull=True).values_list("coder", "position")) == {
        (reviewer.pk, 2), (other_reviewer.pk, 2)}
    assert set(QueueProgress.objects.filter(round=short).values_list("total", "done")) == {(2, 1)}
    event = AuditEvent.objects.get(action=ACTION)
    assert (event.actor, event.study_slug, event.target) == (None, "cab-demo", "round:main")
    assert event.data == {"n": 2, "items": [["other-reviewer", 2], ["reviewer", 2]]}
    assignment = Assignment.objects.get(round=short, coder=reviewer, position=2)
    assert len(services.assignment_complete(assignment=assignment, by=reviewer, confirm=True).missing) == 1
    assert _run().splitlines()[-1] == ("0 completed turn(s) are short of what completing them wants. Dry run: "
                                       "nothing changed.")
    assert code_and_complete(short, reviewer, 2).completed  # the coder codes it and completes it again


def test_locked_items_former_members_and_closed_rounds_are_left_as_they_are(short, reviewer, other_reviewer,
                                                                           admin_user):
    Assignment.objects.filter(coder=reviewer).update(feedback_locked=True)  # its judgments no longer change
    services.study_member_remove(member=StudyMember.objects.get(user=other_reviewer), by=admin_user)
    before = _state()
    out = _run("--fix")
    assert out.splitlines() == [
        "0 completed turn(s) of open rounds checked; not checked, left as they are: 2 compared with gold in feedback "
        "(their codes no longer change), 2 of coders taken off their study.",
        "0 completed turn(s) went back to their coders' queues (audit event round.turns_short_requeue).",
    ]
    assert _state() == before
    Assignment.objects.update(feedback_locked=False)
    services.study_member_add(study=short.study, user=other_reviewer, role="reviewer", by=admin_user)
    Round.objects.filter(pk=short.pk).update(status="closed", closed_at=timezone.now())
    before = _state()
    assert _run("--fix").splitlines()[0] == (
        "0 completed turn(s) of open rounds checked; not checked, left as they are: 4 of closed rounds (--closed "
        "checks them too; a closed round's turns go back to their queues only once it is reopened).")
    assert _state() == before


def test_closed_rounds_are_counted_and_checked_on_request_never_sent_back(short, reviewer, admin_user):
    """A closed round's items were skipped without a word: they are counted, ``--closed`` lists those short apart,
    and ``--fix`` leaves them completed (a closed round's record stays what it was until it is reopened)."""
    Round.objects.filter(pk=short.pk).update(status="closed", closed_at=timezone.now())
    before = _state()
    out = _run("--closed", "--fix")
    assert out.splitlines() == [
        "Short in closed rounds, left as they are even with --fix (a closed round's record stays what it was; "
        "reopen the round, then run this again):",
        "study\tround\tcoder\tposition\tcodes missing",
        "cab-demo\tmain\tother-reviewer\t2\t1",
        "cab-demo\tmain\treviewer\t2\t1",
        "0 completed turn(s) of open rounds checked, and 4 of closed rounds (2 short: listed apart, left as they are).",
        "0 completed turn(s) went back to their coders' queues (audit event round.turns_short_requeue).",
    ]
    assert _state() == before
    Round.objects.filter(pk=short.pk).update(status="open", closed_at=None)  # reopened: the command sends them back
    assert _run("--closed", "--fix").splitlines()[-1] == (
        "2 completed turn(s) went back to their coders' queues (audit event round.turns_short_requeue).")


def test_the_check_draws_a_progress_bar_on_standard_error(short, monkeypatch, capsys):
    """About 1.5 minutes at paper scale: a bar, as the other long commands draw (common/progress.py)."""
    monkeypatch.setenv("CAB_PROGRESS", "1")
    capsys.readouterr()
    out = _run()
    err = capsys.readouterr().err
    assert "checking completed turns" in err and "0/4" in err and "turn" in err  # the total, counted for the bar
    assert out.splitlines()[-2] == "4 completed turn(s) of open rounds checked."
    monkeypatch.delenv("CAB_PROGRESS")
    assert _run() == out
    assert capsys.readouterr().err == "", "no bar on a standard error that is not a terminal"


def test_an_item_completed_again_meanwhile_keeps_its_completion(short, reviewer):
    found = services.turns_short_find()
    assert [(turn.coder, turn.position) for turn in found.short] == [("other-reviewer", 2), ("reviewer", 2)]
    assignment = Assignment.objects.get(round=short, coder=reviewer, position=2)
    services.assignment_complete(assignment=assignment, by=reviewer)  # the coder presses Complete turn: short
    assert code_and_complete(short, reviewer, 2).completed  # then codes it and completes it
    requeued = services.turns_short_requeue(found=found.short, by=None)
    assert [(turn.coder, turn.position) for turn in requeued] == [("other-reviewer", 2)]
    assert Assignment.objects.get(pk=assignment.pk).completed_at is not None
    assert AuditEvent.objects.get(action=ACTION).data == {"n": 1, "items": [["other-reviewer", 2]]}



def test_a_coder_taken_off_while_the_command_reads_is_left_as_they_are(short, reviewer, admin_user):
    """The dry run reads each completed turn after it listed them (83 s at paper scale): a coder taken off the study
    meanwhile is counted with those taken off before, where the check of their next turn found no turn page of
    theirs and the command ended in an AssertionError."""
    check = services._turn_check

    def first_then_taken_off(**kwargs):
        found = check(**kwargs)
        if kwargs["by"] == reviewer and StudyMember.objects.filter(user=reviewer).exists():
            services.study_member_remove(member=StudyMember.objects.get(user=reviewer), by=admin_user)
        return found

    with mock.patch.object(services, "_turn_check", first_then_taken_off):
        out = _run()
    assert "1 completed turn(s) are short" in out, out
    assert "not checked, left as they are: 1 of coders taken off their study" in out, out


def test_an_item_the_check_refuses_for_another_reason_is_listed_with_why_not_counted_as_taken_off(short, reviewer):
    """An item that is gone from its coder's queue while the command reads (deleted from a shell: no page of the
    application deletes an open round's items) is refused by the check, its coder still a member. It is listed with
    the check's reason; before, every refusal of the check was counted with the coders taken off their study, which
    nobody had been."""
    check = services._turn_check

    def first_then_gone(**kwargs):
        found = check(**kwargs)
        if kwargs["by"] == reviewer and kwargs["assignment"].position == 1:
            Assignment.objects.filter(round=short, coder=reviewer, position=2).delete()
        return found

    with mock.patch.object(services, "_turn_check", first_then_gone):
        out = _run()
    assert StudyMember.objects.filter(user=reviewer).exists()
    assert "taken off" not in out, out
    assert "1 completed turn(s) are short" in out, out
    assert "not checked, left as they are: 1 the check refused (listed below, each with why)" in out, out
    assert (f"Refused by the check, not checked, left as they are:\ncab-demo\t{short.name}\treviewer\t2\treviewer has "
            f"no item at position 2 of round {short.name} any more: it was removed since it was read") in out, out
