"""Two writers at once in annotation/services.py, on real PostgreSQL connections (tests/races.py): two reviewers
added at once get different aliases; a settings page opened before another admin's save keeps that save (a stale
page, as its ``shown`` values); two saves of the same judgment keep one and refuse the other; a save racing the
round's closing lands before it; a save racing its coder's removal lands before it or is refused; a completion
racing the round's closing lands before it or is refused; a time report or a note holds up no save."""

from __future__ import annotations

import threading
import time
from unittest import mock

import pytest
from django.test import Client
from django.urls import reverse

from access import roles
from access.services import user_ensure
from annotation import services
from annotation.models import Study, StudyMember
from tests.factories import StudyFactory
from tests.form_fuzz import said
from tests.races import meet_at, together


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_two_reviewers_added_at_once_get_different_aliases():
    admin = user_ensure(username="study-admin", role=roles.ADMIN)
    study = StudyFactory(slug="race")
    people = [user_ensure(username=name, role=roles.REVIEWER) for name in ("rev-1", "rev-2")]

    def add(user):
        return lambda: services.study_member_add(study=Study.objects.get(pk=study.pk), user=user,
                                                 role=StudyMember.Role.REVIEWER, by=admin)

    with meet_at(type(StudyMember.objects), "create"):
        results = together(add(people[0]), add(people[1]))
    assert all(isinstance(r, StudyMember) for r in results), results
    assert sorted(StudyMember.objects.filter(study=study).values_list("alias", flat=True)) == ["R1", "R2"]


SETTINGS = {"name": "Study", "description": "", "show_model_names": "", "show_therapist_reference": "on",
            "check_threshold": "0.7", "check_min_items": "3", "experts_see_consensus": ""}


@pytest.fixture
def settings_page(db, admin_user):
    """(client, url, the hidden ``shown`` value of the page as an admin opened it)."""
    study = StudyFactory(slug="settings-race", name="Study", description="", show_model_names=False,
                         show_therapist_reference=True, check_threshold=0.7, check_min_items=3,
                         experts_see_consensus=False)
    client = Client()
    client.force_login(admin_user)
    url = reverse("study-settings", args=[study.slug])
    form = client.get(url).context["form"]
    return client, url, form["shown"].value()


def test_a_settings_page_opened_before_another_admins_save_keeps_that_save(settings_page, admin_user):
    client, url, shown = settings_page
    services.study_settings_update(study=Study.objects.get(), by=admin_user, name="Renamed by the other admin")

    response = client.post(url, SETTINGS | {"description": "mine", "shown": shown})
    assert response.status_code == 302, said(response)
    study = Study.objects.get()
    assert (study.name, study.description) == ("Renamed by the other admin", "mine")


def test_the_same_setting_changed_by_two_admins_is_refused_for_the_second(settings_page, admin_user):
    client, url, shown = settings_page
    services.study_settings_update(study=Study.objects.get(), by=admin_user, check_threshold=0.9)

    response = client.post(url, SETTINGS | {"check_threshold": "0.5", "description": "mine", "shown": shown})
    assert response.status_code == 200
    assert any("changed meanwhile; reload" in m.message for m in response.context["messages"])
    study = Study.objects.get()
    assert (study.check_threshold, study.description) == (0.9, "")


# --- the autosave: a shared lock on the round, an exclusive one on the judgment (services.judgment_save) ---------


@pytest.fixture
def coded(transactional_db):
    """The demo's open calibration round, its reviewer and a turn-level attribute they coded once (version 1)."""
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from annotation.models import Assignment, Round

    call_command("load_demo", "--quiet")
    round_ = Round.objects.get(study__slug="demo", kind="calibration", number=1)
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    turn = Assignment.objects.get(round=round_, coder=reviewer, position=1).turn
    attribute = round_.study.schema.attributes.get(code="U1")
    services.judgment_save(round=round_, by=reviewer, attribute=attribute, turn=turn, score=0)
    return round_.pk, reviewer.pk, turn.pk, attribute.pk


