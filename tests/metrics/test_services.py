"""Requesting a metric run (metrics/services.py): parameters checked before anything is stored; when the broker
cannot be reached the run stays queued, says so, and is never computed inside the request."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.conf import settings
from django.core.exceptions import ValidationError

from metrics import services
from metrics.models import MetricRun
from tests.celery_worker import _database_url
from tests.factories import StudyFactory


@pytest.mark.django_db
def test_request_refuses_bad_parameters(admin_user):
    with pytest.raises(ValidationError, match="must be a whole number from 1 to 100000"):
        services.metric_run_request(study=StudyFactory(), by=admin_user, bootstrap=0)
    assert not MetricRun.objects.exists()


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_an_unreachable_broker_leaves_the_run_queued_saying_so_and_never_runs_it_inline(admin_user):
    """A real process whose broker address has nothing listening (port 1) requests a run."""
    study = StudyFactory()
    code = ("from annotation.models import Study; from metrics import selectors, services; "
            f"run = services.metric_run_request(study=Study.objects.get(pk={study.pk}), by=None, bootstrap=10); "
            "print(selectors.metric_run_said(run=run))")
    env = dict(os.environ, DATABASE_URL=_database_url(), REDIS_URL="redis://127.0.0.1:1/0")
    done = subprocess.run([sys.executable, "manage.py", "shell", "-c", code], env=env, cwd=settings.BASE_DIR,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    run = MetricRun.objects.get(study=study)
    assert run.status == "queued" and run.enqueued_at is None
    assert run.progress_message.startswith("waiting for the task broker")
    assert "the task broker cannot be reached; it starts by itself when the broker is back" in done.stdout
    assert run.result is None and run.started_at is None
