#!/usr/bin/env python
"""A study bundle at a chosen scale (docs/bundle.md#cost): the time to build it, its size, and the time of its
recompute without Django (``python -m metrics.core.recompute``, a fresh process), whose report.json must be the
bundle's byte for byte (the script exits 1 when it is not).

    .venv/bin/python scripts/testenv.py -- .venv/bin/python perf/bundle.py [--scale 1] [--resamples 1000]

Scale 1 is paper scale (the study of perf/metrics_worker.py: 1,576 conversations, 42,230 responses, about
690,000 judgments). It migrates and fills the database it is given: never point it at a database you care about.
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "perf"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cab.settings")
os.environ.setdefault("DEBUG", "0")
os.environ.setdefault("LOG_LEVEL", "INFO")  # the run's and the bundle's phases

from _common import django_setup, require_postgres, scaled  # noqa: E402

PAPER_CONVERSATIONS, PAPER_RESPONSES = 1_576, 42_230


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--keep", type=Path, default=None, help="copy the bundle here (to recompute it again)")
    args = parser.parse_args()
    require_postgres("bundle")
    django_setup()

    from django.core.management import call_command
    from django.test import override_settings

    from annotation.models import Judgment, Study
    from metrics import runs, services
    from metrics.models import MetricRun
    from reports import bundle

    call_command("migrate", verbosity=0)
    conversations = scaled(PAPER_CONVERSATIONS, args.scale, minimum=20)
    responses = max(scaled(PAPER_RESPONSES, args.scale), conversations * 5)
    started = time.perf_counter()
    call_command("generate_synthetic", "--conversations", str(conversations), "--responses", str(responses),
                 "--reviewers", "7", "--experts", "0", "--calibration-turns", "10", "--seed", "0",
                 "--slug", "bench-bundle", stdout=io.StringIO())
    study = Study.objects.get(slug="bench-bundle")
    judgments = Judgment.objects.filter(round__study=study, score__isnull=False).count()
    print(f"study: {judgments:,} judgments, generated in {time.perf_counter() - started:.0f} s", flush=True)
    run = services.metric_run_request(study=study, by=None, bootstrap=args.resamples)
    started = time.perf_counter()
    runs.metric_run_execute(run_id=run.pk)
    run = MetricRun.objects.get(pk=run.pk)
    print(f"metric run (B = {args.resamples:,}): {run.status} in {time.perf_counter() - started:.1f} s", flush=True)

    with tempfile.TemporaryDirectory() as folder, override_settings(BUNDLE_DIR=folder):
        started = time.perf_counter()
        built = bundle.bundle_file(run=run)
        build = time.perf_counter() - started
        with zipfile.ZipFile(built.path) as archive:
            names = archive.namelist()
            report = archive.read("report.json")
        print(f"bundle: built in {build:.1f} s, {built.size / 1e6:.1f} MB, {len(names)} files", flush=True)
        started = time.perf_counter()
        cached = bundle.bundle_file(run=run)
        print(f"bundle: second request (the cached file) in {time.perf_counter() - started:.3f} s")
        assert cached.sha256 == built.sha256
        out = Path(folder) / "recomputed.json"
        environment = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL")}
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "metrics.core.recompute", str(built.path), "-o", str(out)],
                              cwd=ROOT, env=environment, capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - started
        print(f"recompute (a fresh process, no Django): {seconds:.1f} s wall; it said: {done.stderr.strip()}")
        identical = done.returncode == 0 and out.read_bytes() == report
        print(f"report.json byte for byte: {'yes' if identical else 'NO'}")
        if args.keep is not None:
            args.keep.write_bytes(built.path.read_bytes())
    print(f"machine: {os.cpu_count()} CPUs, load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
