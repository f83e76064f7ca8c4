"""Embedded mode (no REDIS_URL): Celery runs a task inside the process that sends it. A metric run whose
computation raises is stored failed with its reason exactly as a worker stores it, and the page, API call or
command that asked for it answers normally: nothing a task raises reaches a page, and the reason (which may quote
what participants wrote) is never logged."""

from __future__ import annotations

import contextlib
import logging
import os
import runpy
import subprocess
import sys
from collections.abc import Iterator

import pytest
from django.conf import settings
from django.db import transaction
from django.test import override_settings
from django.utils.html import escape

from cab.celery import app
from metrics import runs, services
from metrics import selectors as metrics_selectors
from metrics.kind_sections import ReportSection
from metrics.models import MetricRun
from tests.celery_worker import _database_url, celery_worker, wait_for

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)  # runs are sent after commit

WORDS = "since the move I cannot sleep"  # a participant's words: in the run's stored reason, never in a log
MESSAGE = f"no rating for the turn: {WORDS}"
REASON = f"ValueError: {MESSAGE}"


def _report_bug(**_: object) -> None:
    """The report hitting a bug once the judgments are loaded (the count of unscored judgments, read for every
    study)."""
    raise ValueError(MESSAGE)


@contextlib.contextmanager
def embedded_celery() -> Iterator[None]:
    """Celery exactly as cab/settings.py sets it up with no REDIS_URL (the test run itself has one, so the file is
    read again without it), for this process and its Celery app."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("REDIS_URL", raising=False)
        read = runpy.run_path(str(settings.BASE_DIR / "cab" / "settings.py"))
    celery = {name: value for name, value in read.items() if name.startswith("CELERY_TASK_")}
    assert celery["CELERY_TASK_ALWAYS_EAGER"] is True
    with override_settings(**celery):
        assert app.conf.task_always_eager is True  # the app reads Django's settings (cab/celery.py)
        assert app.conf.task_eager_propagates is celery.get("CELERY_TASK_EAGER_PROPAGATES", False)
        yield


@pytest.fixture
def embedded():
    with embedded_celery():
        yield


@pytest.fixture
def report_bug(monkeypatch):
    monkeypatch.setattr(metrics_selectors, "unscored_judgments", _report_bug)


@pytest.fixture
def logs(caplog):
    caplog.set_level(logging.DEBUG)
    return caplog


def assert_failed_as_a_worker_stores_it(run: MetricRun, reason: str = REASON) -> MetricRun:
    """Failed with its reason, as ``runs.metric_run_execute`` stores it on a worker: the error's type and message,
    then its traceback; started once, beaten for, finished; never left queued or running."""
    run.refresh_from_db()
    assert run.status == MetricRun.Status.FAILED, (run.status, run.progress_message)
    assert run.error.splitlines()[0] == reason
    assert "Traceback (most recent call last):" in run.error
    assert run.result is None and run.attempts == 1
    assert run.started_at <= run.heartbeat_at <= run.finished_at
    return run


def stored_failure(run: MetricRun) -> dict:
    """What a failed run's row says, but its times and progress (a progress write depends on the clock)."""
    run.refresh_from_db()
    return {"status": run.status, "error": run.error, "attempts": run.attempts, "result": run.result,
            "times in order": run.started_at <= run.heartbeat_at <= run.finished_at}


def test_a_run_started_on_the_reports_page_that_fails_is_stored_failed_and_the_page_says_why(
    embedded, report_bug, researcher, client, study, logs
):
    client.force_login(researcher)
    response = client.post(f"/studies/{study.slug}/metric-runs/start", {"bootstrap": 20, "seed": 3, "top_k": 6})
    assert response.status_code == 302 and response["Location"] == f"/studies/{study.slug}/reports/"
    run = assert_failed_as_a_worker_stores_it(MetricRun.objects.get(study=study))
    page = client.get(response["Location"])
    html = page.content.decode()
    assert page.status_code == 200
    assert escape(f"Metrics run {run.pk} failed: {REASON} (B = 20, seed 3, k = 6).") in html
    assert '<span class="status status-failed">Failed</span><br><span class="error small">' \
           f"{escape(REASON)}" in html
    assert 'hx-trigger="every 2s"' not in html, "no run is active: the table stops polling"
    assert WORDS not in logs.text


def test_a_run_started_through_the_api_that_fails_answers_202_saying_so(
    embedded, report_bug, researcher, as_token, study, logs
):
    api = as_token(researcher, scopes=["read", "metrics"])
    response = api.post(f"/api/v1/studies/{study.slug}/metric-runs/", {"bootstrap": 20}, format="json")
    assert response.status_code == 202
    assert (response.json()["status"], response.json()["error"]) == ("failed", REASON)
    run = assert_failed_as_a_worker_stores_it(MetricRun.objects.get(pk=response.json()["id"]))
    polled = api.get(f"/api/v1/metric-runs/{run.pk}/")
    assert polled.status_code == 200 and (polled.json()["status"], polled.json()["error"]) == ("failed", REASON)
    assert WORDS not in logs.text


