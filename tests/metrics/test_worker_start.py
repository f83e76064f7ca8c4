"""What a Celery worker does before its first run: it imports the computation while it starts (the first run
neither pays for the import nor waits on the import lock behind the recovery thread), and every report and
bootstrap chunk is computed with one BLAS thread (the last bit of a matrix product depends on the thread count,
so the same run on machines with different cores, or a chunk computed by a helper, would differ otherwise)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.conf import settings
from threadpoolctl import threadpool_info, threadpool_limits

from annotation.models import Study
from metrics import runs, scaleout

PROBE = """
import json, sys
import django
django.setup()
import cab.celery, metrics.tasks
before = "numpy" in sys.modules or "metrics.runs" in sys.modules
from celery.signals import worker_init
worker_init.send(sender=None)
print(json.dumps([before, "metrics.runs" in sys.modules, "scipy" in sys.modules]))
"""


def test_a_starting_worker_imports_the_computation_and_a_web_process_does_not():
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=settings.BASE_DIR, capture_output=True, text=True,
                         check=True, env={**os.environ, "DJANGO_SETTINGS_MODULE": "cab.settings"})
    before, runs_loaded, scipy_loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert not before, "importing the tasks module (as web workers do) loaded the science stack"
    assert runs_loaded and scipy_loaded, "worker_init did not import the computation"


def _blas_threads() -> set[int]:
    return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}


@pytest.mark.django_db
def test_a_report_is_computed_on_one_blas_thread_whatever_the_process_had():
    study = _small_study()
    with threadpool_limits(limits=2, user_api="blas"):  # what OpenBLAS takes by default on a 2-core machine
        report = runs.report_build(study=study, bootstrap=30)
        assert _blas_threads() == {1}
    with threadpool_limits(limits=1, user_api="blas"):
        assert runs.report_build(study=study, bootstrap=30) == report


@pytest.mark.django_db
def test_a_helper_computes_its_chunks_on_one_blas_thread(settings):
    # The chunks are published in Redis, which ./scripts/test always starts: without it this test fails, never skips.
    assert str(settings.CELERY_BROKER_URL).startswith("redis://"), "run the tests with ./scripts/test (Redis)"
    prepared = runs.report_prepare(study=_small_study(), bootstrap=30)
    prefix = scaleout.publish(prepared.bootstrap, run_id=0)
    with threadpool_limits(limits=2, user_api="blas"):
        assert scaleout.help_with(prefix) == prepared.bootstrap.chunks
        assert _blas_threads() == {1}


def _small_study() -> Study:
    from django.core.management import call_command

    call_command("generate_synthetic", "--conversations", "6", "--reviewers", "3", "--seed", "5",
                 "--calibration-turns", "2", "--slug", "blas")
    return Study.objects.select_related("schema").get(slug="blas")
