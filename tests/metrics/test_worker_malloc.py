"""A starting Celery worker sets glibc's malloc up for a run's large arrays: blocks of a few MB come from the heap
and stay there when freed, so the next ones reuse pages already faulted in (malloc's defaults unmap or trim them,
and every new array is faulted in afresh, page by page). A web process keeps malloc's defaults."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest
from django.conf import settings

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")

PROBE = """
import ctypes, json, resource, sys
import django
django.setup()
import cab.celery, metrics.tasks

libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]

def cycle():  # what a run does over and over: a few columns of a million int64 made, filled and dropped
    blocks = [libc.malloc(8 << 20) for _ in range(4)]
    for block in blocks:
        libc.memset(block, 1, 8 << 20)
    for block in blocks:
        libc.free(block)

tuned = None
if sys.argv[1] == "worker":
    from celery.signals import worker_init
    worker_init.send(sender=None)
    tuned = metrics.tasks._tune_malloc()  # what worker_init did, again: glibc accepts every setting
cycle()  # the first one faults its pages in whatever the settings
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(4):
    cycle()
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
metrics.tasks._release_freed_memory()
print(json.dumps([faults, tuned]))
"""


def _probe(role: str) -> list:
    out = subprocess.run([sys.executable, "-c", PROBE, role], cwd=settings.BASE_DIR, capture_output=True, text=True,
                         check=True, env={**os.environ, "DJANGO_SETTINGS_MODULE": "cab.settings"})
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_worker_reuses_the_memory_of_freed_arrays_and_a_web_process_faults_it_in_again():
    pages = 4 * 4 * (8 << 20) // 4096  # the cycles after the first touch this many pages
    web_faults, web_tuned = _probe("web")
    assert web_tuned is None and web_faults > pages // 2  # malloc's defaults: unmapped or trimmed, faulted again
    worker_faults, worker_tuned = _probe("worker")
    assert worker_tuned is True and worker_faults < pages // 20


HUGE_PAGES = """
import json, os, sys
import django
django.setup()
import cab.celery, metrics.tasks
if sys.argv[1] == "worker":
    from celery.signals import worker_init
    worker_init.send(sender=None)
from numpy._core import multiarray
print(json.dumps(multiarray._get_madvise_hugepage()))
"""


@pytest.mark.parametrize(("role", "environment", "expected"), [
    ("worker", None, False),  # the worker turns numpy's huge-page request off
    ("web", None, True),  # numpy's own default elsewhere (this kernel supports it)
    ("worker", "1", True),  # an explicit setting wins
])
def test_a_worker_asks_for_no_transparent_huge_pages_for_its_arrays(role, environment, expected):
    env = {key: value for key, value in os.environ.items() if key != "NUMPY_MADVISE_HUGEPAGE"}
    if environment is not None:
        env["NUMPY_MADVISE_HUGEPAGE"] = environment
    out = subprocess.run([sys.executable, "-c", HUGE_PAGES, role], cwd=settings.BASE_DIR, capture_output=True,
                         text=True, check=True, env={**env, "DJANGO_SETTINGS_MODULE": "cab.settings"})
    assert json.loads(out.stdout.strip().splitlines()[-1]) is expected
