"""A metric run through a PostgreSQL blip, on the test's real server: the connections of the code under test are
ended from the server's side (``pg_terminate_backend``, what a restart does to every open connection: "terminating
connection due to administrator command"; the test worker's other connections are left alone), a statement of
the run is cancelled or times out, or a lock is not granted in time. The heartbeat survives a blip and goes on
beating; a run whose computation meets the database's outage, or a busy database, is not failed for it but put back
in the queue, saying so, and the workers' recovery sends it again (a cancelled statement fails it, saying why); a
run asked for through the API as the database drops right after the request's commit is answered with, not
refused."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading

import pytest
from django.conf import settings
from django.db import OperationalError, connection, transaction
from django.utils import timezone

from annotation.models import Judgment
from metrics import runs, services, tasks
from metrics.models import MetricRun
from tests.celery_worker import process_env, wait_for
from tests.factories import JudgmentFactory, MetricRunFactory, RoundFactory, StudyFactory
from tests.races import HeldLock
from tests.redis_server import free_port, redis_server

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)  # blips on connections of their own


def _connections() -> list[int]:
    """The server processes of the connections to this test's database now (the test's own included)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database()")
        return [pid for (pid,) in cursor.fetchall()]


def _end_connections_since(before: list[int]) -> int:
    """End the connections to this test's database opened since ``before`` (the code under test's), as a restart of
    PostgreSQL ends them. Only those: the test worker's others (the live server's, shared by later tests) stay."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        own = cursor.fetchone()[0]
        ended = 0
        for pid in set(_connections()) - set(before) - {own}:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
            ended += bool(cursor.fetchone()[0])
        return ended


def test_the_heartbeat_goes_on_beating_after_its_connection_is_ended(settings):
    """Before, the first database error ended the heartbeat thread: after a brief restart a long run stopped
    beating, another worker's recovery took it over and computed it again, and three blips failed it."""
    settings.METRIC_RUN_HEARTBEAT_SECONDS = 0.05
    run = MetricRunFactory(study=StudyFactory(), status="running", heartbeat_at=timezone.now())
    others = _connections()
    beat = runs._Heartbeat(run.pk)
    beat.start()
    try:
        for blip in range(3):
            before = MetricRun.objects.get(pk=run.pk).heartbeat_at
            wait_for(lambda before=before: MetricRun.objects.get(pk=run.pk).heartbeat_at > before, timeout=10)
            assert _end_connections_since(others) >= 1, "the heartbeat holds a connection"
            ended = timezone.now()
            wait_for(lambda ended=ended: MetricRun.objects.get(pk=run.pk).heartbeat_at > ended or not beat.is_alive(),
                     timeout=10)
            assert beat.is_alive(), f"the heartbeat stopped at blip {blip + 1}"
    finally:
        beat.stop()
    assert not beat.is_alive()


def _computed_through_a_blip(run_id: int, blip: str) -> None:
    """Compute the run (as its worker's task does) while another connection holds the judgments' table locked;
    once the run's load waits for the lock, the database cancels its statement or ends its connection. The task
    ends quietly: not the run's failure."""
    assert _through_a_blip(lambda: tasks.metric_run_task(run_id), blip) is False


def _through_a_blip(compute, blip: str | None):  # noqa: ANN001, ANN202
    """What ``compute`` returns when the database cancels its statement (or ends its connection) as it waits for a
    lock on the judgments' table that another connection holds; ``blip`` None: nobody does, the wait ends as the
    test's connection's settings say (``statement_timeout``, ``lock_timeout``)."""
    locked, release = threading.Event(), threading.Event()

    def hold() -> None:
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(f"LOCK TABLE {Judgment._meta.db_table} IN ACCESS EXCLUSIVE MODE")
                locked.set()
                release.wait(30)
        finally:
            connection.close()

    def interrupt() -> None:
        try:
            with connection.cursor() as cursor:
                waiting = None
                while waiting is None and not release.is_set():
                    cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                                   "AND wait_event_type = 'Lock'")
                    waiting = (cursor.fetchone() or [None])[0]
                cursor.execute(f"SELECT {blip}(%s)", [waiting])
        finally:
            release.set()
            connection.close()

    holder, interrupter = threading.Thread(target=hold), threading.Thread(target=interrupt)
    holder.start()
    assert locked.wait(10)
    if blip is not None:
        interrupter.start()
    try:
        return compute()
    finally:
        release.set()
        if blip is not None:
            interrupter.join(30)
        holder.join(30)


def _requested(by) -> MetricRun:  # noqa: ANN001
    study = StudyFactory()
    JudgmentFactory(round=RoundFactory(study=study))
    run = services.metric_run_request(study=study, by=by, bootstrap=5)
    MetricRun.objects.filter(pk=run.pk).update(enqueued_at=timezone.now())  # as if its worker took the message
    return run


