"""The suite runs against the real services: PostgreSQL, Redis, and a Celery worker process."""

from __future__ import annotations

import os

import pytest
from django.conf import settings
from django.db import connection

from cab.celery import ping
from cab.embedded_db.server import OLDEST_VERSION
from tests.celery_worker import celery_worker

REQUIRED = os.environ.get("CAB_TEST_SERVICES") == "1"


@pytest.mark.django_db
def test_database_is_postgresql_when_the_test_command_runs():
    if not REQUIRED:
        pytest.fail("run the suite through ./scripts/test, which starts PostgreSQL and Redis")
    assert connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        (version,) = cursor.fetchone()
    assert int(version.split(".")[0]) >= OLDEST_VERSION


def test_celery_uses_redis_not_in_process_execution():
    assert settings.CELERY_BROKER_URL.startswith("redis://")
    assert settings.CELERY_TASK_ALWAYS_EAGER is False


@pytest.mark.worker
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_task_goes_through_redis_to_a_worker_process_and_back():
    with celery_worker() as worker:
        result = ping.delay(41).get(timeout=60)
        assert worker.poll() is None, "the worker died"
    assert result["echo"] == 41
    assert result["db"] == "postgresql" and result["select"] == 1
    assert result["pid"] != os.getpid()