def _save(coded, score, *, expected_version=1):
    from django.contrib.auth import get_user_model

    from annotation.models import AttributeDefinition, Round
    from benchmark.models import Turn

    round_id, reviewer_id, turn_id, attribute_id = coded

    def save():
        judgment = services.judgment_save(
            round=Round.objects.select_related("study").get(pk=round_id),
            by=get_user_model().objects.get(pk=reviewer_id), attribute=AttributeDefinition.objects.get(pk=attribute_id),
            turn=Turn.objects.get(pk=turn_id), score=score, expected_version=expected_version)
        return judgment, time.monotonic()

    return save


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_two_saves_of_the_same_version_at_once_keep_one_and_refuse_the_other(coded):
    from annotation.models import Judgment, JudgmentRevision

    # Both wait after taking their locks: without the judgment's row lock both would write version 2.
    with meet_at(services, "judgment_value"):
        results = together(_save(coded, 1), _save(coded, 2))
    saved = [r[0] for r in results if isinstance(r, tuple)]
    refused = [r for r in results if isinstance(r, services.StaleJudgmentError)]
    assert len(saved) == 1 and len(refused) == 1, results
    judgment = Judgment.objects.get(pk=saved[0].pk)
    assert (judgment.version, judgment.score) == (2, saved[0].score)
    history = list(JudgmentRevision.objects.filter(judgment=judgment).order_by("version").values_list(
        "version", "after__score"))
    assert history == [(1, 0), (2, saved[0].score)]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_save_racing_the_rounds_closing_lands_before_it(coded):
    """The save holds its shared lock on the round while it writes; the closing (an UPDATE of the round) waits for
    it, so no judgment changes in a closed round."""
    from annotation.models import Judgment, Round

    round_id = coded[0]
    locked = threading.Event()
    original = services.judgment_value

    def held(*args, **kwargs):  # the save, its locks taken, waits in the middle of its write
        locked.set()
        time.sleep(0.5)
        return original(*args, **kwargs)

    def close():
        # Once the save has its locks (before: a fixed half second, which a loaded host could outrun).
        assert locked.wait(timeout=30)
        services.round_close(round=Round.objects.select_related("study").get(pk=round_id), by=None)
        return time.monotonic()

    with mock.patch.object(services, "judgment_value", held):
        saved, closed = together(_save(coded, 2), close)
    assert isinstance(saved, tuple) and isinstance(closed, float), (saved, closed)
    assert closed > saved[1], "the round closed while a save into it was under way"
    assert Judgment.objects.get(pk=saved[0].pk).score == 2
    assert Round.objects.get(pk=round_id).status == Round.Status.CLOSED


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_save_after_the_round_closed_is_refused(coded):
    from django.core.exceptions import ValidationError

    from annotation.models import Judgment, Round

    services.round_close(round=Round.objects.select_related("study").get(pk=coded[0]), by=None)
    with pytest.raises(ValidationError, match="closed"):
        _save(coded, 2)()
    round_id, coder_id, turn_id, attribute_id = coded
    judgment = Judgment.objects.get(round_id=round_id, coder_id=coder_id, turn_id=turn_id, attribute_id=attribute_id)
    assert judgment.score == 0


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_two_first_saves_of_the_same_unit_at_once_create_one_judgment_and_refuse_the_other(coded):
    """Two tabs code a unit that has no judgment yet: both read "none" under their locks, both insert; the second
    insert meets the first's row (the unique index), writes nothing, and is refused with the first's value."""
    from django.contrib.auth import get_user_model

    from annotation.models import AttributeDefinition, Judgment, JudgmentRevision, Round
    from benchmark.models import Turn

    round_id, reviewer_id, turn_id, _ = coded
    u2 = AttributeDefinition.objects.get(schema__studies__rounds=round_id, code="U2")

    def first_save(score):
        def save():
            judgment = services.judgment_save(
                round=Round.objects.select_related("study").get(pk=round_id),
                by=get_user_model().objects.get(pk=reviewer_id), attribute=u2, turn=Turn.objects.get(pk=turn_id),
                score=score, expected_version=0)
            return judgment, time.monotonic()
        return save

    with meet_at(services, "judgment_value"):
        results = together(first_save(1), first_save(2))
    saved = [r[0] for r in results if isinstance(r, tuple)]
    refused = [r for r in results if isinstance(r, services.StaleJudgmentError)]
    assert len(saved) == 1 and len(refused) == 1, results
    judgment = Judgment.objects.get(round_id=round_id, coder_id=reviewer_id, attribute=u2)
    assert (judgment.pk, judgment.version, judgment.score) == (saved[0].pk, 1, saved[0].score)
    assert refused[0].current.pk == judgment.pk and refused[0].current.score == saved[0].score
    history = list(JudgmentRevision.objects.filter(judgment=judgment).values_list("version", "before", "after__score"))
    assert history == [(1, None, saved[0].score)], "one history row, the winner's"


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_an_import_racing_a_first_save_of_the_same_unit_names_the_row(coded):
    """A reviewer's first save of a unit is under way (its row inserted, not yet committed) when an import of the
    same coder's judgment of that unit reads the study's judgments. The import waits for the save and refuses the
    row in words, writing nothing; before, it read no judgment, its insert met the save's row in the unique index,
    and the IntegrityError was a 500 from the API and a traceback from the command."""
    from django.contrib.auth import get_user_model

    from annotation import judgment_import
    from annotation.models import AttributeDefinition, Judgment, Round
    from benchmark.models import Turn
    from common.errors import RowErrors

    round_id, reviewer_id, turn_id, _ = coded
    u2 = AttributeDefinition.objects.get(schema__studies__rounds=round_id, code="U2")
    turn = Turn.objects.select_related("conversation__dataset").get(pk=turn_id)
    row = {"study": "demo", "round": "calibration-1", "reviewer": "demo-reviewer", "is_gold": False,
           "dataset": turn.conversation.dataset.name, "conversation_id": turn.conversation.external_id,
           "turn_index": turn.index, "model": "", "attribute": "U2", "score": 2, "instance_count": None, "spans": []}
    inserted = threading.Event()
    original = services._judgment_create_recorded

    def held(*args, **kwargs):  # the save's row inserted, not committed: held long enough for the import to read
        original(*args, **kwargs)
        inserted.set()
        time.sleep(1.5)

    def save():
        return services.judgment_save(
            round=Round.objects.select_related("study").get(pk=round_id),
            by=get_user_model().objects.get(pk=reviewer_id), attribute=u2, turn=Turn.objects.get(pk=turn_id),
            score=1, expected_version=0)

    def import_():
        assert inserted.wait(timeout=30)
        return judgment_import.judgments_import(rows=[(1, row)], study_slug="demo", by=None, typed=True)

    with mock.patch.object(services, "_judgment_create_recorded", held):
        saved, imported = together(save, import_)
    assert isinstance(saved, Judgment), saved
    assert isinstance(imported, RowErrors), imported
    assert [(e.row, e.field) for e in imported.errors] == [(1, "score")]
    assert "already has a different U2 judgment for this unit (score 1)" in imported.errors[0].message
    assert list(Judgment.objects.filter(round_id=round_id, attribute=u2, turn_id=turn_id, coder_id=reviewer_id)
                .values_list("score", "version")) == [(1, 1)]


