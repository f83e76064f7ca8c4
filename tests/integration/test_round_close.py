"""Closing a calibration round makes a real worker process compute its metric run: the request is sent to the
broker once the close commits, and the worker stores the report."""

from __future__ import annotations

import pytest

from calibration import services as calibration_services
from metrics.models import MetricRun
from tests import scenarios
from tests.celery_worker import celery_worker, wait_for


@pytest.mark.worker
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_closing_a_round_makes_a_worker_compute_its_metric_run():
    protocol = scenarios.protocol_study()
    round_ = scenarios.calibration_round_open(protocol, 1)
    scenarios.calibration_round_code(protocol, round_)
    with celery_worker():
        calibration_services.round_close(round=round_, by=protocol.admin)
        run = MetricRun.objects.get(study=protocol.study, trigger="round-closed")
        wait_for(lambda: MetricRun.objects.get(pk=run.pk).status in {"succeeded", "failed"}, timeout=180)
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    assert run.attempts == 1 and run.parameters["bootstrap"] == 1000
    assert set(run.result["calibration"]["reviewers"]) >= {"rev-a", "rev-b", "rev-c"}
