"""A large run splits its bootstrap across two real worker processes, and its result is the single-worker
result bit for bit."""

from __future__ import annotations

import json

import pytest
from django.conf import settings
from django.core.management import call_command

from annotation.models import Study
from metrics import runs, services
from metrics.models import MetricRun
from tests.celery_worker import celery_worker, wait_for

SPLIT_ALWAYS = {"METRIC_RUN_SPLIT_CELLS": "0", "METRIC_RUN_SPLIT_HELPERS": "2"}
RESAMPLES = 60_000  # 600 chunks: long enough for the second worker to take some


@pytest.mark.worker
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_split_run_uses_two_workers_and_gives_the_single_worker_result(admin_user):
    import redis

    call_command("generate_synthetic", "--conversations", "30", "--reviewers", "5", "--seed", "9",
                 "--calibration-turns", "4", "--slug", "split-study")
    study = Study.objects.get(slug="split-study")
    messages: set[str] = set()

    def finished() -> bool:
        run = MetricRun.objects.get(pk=run_id)
        messages.add(run.progress_message)
        return run.status in {"succeeded", "failed"}

    with celery_worker(env=SPLIT_ALWAYS), celery_worker(env=SPLIT_ALWAYS):
        run = services.metric_run_request(study=study, by=admin_user, trigger="api", bootstrap=RESAMPLES)
        run_id = run.pk
        wait_for(finished, timeout=300, interval=0.05)
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    owners = {client.get(key) for key in client.scan_iter(f"cab:metric-run:{run.pk}:*:claim:*")}
    assert len(owners) == 2, "both workers computed chunks"
    assert any(m.startswith("bootstrap:") for m in messages), messages  # the worker said which stage it was in
    single = runs.report_build(study=study, bootstrap=RESAMPLES)
    assert json.dumps(run.result, sort_keys=True) == json.dumps(json.loads(json.dumps(single)), sort_keys=True)