def _remove_reviewer(coded):
    """Take the ``coded`` reviewer off the demo study, as its admin (the study page's service)."""
    from django.contrib.auth import get_user_model

    from annotation.demo import DEMO_USERS

    round_id, reviewer_id, _, _ = coded

    def remove():
        member = StudyMember.objects.select_related("study", "user").get(study__rounds=round_id, user_id=reviewer_id)
        services.study_member_remove(member=member, by=get_user_model().objects.get(username=DEMO_USERS[roles.ADMIN]))
        return time.monotonic()

    return remove


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_save_under_way_when_its_coder_is_taken_off_lands_before_the_removal(coded):
    """The save holds a share of the member's row lock while it writes; the removal locks that row before it
    deletes it, so it waits for the save and takes the member off after it (the judgment, with its history, is what
    the former member's role covers). Before, the removal committed in the middle of the save, which then landed
    after it: a judgment written by someone no longer a member."""
    from annotation.models import FormerStudyMember, Judgment

    locked = threading.Event()
    writing: list[float] = []
    original = services.judgment_value

    def held(*args, **kwargs):  # the save, its locks taken, waits in the middle of its write
        locked.set()
        time.sleep(0.5)
        writing.append(time.monotonic())  # still writing: before its commit, whenever its thread runs again
        return original(*args, **kwargs)

    remove = _remove_reviewer(coded)

    def remove_once_locked():
        assert locked.wait(timeout=30)
        return remove()

    with mock.patch.object(services, "judgment_value", held):
        saved, removed = together(_save(coded, 2), remove_once_locked)
    assert isinstance(saved, tuple) and isinstance(removed, float), (saved, removed)
    assert removed > writing[-1], "the coder was taken off while a save of theirs was under way, and it landed after"
    assert Judgment.objects.get(pk=saved[0].pk).score == 2
    assert FormerStudyMember.objects.filter(user_id=coded[1], role="reviewer").exists()


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_save_that_meets_its_coders_removal_is_refused_as_from_someone_no_longer_a_member(coded):
    """The removal has deleted the member's row and not yet committed when the save reads the membership: the save
    waits for the row's lock, finds it gone, and is refused, nothing written. Before, it read the member as the
    removal had not committed yet and saved after the removal."""
    from django.core.exceptions import PermissionDenied

    from annotation.models import Judgment, JudgmentRevision

    round_id, reviewer_id, turn_id, attribute_id = coded
    deleted = threading.Event()
    original = services.audit_record

    def held(*args, **kwargs):  # the removal, the member's row deleted, waits before it commits
        deleted.set()
        time.sleep(0.5)
        return original(*args, **kwargs)

    save = _save(coded, 2)

    def save_once_deleted():
        assert deleted.wait(timeout=30)
        return save()

    with mock.patch.object(services, "audit_record", held):
        removed, refused = together(_remove_reviewer(coded), save_once_deleted)
    assert isinstance(removed, float), removed
    assert isinstance(refused, PermissionDenied), refused
    judgment = Judgment.objects.get(round_id=round_id, coder_id=reviewer_id, turn_id=turn_id,
                                    attribute_id=attribute_id)
    assert (judgment.score, judgment.version) == (0, 1)
    assert JudgmentRevision.objects.filter(judgment=judgment).count() == 1


