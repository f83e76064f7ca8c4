"""A metric run through a PostgreSQL blip, on the test's real server: its connections are ended from the server's
side (``pg_terminate_backend``, what a restart does to every open connection: "terminating connection due to
administrator command"). The heartbeat survives a blip and goes on beating."""

from __future__ import annotations

import pytest
from django.db import connection
from django.utils import timezone

from metrics import runs
from metrics.models import MetricRun
from tests.celery_worker import wait_for
from tests.factories import MetricRunFactory, StudyFactory

pytestmark = pytest.mark.django_db(transaction=True)  # the heartbeat and the blips use connections of their own


def _end_other_connections() -> int:
    """End every other connection to this test's database, as a restart of PostgreSQL ends them all."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                       "WHERE datname = current_database() AND pid <> pg_backend_pid()")
        return cursor.fetchone()[0]


def test_the_heartbeat_goes_on_beating_after_its_connection_is_ended(settings):
    """Before, the first database error ended the heartbeat thread: after a brief restart a long run stopped
    beating, another worker's recovery took it over and computed it again, and three blips failed it."""
    settings.METRIC_RUN_HEARTBEAT_SECONDS = 0.05
    run = MetricRunFactory(study=StudyFactory(), status="running", heartbeat_at=timezone.now())
    beat = runs._Heartbeat(run.pk)
    beat.start()
    try:
        for blip in range(3):
            before = MetricRun.objects.get(pk=run.pk).heartbeat_at
            wait_for(lambda before=before: MetricRun.objects.get(pk=run.pk).heartbeat_at > before, timeout=10)
            assert _end_other_connections() >= 1, "the heartbeat holds a connection"
            ended = timezone.now()
            wait_for(lambda ended=ended: MetricRun.objects.get(pk=run.pk).heartbeat_at > ended or not beat.is_alive(),
                     timeout=10)
            assert beat.is_alive(), f"the heartbeat stopped at blip {blip + 1}"
    finally:
        beat.stop()
    assert not beat.is_alive()
