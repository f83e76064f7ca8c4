"""The CARE study kind (docs/care.md): a schema with a ``care`` block. Its identity alone, importable by every
module of the package; ``care.hooks`` registers it with its hooks when Django starts."""

from annotation.kinds import KindSetting, StudyKind

CARE = StudyKind(slug="care", name="CARE")

# Which sessions the session quality (ProdR, UnprodR, OmitR) is computed over: rule Q1 of docs/care.md, the core's
# CareParams.quality_scope (whose QUALITY_SCOPES these values are: tests/care/test_quality_scope.py).
QUALITY_SCOPE = KindSetting(
    name="quality_scope", label="quality scope",
    choices=(("episode_sessions", "Crisis and callback sessions: the sessions that open an episode"),
             ("after_crisis", "After the crisis: also every session after the history's first crisis")),
    default="episode_sessions",
    help_text="Which sessions the session quality figures (ProdR, UnprodR, OmitR) are computed over.")
