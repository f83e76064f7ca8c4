"""The LongCounsel-8 study kind (docs/lc8.md): a schema with an ``lc8`` block. Its identity alone, importable by
every module of the package; ``lc8.hooks`` registers it with its hooks when Django starts."""

from annotation.kinds import StudyKind

LC8 = StudyKind(slug="lc8", name="LongCounsel-8")
DEMO_STUDY = "lc8-demo"  # lc8.demo loads it
# The kind's definition gives its intervals over 2,000 bootstrap resamples: the B of a run of an LC8 study that asks
# for none (docs/lc8-metrics.md#bootstrap-resamples).
BOOTSTRAP = 2000
