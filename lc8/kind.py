"""The LongCounsel-8 study kind (docs/lc8.md): a schema with an ``lc8`` block. Its identity alone, importable by
every module of the package; ``lc8.hooks`` registers it with its hooks when Django starts."""

from annotation.kinds import StudyKind

LC8 = StudyKind(slug="lc8", name="LongCounsel-8")
DEMO_STUDY = "lc8-demo"  # lc8.demo loads it
