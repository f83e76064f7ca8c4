"""Running a metric run: claim it with a conditional update (so a redelivered task is a no-op once the run has
finished), compute the report from the study's judgments, and store it; and building a report synchronously for
commands."""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Protocol

import numpy as np
from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from annotation.models import Study
from common.logs import without_row_values
from common.outage import busy, unreachable
from common.snapshot import one_snapshot
from metrics import scaleout, selectors
from metrics.core.report import (  # single_blas_thread: every path that computes a report or a chunk calls it
    INDEXED,
    PreparedReport,
    ReportParams,
    report_complete,
    report_finish,
    single_blas_thread,
)
from metrics.core.report import report_prepare as core_report_prepare
from metrics.kind_sections import section_of
from metrics.models import MetricRun
from metrics.parameters import DEFAULT_BOOTSTRAP, DEFAULT_SEED, DEFAULT_TOP_K, RunParameters

log = logging.getLogger(__name__)
PROGRESS_WRITES_PER_SECOND = 4


LOADED = 0.2  # share of a run's progress bar taken by loading the judgments (paper scale, B = 1,000)
STORED = 0.98  # the rest of the bar is storing the result


def _scaled(progress: Callable[[float, str], None] | None, low: float, high: float) -> Callable[[float, str], None]:
    def scaled(fraction: float, message: str) -> None:
        if progress is not None:
            progress(low + (high - low) * fraction, message)
    return scaled


def report_prepare(
    *, study: Study, seed: int = DEFAULT_SEED, bootstrap: int = DEFAULT_BOOTSTRAP, top_k: int = DEFAULT_TOP_K,
    progress: Callable[[float, str], None] | None = None, phases: dict[str, float] | None = None,
) -> PreparedReport:
    """Load the study's judgments and compute every figure but the bootstrap ones (``report_finish`` adds
    them from the bootstrap's chunks). ``phases``, when given, receives the seconds of the reads (the kind's section
    included, computed on the same snapshot) under "load"."""
    single_blas_thread()
    step = _scaled(progress, 0.0, 1.0)
    step(0.0, "loading judgments")
    started = time.perf_counter()
    section = section_of(study)
    # Every read of the run on one snapshot (``common.snapshot``): a judgment saved meanwhile is in all of them or in
    # none, so the kind's section, the unscored count and the coders agree with the judgments read.
    with one_snapshot():
        inputs = selectors.report_inputs(study=study)
        # the section of the study's kind, and the rows it read (the input fingerprint covers them); None: a kind
        # without a section (the default kind)
        found = section.section_and_rows(study=study, seed=seed, resamples=bootstrap) if section is not None else None
        unscored = selectors.unscored_judgments(study=study)
    if phases is not None:
        phases["load"] = time.perf_counter() - started
    step(LOADED, f"loaded {len(inputs.judgments):,} judgments and {len(inputs.spans):,} spans")
    params = ReportParams(seed=seed, bootstrap=bootstrap, panel=inputs.panel, experts=inputs.experts,
                          methods=inputs.methods, models=inputs.models,
                          panel_size=top_k, top_k=RunParameters(top_k=top_k).stability_ks)
    params = replace(params, **inputs.thresholds)  # the schema's (docs/schema.md), else the protocol's defaults
    prepared = core_report_prepare(
        attributes=selectors.core_attributes(inputs.attributes),  # session units: the kind section's
        judgments=inputs.judgments,
        spans=inputs.spans,
        response_texts=inputs.response_texts,
        conversation_kinds=inputs.conversation_kinds,
        subcategory_attribute=inputs.subcategory_attribute,
        params=params,
        progress=_scaled(progress, LOADED, LOADED + (STORED - LOADED) * INDEXED),
    )
    study_block = {"slug": study.slug, "schema": study.schema.slug, "schema_version": study.schema.version}
    report_complete(prepared.report, study=study_block,
                    software={"version": settings.CAB_VERSION, "commit": settings.CAB_COMMIT},
                    unscored=unscored,
                    sections={section.slug: found[0]} if section is not None and found is not None else {},
                    kind_rows=found[1] if found is not None else None)
    return prepared


