#!/usr/bin/env python
"""A paper-scale report computed by a real Celery worker, next to a naive pure-Python baseline in the same run.

Study: 1,576 conversations, 42,230 responses coded once in the main round, 2 calibration rounds of 10 turns
coded by 7 reviewers and gold; bootstrap 1,000. The baseline (metrics/core/naive.py: loops and scikit-learn per
reviewer, per resample) runs at a small B and is extrapolated linearly to B = 1,000 — said so in the output.

    .venv/bin/python scripts/testenv.py -- .venv/bin/python benchmarks/metrics_worker.py
It migrates and fills the database it is given: never point it at a database you care about.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cab.settings")
os.environ.setdefault("LOG_LEVEL", "WARNING")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402

RESAMPLES = int(os.environ.get("RESAMPLES", "1000"))
NAIVE_B = int(os.environ.get("NAIVE_B", "16"))


def main() -> None:
    from annotation.models import Judgment, Study
    from metrics import selectors, services
    from metrics.core.naive import naive_ari, naive_calibration
    from metrics.models import MetricRun
    from tests.celery_worker import celery_worker, wait_for

    call_command("migrate", verbosity=0)
    started = time.monotonic()
    call_command("generate_synthetic", "--conversations", "1576", "--responses", "42230", "--reviewers", "7",
                 "--experts", "0", "--calibration-turns", "10", "--seed", "0", "--slug", "paper-scale")
    print(f"generate_synthetic: {time.monotonic() - started:.0f} s")
    study = Study.objects.get(slug="paper-scale")
    print(f"judgments: {Judgment.objects.filter(round__study=study).count():,}")

    with celery_worker() as worker:
        run = services.metric_run_request(study=study, by=None, trigger="benchmark", bootstrap=RESAMPLES)
        wait_for(lambda: MetricRun.objects.get(pk=run.pk).status in {"succeeded", "failed"}, timeout=1800)
        assert worker.poll() is None, "the worker died"
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    in_worker = (run.finished_at - run.started_at).total_seconds()
    end_to_end = (run.finished_at - run.created_at).total_seconds()
    print(f"worker: report with B={RESAMPLES} computed in {in_worker:.1f} s (request to stored result "
          f"{end_to_end:.1f} s, loading the judgments from PostgreSQL included)")

    inputs = selectors.report_inputs(study=study)

    def naive(b: int) -> None:
        for name in ("calibration-1", "calibration-2"):
            naive_calibration(inputs.attributes, inputs.judgments, name, resamples=b, seed=0,
                              experts=inputs.experts)
        naive_ari(inputs.attributes, inputs.judgments, panel=inputs.panel, resamples=b, seed=0)

    naive(0)  # warm-up: first-call costs would otherwise be charged to B=0 and make the slope meaningless
    timings = {}
    for b in (0, NAIVE_B):
        t = time.perf_counter()
        naive(b)
        timings[b] = time.perf_counter() - t
    per_resample = (timings[NAIVE_B] - timings[0]) / NAIVE_B
    naive_total = timings[0] + per_resample * RESAMPLES
    print(f"naive baseline (calibration agreement/κ/stability/CIs and ARI only): fixed {timings[0]:.1f} s + "
          f"{per_resample:.2f} s per resample, measured at B=0 and B={NAIVE_B}, extrapolated to B={RESAMPLES}: "
          f"{naive_total:.0f} s")
    print(f"ratio naive / worker: {naive_total / in_worker:.0f}x")


if __name__ == "__main__":
    main()
