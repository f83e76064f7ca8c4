"""A real Celery worker process for tests: consumes from the test Redis and uses the test database."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator

from django.conf import settings
from django.db import connection


def _database_url() -> str:
    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
    return f"postgres://{auth}@{s['HOST']}:{s['PORT']}/{s['NAME']}"


def process_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a process of the product on the test database and Redis; ``env`` adds settings (a
    REDIS_URL of its own among them)."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        raise RuntimeError("a real worker needs REDIS_URL; run the suite with ./scripts/test")
    return {**os.environ, "DATABASE_URL": _database_url(), "REDIS_URL": settings.CELERY_BROKER_URL, **(env or {})}


@contextlib.contextmanager
def celery_worker(queues: str = "celery", env: dict[str, str] | None = None) -> Iterator[subprocess.Popen]:
    """A worker process (solo pool: the task runs in the process itself); ``env`` adds settings for it."""
    env = process_env(env)
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "cab", "worker", "--pool=solo", "--concurrency=1",
         "--without-heartbeat", "--without-gossip", "--without-mingle", "-Q", queues, "--loglevel=WARNING"],
        env=env, cwd=settings.BASE_DIR, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def consuming_workers(broker_url: str | None = None) -> int:
    """How many worker processes wait for a task on the broker (Redis clients whose last command was BRPOP, on the
    broker's database): a started worker counts once it consumes."""
    import redis

    client = redis.Redis.from_url(broker_url or settings.CELERY_BROKER_URL)
    database = str(client.connection_pool.connection_kwargs.get("db", 0))
    return sum(1 for c in client.client_list() if c["cmd"] == "brpop" and c["db"] == database)


def wait_for(predicate, timeout: float = 60.0, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError("condition not met in time")
