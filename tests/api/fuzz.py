"""Shared by the schema fuzz test and ``benchmarks/api_fuzz.py``: drive every operation of the live OpenAPI
schema with schemathesis-generated requests (valid and invalid), in-process through the WSGI app, and collect
every 5xx or schema violation.

Every check runs except "positive data acceptance": a schema-valid item can still be wrong for the data (a
conversation that is not imported), and that answer is a specific 400. schemathesis's pytest plugin does not run
under pytest 9, so the operations are driven through its Python API with Hypothesis directly."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.core.parameters import ParameterLocation
from schemathesis.specs.openapi.checks import positive_data_acceptance


@dataclass
class FuzzReport:
    cases: int = 0
    operations: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    by_operation: dict[str, dict[int, int]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    seconds: float = 0.0


def fuzz(
    app,
    *,
    token: str,
    examples: int,
    steer: Callable[[schemathesis.Case], None] = lambda case: None,
    derandomize: bool = True,
) -> FuzzReport:
    """``examples`` requests per operation and generation mode; ``steer`` may point a case at real objects."""
    # Hypothesis would print every failing example as it shrinks; the report lists them instead.
    schema = schemathesis.openapi.from_wsgi("/api/schema/", app)
    report = FuzzReport()
    started = time.monotonic()
    headers = {"Authorization": f"Bearer {token}"}

    def run(label: str, strategy) -> None:
        @given(case=strategy)
        @settings(max_examples=examples, deadline=None, derandomize=derandomize, database=None,
                  suppress_health_check=list(HealthCheck), report_multiple_bugs=False)
        def check(case):
            steer(case)
            report.cases += 1
            response = case.call_and_validate(headers=headers, excluded_checks=[positive_data_acceptance])
            report.statuses[response.status_code] = report.statuses.get(response.status_code, 0) + 1
            seen = report.by_operation.setdefault(label, {})
            seen[response.status_code] = seen.get(response.status_code, 0) + 1

        check()

    for result in schema.get_all_operations():
        operation = result.ok()
        report.operations += 1
        for mode in (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE):
            # A fixed Authorization header is never mutated, so a "negative" case is never just a broken token.
            strategy = operation.as_strategy(generation_mode=mode, headers=headers)
            try:
                run(operation.label, strategy)
            except Unsatisfiable:
                report.skipped.append(f"{operation.label} [{mode.value}]: nothing to make invalid (no parameters)")
            except (Exception, BaseExceptionGroup) as error:  # noqa: BLE001 - all are collected and reported
                report.failures.append(f"{operation.label} [{mode.value}]: {type(error).__name__}: {error}")
    report.seconds = time.monotonic() - started
    return report


def steer_to(run_id: int) -> Callable[[schemathesis.Case], None]:
    """A ``steer`` that points most valid cases' path parameters at the given run and the ``cab-demo`` study."""
    counter = itertools.count()

    def steer(case) -> None:
        # Most generated slugs and ids name nothing; point three valid cases in four at real objects, to reach
        # deeper code. (A path generated to be invalid stays as it is: it must be refused.)
        parameters = case.path_parameters or {}
        n = next(counter)
        if n % 4 and not case.meta.is_negative_at(ParameterLocation.PATH):
            real = {"slug": "cab-demo", "run_id": run_id, "round_name": "calibration-1", "table": "ari"}
            parameters.update({name: value for name, value in real.items() if name in parameters})
        # A new study (POST /studies/): most valid bodies name an installed schema, a fresh slug and a model slot,
        # so that some are created and the form's other checks are reached.
        body = case.body
        if isinstance(body, dict) and {"slug", "schema"} <= set(body) and n % 4 \
                and not case.meta.is_negative_at(ParameterLocation.BODY):
            body.update({"slug": f"fuzz-{n}", "schema": "cab-v1", "model_slots": ["GPT"]})

    return steer
