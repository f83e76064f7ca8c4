"""Requesting a metric run: it is stored as queued and sent to the workers after the transaction commits. When
the broker cannot be reached the run stays queued and says so (the workers' recovery sends it when the broker is
back, see ``metrics.tasks``). With a broker it is never computed inside the request; embedded (no REDIS_URL) it is
computed in-process when the transaction commits, and a failure is stored on the run as a worker stores it."""

from __future__ import annotations

import logging

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction

from annotation.models import Study
from audit.services import audit_record
from metrics.kind_sections import default_bootstrap
from metrics.models import MetricRun
from metrics.parameters import DEFAULT_SEED, DEFAULT_TOP_K, RunParameters
from metrics.tasks import metric_run_enqueue

log = logging.getLogger(__name__)


@transaction.atomic
def metric_run_request(
    *, study: Study, by: User | None, trigger: str = "manual", seed: int = DEFAULT_SEED,
    bootstrap: int | None = None, top_k: int = DEFAULT_TOP_K,
) -> MetricRun:
    """Store a run of ``study`` as queued and send it after the commit; ``bootstrap`` None: the study's default
    (``metrics.kind_sections.default_bootstrap``), stored in the run's parameters as any B."""
    if bootstrap is None:
        bootstrap = default_bootstrap(study)
    problems = RunParameters(seed=seed, bootstrap=bootstrap, top_k=top_k).problems()
    if problems:
        raise ValidationError(problems)
    run = MetricRun.objects.create(
        study=study,
        trigger=trigger,
        requested_by=by,
        parameters={"seed": seed, "bootstrap": bootstrap, "top_k": top_k, "schema": study.schema.slug,
                    "schema_version": study.schema.version},
    )
    audit_record(by=by, action="metric_run.request", study=study, target=f"metric_run:{run.pk}", trigger=trigger,
                 seed=seed, bootstrap=bootstrap, top_k=top_k)
    transaction.on_commit(lambda: metric_run_enqueue(run.pk))
    return run
