"""The metric-run task, handing runs to the broker, and the workers' recovery of runs nobody holds.

A run is never lost and never stuck: one the broker could not take stays queued (saying why) and is sent again;
one whose worker died (no heartbeat for ``METRIC_RUN_STALE_SECONDS``) is sent again, up to
``METRIC_RUN_MAX_ATTEMPTS`` starts, then failed with the reason; one a database outage or a deadlock interrupted goes
back to the queue, saying so, and is sent again, within the same starts (``runs.RunInterrupted``). Every worker
runs the recovery when it starts and every ``METRIC_RUN_RECOVER_SECONDS`` after. A delivery only computes a run no
live worker holds (``runs.claimable``), so a duplicate message is a no-op and a run has exactly one result.

In embedded mode (no REDIS_URL) a task runs inside the process that sends it, and what it raises stays in the task
as on a worker (``CELERY_TASK_EAGER_PROPAGATES`` off): a run that fails is stored failed with its reason, and the
page or command that asked for it answers normally.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging
import os
import sys
import threading
import traceback
from datetime import timedelta

from celery import shared_task
from celery.signals import worker_init, worker_ready
from django.conf import settings
from django.db import DatabaseError, connection
from django.db.models import Q
from django.utils import timezone
from kombu.exceptions import OperationalError

from common.outage import busy, unreachable
from metrics.models import MetricRun

log = logging.getLogger(__name__)


class MetricRunFailed(Exception):
    """What the task raises when its run's computation raised, the run already stored failed with the reason
    (``runs.metric_run_execute``). It names only the error's type and where it was raised: Celery logs what a task
    raises (a worker, and the embedded mode's in-process tasks), and a reason may quote what participants wrote."""


@shared_task(name="metrics.run", acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def metric_run_task(run_id: int) -> bool:
    """Thin and idempotent: re-reads the run by id; a finished run, or one a live worker holds, makes a redelivery
    a no-op."""
    # Imported in the task, never at module level: web workers import this module to enqueue, and ``runs`` loads
    # the science stack (numpy, scipy, scikit-learn), which only Celery workers need.
    from metrics import runs

    try:
        return runs.metric_run_execute(run_id=run_id, heartbeat=True, send_helpers=metric_run_help_enqueue)
    except Exception as error:
        if isinstance(error, runs.RunInterrupted):  # an outage or a deadlock, not the run's failure: computed again
            log.warning("%s", error)
            return False
        where = traceback.extract_tb(error.__traceback__)[-1]
        failed = MetricRunFailed(f"metric run {run_id}: {type(error).__name__} in {where.name} "
                                 f"({where.filename}:{where.lineno}); the reason is not logged: see the run")
    finally:
        _release_freed_memory()
    raise failed  # outside the except: nothing chained to it, neither the reason nor the computation's arrays


@shared_task(name="metrics.help", acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def metric_run_help_task(prefix: str) -> int:
    """Compute bootstrap chunks of a split run nobody has claimed yet (``metrics.scaleout``). Idempotent: a
    finished or unknown run's problem is gone or marked done, and the delivery does nothing."""
    from metrics import scaleout  # numpy: workers only, as above

    try:
        return scaleout.help_with(prefix)
    finally:
        _release_freed_memory()


def metric_run_help_enqueue(prefix: str, *, count: int) -> int:
    """Send ``count`` helper tasks for a split run; returns how many the broker took (none is needed: the run's
    own worker computes whatever no helper claims)."""
    sent = 0
    for _ in range(count):
        try:
            metric_run_help_task.delay(prefix)
        except OperationalError as error:
            log.warning("bootstrap helpers: the task broker is unreachable (%s); computing alone", type(error).__name__)
            break
        sent += 1
    return sent


BROKER_DOWN = "waiting for the task broker, which cannot be reached ({error}); it is sent again automatically"


RESENT = ("sent again at {at:%H:%M:%S} UTC: no worker had taken it {seconds:.0f} s after it was queued (its message "
          "may be lost)")


def metric_run_enqueue(run_id: int, *, note: str = "queued for a worker", resent: bool = False) -> bool:
    """Hand the run to the broker. When it cannot be reached the run stays queued, saying so (never computed
    inside the request instead), and the workers' recovery sends it when the broker is back. ``note``: the run's
    progress message once sent; ``resent``: the recovery sends it again (stamped on the run, which the dashboards
    show after it has run). The run is saved before it is sent: when the database cannot be reached for the note,
    the run stays as it was (unsent to the recovery, which sends it again: a second delivery is a no-op), and the
    request that asked for it still answers with the run it saved."""
    try:
        metric_run_task.delay(run_id)
    except OperationalError as error:
        log.error("metric run %s: the task broker is unreachable: %s", run_id, type(error).__name__)
        _noted(run_id, enqueued_at=None, progress_message=BROKER_DOWN.format(error=type(error).__name__)[:200])
        return False
    now = timezone.now()
    _noted(run_id, enqueued_at=now, progress_message=note[:200], **({"resent_at": now} if resent else {}))
    return True


def _noted(run_id: int, **fields: object) -> None:
    """Note on a queued run how its sending went; an outage of the database, or a database busy with another
    transaction (a lock not granted in time, a deadlock), leaves the note out (logged): the run was committed before,
    and the request that asked for it answers with it; the workers' recovery sends it again."""
    try:
        MetricRun.objects.filter(pk=run_id, status=MetricRun.Status.QUEUED).update(**fields)
    except DatabaseError as error:
        if unreachable(error) is None and not busy(error):
            raise
        said = "is busy with another transaction" if busy(error) else "cannot be reached"
        log.warning("metric run %s: saved, but its sending is not noted: the database %s (%s); the workers' "
                    "recovery sends it again", run_id, said, type(error).__name__)


def metric_runs_recover() -> dict[str, int]:
    """Send again every run no worker holds: queued ones the broker never took, queued ones no worker took within
    ``METRIC_RUN_RESEND_SECONDS`` of being sent (the broker may have lost the message: a deadline on the run row,
    not on the message; a second delivery of a run that is in fact waiting is a no-op, ``claimable``), and running
    ones whose worker stopped beating; a run that has already been started ``METRIC_RUN_MAX_ATTEMPTS`` times fails
    with the reason."""
    from metrics import runs  # see metric_run_task

    silent = Q(heartbeat_at__lt=runs.stale_before()) | Q(heartbeat_at__isnull=True)
    stale = Q(status=MetricRun.Status.RUNNING) & silent
    exhausted = MetricRun.objects.filter(stale, attempts__gte=settings.METRIC_RUN_MAX_ATTEMPTS).update(
        status=MetricRun.Status.FAILED, finished_at=timezone.now(),
        error=f"the worker computing this run stopped {settings.METRIC_RUN_MAX_ATTEMPTS} times (killed or out of "
              "memory); request the run again, or look at the workers' logs")
    requeued = list(MetricRun.objects.filter(stale).values_list("pk", flat=True))
    MetricRun.objects.filter(pk__in=requeued, status=MetricRun.Status.RUNNING).update(
        status=MetricRun.Status.QUEUED, enqueued_at=None, resent_at=timezone.now(),
        progress_message="its worker stopped; sent again to another worker")
    unsent = list(MetricRun.objects.filter(status=MetricRun.Status.QUEUED, enqueued_at__isnull=True)
                  .values_list("pk", flat=True))
    sent = sum(metric_run_enqueue(run_id) for run_id in unsent)
    waited = settings.METRIC_RUN_RESEND_SECONDS
    lost = list(MetricRun.objects.filter(status=MetricRun.Status.QUEUED,
                                         enqueued_at__lt=timezone.now() - timedelta(seconds=waited))
                .values_list("pk", flat=True))
    resent = sum(metric_run_enqueue(run_id, note=RESENT.format(at=timezone.now(), seconds=waited), resent=True)
                 for run_id in lost)
    if exhausted or requeued or sent or resent:
        log.warning("metric runs recovered: %s failed, %s taken over, %s sent, %s sent again", exhausted,
                    len(requeued), sent, resent)
    return {"failed": exhausted, "taken_over": len(requeued), "sent": sent, "resent": resent}


def _recovery_loop(stopped: threading.Event) -> None:
    while True:
        try:
            metric_runs_recover()
        except Exception:  # the database may be down for a while; the next round tries again
            log.exception("metric run recovery failed; trying again later")
        finally:
            connection.close()
        if stopped.wait(settings.METRIC_RUN_RECOVER_SECONDS):
            return


# glibc's malloc (mallopt parameter numbers from malloc.h). A run allocates and frees arrays of a few MB to tens of
# MB many times over (690,000 judgments: 5.5 MB per int64 column). Left to its defaults, malloc gives each block above
# 128 KiB its own mapping, unmapped again when freed, so every such array is faulted in afresh, page by page (tens
# of thousands of minor faults per run); and a freed top of the heap above 128 KiB goes back to the system at once.
# A worker instead serves blocks up to glibc's largest threshold (32 MiB) from its heap and keeps freed memory
# during the run, and hands it back (malloc_trim) after the run is stored, so an idle worker holds no more than
# before. Arenas are capped: only the task's thread allocates much (the heartbeat and recovery threads little).
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_ARENA_MAX = -1, -3, -8
MMAP_THRESHOLD = 32 << 20  # DEFAULT_MMAP_THRESHOLD_MAX on 64-bit: glibc refuses more
TRIM_THRESHOLD = 1 << 30
ARENA_MAX = 2


@functools.cache
def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.mallopt, libc.malloc_trim  # noqa: B018  # glibc only (musl has neither)
    except (OSError, AttributeError):
        return None
    return libc


def _tune_malloc() -> bool:
    """Set the worker's malloc up for large arrays (see above); False when this is not glibc or it refused."""
    libc = _libc()
    if libc is None:
        return False
    return all([libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD), libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD),
                libc.mallopt(M_ARENA_MAX, ARENA_MAX)])


def _release_freed_memory() -> None:
    """Hand the memory a run freed back to the system (the trim threshold keeps it while the run computes)."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)


@worker_init.connect
def _load_science_stack(**_: object) -> None:
    """Import the computation (numpy, scipy, scikit-learn: 1-2 s) while the worker starts, before it takes tasks:
    otherwise the first run after a start pays for it, or waits on the import lock while the recovery thread
    below imports it. Celery workers only (the signal is sent by a starting worker, never in a web worker); a
    prefork pool's children inherit the modules, and the malloc settings."""
    if not _tune_malloc():
        log.info("malloc left at its defaults (not glibc)")
    _no_huge_pages()
    from metrics import runs  # noqa: F401


def _no_huge_pages() -> None:
    """Turn off numpy's request for transparent huge pages on its large arrays (``NUMPY_MADVISE_HUGEPAGE``, read
    when numpy is imported, so before it is). With the request, each array of 4 MB or more is faulted in as 2 MB
    pages, every one zeroed whole by the kernel, and the malloc_trim after each run hands them back: measured at
    paper scale, a run's system CPU varied between 0.07 and 0.74 s (0.12-0.21 s without), and its wall time with
    it. An explicit setting in the worker's environment wins."""
    if "numpy" in sys.modules:
        log.warning("numpy was imported before the worker started: its huge-page setting is left as it is")
        return
    os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")


@worker_ready.connect
def _start_recovery(**_: object) -> None:
    threading.Thread(target=_recovery_loop, args=(threading.Event(),), name="metric-run-recovery",
                     daemon=True).start()
