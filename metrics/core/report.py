"""The one entry point the Django side calls: plain tables in, one JSON-ready dict out (docs/metrics.md#report-keys).

Sections are always present: with no calibration round or no main round they are empty ({} / None / []),
never missing, so a consumer can index the report without guarding every key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]  # scikit-learn's dependency, untyped

from .bootstrap import Bootstrap
from .calibration import calibration_section
from .common import to_jsonable
from .encode import encode
from .indices import indices_section, models_left_out
from .provenance import KindRows, fingerprint, fingerprint_rows
from .report_warnings import report_warnings
from .tables import AttributeSpec, JudgmentTable, ReportParams, SpanTable

__all__ = ["AttributeSpec", "JudgmentTable", "PreparedReport", "ReportParams", "SpanTable", "build_report",
           "report_complete", "report_finish", "report_prepare", "single_blas_thread"]

REPORT_VERSION = 1
Progress = Callable[[float, str], None]

# Share of the report's time each stage takes (for progress; measured at paper scale, B = 1,000).
ENCODED, CALIBRATED, INDEXED = 0.15, 0.3, 0.75


def single_blas_thread() -> None:
    """Run this process's BLAS (numpy's matrix products: the bootstrap's draw counts x cell sums) on one thread
    from now on. The product's last bit depends on how many threads OpenBLAS splits it across (one per core by
    default), so without this a report would differ in the last digit between machines, and a chunk computed by
    a helper on another machine would differ from the run's own; one thread is also faster here, where the
    worker shares its cores with PostgreSQL (the threads spin-wait). Every path that computes a report or a
    bootstrap chunk calls it first (``metrics.runs.report_prepare``, ``metrics.scaleout.help_with``, the recompute
    of a study bundle); only Celery workers, commands and the recompute import the modules that call it."""
    threadpool_limits(limits=1, user_api="blas")


@dataclass(eq=False)
class PreparedReport:
    """A report with every figure but the bootstrap ones, and the bootstraps still to compute (chunk by chunk,
    here or on other workers: ``report.bootstrap.chunk_samples``)."""

    report: dict
    bootstrap: Bootstrap


def report_prepare(
    *,
    attributes: Sequence[AttributeSpec],
    judgments: JudgmentTable,
    spans: SpanTable | None = None,
    response_texts: Mapping[tuple[str, str, int, str], str] | None = None,
    conversation_kinds: Mapping[tuple[str, str], str] | None = None,
    subcategory_attribute: Mapping[str, str] | None = None,
    params: ReportParams = ReportParams(),  # noqa: B008 - frozen dataclass, safe as a default
    progress: Progress | None = None,
) -> PreparedReport:
    """Every figure of the report except the bootstrap CIs and selection stability, which ``report_finish``
    fills in from the bootstrap's chunks. ``progress`` hears (share of the whole report, stage)."""
    params.validate()

    def step(fraction: float, message: str) -> None:
        if progress is not None:
            progress(fraction, message)

    step(0.0, "encoding judgments")
    enc = encode(attributes, judgments, spans)
    boot = Bootstrap(seed=params.seed, resamples=params.bootstrap)
    step(ENCODED, "calibration reliability")
    calibration = calibration_section(enc, params, subcategory_attribute, boot=boot)
    step(CALIBRATED, "main-round indices")
    indices = indices_section(
        enc,
        params,
        response_texts=response_texts,
        conversation_kinds=conversation_kinds,
        subcategory_attribute=subcategory_attribute,
        boot=boot,
        progress=lambda share, message: step(CALIBRATED + share * (INDEXED - CALIBRATED), message),
    )
    report = {
        "version": REPORT_VERSION,
        "parameters": params.as_dict(),
        "attributes": [
            {
                "code": a.code,
                "group": a.group,
                "cluster": a.cluster,
                "scale": list(a.scale),
                "level": a.level,
                "unit": a.unit,
                "uiri": a.uiri,
                "risk": a.risk is not None,
            }
            for a in enc.schema.attributes
        ],
        "input": {
            "fingerprint": fingerprint(judgments, spans),  # docs/metrics.md#provenance
            "judgments": len(judgments),
            "used": len(enc.judgments),
            "dropped": enc.dropped,
            "rounds": sorted(enc.rounds),
            "models_left_out": models_left_out(enc, params),  # what the per-model figures do not read, by why
        },
        "calibration": calibration,
        "indices": indices,
    }
    step(INDEXED, f"bootstrap: {boot.chunks} chunks of up to {boot.resamples} resamples")
    return PreparedReport(report, boot)


