"""A run finishes whatever fails under it (issue 31, items 2 and 5), shown with real processes: a split run whose
helper worker is killed (SIGKILL) while it holds a chunk finishes with the single-worker result once that chunk's
claim expires; a run whose broker message is lost (Redis killed and started again empty) is sent again by the
workers' recovery and finishes; a run asked for while Redis is frozen (SIGSTOP) answers within seconds, waits for the
broker saying so, and is sent once Redis answers again."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

import pytest
import redis
from celery import Celery
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command
from django.utils import timezone

from annotation.models import Study
from metrics import runs, scaleout, services
from metrics.models import MetricRun
from tests.celery_worker import celery_worker, consuming_workers, process_env, wait_for
from tests.factories import StudyFactory
from tests.redis_server import free_port, redis_server

CLAIM_SECONDS = 2
SPLIT = {"METRIC_RUN_SPLIT_CELLS": "0", "METRIC_RUN_SPLIT_HELPERS": "1",
         "METRIC_RUN_CHUNK_CLAIM_SECONDS": str(CLAIM_SECONDS)}
RESAMPLES = 20_000  # 200 chunks of 100: a second or two of work, shared by the two workers
ATTEMPTS = 3


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


def _chunks(client: redis.Redis, prefix: str) -> tuple[dict[int, tuple[str, bool]], bool]:
    """Each claimed chunk: who holds it (the claim's value) and whether its result is stored; and whether the run
    is done. One MGET: one moment's state."""
    chunks = range(RESAMPLES // 100)
    *values, done = client.mget([*(f"{prefix}:claim:{c}" for c in chunks), *(f"{prefix}:chunk:{c}" for c in chunks),
                                 f"{prefix}:done"])
    holders, stored = values[:len(chunks)], values[len(chunks):]
    claims = {chunk: (holder.decode(), result is not None)
              for chunk, holder, result in zip(chunks, holders, stored, strict=True) if holder is not None}
    return claims, done is not None


def _pid(holder: str) -> int:
    """The process id a claim's holder names (``helper HOST:PID TAG``, metrics.scaleout.owner)."""
    return int(holder.split()[1].rsplit(":", 1)[1])


def _fate(client: redis.Redis, prefix: str, chunk: int, holder: str) -> str | None:
    """What became of the chunk a killed helper held, once nothing it sent can reach Redis any more: "stored" (its
    result landed after all, or the run finished with it), "lost" (not stored, still claimed by the helper, and the
    run's first pass went past it: only the run's collecting, once the claim expires, can compute it), "expired"
    (the claim expired before the run's first pass came to it, which then took it without a word); None: not yet
    known (the run's first pass has not come to it)."""
    claims, done = _chunks(client, prefix)
    if done or claims.get(chunk, ("", False))[1]:
        return "stored"
    if claims.get(chunk, ("", False))[0] != holder:
        return "expired"
    passed = any(later > chunk and who.startswith("run ") for later, (who, _) in claims.items())
    return "lost" if passed else None


def _connected(client: redis.Redis, holder: str) -> bool:
    """Whether Redis lists the connection through which the holder claims and stores chunks."""
    return any(c["name"] == scaleout.connection_name(holder) for c in client.client_list())


@dataclass
class Killed:
    """An attempt that showed the path: the run, its key prefix, the chunk the killed helper held, the seconds from
    the kill to the run's end, and the log of the worker that survived."""

    run: MetricRun
    prefix: str
    chunk: int
    took: float
    log: str


def _kill_the_helper_holding_a_chunk(client: redis.Redis, study: Study, by: User) -> Killed | None:
    """A split run on two workers whose helper is killed while it holds a chunk it has not stored, which the run's
    worker then computes once the claim expires; None when the attempt turned out not to show that (``_fate``): the
    chunk's result, sent just before the helper froze, reached Redis after the look and the run took it from the
    helper, or the claim expired before the run's first pass came to the chunk."""
    with celery_worker(env=SPLIT) as first, celery_worker(env=SPLIT) as second:
        wait_for(lambda: consuming_workers() == 2, timeout=120)  # one takes the run, the other its helper task
        run = services.metric_run_request(study=study, by=by, trigger="api", bootstrap=RESAMPLES)
        prefix = wait_for(lambda: _published(client, run.pk), timeout=60, interval=0.01)
        holder = wait_for(lambda: next((who for who, _ in _chunks(client, prefix)[0].values()
                                        if who.startswith("helper ")), None), timeout=60, interval=0.005)
        helper_pid = _pid(holder)
        workers = {first.pid: first, second.pid: second}
        # Frozen (SIGSTOP) while its claims are read, so that it claims and stores nothing between the look and the
        # kill: killed only while holding a chunk it has not stored; else let go on a moment and look again. (The
        # pause before the look lets most of what it sent before it froze land first; what may land after is
        # decided below.)
        held: list[int] = []
        deadline = time.monotonic() + 60
        while not held and time.monotonic() < deadline:
            os.kill(helper_pid, signal.SIGSTOP)
            time.sleep(0.1)
            held = [chunk for chunk, (who, stored) in _chunks(client, prefix)[0].items()
                    if who == holder and not stored]
            if not held:
                os.kill(helper_pid, signal.SIGCONT)
                time.sleep(0.003)
        named = _connected(client, holder)
        os.kill(helper_pid, signal.SIGKILL)  # the whole helper worker, mid-chunk: no chance to give anything back
        killed = time.monotonic()
        workers.pop(helper_pid).wait(timeout=20)
        assert len(held) == 1, "the helper died holding a chunk it had not computed"
        assert named, "the connection through which the helper claimed is named after the claims' holder"
        # A result it sent just before it froze may still have been on its way (written to the socket, not yet read
        # by Redis) at the look: Redis reads a closed connection to its end, so once it has dropped the helper's,
        # whatever the helper sent is in, and the chunk's fate is decided.
        wait_for(lambda: not _connected(client, holder), timeout=20, interval=0.005)
        fate = wait_for(lambda: _fate(client, prefix, held[0], holder), timeout=20, interval=0.005)
        wait_for(lambda: MetricRun.objects.get(pk=run.pk).status in {"succeeded", "failed"}, timeout=60,
                 interval=0.05)
        took = time.monotonic() - killed
    (survivor,) = workers.values()
    run.refresh_from_db()
    return Killed(run, prefix, held[0], took, survivor.stdout.read()) if fate == "lost" else None


@pytest.mark.worker
@pytest.mark.slow(20)
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_split_run_whose_helper_is_killed_holding_a_chunk_finishes_with_the_single_worker_result(admin_user):
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    study = _study("helper-killed", 10)
    single = runs.report_build(study=study, bootstrap=RESAMPLES)
    attempts = 0
    killed = None
    while killed is None and attempts < ATTEMPTS:  # an attempt that did not show the path is not counted
        attempts += 1
        killed = _kill_the_helper_holding_a_chunk(client, study, admin_user)
    assert killed is not None, f"in {attempts} attempts the helper was never killed holding a chunk for good"
    run = killed.run
    assert run.status == "succeeded", run.error
    assert run.attempts == 1 and MetricRun.objects.filter(study=study).count() == attempts
    assert f"bootstrap chunk {killed.chunk} of {killed.prefix}: its helper stopped; computing it here" in killed.log, \
        killed.log[-3000:]
    assert killed.took < CLAIM_SECONDS + 10, f"{killed.took:.1f} s after the helper was killed"
    assert json.dumps(run.result, sort_keys=True) == json.dumps(json.loads(json.dumps(single)), sort_keys=True)


# The worker's recovery runs once when the worker is ready, by when the message (sent before Redis was killed) has
# waited longer than RESEND_SECONDS: it is sent again then, and the next pass, which could send it once more, comes
# RECOVER_SECONDS later.
RESEND_SECONDS = 1
RECOVER_SECONDS = 60
FAST_RESEND = {"METRIC_RUN_RESEND_SECONDS": str(RESEND_SECONDS), "METRIC_RUN_RECOVER_SECONDS": str(RECOVER_SECONDS)}
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
        started = time.monotonic()
        with celery_worker(queues="parked", env={"REDIS_URL": broker, **FAST_RESEND}) as worker:
            wait_for(lambda: consuming_workers(broker) == 1, timeout=120)
            ready = time.monotonic()
            wait_for(lambda: MetricRun.objects.get(pk=run.pk).progress_message.startswith("sent again at "),
                     timeout=RESEND_SECONDS + 10, interval=0.05)
            assert time.monotonic() - ready < RESEND_SECONDS + 4
            run.refresh_from_db()
            assert run.status == "queued" and run.attempts == 0 and run.enqueued_at > restarted
            assert f"no worker had taken it {RESEND_SECONDS} s after it was queued" in run.progress_message
            messages = client.llen("celery")
            # read before the recovery's second pass could send it once more (on a loaded host, a look seconds
            # after the first would count that second message too)
            assert time.monotonic() - started < RECOVER_SECONDS, "the queue was read after the recovery's next pass"
            assert messages == 1, "sent again: one message"
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
def ask():
    started = time.monotonic()
    run = services.metric_run_request(study=Study.objects.get(slug="broker-frozen"),
                                      by=get_user_model().objects.get(username="study-admin"), trigger="api")
    print(run.pk, round(time.monotonic() - started, 1), flush=True)
if os.environ["STEP"] == "ask":
    ask()
elif os.environ["STEP"] == "ask, then ask again once told":  # the second on the connection the first made
    ask()
    input()
    ask()
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

ASKED = r"^(\d+) (\d+(?:\.\d+)?)$"


def _asked(output: str) -> tuple[str, str]:
    """The run id and seconds ``ask`` printed (the last such line: the process logs to its standard output too)."""
    found = re.findall(ASKED, output, re.MULTILINE)
    assert found, output[-3000:]
    return found[-1]


@pytest.mark.slow(15)
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_run_asked_for_on_a_connection_to_redis_that_froze_since_answers_within_seconds(admin_user, tmp_path):
    """A web worker's connection to the broker, made by an earlier run's sending, is open when Redis stops answering:
    asking for a run answers in about 15 s (a publish and one retry on a new connection, each bounded by the 5 s
    socket timeouts), the run stored queued and waiting for the broker. Before, Celery's default publish retries (three
    after the first) held the request, the page or the round's closing 26-28 s."""
    StudyFactory(slug="broker-frozen")
    port = free_port()
    env = process_env({"REDIS_URL": f"redis://127.0.0.1:{port}/0", "STEP": "ask, then ask again once told"})
    with redis_server(port, tmp_path / "redis") as server:
        asking = subprocess.Popen([sys.executable, "manage.py", "shell", "-c", ASK_AND_RECOVER], cwd=settings.BASE_DIR,
                                  env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
        try:
            said = ""
            while not re.search(ASKED, said, re.MULTILINE) and asking.poll() is None:
                said += asking.stdout.readline()
            first_id = _asked(said)[0]  # sent: the worker's connection to Redis is open
            os.kill(server.pid, signal.SIGSTOP)
            try:
                out, err = asking.communicate("go\n", timeout=90)
            finally:
                os.kill(server.pid, signal.SIGCONT)
        finally:
            asking.kill()
        assert asking.returncode == 0, err[-3000:]
        run_id, took = _asked(out)
        assert float(took) < 20, f"the request waited {took} s for the broker"
        first, run = MetricRun.objects.get(pk=int(first_id)), MetricRun.objects.get(pk=int(run_id))
        assert first.enqueued_at is not None and run.enqueued_at is None
        assert run.status == "queued" and run.progress_message.startswith("waiting for the task broker")
        # The first run's message; the second's may have been written to the frozen server's socket and taken once it
        # answered again: the recovery sends it again all the same, a second delivery a no-op.
        assert redis.Redis.from_url(f"redis://127.0.0.1:{port}/0").llen("celery") >= 1, "the first run's message"