def _chunk_progress(progress: Callable[[float, str], None] | None) -> Callable[..., None]:
    start = LOADED + (STORED - LOADED) * INDEXED

    def chunk_done(done: int, total: int, by_helpers: int = 0) -> None:
        if progress is not None:
            helped = f", {by_helpers} by other workers" if by_helpers else ""
            progress(start + (STORED - start) * done / max(total, 1), f"bootstrap: {done} of {total} chunks{helped}")
    return chunk_done


def report_build(
    *, study: Study, seed: int = DEFAULT_SEED, bootstrap: int = DEFAULT_BOOTSTRAP, top_k: int = DEFAULT_TOP_K,
    progress: Callable[[float, str], None] | None = None,
) -> dict:
    """The study's report, computed here (no other worker), chunk by chunk as a split run would."""
    prepared = report_prepare(study=study, seed=seed, bootstrap=bootstrap, top_k=top_k, progress=progress)
    boot, chunk_done = prepared.bootstrap, _chunk_progress(progress)
    chunks = []
    for chunk in range(boot.chunks):
        chunks.append(boot.chunk_samples(chunk))
        chunk_done(chunk + 1, boot.chunks)
    return report_finish(prepared, chunks)


class SendHelpers(Protocol):
    """How a split run asks for helpers: send ``count`` helper tasks for the problem published under ``prefix``, and
    say how many the broker took (``metrics.tasks.metric_run_help_enqueue``, which the run's task passes in)."""

    def __call__(self, prefix: str, *, count: int) -> int: ...


def _bootstrap_chunks(prepared: PreparedReport, *, run_id: int, progress: Callable[[float, str], None],
                      send_helpers: SendHelpers | None) -> list[list[np.ndarray]]:
    """Every chunk of the run's bootstrap: here alone, or shared with helper workers when it is large and there is
    a way to send them (``send_helpers``) and Redis to share them through (here alone when it cannot be reached)."""
    boot, chunk_done = prepared.bootstrap, _chunk_progress(progress)
    prefix = None
    if send_helpers is not None and scaleout.split_wanted(boot):
        try:
            prefix = scaleout.publish(boot, run_id=run_id)
        except Exception as error:
            if not scaleout.redis_unreachable(error):
                raise
            log.warning("metric run %s: Redis cannot be reached (%s); computing the bootstrap alone", run_id,
                        type(error).__name__)
    if send_helpers is None or prefix is None:
        chunks = []
        for chunk in range(boot.chunks):
            chunks.append(boot.chunk_samples(chunk))
            chunk_done(chunk + 1, boot.chunks)
        return chunks
    helpers = send_helpers(prefix, count=min(settings.METRIC_RUN_SPLIT_HELPERS, boot.chunks - 1))
    progress(LOADED + (STORED - LOADED) * INDEXED,
             f"bootstrap: {boot.chunks} chunks, shared with {helpers} helper task{'s' if helpers != 1 else ''}")
    return scaleout.compute_shared(boot, prefix, progress=chunk_done)


def stale_before() -> datetime:
    """A running run whose last heartbeat is older than this has lost its worker."""
    return timezone.now() - timedelta(seconds=settings.METRIC_RUN_STALE_SECONDS)


def claimable() -> Q:
    """Runs a delivery may take: queued ones, and running ones whose worker stopped beating (killed, or its
    machine gone). A run another worker is computing is not claimable, so a duplicate delivery is a no-op."""
    return Q(status=MetricRun.Status.QUEUED) | Q(status=MetricRun.Status.RUNNING, heartbeat_at__lt=stale_before()) \
        | Q(status=MetricRun.Status.RUNNING, heartbeat_at__isnull=True)


