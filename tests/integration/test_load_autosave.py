"""The short version of the autosave load script (perf/load_autosave.py --short: 5 reviewers for 5 s with
double submits and stale edits, on its own gunicorn and throwaway PostgreSQL) loses and duplicates nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_short_autosave_load_loses_and_duplicates_nothing():
    run = subprocess.run([sys.executable, str(ROOT / "perf/load_autosave.py"), "--short"], cwd=ROOT,
                         capture_output=True, text=True, timeout=900)
    said = run.stdout + run.stderr
    assert run.returncode == 0, said[-3000:]
    assert "lost judgments: 0\n" in run.stdout and "duplicated judgments: 0\n" in run.stdout, said[-3000:]
    assert "failed requests: 0\n" in run.stdout, said[-3000:]
    assert "double submits sent" in run.stdout and "409 stale" in run.stdout, "no double submit was refused"
