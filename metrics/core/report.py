"""The one entry point the Django side calls: plain tables in, one JSON-ready dict out (SPEC §7).

Sections are always present: with no calibration round or no main round they are empty ({} / None / []),
never missing, so a consumer can index the report without guarding every key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from .calibration import calibration_section
from .common import to_jsonable
from .encode import encode
from .indices import indices_section
from .tables import AttributeSpec, JudgmentTable, ReportParams, SpanTable

__all__ = ["AttributeSpec", "JudgmentTable", "ReportParams", "SpanTable", "build_report"]

REPORT_VERSION = 1


def build_report(
    *,
    attributes: Sequence[AttributeSpec],
    judgments: JudgmentTable,
    spans: SpanTable | None = None,
    response_texts: Mapping[tuple[str, str, int, str], str] | None = None,
    conversation_kinds: Mapping[tuple[str, str], str] | None = None,
    subcategory_attribute: Mapping[str, str] | None = None,
    params: ReportParams = ReportParams(),  # noqa: B008 - frozen dataclass, safe as a default
    progress: Callable[[float, str], None] | None = None,
) -> dict:
    """Compute every SPEC §4/§5 quantity; deterministic for a given `params.seed`.

    Raises ValueError for input the schema cannot describe (bad spec, unequal columns, bad parameters);
    rows it merely cannot use (unknown attribute, off-scale score, re-coded duplicates) are dropped and
    counted under report["input"]["dropped"].
    """
    params.validate()

    def step(fraction: float, message: str) -> None:
        if progress is not None:
            progress(fraction, message)

    step(0.0, "encoding judgments")
    enc = encode(attributes, judgments, spans)
    step(0.2, "calibration reliability")
    calibration = calibration_section(enc, params, subcategory_attribute)
    step(0.5, "main-round indices")
    indices = indices_section(
        enc,
        params,
        response_texts=response_texts,
        conversation_kinds=conversation_kinds,
        subcategory_attribute=subcategory_attribute,
    )
    step(0.95, "assembling report")
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
            "judgments": len(judgments),
            "used": len(enc.judgments),
            "dropped": enc.dropped,
            "rounds": sorted(enc.rounds),
        },
        "calibration": calibration,
        "indices": indices,
    }
    result = to_jsonable(report)
    step(1.0, "done")
    return result
