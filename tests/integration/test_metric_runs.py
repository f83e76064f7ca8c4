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
