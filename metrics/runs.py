"""Running a metric run: claim it with a conditional update (so a redelivered task is a no-op once the run has
finished), compute the report from the study's judgments, and store it; and building a report synchronously for
commands."""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable

from django.db.models import F
from django.utils import timezone

from annotation.models import Study
from metrics import selectors
from metrics.core.report import ReportParams, build_report
from metrics.models import MetricRun
from metrics.parameters import DEFAULT_BOOTSTRAP, DEFAULT_SEED

log = logging.getLogger(__name__)


def report_build(
    *, study: Study, seed: int = DEFAULT_SEED, bootstrap: int = DEFAULT_BOOTSTRAP,
    progress: Callable[[float, str], None] | None = None,
) -> dict:
    inputs = selectors.report_inputs(study=study)
    params = ReportParams(seed=seed, bootstrap=bootstrap, panel=inputs.panel, experts=inputs.experts)
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
            study=run.study, seed=run.parameters.get("seed", DEFAULT_SEED),
            bootstrap=run.parameters.get("bootstrap", DEFAULT_BOOTSTRAP),
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