def test_a_run_a_service_requests_that_fails_leaves_its_caller_going(embedded, report_bug, admin_user, study, logs):
    """As closing a round does: the run is requested inside the caller's transaction and sent when it commits."""
    with transaction.atomic():
        run = services.metric_run_request(study=study, by=admin_user, trigger="round-closed", bootstrap=20)
    assert_failed_as_a_worker_stores_it(run)
    assert WORDS not in logs.text


def test_a_result_that_cannot_be_stored_fails_the_run_saying_so(embedded, monkeypatch, admin_user, study):
    """A report section holding what JSON cannot hold (a set: a bug) fails when the result is stored, after the
    computation: the run fails with that reason instead of staying running (in embedded mode nobody would ever take
    it over)."""
    section = ReportSection(slug="bug", help_text="", bundle_rows=lambda study: lambda: ({}, {}),
                            section_and_rows=lambda **_: ({"raters": {"r1", "r2"}}, ({}, {})))
    monkeypatch.setattr(runs, "section_of", lambda study: section)
    run = services.metric_run_request(study=study, by=admin_user, bootstrap=20)
    assert_failed_as_a_worker_stores_it(run, "TypeError: Object of type set is not JSON serializable")


COMMAND = f"""
from annotation.models import Study
from django.conf import settings
from metrics import selectors, services
assert settings.CELERY_TASK_ALWAYS_EAGER, "not embedded"
def report_bug(**_):
    raise ValueError({MESSAGE!r})
selectors.unscored_judgments = report_bug
run = services.metric_run_request(study=Study.objects.get(slug="cab-demo"), by=None, trigger="command", bootstrap=20)
print(selectors.metric_run_said(run=run))
"""


def test_a_command_in_embedded_mode_whose_run_fails_finishes_normally(study):
    """A real process configured as a newcomer's (no REDIS_URL: tasks in-process) on the test database."""
    env = {name: value for name, value in os.environ.items() if name != "REDIS_URL"}
    done = subprocess.run([sys.executable, "manage.py", "shell", "-c", COMMAND],
                          env=env | {"DATABASE_URL": _database_url()}, cwd=settings.BASE_DIR,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    run = assert_failed_as_a_worker_stores_it(MetricRun.objects.get(study=study))
    assert f"metrics run {run.pk} failed: {REASON}" in done.stdout
    assert WORDS not in done.stderr, "the reason was logged"


def test_a_helper_task_that_fails_in_process_raises_nothing_into_its_run(embedded, monkeypatch):
    """A split run's helpers (``metrics.help``) are tasks too: on a worker, one that fails leaves the run's own
    worker to compute its chunks; sent in-process, its error must not fail the run that sent it either."""
    from metrics import scaleout
    from metrics.tasks import metric_run_help_enqueue

    def helper_bug(prefix: str) -> int:
        raise RuntimeError(f"helper for {prefix} hit a bug")

    monkeypatch.setattr(scaleout, "help_with", helper_bug)
    assert metric_run_help_enqueue("metric-run-1-boot", count=2) == 2


def _requested_with_a_bad_seed(study, by) -> MetricRun:
    """A run whose stored seed no request could give (a negative one): its bootstrap raises, on a worker and in
    the web process alike, without anything patched."""
    with transaction.atomic():  # sent when this commits
        run = services.metric_run_request(study=study, by=by, bootstrap=20)
        MetricRun.objects.filter(pk=run.pk).update(parameters=run.parameters | {"seed": -1})
    return run


@pytest.mark.worker
def test_a_worker_and_the_embedded_mode_store_a_failed_run_the_same(admin_user):
    from django.core.management import call_command

    from annotation.models import Study

    call_command("generate_synthetic", "--conversations", "6", "--reviewers", "3", "--seed", "1",
                 "--calibration-turns", "2", "--slug", "bad-seed")
    study = Study.objects.get(slug="bad-seed")
    with celery_worker() as worker:
        on_worker = _requested_with_a_bad_seed(study, admin_user)
        wait_for(lambda: MetricRun.objects.get(pk=on_worker.pk).status in {"succeeded", "failed"}, timeout=180)
        worker.terminate()
        worker_log = worker.communicate(timeout=60)[0]
    with embedded_celery():
        in_process = _requested_with_a_bad_seed(study, admin_user)
    assert_failed_as_a_worker_stores_it(on_worker, "ValueError: expected non-negative integer")
    assert stored_failure(in_process) == stored_failure(on_worker), "the same reason, traceback and all"
    assert f"metric run {on_worker.pk}: ValueError in " in worker_log, worker_log[-3000:]
    assert "non-negative" not in worker_log, "the reason was logged"
