"""The provenance a download states in its response headers (docs/metrics.md#provenance), one home for every view
that serves one, page and API alike:

- a file made from a metric run (``report.json``, a per-model index table, a dashboard figure's CSV, SVG or PNG, a
  study bundle): ``run_headers`` — which run (``CAB-Run``), when it finished (``CAB-Run-Finished``), with which
  parameters (``CAB-Parameters``), by which software (``CAB-Software``) and from which input
  (``CAB-Input-Fingerprint``: the report's ``input.fingerprint``);
- a file read from the database as it is now (the judgments export): ``export_headers`` — the software that wrote it
  and when (``CAB-Exported``); with ``repr_digest`` (RFC 9530's ``Repr-Digest``) the digest of exactly its bytes.

Every value is ASCII (JSON with ``\\uXXXX`` escapes), so it survives any HTTP stack; the same run gives the same
headers. A value the report does not hold (a report written before it said so) is left out, not guessed.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

from django.conf import settings

RUN = "CAB-Run"
RUN_FINISHED = "CAB-Run-Finished"
PARAMETERS = "CAB-Parameters"
SOFTWARE = "CAB-Software"
INPUT_FINGERPRINT = "CAB-Input-Fingerprint"
EXPORTED = "CAB-Exported"
REPR_DIGEST = "Repr-Digest"
# Every header above, in the order a client may list them (cab_cli keeps them beside a downloaded file).
NAMES = (RUN, RUN_FINISHED, PARAMETERS, SOFTWARE, INPUT_FINGERPRINT, EXPORTED, REPR_DIGEST)


class Run(Protocol):
    pk: Any
    finished_at: datetime | None
    parameters: Any


def compact(value: Any) -> str:
    """JSON on one line, keys sorted, ASCII only: a header value that compares equal for equal values."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def when(moment: datetime | None) -> str:
    """ISO 8601 in UTC, to the second (``2026-01-02T00:00:00Z``)."""
    if moment is None:
        return ""
    return moment.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def software_now() -> dict[str, str]:
    """The running server's ``{version, commit}`` (the shape of a report's ``software``)."""
    return {"version": settings.CAB_VERSION, "commit": settings.CAB_COMMIT}


def run_facts(run: Run, report: Mapping[str, Any] | None) -> dict[str, Any]:
    """What a run-derived file states, as values: ``run``, ``finished_at``, ``parameters`` (the report's: every
    choice its numbers depend on; the run's as asked when the report has none), ``software`` (the report's: the
    code that computed it) and ``input_fingerprint``. The same facts as headers (``run_headers``) and inside a
    figure's metadata (``reports.figures``)."""
    report = report or {}
    parameters = report.get("parameters") if isinstance(report.get("parameters"), Mapping) else run.parameters
    software = report.get("software") if isinstance(report.get("software"), Mapping) else None
    fingerprint = (report.get("input") or {}).get("fingerprint") if isinstance(report.get("input"), Mapping) else None
    return {"run": run.pk, "finished_at": when(run.finished_at), "parameters": parameters or {},
            "software": dict(software) if software else None, "input_fingerprint": fingerprint or None}


def run_headers(run: Run, report: Mapping[str, Any] | None) -> dict[str, str]:
    """The response headers of a file made from ``run`` (whose stored report is ``report``)."""
    return _headers(run_facts(run, report))


def _headers(facts: Mapping[str, Any]) -> dict[str, str]:
    headers = {RUN: str(facts["run"]), RUN_FINISHED: facts["finished_at"], PARAMETERS: compact(facts["parameters"])}
    if facts["software"]:
        headers[SOFTWARE] = compact(facts["software"])
    if facts["input_fingerprint"]:
        headers[INPUT_FINGERPRINT] = str(facts["input_fingerprint"])
    return {name: value for name, value in headers.items() if value}


def figure_metadata(facts: Mapping[str, Any], *, title: str, fmt: str) -> dict[str, str]:
    """What a chart's file says of itself (matplotlib's ``savefig(metadata=…)``), no date, so the same chart of the
    same run is the same bytes: an SVG's Dublin Core ``Title``, ``Source`` (the run, in words) and ``Description``
    (``run_facts`` as compact JSON); a PNG's tEXt chunks the same three plus one per response header (``CAB-Run`` …),
    so a figure found on its own is traced to its run and data."""
    source = f"CAB metric run {facts['run']}" + (f", finished {facts['finished_at']}" if facts["finished_at"] else "")
    if facts["input_fingerprint"]:
        source += f", input {facts['input_fingerprint']}"
    said = {"Title": title, "Source": source, "Description": compact(dict(facts))}
    return said if fmt == "svg" else {**said, **_headers(facts)}


def export_headers(now: datetime | None = None) -> dict[str, str]:
    """The response headers of a file read from the database as it is now: the software that wrote it and when."""
    return {SOFTWARE: compact(software_now()), EXPORTED: when(now or datetime.now(UTC))}


def repr_digest(sha256_hex: str) -> str:
    """RFC 9530's ``Repr-Digest`` of a file whose SHA-256 is ``sha256_hex``: ``sha-256=:<base64>:``."""
    return f"sha-256=:{base64.b64encode(bytes.fromhex(sha256_hex)).decode('ascii')}:"
