"""The CARE study kind (docs/care.md): a schema with a ``care`` block. Its identity alone, importable by every
module of the package; ``care.hooks`` registers it with its hooks when Django starts."""

from annotation.kinds import CoderSetting, KindSetting, StudyKind

CARE = StudyKind(slug="care", name="CARE")

# Which sessions the session quality (ProdR, UnprodR, OmitR) is computed over: rule Q1 of docs/care.md, the core's
# CareParams.quality_scope (whose QUALITY_SCOPES these values are: tests/care/test_quality_scope.py).
QUALITY_SCOPE = KindSetting(
    name="quality_scope", label="quality scope",
    choices=(("episode_sessions", "Crisis and callback sessions: the sessions that open an episode"),
             ("after_crisis", "After the crisis: also every session after the history's first crisis")),
    default="episode_sessions",
    help_text="Which sessions the session quality figures (ProdR, UnprodR, OmitR) are computed over.")

# Whose codings are the reference coding (states, alignment, control windows, quality) when the study has no gold
# codings: one of its coders in these roles (the core's REFERENCE_ROLES: tests/care/test_reference_coding.py), blank
# for the default order (docs/care.md#the-reference-coding).
REFERENCE_CODING = CoderSetting(
    name="reference_coding", label="reference coding", roles=("expert", "reviewer", "method"),
    default_said="none: the first expert with codings, else the first reviewer, else the first method",
    help_text="Whose codings the recovery states, alignment, control windows and session quality come from when the "
              "study has no gold codings; gold codings, once the study has any, are the reference whatever is "
              "chosen here.")