def test_a_run_the_database_outage_interrupts_is_queued_again_not_failed(admin_user, caplog):
    """Before, the catch-all left the run running, saying nothing, for the recovery to notice a minute later (its
    connection ended, as a restart of PostgreSQL ends it)."""
    run = _requested(admin_user)
    _computed_through_a_blip(run.pk, "pg_terminate_backend")
    run.refresh_from_db()
    assert (run.status, run.error, run.attempts, run.enqueued_at) == ("queued", "", 1, None)
    assert run.progress_message == ("the database could not be reached mid-run (OperationalError); it is sent "
                                    "again automatically")
    assert f"metric run {run.pk}: interrupted, the database could not be reached (OperationalError); queued again" \
        in caplog.text
    assert tasks.metric_runs_recover()["sent"] == 1, "the recovery sends it again"
    assert runs.metric_run_execute(run_id=run.pk) is True
    run.refresh_from_db()
    assert run.status == "succeeded" and run.attempts == 2


@pytest.mark.parametrize("cancelled", ["statement_timeout", "pg_cancel_backend"])
def test_a_run_whose_statement_is_cancelled_fails_at_once_saying_why(admin_user, cancelled):
    """A statement timeout (or someone cancelling the statement: the same SQLSTATE 57014) is no outage: computed
    again, the run would wait as long again. Before, it went back to the queue as if the database were down, up to
    METRIC_RUN_MAX_ATTEMPTS times."""
    run = _requested(admin_user)
    if cancelled == "statement_timeout":
        with connection.cursor() as cursor:
            cursor.execute("SET statement_timeout = '300ms'")
    try:
        with pytest.raises(tasks.MetricRunFailed):
            _through_a_blip(lambda: tasks.metric_run_task(run.pk), None if cancelled == "statement_timeout"
                            else cancelled)
    finally:
        connection.close()
    run.refresh_from_db()
    assert (run.status, run.attempts) == ("failed", 1)
    assert run.error.startswith("OperationalError: canceling statement due to "), run.error


def test_a_run_the_busy_database_interrupts_is_queued_again_until_its_last_start(admin_user, settings):
    """A lock not granted in time (SQLSTATE 55P03, as a deadlock or a serialization failure: the database busy with
    another transaction) puts the run back in the queue, saying so; its METRIC_RUN_MAX_ATTEMPTS-th start fails it
    with the reason, so a run that meets it every time ends."""
    settings.METRIC_RUN_MAX_ATTEMPTS = 2
    run = _requested(admin_user)
    for attempt in (1, 2):
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '300ms'")
        try:
            outcome = _through_a_blip(lambda: tasks.metric_run_task(run.pk), None)
        except tasks.MetricRunFailed:
            outcome = "failed"
        finally:
            connection.close()
        run.refresh_from_db()
        if attempt == 1:
            assert (outcome, run.status, run.attempts) == (False, "queued", 1)
            assert run.progress_message == ("the database was busy with another transaction mid-run "
                                            "(OperationalError); it is sent again automatically")
    assert (outcome, run.status, run.attempts) == ("failed", "failed", 2)
    assert run.error.startswith("OperationalError: canceling statement due to lock timeout"), run.error


def test_in_embedded_mode_a_run_the_database_outage_interrupts_fails_saying_why(admin_user, settings):
    """In-process (no REDIS_URL) no worker's recovery would send an interrupted run again: queued, it would wait
    for ever. It fails with its reason, and can be asked for again. (Before, the failure was written on the
    connection the outage had ended: it never reached the database, and the run stayed running.)"""
    study = StudyFactory()
    JudgmentFactory(round=RoundFactory(study=study))
    run = services.metric_run_request(study=study, by=admin_user, bootstrap=5)
    settings.CELERY_TASK_ALWAYS_EAGER = True
    with pytest.raises(OperationalError):
        _through_a_blip(lambda: runs.metric_run_execute(run_id=run.pk), "pg_terminate_backend")
    run.refresh_from_db()
    assert run.status == "failed" and "OperationalError" in run.error, (run.status, run.error)

ASK = """
import os
from rest_framework.test import APIClient
api = APIClient()
api.credentials(HTTP_AUTHORIZATION="Bearer " + os.environ["TOKEN"])
answer = api.post("/api/v1/studies/blip/metric-runs/", {"bootstrap": 5}, format="json")
print(answer.status_code, answer.content.decode())
"""


