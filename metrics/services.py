"""Metric runs: request one (enqueued after commit), execute it (claimed with a conditional update, so a
redelivered task is a no-op once the run has finished), and build a report synchronously for commands."""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotation.models import Study
from metrics import selectors
from metrics.core.report import ReportParams, build_report
from metrics.models import MetricRun

log = logging.getLogger(__name__)


def report_build(
    *, study: Study, seed: int = 0, bootstrap: int = 1000, progress: Callable[[float, str], None] | None = None
) -> dict:
    inputs = selectors.report_inputs(study=study)
    params = ReportParams(seed=seed, bootstrap=bootstrap, panel=inputs.panel)
    report = build_report(
        attributes=inputs.attributes,
        judgments=inputs.judgments,
        spans=inputs.spans,
        response_texts=inputs.response_texts,
        conversation_kinds=inputs.conversation_kinds,
        subcategory_attribute=inputs.subcategory_attribute,
        params=params,
        progress=progress,
    )
    report["study"] = {"slug": study.slug, "schema": study.schema.slug, "schema_version": study.schema.version}
    return report


def metric_run_request(
    *, study: Study, by: AbstractBaseUser | None, trigger: str = "manual", seed: int = 0, bootstrap: int = 1000
) -> MetricRun:
    if not 0 <= seed < 2**32:
        raise ValidationError({"seed": "must be between 0 and 2^32 - 1"})
    if not 1 <= bootstrap <= 100_000:
        raise ValidationError({"bootstrap": "must be between 1 and 100000"})
    run = MetricRun.objects.create(
        study=study,
        trigger=trigger,
        requested_by=by,
        parameters={"seed": seed, "bootstrap": bootstrap, "schema": study.schema.slug,
                    "schema_version": study.schema.version},
    )
    transaction.on_commit(lambda: _enqueue(run.pk))
    return run


def _enqueue(run_id: int) -> None:
    """Send the run to the workers. When the broker cannot be reached the run is marked failed with the reason
    (it is never computed inside the request instead), and can be requested again."""
    from kombu.exceptions import OperationalError

    from metrics.tasks import metric_run_task

    try:
        metric_run_task.delay(run_id)
    except OperationalError as error:
        log.error("metric run %s: the task broker is unreachable: %s", run_id, error)
        MetricRun.objects.filter(pk=run_id, status=MetricRun.Status.QUEUED).update(
            status=MetricRun.Status.FAILED, finished_at=timezone.now(),
            error=f"could not reach the task broker ({error}); nothing was computed — request the run again",
        )


def metric_run_execute(*, run_id: int) -> bool:
    """Compute and store one run. Returns False (and does nothing) when the run is already finished."""
    claimed = MetricRun.objects.filter(
        pk=run_id, status__in=[MetricRun.Status.QUEUED, MetricRun.Status.RUNNING]
    ).update(status=MetricRun.Status.RUNNING, started_at=timezone.now(), attempts=F("attempts") + 1, progress=0.0)
    if not claimed:
        return False
    run = MetricRun.objects.select_related("study__schema").get(pk=run_id)
    last_write = [0.0]

    def progress(fraction: float, message: str) -> None:
        now = time.monotonic()
        if now - last_write[0] >= 0.5 or fraction >= 1.0:
            last_write[0] = now
            MetricRun.objects.filter(pk=run_id, status=MetricRun.Status.RUNNING).update(
                progress=min(max(fraction, 0.0), 1.0), progress_message=message[:200]
            )

    try:
        report = report_build(
            study=run.study, seed=run.parameters.get("seed", 0), bootstrap=run.parameters.get("bootstrap", 1000),
            progress=progress,
        )
    except Exception as error:
        MetricRun.objects.filter(pk=run_id, status=MetricRun.Status.RUNNING).update(
            status=MetricRun.Status.FAILED, finished_at=timezone.now(),
            error=f"{type(error).__name__}: {error}\n{traceback.format_exc(limit=5)}",
        )
        raise
    # Only the delivery that still sees the run as running stores its result: a run never has two results.
    return bool(
        MetricRun.objects.filter(pk=run_id, status=MetricRun.Status.RUNNING).update(
            status=MetricRun.Status.SUCCEEDED, result=report, progress=1.0, progress_message="done",
            finished_at=timezone.now(),
        )
    )
