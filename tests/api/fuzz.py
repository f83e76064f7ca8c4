"""Shared by the schema fuzz test and ``perf/api_fuzz.py``: drive every operation of the live OpenAPI
schema with schemathesis-generated requests (valid and invalid), in-process through the WSGI app, and collect
every 5xx or schema violation.

Every check runs except "positive data acceptance": a schema-valid item can still be wrong for the data (a
conversation that is not imported), and that answer is a specific 400. schemathesis's pytest plugin does not run
under pytest 9, so the operations are driven through its Python API with Hypothesis directly."""

from __future__ import annotations

import csv
import io
import itertools
import json
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
    fewer: dict[str, int] | None = None,
    steer: Callable[[schemathesis.Case], None] = lambda case: None,
    derandomize: bool = True,
) -> FuzzReport:
    """``examples`` requests per operation and generation mode (``fewer``: fewer for the operations it names, by
    label); ``steer`` may point a case at real objects."""
    # Hypothesis would print every failing example as it shrinks; the report lists them instead.
    schema = schemathesis.openapi.from_wsgi("/api/schema/", app)
    report = FuzzReport()
    started = time.monotonic()
    headers = {"Authorization": f"Bearer {token}"}

    def run(label: str, strategy) -> None:
        @given(case=strategy)
        @settings(max_examples=(fewer or {}).get(label, examples), deadline=None, derandomize=derandomize,
                  database=None, suppress_health_check=list(HealthCheck), report_multiple_bugs=False)
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


# --- the material the fuzz drives, and steering generated cases at it ---------------------------------------------

SLUG = "cab-demo"
SLOTS = ("GPT", "Claude", "Gemini", "Llama", "Qwen")  # the study's model slots (tests.factories.StudyFactory)
CODED_SLOT = "Qwen"  # judgments imported by the fuzz are on these responses; the responses it sends, on the others


def fuzz_material(admin) -> tuple[int, str]:
    """``cab-demo`` with the demo conversations, an open calibration round and a succeeded metric run whose result is
    a real report (the study's own, with one per-model table to download); and an admin's token with every scope.
    Returns (the run's id, the token)."""
    from api import services as api_services
    from benchmark import conversation_ingest
    from benchmark.demo import demo_records
    from metrics.runs import report_build
    from tests.factories import MetricRunFactory, RoundFactory, StudyFactory

    study = StudyFactory(slug=SLUG, model_slots=list(SLOTS))
    conversation_ingest.conversations_import(rows=enumerate(demo_records()))
    RoundFactory(study=study, kind="calibration", number=1)
    result = report_build(study=study, seed=0, bootstrap=1)
    result["indices"]["ari"] = {"GPT": {"ARI": 0.1}}
    run = MetricRunFactory(study=study, status="succeeded", result=result)
    _, token = api_services.api_token_create(user=admin, name="fuzz", by=None,
                                             scopes=["ingest", "import", "read", "metrics", "setup"])
    return run.pk, token


def _response_slots() -> list[tuple[str, str, int, str]]:
    """(dataset, conversation_id, turn_index, model) of every demo response."""
    from tests.factories import response_items

    return [(r["dataset"], r["conversation_id"], r["turn_index"], r["model"]) for r in response_items()]


def _text(value: object) -> str:
    """A generated file's bytes as text, to send as a text: whatever schemathesis made, in a valid item."""
    raw = value if isinstance(value, bytes) else str(value).encode()
    return raw.decode("utf-8", "replace").replace("\x00", "") or "x"


def _turn(turn: dict, index: int, slots: tuple[str, ...] = SLOTS) -> None:
    turn["index"] = index
    responses = turn.get("responses") if isinstance(turn.get("responses"), list) else []
    turn["responses"] = [{**response, "model": slot} for response, slot in zip(responses, slots, strict=False)]


def _conversation(item: dict, name: str) -> None:
    """A generated conversation made consistent (kind, complexity, indices, model slots), its texts kept."""
    item.update(dataset="Fuzz", conversation_id=name)
    if isinstance(item.get("sessions"), list):
        item.update(kind="multi", complexity=None)
        turns = itertools.count(1)
        for index, session in enumerate(item["sessions"], start=1):
            session.update(index=index, kind="chat", crisis_type=None)
            for turn in session.get("turns") or []:
                _turn(turn, next(turns), SLOTS[:1])  # a history's replies are one assistant's (docs/sessions.md)
        return
    turns = item.get("turns") if isinstance(item.get("turns"), list) else []
    item.update(kind="single" if len(turns) == 1 else "multi", complexity="low" if len(turns) == 1 else None)
    for index, turn in enumerate(turns, start=1):
        _turn(turn, index)