def _asked_as_the_database_drops(script: str, tmp_path, env: dict[str, str]) -> tuple[str, str]:  # noqa: ANN001
    """Run ``script`` (a request that commits a metric run of the study "blip", then hands it to the broker) in a
    process of its own, and end its database connection right after the commit: the broker is frozen, so that the
    hand-off waits (up to its 5 s timeout) while the connection is ended. Its standard output and error."""
    port = free_port()
    with redis_server(port, tmp_path / "redis") as server:
        os.kill(server.pid, signal.SIGSTOP)
        try:
            before = _connections()
            asking = subprocess.Popen(
                [sys.executable, "manage.py", "shell", "-c", script], cwd=settings.BASE_DIR, text=True,
                env=process_env({"REDIS_URL": f"redis://127.0.0.1:{port}/0", **env}),
                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            wait_for(lambda: MetricRun.objects.filter(study__slug="blip").exists(), timeout=60, interval=0.05)
            assert _end_connections_since(before) >= 1, "the request holds a connection"
        finally:
            os.kill(server.pid, signal.SIGCONT)
        out, err = asking.communicate(timeout=60)
    assert asking.returncode == 0, err[-3000:]
    return out, err


@pytest.mark.slow(10)
def test_a_run_asked_for_through_the_api_as_the_database_drops_after_the_commit_answers_with_the_run(
        admin_user, token_for, tmp_path):
    """The request commits the run, then hands it to the broker (frozen here, so that the hand-off waits) and the
    database ends the request's connection meanwhile: the note of the hand-off cannot be written. Before, the
    request answered 503 "Nothing was changed" although the run was saved, and a client asking again made a second
    run; now it answers 202 with the run, which the workers' recovery sends (again: a second delivery is a no-op)."""
    StudyFactory(slug="blip")
    out, err = _asked_as_the_database_drops(ASK, tmp_path, {"TOKEN": token_for(admin_user)})
    status, body = out.strip().splitlines()[-1].split(" ", 1)
    (run,) = MetricRun.objects.filter(study__slug="blip")
    assert (status, json.loads(body)["id"], json.loads(body)["status"]) == ("202", run.pk, "queued"), body
    assert run.enqueued_at is None, "its sending was not noted: the recovery sends it"
    assert "its sending is not noted: the database cannot be reached (OperationalError)" in err, err[-3000:]


# A signed-in page's POST whose session is due for its renewal (access.login_sessions): the renewal is written on
# the way out, after the view; the answer's messages are read from the request (they travel in a cookie).
PAGE = """
import os
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.messages import get_messages
from django.test import Client
settings.DEBUG = False  # the pages' own 500 and 503, not the debugging page
page = Client(raise_request_exception=False)
page.force_login(get_user_model().objects.get(username=os.environ["USERNAME"]))
session = page.session
session["_renewed_at"] = 0
session.save()
answer = page.post(os.environ["PATH_POSTED"], {"bootstrap": 5, "seed": 1, "top_k": 3, "confirm": "on"})
said = [m.message for m in get_messages(answer.wsgi_request)] if answer.status_code == 302 else [answer.content[-300:]]
print(answer.status_code, answer.get("Location"), said)
"""


@pytest.mark.slow(10)
def test_a_run_started_on_the_reports_page_as_the_database_drops_after_the_commit_says_it_was_requested(
        admin_user, tmp_path):
    """Before, the page answered 503 "Nothing was changed" although the run was saved (the words on the run read
    the database again, and the session's renewal wrote to it), and a researcher starting it again made a second
    run; now it goes back to the reports page saying which run was requested."""
    StudyFactory(slug="blip")
    out, _ = _asked_as_the_database_drops(PAGE, tmp_path, {"USERNAME": admin_user.username,
                                                            "PATH_POSTED": "/studies/blip/metric-runs/start"})
    (run,) = MetricRun.objects.filter(study__slug="blip")
    assert out.strip().splitlines()[-1] == (
        f"302 /studies/blip/reports/ ['Metrics run {run.pk} was requested; what became of it cannot be read just now "
        "(the database is briefly unreachable): the reports page shows it (B = 5, seed 1, k = 3).']"), out


@pytest.mark.slow(10)
def test_a_round_closed_as_the_database_drops_after_the_commit_says_it_closed(admin_user, tmp_path):
    """Closing a round starts a metric run in the same transaction. Before, the page answered 503 "Nothing was
    changed" although the round was closed and the run saved; now it says so."""
    round_ = RoundFactory(study=StudyFactory(slug="blip"))
    out, _ = _asked_as_the_database_drops(PAGE, tmp_path, {
        "USERNAME": admin_user.username, "PATH_POSTED": f"/studies/blip/rounds/{round_.pk}/close"})
    round_.refresh_from_db()
    assert round_.status == "closed"
    assert out.strip().splitlines()[-1] == (
        "302 /studies/blip/ ['calibration-1 closed and the workshop is open; a metrics run was requested; what became "
        "of it cannot be read just now (the database is briefly unreachable): the reports page shows it.']"), out


def test_a_run_sent_while_its_row_is_locked_past_the_lock_timeout_is_sent_and_its_note_left_out(admin_user, caplog):
    """Handing a committed run to the broker notes on the run how it went. Before, a busy database there (a lock
    not granted in time, a deadlock) raised out of the hand-off, which runs after the request's commit: the request
    that had saved the run answered with an error. Now the note is left out (logged) and the recovery sends it again."""
    run = _requested(admin_user)
    MetricRun.objects.filter(pk=run.pk).update(enqueued_at=None, progress_message="")
    with connection.cursor() as cursor:
        cursor.execute("SET lock_timeout = '200ms'")
    try:
        with HeldLock("SELECT id FROM metrics_metricrun WHERE id = %s FOR UPDATE", (run.pk,)):
            assert tasks.metric_run_enqueue(run.pk) is True
    finally:
        connection.close()
    run.refresh_from_db()
    assert (run.status, run.enqueued_at, run.progress_message) == ("queued", None, "")
    assert (f"metric run {run.pk}: saved, but its sending is not noted: the database is busy with another "
            "transaction (OperationalError)") in caplog.text
