"""What every benchmark shares: the preamble (import path, settings), the ``--json`` / ``--scale`` options, the
figure line that ``scripts/bench`` reads, and serving the project with gunicorn on a free loopback port.

The contract with ``scripts/bench``: with ``--json`` a benchmark prints, at the end of its output, one JSON object a
line, ``{"figure": str, "value": float, "unit": str, "baseline": str, "baseline_value": float, "target": str,
"met": bool}``; ``--scale 1`` is paper scale (42,230 responses, about 690,000 judgments), a fraction (0.02) is the
CI size. A target names its comparison first (``≥ 30,000``, ``< 0.5``, ``≤ 3.5×`` — the last on value / baseline),
so the table can say by how much a figure missed.

No Django at import time: a benchmark calls ``django_setup()`` when it wants the project.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cab.settings")
os.environ.setdefault("LOG_LEVEL", "WARNING")

# The project plus the benchmarks' two floors (never served by the product): the bare ``SELECT 1`` request and the
# signed-in POST that does nothing (perf/bare_wsgi.py).
BARE_APP = "perf.bare_wsgi:application"
BARE_PATH = "/bench/select-1"
SIGNED_IN_PATH = "/bench/signed-in"

FIGURE_KEYS = ("figure", "value", "unit", "baseline", "baseline_value", "target", "met")


def django_setup() -> None:
    import django

    django.setup()


def add_arguments(parser: argparse.ArgumentParser, *, scale: float = 1.0) -> None:
    parser.add_argument("--json", action="store_true",
                        help="end with one JSON object per figure and line (what scripts/bench reads)")
    parser.add_argument("--scale", type=float, default=scale,
                        help=f"1 = paper scale (42,230 responses); 0.02 for CI (default {scale:g})")


def scaled(count: int, scale: float, *, minimum: int = 1) -> int:
    return max(minimum, round(count * scale))


def require_postgres(name: str) -> None:
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        sys.exit(f"{name}: run under scripts/testenv.py (PostgreSQL, throwaway)")


def figure(name: str, value: float, unit: str, *, baseline: str, baseline_value: float, target: str,
           met: bool) -> dict:
    return {"figure": name, "value": float(value), "unit": unit, "baseline": baseline,
            "baseline_value": float(baseline_value), "target": target, "met": bool(met)}


def print_figures(figures: list[dict]) -> None:
    """The figures as JSON lines, last in the output (scripts/bench reads every line that is one)."""
    sys.stdout.flush()
    for row in figures:
        clean = {key: (None if isinstance(value, float) and not math.isfinite(value) else value)
                 for key, value in row.items()}
        print(json.dumps(clean, ensure_ascii=False), flush=True)


def parse_figures(output: str) -> list[dict]:
    """The figure lines of a benchmark's output (any other line is ignored)."""
    figures = []
    for line in output.splitlines():
        line = line.strip()
        if not (line.startswith("{") and line.endswith("}")):
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict) and all(key in row for key in FIGURE_KEYS):
            figures.append(row)
    return figures


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


# --- processes and memory ----------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def vm_kib(pid: int, key: str = "VmHWM") -> int:
    """A memory line of /proc/PID/status (VmHWM: peak resident set; VmRSS: now), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1])
    return 0


def worker_pids(master: int) -> list[int]:
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    return [int(child) for child in children] or [master]


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def server_env(extra: dict | None = None) -> dict[str, str]:
    """The environment a served process (gunicorn, a Celery worker) runs with: the product's own settings, not the
    test suite's. ``scripts/testenv.py`` turns persistent database connections off for the tests (a live server's
    threads would keep theirs open past the test database's teardown); a benchmark under it would otherwise open a
    new PostgreSQL connection on every request, which no deployment does (``DB_CONN_MAX_AGE``, default 60 s)."""
    served = {k: v for k, v in os.environ.items() if k != "DB_CONN_MAX_AGE"}
    return dict(served, DEBUG="0", PYTHONUNBUFFERED="1", **(extra or {}))


@contextlib.contextmanager
def gunicorn(*, workers: int = 1, timeout: int = 900, env: dict | None = None,
             app: str = "cab.wsgi:application") -> Iterator[tuple[str, int]]:
    """The project on gunicorn (sync workers, DEBUG off) on a free loopback port: yields (base URL, master pid)
    once the health check answers; stops it afterwards. ``app``: the WSGI application (``BARE_APP`` adds the bare
    ``SELECT 1`` path of ``perf/bare_wsgi.py`` to the project's)."""
    import requests

    port = free_port()
    server = subprocess.Popen(
        [str(ROOT / ".venv/bin/gunicorn"), app, "--bind", f"127.0.0.1:{port}", "--workers",
         str(workers), "--timeout", str(timeout), "--log-level", "warning"],
        cwd=ROOT, env=server_env(env),
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if requests.get(f"{base}/healthz", timeout=10).status_code == 200:
                    break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit("gunicorn did not start")
            time.sleep(0.2)
        yield base, server.pid
    finally:
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