# --- a completion racing the round's closing: a share of the round's row (services.assignment_complete) -----------


@pytest.fixture
def codes_given(coded):
    """``coded``, with every form of the reviewer's first item scored as the coding page would, not completed."""
    from django.contrib.auth import get_user_model

    from annotation import selectors
    from annotation.models import Assignment

    round_id, reviewer_id, _, _ = coded
    reviewer = get_user_model().objects.get(pk=reviewer_id)
    view = selectors.turn_view(round_id=round_id, user=reviewer, position=1)
    for form in view.all_forms():
        if not form.scored:
            response = None if form.response_handle is None else selectors.response_by_handle(
                study=view.study, coder_id=reviewer.pk, turn=view.turn, handle=form.response_handle)
            services.judgment_save(round=view.round, by=reviewer, attribute=form.attribute, turn=view.turn,
                                   response=response, score=form.attribute.scale[0])
    assignment = Assignment.objects.get(round_id=round_id, coder=reviewer, position=1)
    assert assignment.completed_at is None
    return assignment.pk, reviewer.pk


def _complete(codes_given):
    """The coder's completion of the item, as the coding page's *Complete turn* sends it: the assignment read with its
    round before the service runs (the view's read)."""
    from django.contrib.auth import get_user_model

    from annotation.models import Assignment

    assignment_id, reviewer_id = codes_given

    def complete():
        assignment = Assignment.objects.select_related("round__study").get(pk=assignment_id)
        check = services.assignment_complete(assignment=assignment, by=get_user_model().objects.get(pk=reviewer_id),
                                             confirm=True)
        return check, time.monotonic()

    return complete