class _Heartbeat(threading.Thread):
    """Beats for one run every METRIC_RUN_HEARTBEAT_SECONDS while the worker computes it (the computation itself
    may not report progress for minutes), on the thread's own database connection. A beat the database outage
    misses is logged and the next one connects afresh: a PostgreSQL restart mid-run must not stop the beating, or
    the recovery takes the run over and computes it again (and a few blips fail it as a worker stopping)."""

    def __init__(self, run_id: int):
        super().__init__(name=f"metric-run-{run_id}-heartbeat", daemon=True)
        self.run_id = run_id
        self.stopped = threading.Event()

    def run(self) -> None:
        try:
            while not self.stopped.wait(settings.METRIC_RUN_HEARTBEAT_SECONDS):
                try:
                    MetricRun.objects.filter(pk=self.run_id, status=MetricRun.Status.RUNNING).update(
                        heartbeat_at=timezone.now())
                except DatabaseError as error:
                    if unreachable(error) is None and not busy(error):
                        raise
                    log.warning("metric run %s: a heartbeat missed, the database cannot be reached or is busy (%s); "
                                "beating on", self.run_id, type(error).__name__)
                    connection.close()  # the broken connection: the next beat opens a new one
        finally:
            connection.close()

    def stop(self) -> None:
        self.stopped.set()
        self.join(timeout=settings.METRIC_RUN_HEARTBEAT_SECONDS * 2)


INTERRUPTED = "the database {what} mid-run ({error}); it is sent again automatically"
_WHAT = {True: "was busy with another transaction", False: "could not be reached"}


class RunInterrupted(Exception):
    """What ``metric_run_execute`` raises when an outage of the database, or a transaction the database rolled back
    for another (a deadlock: ``common.outage.busy``), interrupted the run: not the run's failure, it is computed
    again (``_interrupted``). Its message says what became of the run."""


def _interrupted(run_id: int, error: BaseException) -> str:
    """Put back in the queue a run the database's outage interrupted (PostgreSQL restarted), or a transaction the
    database rolled back for another (a deadlock), saying so, unsent: the workers' recovery sends it again
    (``metrics.tasks.metric_runs_recover``). When the database is still away it stays running, and the recovery
    takes it over once its heartbeat is stale. Returns what became of it."""
    what = _WHAT[busy(error)]
    if not connection.in_atomic_block:
        connection.close()  # a connection the outage ended is unusable: the update below opens a new one
    try:
        MetricRun.objects.filter(pk=run_id, status=MetricRun.Status.RUNNING).update(
            status=MetricRun.Status.QUEUED, enqueued_at=None,
            progress_message=INTERRUPTED.format(what=what, error=type(error).__name__)[:200])
    except DatabaseError as still:
        if unreachable(still) is None:
            raise
        return (f"metric run {run_id}: interrupted, the database {what} ({type(error).__name__}) and cannot be "
                "reached now; the workers' recovery takes it over once its heartbeat is stale")
    return f"metric run {run_id}: interrupted, the database {what} ({type(error).__name__}); queued again"


