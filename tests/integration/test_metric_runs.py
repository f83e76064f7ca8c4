"""A real worker process computes a requested metric run, with the same result as computing it inline."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from annotation.models import Judgment, Study
from metrics import runs, services
from metrics.models import MetricRun
from tests.celery_worker import celery_worker, wait_for


@pytest.mark.worker
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_worker_process_computes_a_requested_run(admin_user):
    call_command("generate_synthetic", "--conversations", "10", "--reviewers", "4", "--seed", "3",
                 "--calibration-turns", "2", "--slug", "worker-study")
    study = Study.objects.get(slug="worker-study")
    with celery_worker():
        run = services.metric_run_request(study=study, by=admin_user, trigger="api", bootstrap=50)
        wait_for(lambda: MetricRun.objects.get(pk=run.pk).status in {"succeeded", "failed"}, timeout=120)
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    assert run.attempts == 1 and run.started_at and run.finished_at
    inline = runs.report_build(study=study, bootstrap=50)
    assert run.result == json.loads(json.dumps(inline))
    assert Judgment.objects.filter(round__study=study).count() > 0


FAST_RECOVERY = {"METRIC_RUN_HEARTBEAT_SECONDS": "0.5", "METRIC_RUN_STALE_SECONDS": "3",
                 "METRIC_RUN_RECOVER_SECONDS": "1"}


@pytest.mark.worker
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_run_whose_worker_is_killed_is_finished_by_the_next_worker_with_exactly_one_result(admin_user):
    import os
    import signal

    call_command("generate_synthetic", "--conversations", "40", "--reviewers", "6", "--seed", "5",
                 "--calibration-turns", "6", "--slug", "killed-worker")
    study = Study.objects.get(slug="killed-worker")
    with celery_worker(env=FAST_RECOVERY) as first:
        run = services.metric_run_request(study=study, by=admin_user, trigger="api", bootstrap=20000)
        wait_for(lambda: MetricRun.objects.get(pk=run.pk).status == "running", timeout=120, interval=0.05)
        os.kill(first.pid, signal.SIGKILL)  # the whole worker, mid-run: no chance to give the message back
        first.wait(timeout=20)
    run.refresh_from_db()
    assert run.status == "running" and run.result is None, "killed before it could finish"
    with celery_worker(env=FAST_RECOVERY):
        wait_for(lambda: MetricRun.objects.get(pk=run.pk).status in {"succeeded", "failed"}, timeout=240)
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    assert run.attempts == 2 and MetricRun.objects.filter(study=study).count() == 1
    assert run.result == json.loads(json.dumps(runs.report_build(study=study, bootstrap=20000)))
