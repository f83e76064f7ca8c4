"""Gunicorn settings for the web workers, read from the working directory (``gunicorn cab.wsgi:application``);
command-line options given with it win.

- The application is loaded once, in the master, before the workers fork: they share its pages, and nothing in
  them is collected again (``gc.freeze``), so a full collection in a worker scans only what the worker made since.
- Python's own collection thresholds are kept: measured on the turn page and autosave, larger young generations
  only made each young collection longer (5,000: up to 17 ms; 20,000: 26 ms; the default 700: under 1 ms, and
  its older-generation collections under 3 ms once the start-up heap is frozen).
- ``CAB_GC_STATS=<directory>``: each worker writes its collections' count, total and longest pause there when it
  stops (``benchmarks/concurrent_reviewers.py`` reads them).
"""

from __future__ import annotations

import gc
import json
import multiprocessing
import os
import time
from pathlib import Path
from typing import Any

preload_app = True
workers = int(os.environ.get("WEB_CONCURRENCY", 2 * multiprocessing.cpu_count() + 1))
timeout = 120
# A worker is replaced after this many requests (spread so that they do not all restart together): whatever a
# long-lived process accumulates is given back.
max_requests = 20_000
max_requests_jitter = 2_000

def when_ready(server: Any) -> None:
    """In the master, once the application is loaded: everything alive now lives as long as the workers."""
    gc.collect()
    gc.freeze()


# A worker's first requests fill its long-lived caches (compiled templates, URL resolvers, the schemas kept by
# annotation.selectors): frozen too once it has served this many, so full collections stop scanning them.
FREEZE_AFTER_REQUESTS = 200
_served = [0]


def post_request(worker: Any, req: Any, environ: Any, resp: Any) -> None:
    _served[0] += 1
    if _served[0] == FREEZE_AFTER_REQUESTS:
        gc.freeze()


def post_fork(server: Any, worker: Any) -> None:
    directory = os.environ.get("CAB_GC_STATS")
    if directory:
        _gc_stats_start(Path(directory))


# Wall time of each collection, and the CPU time the worker spent in it (on a crowded machine the wall time also
# counts the time slices other processes took meanwhile).
_pauses: dict[str, Any] = {"count": 0, "total_ms": 0.0, "max_ms": 0.0, "max_cpu_ms": 0.0, "max_generation": None,
                           "over_20ms": 0, "cpu_over_20ms": 0}
_started: list[tuple[float, float]] = []


def _gc_timer(phase: str, info: dict[str, Any]) -> None:
    if phase == "start":
        _started.append((time.perf_counter(), time.thread_time()))
        return
    if not _started:
        return
    wall, cpu = _started.pop()
    ms, cpu_ms = (time.perf_counter() - wall) * 1000, (time.thread_time() - cpu) * 1000
    _pauses["count"] += 1
    _pauses["total_ms"] += ms
    _pauses["over_20ms"] += ms > 20
    _pauses["cpu_over_20ms"] += cpu_ms > 20
    _pauses["max_cpu_ms"] = max(_pauses["max_cpu_ms"], cpu_ms)
    if ms > _pauses["max_ms"]:
        _pauses["max_ms"], _pauses["max_generation"] = ms, info.get("generation")


def _gc_stats_start(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    gc.callbacks.append(_gc_timer)


def worker_exit(server: Any, worker: Any) -> None:
    directory = os.environ.get("CAB_GC_STATS")
    if directory:
        (Path(directory) / f"worker-{os.getpid()}.json").write_text(json.dumps(_pauses))