def _conversations(body: object, n: int) -> object:
    for position, item in enumerate(body if isinstance(body, list) else []):
        if isinstance(item, dict):
            _conversation(item, f"fuzz-{n}-{position}")
    return body


def _responses(body: object, n: int) -> object:
    """Generated responses pointed at distinct demo turns and slots (not the coded ones), their texts kept."""
    if not isinstance(body, list):
        return body
    slots = [slot for slot in _response_slots() if slot[3] != CODED_SLOT]
    del body[len(slots):]
    for item, (dataset, conversation, turn, model) in zip(body, slots[n % len(slots):] + slots, strict=False):
        if isinstance(item, dict):
            item.update(dataset=dataset, conversation_id=conversation, turn_index=turn, model=model)
    return body


def _conversations_file(body: object, n: int) -> object:
    if not isinstance(body, dict) or "file" not in body:
        return body
    record = {"turns": [{"client": _text(body["file"]), "responses": [{"text": _text(body["file"])[::-1]}]}],
              "topic": "Anxiety"}
    _conversation(record, f"fuzz-file-{n}")
    return {**body, "file": json.dumps(record) + "\n"}


def _responses_file(body: object, n: int) -> object:
    if not isinstance(body, dict) or "file" not in body:
        return body
    items = _responses([{"text": _text(body["file"]), "model_version": f"fuzz-{n}"}], n)
    return {**body, "file": "".join(json.dumps(item) + "\n" for item in items)}


def _judgments_file(body: object, n: int) -> object:
    """A long-format CSV of a new coder's codes of the coded slot's responses (a new account each time)."""
    from annotation.long_format import COLUMNS

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for dataset, conversation, turn, model in _response_slots():
        if model == CODED_SLOT:
            writer.writerow([SLUG, "calibration-1", f"fuzz-coder-{n}", "false", dataset, conversation, turn, model,
                             "AUR", n % 3, "", "", "reviewer"])
    return {"file": out.getvalue(), "format": "csv"}


def _new_study(body: object, n: int) -> object:
    """Most valid bodies name an installed schema, a fresh slug and a model slot, so that some are created and the
    form's other checks are reached."""
    if isinstance(body, dict) and {"slug", "schema"} <= set(body):
        body.update({"slug": f"fuzz-{n}", "schema": "cab-v1", "model_slots": ["GPT"]})
    return body


# A valid body of each writing operation, made from the generated one, so that the writes are reached (a generated
# body is mostly refused for what the schema cannot say: a turn that does not exist, a kind without its complexity).
BODY_STEERS: dict[str, Callable[[object, int], object]] = {
    "/api/v1/studies/": _new_study,
    "/api/v1/studies/{slug}/conversations/": _conversations,
    "/api/v1/studies/{slug}/conversations/upload/": _conversations_file,
    "/api/v1/studies/{slug}/responses/": _responses,
    "/api/v1/studies/{slug}/responses/upload/": _responses_file,
    "/api/v1/studies/{slug}/judgments/import/": _judgments_file,
}


def steer_to(run_id: int) -> Callable[[schemathesis.Case], None]:
    """A ``steer`` that points three valid cases in four at the given run and the ``cab-demo`` study and its
    material, the rest left as generated."""
    counter = itertools.count()

    def steer(case) -> None:
        # Most generated slugs and ids name nothing; point three valid cases in four at real objects, to reach
        # deeper code. (A path generated to be invalid stays as it is: it must be refused.)
        n = next(counter)
        if not n % 4:
            return
        parameters = case.path_parameters or {}
        if not case.meta.is_negative_at(ParameterLocation.PATH):
            real = {"slug": SLUG, "run_id": run_id, "round_name": "calibration-1", "table": "ari"}
            parameters.update({name: value for name, value in real.items() if name in parameters})
        body_steer = BODY_STEERS.get(case.operation.path) if case.method.upper() == "POST" else None
        # Only a case valid throughout gets a valid body: a negative case must stay one (its one invalid part may
        # not even be sent: an empty Idempotency-Key is no header at all), so its body stays as generated.
        if body_steer is not None and not case.meta.generation.mode.is_negative:
            case.body = body_steer(case.body, n)

    return steer
