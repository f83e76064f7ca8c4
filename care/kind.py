"""The CARE study kind (docs/care.md): a schema with a ``care`` block. Its identity alone, importable by every
module of the package; ``care.hooks`` registers it with its hooks when Django starts."""

from annotation.kinds import StudyKind

CARE = StudyKind(slug="care", name="CARE")