def _close(coded):
    def close():
        from annotation.models import Round

        services.round_close(round=Round.objects.select_related("study").get(pk=coded[0]), by=None)
        return time.monotonic()

    return close


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_completion_that_meets_the_rounds_closing_waits_for_it_and_is_refused(coded, codes_given):
    """The closing has written the round's new status and not yet committed when the coder completes the item: the
    completion waits for the round's row, then reads it closed and is refused in words (the page shows them; a
    ValidationError is the view's 422), nothing written. Before, it read the round as the page had it (open),
    and its completion committed after the closing: a turn completed in a closed round."""
    from django.core.exceptions import ValidationError

    from annotation.models import Assignment, Round

    closing = threading.Event()
    original = services.audit_record

    def held(*args, **kwargs):  # the closing, its UPDATE run, waits before it commits
        if kwargs.get("action") == "round.close":
            closing.set()
            time.sleep(1.0)
        return original(*args, **kwargs)

    complete = _complete(codes_given)

    def complete_once_closing():
        assert closing.wait(timeout=30)
        return complete()

    with mock.patch.object(services, "audit_record", held):
        closed, refused = together(_close(coded), complete_once_closing)
    assert isinstance(closed, float), closed
    assert isinstance(refused, ValidationError), refused
    assert refused.messages == ["calibration-1 is closed: its turns are no longer completed"]
    assert Assignment.objects.get(pk=codes_given[0]).completed_at is None
    assert Round.objects.get(pk=coded[0]).status == Round.Status.CLOSED


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_completion_under_way_when_the_round_closes_lands_before_the_closing(coded, codes_given):
    """The completion holds a share of the round's row while it reads the codes and writes; the closing (an UPDATE
    of the row) waits for it, so the turn is completed while the round is open, before it closes. Before, the
    closing committed in the middle of the completion, which then committed after it."""
    from annotation.models import Assignment, Round

    reading = threading.Event()
    original = services._turn_check

    def held(**kwargs):  # the completion, its locks taken, waits while it reads the codes
        reading.set()
        time.sleep(1.0)
        return original(**kwargs)

    def close_once_reading():
        assert reading.wait(timeout=30)
        return _close(coded)()

    with mock.patch.object(services, "_turn_check", held):
        completed, closed = together(_complete(codes_given), close_once_reading)
    assert isinstance(completed, tuple) and isinstance(closed, float), (completed, closed)
    assert completed[0].completed, completed
    assert closed > completed[1], "the round closed while a completion in it was under way, and it landed after"
    assert Assignment.objects.get(pk=codes_given[0]).completed_at is not None
    assert Round.objects.get(pk=coded[0]).status == Round.Status.CLOSED