def metric_run_execute(*, run_id: int, heartbeat: bool = False, send_helpers: SendHelpers | None = None) -> bool:
    """Compute and store one run. Returns False (and does nothing) when the run is finished or another worker is
    computing it. ``heartbeat`` (the worker's task sets it) beats while computing, so a worker that dies
    mid-run is noticed and its run taken over (``metrics.tasks.metric_runs_recover``). ``send_helpers`` (the
    worker's task passes it) lets a large bootstrap be shared with helper workers (``metrics.scaleout``); without
    it the run is computed here alone. An outage of the database mid-run, or a deadlock, is not the run's failure:
    the run goes back to the queue and ``RunInterrupted`` is raised (at its METRIC_RUN_MAX_ATTEMPTS-th start it
    fails, as a run whose workers keep stopping does, so a run that deadlocks every time ends; in embedded mode,
    where no worker's recovery would send it again, it fails at once with its reason, and can be asked for again).
    A cancelled statement (a statement timeout) fails it at once: computed again, it would take as long again
    (``common.outage``). This module never imports ``metrics.tasks``, which imports it
    (docs/architecture.md#no-circles)."""
    phases: dict[str, float] = {}  # wall seconds of each step, logged when the run is stored
    clock, cpu = [time.perf_counter()], time.process_time()

    def lap(name: str) -> None:
        now = time.perf_counter()
        phases[name] = now - clock[0]
        clock[0] = now

    now = timezone.now()
    claimed = MetricRun.objects.filter(claimable(), pk=run_id).update(
        status=MetricRun.Status.RUNNING, started_at=now, heartbeat_at=now, attempts=F("attempts") + 1, progress=0.0,
        progress_message="started")
    if not claimed:
        return False
    run = MetricRun.objects.select_related("study__schema").get(pk=run_id)
    lap("claim")
    last_write = [0.0]

    def progress(fraction: float, message: str) -> None:
        """Stage and share done, written at most PROGRESS_WRITES_PER_SECOND times a second (one UPDATE each)."""
        now = time.monotonic()
        if now - last_write[0] >= 1.0 / PROGRESS_WRITES_PER_SECOND or fraction >= 1.0:
            last_write[0] = now
            MetricRun.objects.filter(pk=run_id, status=MetricRun.Status.RUNNING).update(
                progress=min(max(fraction, 0.0), 1.0), progress_message=message[:200], heartbeat_at=timezone.now()
            )

    beat = _Heartbeat(run_id) if heartbeat else None
    if beat is not None:
        beat.start()
    try:
        prepared = report_prepare(
            study=run.study, seed=run.parameters.get("seed", DEFAULT_SEED),
            bootstrap=run.parameters.get("bootstrap", DEFAULT_BOOTSTRAP),
            top_k=run.parameters.get("top_k", DEFAULT_TOP_K),
            progress=progress, phases=phases,
        )
        lap("prepare")
        phases["prepare"] -= phases["load"]
        chunks = _bootstrap_chunks(prepared, run_id=run_id, progress=progress, send_helpers=send_helpers)
        lap("bootstrap")
        report = report_finish(prepared, chunks)
        del prepared, chunks
        lap("finish")
        progress(STORED, "storing the result")
        # Only the delivery that still sees the run as running stores its result: a run never has two results.
        # Inside the try: a result that cannot be stored (a value JSON cannot hold, from a bug) fails the run with
        # that reason, instead of leaving it running (recomputed by the recovery; in embedded mode, forever).
        with transaction.atomic():  # a savepoint when the caller is in a transaction: the failure is stored
            stored = bool(
                MetricRun.objects.filter(pk=run_id, status=MetricRun.Status.RUNNING).update(
                    status=MetricRun.Status.SUCCEEDED, result=report, progress=1.0, progress_message="done",
                    finished_at=timezone.now(),
                )
            )
    except Exception as error:
        # In embedded mode (tasks in-process) no worker's recovery would send it again: there it fails, saying why.
        if ((unreachable(error) == "database" or busy(error)) and run.attempts < settings.METRIC_RUN_MAX_ATTEMPTS
                and not settings.CELERY_TASK_ALWAYS_EAGER):
            raise RunInterrupted(_interrupted(run_id, error)) from error
        # The one place a computation's failure is recorded, on a worker and in-process alike (embedded mode); on a
        # new connection when the outage ended the run's.
        if unreachable(error) == "database" and not connection.in_atomic_block:
            connection.close()
        MetricRun.objects.filter(pk=run_id, status=MetricRun.Status.RUNNING).update(
            status=MetricRun.Status.FAILED, finished_at=timezone.now(),
            error=without_row_values(f"{type(error).__name__}: {error}\n{traceback.format_exc(limit=5)}", error),
        )
        raise
    finally:
        if beat is not None:
            beat.stop()
    lap("store")
    # Where a run's time went, as its worker saw it (numbers only). CPU is this process's, all its threads: wall
    # well above it means waiting (on PostgreSQL during the load, or for a core the machine's other work holds).
    log.info("metric run %s: %s; total %.3f s, CPU %.3f s", run_id,
             ", ".join(f"{name} {seconds:.3f} s" for name, seconds in phases.items()), sum(phases.values()),
             time.process_time() - cpu)
    return stored
