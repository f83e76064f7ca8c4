"""Gunicorn settings for the web workers, read from the working directory (``gunicorn cab.wsgi:application``);
command-line options given with it win.

- The application is loaded once, in the master, before the workers fork: they share its pages, and nothing in
  them is collected again (``gc.freeze``), so a full collection in a worker scans only what the worker made since.
- Python's own collection thresholds are kept: measured on the turn page and autosave, larger young generations
  only made each young collection longer (5,000: up to 17 ms; 20,000: 26 ms; the default 700: under 1 ms, and
  its older-generation collections under 3 ms once the start-up heap is frozen).
- The oldest generation is collected between requests, never during one. Its collections scan everything the
  worker made since start-up: measured under 8 reviewers they took up to 20 ms of CPU (66 ms of wall time on the
  busy machine) in the middle of a page or an autosave. A worker puts them off (a threshold ten times Python's,
  which only a long request such as a large export reaches) and, once a response has been sent, runs one itself as
  often as Python would have (after ``FULL_AFTER`` collections of the middle generation). Young and middle
  collections stay automatic.
- ``CAB_GC_STATS=<directory>``: each worker writes there, when it stops, its collections' count, total and longest
  pause during requests and its longest full collection between them (``perf/concurrent_reviewers.py``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import json
import multiprocessing
import os
import time
from pathlib import Path
from typing import Any

preload_app = True
workers = int(os.environ.get("WEB_CONCURRENCY", 2 * multiprocessing.cpu_count() + 1))
# A worker still in one request after this long is killed (the request's transaction rolls back). The longest request
# is a paper-scale judgments import over the API: 690,000 judgments took 112-163 s on a loaded 2-core host.
timeout = int(os.environ.get("WEB_TIMEOUT", 300))
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


# Python's own schedule for full collections: after this many collections of the middle generation. During a
# request, only a request that runs ten times that long (a large export) gets one, so its cyclic garbage stays
# bounded.
FULL_AFTER = 10
FULL_DURING_A_REQUEST_AFTER = 10 * FULL_AFTER
_in_request = [False]


def pre_request(worker: Any, req: Any) -> None:
    _in_request[0] = True


def post_request(worker: Any, req: Any, environ: Any, resp: Any) -> None:
    """After the response went out (gunicorn calls this once the body is written)."""
    _in_request[0] = False
    _served[0] += 1
    if _served[0] == FREEZE_AFTER_REQUESTS:
        gc.freeze()
    if gc.get_count()[2] >= FULL_AFTER or _large_body(environ):
        gc.collect()
    if _malloc_trim is not None and _large_body(environ):
        _malloc_trim(0)


# After a request with a large body (a bulk ingest), the full collection runs at once: DRF's request and its view
# refer to each other, so the body and what the request read stay alive until one; left to the schedule they
# lingered into the next request (measured: the next 10,000-item ingest then peaked 10-15 MiB higher). glibc's
# malloc_trim then returns the freed pages to the system (worker RSS back near idle between bulk requests).
# And glibc's threshold for giving a large block its own mapping stays at its default, 128 KiB: left dynamic, it
# rises to the size of the first large block freed (a 12 MB request body), and every later body then came from
# the heap and fragmented it: a worker's peak crept up by 20 MiB over ten bulk requests (with it fixed: flat).
LARGE_BODY = 1 << 20
M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)


def _large_body(environ: Any) -> bool:
    try:
        return int((environ or {}).get("CONTENT_LENGTH") or 0) >= LARGE_BODY
    except ValueError:
        return False


def _libc_malloc_trim() -> Any:
    """glibc's malloc_trim, once the mmap threshold is fixed (in the master: the workers inherit it); None
    elsewhere."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.mallopt(M_MMAP_THRESHOLD, 128 * 1024)
        return libc.malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None


_malloc_trim = _libc_malloc_trim()


def post_fork(server: Any, worker: Any) -> None:
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_DURING_A_REQUEST_AFTER)  # full collections in post_request
    directory = os.environ.get("CAB_GC_STATS")
    if directory:
        _gc_stats_start(Path(directory))


# Wall time of each collection, and the CPU time the worker spent in it (on a crowded machine the wall time also
# counts the time slices other processes took meanwhile). ``max_*`` and ``over_20ms`` are of collections during a
# request; ``between_*`` of those run between requests.
_pauses: dict[str, Any] = {"count": 0, "total_ms": 0.0, "max_ms": 0.0, "max_cpu_ms": 0.0, "max_generation": None,
                           "over_20ms": 0, "cpu_over_20ms": 0, "between_count": 0, "between_max_ms": 0.0,
                           "between_max_cpu_ms": 0.0}
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
    if not _in_request[0]:
        _pauses["between_count"] += 1
        _pauses["between_max_ms"] = max(_pauses["between_max_ms"], ms)
        _pauses["between_max_cpu_ms"] = max(_pauses["between_max_cpu_ms"], cpu_ms)
        return
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