# --- time on task and notes: a share of the round's row, as a save takes (services.assignment_time_add, …note_save) --


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.parametrize("what", ["time on task", "a note"])
def test_a_time_report_or_note_under_way_holds_up_no_save_of_the_round(coded, what):
    """The turn page reports time on task every few seconds: it read the round under an exclusive lock (FOR UPDATE,
    through ``select_related``), as a note did, so every save into the round (a share of that row) waited for it to
    commit. Both now share the round's row, as a save does: a closing still waits for them."""
    from django.contrib.auth import get_user_model
    from django.db import transaction

    from annotation.models import Assignment

    round_id, reviewer_id = coded[0], coded[1]
    reported, saved = threading.Event(), threading.Event()

    def report():
        reviewer = get_user_model().objects.get(pk=reviewer_id)
        item = Assignment.objects.select_related("round__study").get(round_id=round_id, coder=reviewer, position=1)
        with transaction.atomic():
            if what == "time on task":
                services.assignment_time_add(assignment=item, by=reviewer, seconds=5)
            else:
                services.assignment_note_save(assignment=item, by=reviewer, comment="Cut off?", flags=["unsure"])
            reported.set()
            saved.wait(5)  # its locks held until the save below lands, or for five seconds
        return time.monotonic()

    def save():
        assert reported.wait(30)
        result = _save(coded, 2)()
        saved.set()
        return result

    committed, result = together(report, save)
    assert isinstance(result, tuple) and isinstance(committed, float), (result, committed)
    assert result[1] < committed, f"the save waited for {what} to commit"


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_time_report_takes_the_rounds_row_before_its_items(coded):
    """A time report locked its item, then shared its round's row; a reopening of the round (with feedback's lock)
    takes the round's row, then updates its items: each waited for the other, a deadlock PostgreSQL broke after a
    second, one of them answered 503 "busy". The report takes the round's row first now, as a save, a note and a
    reopening do: while another holds the round's row, the report waits before it locks its item."""
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction

    from annotation.models import Assignment, Round
    from tests.races import HeldLock

    round_id, reviewer_id = coded[0], coded[1]
    item_id = Assignment.objects.get(round_id=round_id, coder_id=reviewer_id, position=1).pk

    def report():
        reviewer = get_user_model().objects.get(pk=reviewer_id)
        item = Assignment.objects.get(pk=item_id)
        return services.assignment_time_add(assignment=item, by=reviewer, seconds=5)

    results: list = []
    with HeldLock(f"SELECT id FROM {Round._meta.db_table} WHERE id = %s FOR UPDATE", (round_id,)):  # noqa: S608
        waiting = threading.Thread(target=lambda: results.extend(together(report)))
        waiting.start()
        _until_blocked(1)
        # The report waits for the round's row: its item is free (NOWAIT: an error at once if the report held it).
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"SELECT id FROM {Assignment._meta.db_table} WHERE id = %s FOR UPDATE NOWAIT",  # noqa: S608
                           (item_id,))
    waiting.join(60)
    assert results == [5], results
    assert Assignment.objects.get(pk=item_id).active_seconds == 5


def _until_blocked(count: int) -> None:
    """Waits until ``count`` connections to the test's database wait for a lock another holds."""
    from django.db import connection

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                           "AND cardinality(pg_blocking_pids(pid)) > 0")
            if cursor.fetchone()[0] >= count:
                return
        time.sleep(0.05)
    raise AssertionError(f"{count} connections never waited")


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_two_notes_made_on_the_same_note_at_once_keep_one_and_refuse_the_other(coded):
    """Two tabs change the item's note at once, each on the note as it had it (empty): both read the note before
    either wrote it (the read took no lock), both wrote and both answered "Saved", the second over the first. The
    item's row is locked as the note is read: the second reads what the first wrote, and is refused as stale."""
    from django.contrib.auth import get_user_model

    from annotation.models import Assignment
    from tests.races import HeldLock

    round_id, reviewer_id = coded[0], coded[1]
    item_id = Assignment.objects.get(round_id=round_id, coder_id=reviewer_id, position=1).pk

    def note(comment):
        def save():
            reviewer = get_user_model().objects.get(pk=reviewer_id)
            item = Assignment.objects.select_related("round__study").get(pk=item_id)
            return services.assignment_note_save(assignment=item, by=reviewer, comment=comment, flags=[],
                                                 base=("", []))
        return save

    results: list = []
    # Another connection holds the item's row: both notes get as far as that row (their read, or their write)
    # before either goes on.
    with HeldLock(f"SELECT id FROM {Assignment._meta.db_table} WHERE id = %s FOR UPDATE", (item_id,)):  # noqa: S608
        both = threading.Thread(target=lambda: results.extend(together(note("From tab one."), note("From tab two."))))
        both.start()
        _until_blocked(2)
    both.join(60)
    saved = [r for r in results if isinstance(r, Assignment)]
    refused = [r for r in results if isinstance(r, services.StaleNoteError)]
    assert len(saved) == 1 and len(refused) == 1, results
    assert Assignment.objects.get(pk=item_id).comment == saved[0].comment
    assert refused[0].comment == saved[0].comment
