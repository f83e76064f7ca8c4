"""Pure computation core of the metrics engine: plain arrays in, plain JSON-ready data out, no Django.

Modules, one concern each: `agreement` (exact/bucketed, pairwise, bias, plurality), `kappa` (weighted κ, α),
`bootstrap` (vectorised cluster bootstrap), `indices` (UIRI, flags, risks, ARI, fingerprints), `correlation`
(Spearman + BH), `trajectories`, `spans`; `calibration` and `indices` assemble the report sections and
`report.build_report` is the single entry point. `naive` is the slow reference used by tests and the benchmark;
`synthetic` builds deterministic studies of any size.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .report import AttributeSpec, JudgmentTable, ReportParams, SpanTable, build_report

__all__ = ["AttributeSpec", "JudgmentTable", "ReportParams", "SpanTable", "build_report"]


def __getattr__(name: str) -> Any:
    # Loaded on first use (PEP 562): importing one light module of the core (``metrics.core.agreement``) must not
    # pull scipy and scikit-learn into a web worker through ``report``.
    if name in __all__:
        from . import report

        return getattr(report, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