def report_complete(
    report: dict, *, study: Mapping[str, object], software: Mapping[str, object], unscored: int,
    sections: Mapping[str, dict | None] | None = None, kind_rows: KindRows | None = None,
) -> None:
    """What a study's report holds beyond the core's figures, added in place: the study (slug, schema, version),
    the software that computed it (docs/metrics.md#provenance), the judgments without a score (read by no figure:
    counted as read and left out, so ``input.judgments`` = used + dropped), the sections of the study's kind
    (by the kind's slug; None: not this kind) and the ``warnings``. One home for the server's run
    (``metrics.runs.report_prepare``) and the recompute of a study bundle (``metrics.core.recompute``), so the two
    write the same report."""
    report["study"] = dict(study)
    report["software"] = dict(software)
    counted = report["input"]
    counted["fingerprint"] = fingerprint_rows(counted["fingerprint"], kind_rows)  # the section's rows too
    counted["judgments"] += unscored
    counted["dropped"] = {"unscored": unscored, **counted["dropped"]}
    for name, section in (sections or {}).items():
        if section is not None:
            report[name] = section
    # the sections empty although the study coded or labelled something for them (metrics_report and pages say so)
    report["warnings"] = report_warnings(report)


def report_finish(prepared: PreparedReport, chunks: Sequence[Sequence[np.ndarray]]) -> dict:
    """The report, with the bootstrap figures from its chunks' samples (in chunk order), as JSON-ready data; the
    ``warnings`` (when ``report_complete`` added them) are said again, now that they can read how many resamples
    each interval rests on."""
    prepared.bootstrap.finish(chunks)
    if "warnings" in prepared.report:
        prepared.report["warnings"] = report_warnings(prepared.report)
    return to_jsonable(prepared.report)


def build_report(
    *,
    attributes: Sequence[AttributeSpec],
    judgments: JudgmentTable,
    spans: SpanTable | None = None,
    response_texts: Mapping[tuple[str, str, int, str], str] | None = None,
    conversation_kinds: Mapping[tuple[str, str], str] | None = None,
    subcategory_attribute: Mapping[str, str] | None = None,
    params: ReportParams = ReportParams(),  # noqa: B008 - frozen dataclass, safe as a default
    progress: Progress | None = None,
) -> dict:
    """Compute every quantity of docs/metrics.md; deterministic for a given `params.seed`.

    Raises ValueError for input the schema cannot describe (bad spec, unequal columns, bad parameters);
    rows it merely cannot use (unknown attribute, off-scale score, re-coded duplicates) are dropped and
    counted under report["input"]["dropped"].
    """
    prepared = report_prepare(
        attributes=attributes, judgments=judgments, spans=spans, response_texts=response_texts,
        conversation_kinds=conversation_kinds, subcategory_attribute=subcategory_attribute, params=params,
        progress=progress,
    )
    boot = prepared.bootstrap
    chunks = []
    for chunk in range(boot.chunks):
        chunks.append(boot.chunk_samples(chunk))
        if progress is not None:
            progress(INDEXED + (1.0 - INDEXED) * 0.95 * (chunk + 1) / boot.chunks,
                     f"bootstrap: chunk {chunk + 1} of {boot.chunks}")
    if progress is not None:
        progress(INDEXED + (1.0 - INDEXED) * 0.95, "assembling report")
    result = report_finish(prepared, chunks)
    if progress is not None:
        progress(1.0, "done")
    return result
