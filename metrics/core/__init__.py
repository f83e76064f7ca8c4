"""Pure computation core of the metrics engine: plain arrays in, plain JSON-ready data out, no Django.

Modules, one concern each: `agreement` (exact/bucketed, pairwise, bias, plurality), `kappa` (weighted κ, α),
`bootstrap` (vectorised cluster bootstrap), `indices` (UIRI, flags, risks, ARI, fingerprints), `correlation`
(Spearman + BH), `trajectories`, `spans`; `calibration` and `indices` assemble the report sections and
`report.build_report` is the single entry point. `naive` is the slow reference used by tests and the benchmark;
`synthetic` builds deterministic studies of any size.
"""

from .report import AttributeSpec, JudgmentTable, ReportParams, SpanTable, build_report

__all__ = ["AttributeSpec", "JudgmentTable", "ReportParams", "SpanTable", "build_report"]
