"""Sharing a run's bootstrap through Redis (metrics/scaleout.py) when Redis goes away. Redis is not a single point of
failure: a split run whose Redis stops (connections refused) or stops answering (frozen with SIGSTOP) right after the
run published its problem computes the chunks left on its own worker, and one whose Redis is down before it could
publish computes alone; each stores the single-worker result, bit for bit, instead of failing with the connection's
error."""

from __future__ import annotations

import json
import logging
import os
import signal
import time

import pytest
import redis
from django.core.management import call_command

from annotation.models import Study
from metrics import runs, scaleout, services
from tests.redis_server import free_port, redis_server

RESAMPLES = 500  # 5 chunks


@pytest.mark.django_db
@pytest.mark.parametrize("fault", ["down", "stopped", "frozen"])
def test_a_split_run_whose_redis_goes_away_finishes_alone_with_the_single_worker_result(
        admin_user, settings, tmp_path, caplog, fault):
    call_command("generate_synthetic", "--conversations", "6", "--reviewers", "3", "--seed", "5",
                 "--calibration-turns", "2", "--slug", "alone")
    study = Study.objects.get(slug="alone")
    single = runs.report_build(study=study, bootstrap=RESAMPLES)
    port = free_port()
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{port}/0"  # where scaleout shares the chunks: this test's own
    settings.METRIC_RUN_SPLIT_CELLS = 0
    run = services.metric_run_request(study=study, by=admin_user, bootstrap=RESAMPLES)
    published = []
    with redis_server(port, tmp_path / "redis") as server:
        if fault == "down":
            server.terminate()
            server.wait(timeout=10)

        def send_helpers(prefix: str, *, count: int) -> int:
            """The broker goes away once the problem is published, before any chunk is claimed."""
            published.append(redis.Redis.from_url(settings.CELERY_BROKER_URL).exists(f"{prefix}:arrays"))
            if fault == "stopped":
                server.terminate()
                server.wait(timeout=10)
            else:
                os.kill(server.pid, signal.SIGSTOP)
            return 0

        started = time.monotonic()
        try:
            with caplog.at_level(logging.WARNING):
                assert runs.metric_run_execute(run_id=run.pk, send_helpers=send_helpers) is True
        finally:
            if fault == "frozen":
                os.kill(server.pid, signal.SIGCONT)
        took = time.monotonic() - started
    run.refresh_from_db()
    assert published == ([] if fault == "down" else [1]), "the run was split: its problem was in Redis"
    assert run.status == "succeeded", run.error
    assert run.attempts == 1 and run.progress_message == "done"
    assert json.dumps(run.result, sort_keys=True) == json.dumps(json.loads(json.dumps(single)), sort_keys=True)
    alone = "computing the bootstrap alone" if fault == "down" else "computing the 5 chunks left here"
    assert "Redis cannot be reached" in caplog.text and alone in caplog.text, caplog.text
    assert took < 4 * scaleout.SOCKET_SECONDS + 30, f"{took:.1f} s: a frozen Redis held the run"
