"""A run finishes whatever fails under it (issue 31, items 2 and 5), shown with real processes: a split run whose
helper worker is killed (SIGKILL) while it holds a chunk finishes with the single-worker result once that chunk's
claim expires; a run whose broker message is lost (Redis killed and started again empty) is sent again by the
workers' recovery and finishes; a run asked for while Redis is frozen (SIGSTOP) answers within seconds, waits for the
broker saying so, and is sent once Redis answers again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import redis
from celery import Celery
from django.conf import settings
from django.core.management import call_command
from django.utils import timezone

from annotation.models import Study
from metrics import runs, services
from metrics.models import MetricRun
from tests.celery_worker import celery_worker, consuming_workers, process_env, wait_for
from tests.factories import StudyFactory
from tests.redis_server import free_port, redis_server

CLAIM_SECONDS = 2
SPLIT = {"METRIC_RUN_SPLIT_CELLS": "0", "METRIC_RUN_SPLIT_HELPERS": "1",
         "METRIC_RUN_CHUNK_CLAIM_SECONDS": str(CLAIM_SECONDS)}
RESAMPLES = 20_000  # 200 chunks of 100: a second or two of work, shared by the two workers


def _study(slug: str, conversations: int) -> Study:
    call_command("generate_synthetic", "--conversations", str(conversations), "--reviewers", "4", "--seed", "11",
                 "--calibration-turns", "2", "--slug", slug)
    return Study.objects.get(slug=slug)


def _published(client: redis.Redis, run_id: int) -> str | None:
    """The key prefix of the run's shared bootstrap (one not marked done: an earlier test's run may have had the id)."""
    for key in client.scan_iter(f"cab:metric-run:{run_id}:*:meta"):
        prefix = key.decode().removesuffix(":meta")
        if not client.exists(f"{prefix}:done"):
            return prefix
    return None


def _claims(client: redis.Redis, prefix: str) -> dict[int, tuple[str, int, bool]]:
    """Each claimed chunk: its holder's role ("run" or "helper"), process id, and whether its result is stored."""
    chunks = range(RESAMPLES // 100)
    holders = client.mget([f"{prefix}:claim:{c}" for c in chunks])
    stored = client.mget([f"{prefix}:chunk:{c}" for c in chunks])
    claims = {}
    for chunk, holder, result in zip(chunks, holders, stored, strict=True):
        if holder is not None:
            role, where, _ = holder.decode().split()
            claims[chunk] = (role, int(where.rsplit(":", 1)[1]), result is not None)
    return claims


@pytest.mark.worker
@pytest.mark.slow(20)
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_split_run_whose_helper_is_killed_holding_a_chunk_finishes_with_the_single_worker_result(admin_user):
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    with celery_worker(env=SPLIT) as first, celery_worker(env=SPLIT) as second:
        study = _study("helper-killed", 10)  # while the workers start: the study, and its report computed here
        single = runs.report_build(study=study, bootstrap=RESAMPLES)
        wait_for(lambda: consuming_workers() == 2, timeout=120)  # one takes the run, the other its helper task
        run = services.metric_run_request(study=study, by=admin_user, trigger="api", bootstrap=RESAMPLES)
        prefix = wait_for(lambda: _published(client, run.pk), timeout=60, interval=0.01)
        helper_pid = wait_for(lambda: next((pid for role, pid, _ in _claims(client, prefix).values()
                                            if role == "helper"), None), timeout=60, interval=0.005)
        workers = {first.pid: first, second.pid: second}
        # Frozen (SIGSTOP) while its claims are read, so what it holds cannot change between the look and the kill:
        # killed only while holding a chunk it has not stored; else let go on a moment and look again. A result it
        # sent just before it froze may still be on its way to Redis: the look waits for that to land (on a loaded
        # host the look came first, the result landed after, and the run took it from the helper after all).
        held: list[int] = []
        deadline = time.monotonic() + 60
        while not held and time.monotonic() < deadline:
            os.kill(helper_pid, signal.SIGSTOP)
            time.sleep(0.1)
            held = [chunk for chunk, (role, pid, stored) in _claims(client, prefix).items()
                    if role == "helper" and pid == helper_pid and not stored]
            if not held:
                os.kill(helper_pid, signal.SIGCONT)
                time.sleep(0.003)
        os.kill(helper_pid, signal.SIGKILL)  # the whole helper worker, mid-chunk: no chance to give anything back
        killed = time.monotonic()
        workers.pop(helper_pid).wait(timeout=20)
        assert len(held) == 1, "the helper died holding a chunk it had not computed"
        wait_for(lambda: MetricRun.objects.get(pk=run.pk).status in {"succeeded", "failed"}, timeout=60,
                 interval=0.05)
        took = time.monotonic() - killed
    (survivor,) = workers.values()
    log = survivor.stdout.read()
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    assert run.attempts == 1 and MetricRun.objects.filter(study=study).count() == 1
    assert f"bootstrap chunk {held[0]} of {prefix}: its helper stopped; computing it here" in log, log[-3000:]
    assert took < CLAIM_SECONDS + 10, f"{took:.1f} s after the helper was killed"
    assert json.dumps(run.result, sort_keys=True) == json.dumps(json.loads(json.dumps(single)), sort_keys=True)


RESEND_SECONDS = 3
FAST_RESEND = {"METRIC_RUN_RESEND_SECONDS": str(RESEND_SECONDS), "METRIC_RUN_RECOVER_SECONDS": "0.5"}
REQUEST = """
from django.contrib.auth import get_user_model
from annotation.models import Study
from metrics import services
run = services.metric_run_request(study=Study.objects.get(slug="message-lost"),
                                  by=get_user_model().objects.get(username="study-admin"), trigger="api", bootstrap=20)
print(run.pk)
"""


@pytest.mark.worker
@pytest.mark.slow(15)
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_run_whose_broker_message_was_lost_is_sent_again_and_finishes(admin_user, tmp_path):
    study = _study("message-lost", 6)
    port = free_port()
    broker = f"redis://127.0.0.1:{port}/0"
    with redis_server(port, tmp_path / "redis") as server:
        # requested by a process of its own on this broker (a web worker's), while no worker consumes
        asked = subprocess.run([sys.executable, "manage.py", "shell", "-c", REQUEST], cwd=settings.BASE_DIR,
                               env=process_env({"REDIS_URL": broker}), capture_output=True, text=True, timeout=120)
        assert asked.returncode == 0, asked.stderr[-3000:]
        run = MetricRun.objects.get(pk=int(asked.stdout.split()[-1]))
        assert run.status == "queued" and run.enqueued_at is not None
        assert redis.Redis.from_url(broker).llen("celery") == 1, "its message waits in the broker"
        server.kill()  # SIGKILL: nothing saved (nor configured to be)
        server.wait(timeout=10)
    with redis_server(port, tmp_path / "redis"):
        restarted = timezone.now()
        client = redis.Redis.from_url(broker)
        assert client.dbsize() == 0, "started again empty: the message is gone"
        # A worker that takes no run yet (its queue is another), so that the run's message can be read before it
        # is taken; its recovery sends the run again once it has waited RESEND_SECONDS since it was sent.
        with celery_worker(queues="parked", env={"REDIS_URL": broker, **FAST_RESEND}) as worker:
            wait_for(lambda: consuming_workers(broker) == 1, timeout=120)
            ready = time.monotonic()
            wait_for(lambda: MetricRun.objects.get(pk=run.pk).progress_message.startswith("sent again at "),
                     timeout=RESEND_SECONDS + 10, interval=0.05)
            assert time.monotonic() - ready < RESEND_SECONDS + 2
            run.refresh_from_db()
            assert run.status == "queued" and run.attempts == 0 and run.enqueued_at > restarted
            assert f"no worker had taken it {RESEND_SECONDS} s after it was queued" in run.progress_message
            assert client.llen("celery") == 1, "sent again: one message"
            control = Celery("control", broker=broker, set_as_current=False)  # the product's app sends on its own
            try:
                answered = control.control.add_consumer("celery", reply=True, limit=1, timeout=10)  # takes runs
            finally:
                control.close()
            assert answered, "the worker did not answer"
            wait_for(lambda: MetricRun.objects.get(pk=run.pk).status in {"succeeded", "failed"}, timeout=60,
                     interval=0.05)
    log = worker.stdout.read()
    run.refresh_from_db()
    assert run.status == "succeeded", (run.error, log[-3000:])
    assert run.attempts == 1 and MetricRun.objects.filter(study=study).count() == 1
    assert run.result == json.loads(json.dumps(runs.report_build(study=study, bootstrap=20)))


ASK_AND_RECOVER = """
import os, time
from django.contrib.auth import get_user_model
from annotation.models import Study
from metrics import services
from metrics.tasks import metric_runs_recover
if os.environ["STEP"] == "ask":
    started = time.monotonic()
    run = services.metric_run_request(study=Study.objects.get(slug="broker-frozen"),
                                      by=get_user_model().objects.get(username="study-admin"), trigger="api")
    print(run.pk, round(time.monotonic() - started, 1))
else:
    print(metric_runs_recover()["sent"])
"""


@pytest.mark.slow(15)
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_run_asked_for_while_redis_is_frozen_answers_says_so_and_is_sent_once_redis_answers(admin_user, tmp_path):
    """Redis stopped answering (SIGSTOP: its connections stay open, nothing comes back): asking for a run answers
    within seconds, the run stored queued and saying it waits for the broker, as when Redis refuses connections;
    before, the broker's publish waited forever (the page, the API or the round's closing never answered, and the
    web worker was killed by gunicorn's timeout). Once Redis answers again, the workers' recovery sends it."""
    StudyFactory(slug="broker-frozen")
    port = free_port()
    env = process_env({"REDIS_URL": f"redis://127.0.0.1:{port}/0"})

    def run_script(step: str, timeout: float) -> str:
        done = subprocess.run([sys.executable, "manage.py", "shell", "-c", ASK_AND_RECOVER], cwd=settings.BASE_DIR,
                              env={**env, "STEP": step}, capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    with redis_server(port, tmp_path / "redis") as server:
        os.kill(server.pid, signal.SIGSTOP)
        try:
            run_id, took = run_script("ask", timeout=90).split()[-2:]
        finally:
            os.kill(server.pid, signal.SIGCONT)
        assert float(took) < 30, f"the request waited {took} s for the broker"
        run = MetricRun.objects.get(pk=int(run_id))
        assert run.status == "queued" and run.enqueued_at is None
        assert run.progress_message.startswith("waiting for the task broker, which cannot be reached")
        assert redis.Redis.from_url(f"redis://127.0.0.1:{port}/0").llen("celery") == 0
        assert run_script("recover", timeout=90).split()[-1] == "1"
        run.refresh_from_db()
        assert run.status == "queued" and run.enqueued_at is not None and run.progress_message == "queued for a worker"
        assert redis.Redis.from_url(f"redis://127.0.0.1:{port}/0").llen("celery") == 1, "sent: one message"
