"""The core half of a study kind's report section (docs/architecture.md#study-kinds): what the recompute of a
study bundle (``metrics.core.recompute``) needs to compute the section from the bundle's rows, without Django.

A kind with a section ships it as ``<kind>.core.section`` (a pure module, like this core) holding ``SECTION``; the
recompute finds it by the kind's slug that the bundle's ``run.json`` names. Loaded by name, so that this core
imports no kind package (the kinds sit above it).
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .provenance import KindRows  # numpy: not for the web processes that read the report's warnings

DEFAULT_KIND = "default"


@dataclass(frozen=True)
class CoreSection:
    """``files``: the bundle paths of the rows the section reads beside the judgments; ``compute(block, texts, *,
    seed, resamples)``: the section and the rows as the input fingerprint covers them, from run.json's block of the
    kind and the files' texts in ``files`` order (ValueError naming what is wrong and where); ``warning(section)``:
    what the report's ``warnings`` say when the section came out empty although the study has rows for it (None
    when it did not; ``metrics.core.report_warnings``)."""

    files: tuple[str, ...]
    compute: Callable[..., tuple[dict, KindRows]]
    warning: Callable[[Mapping[str, Any]], str | None] | None = None


def core_section(kind: str) -> CoreSection | None:
    """The core section of a kind by its slug; None for the default kind and for a name no installed kind has. A
    bundle names the kind: nothing is imported but a package that ships ``core/section.py`` (a name of any other
    module, ``this`` or ``antigravity``, is looked up without being run)."""
    if kind == DEFAULT_KIND or not re.fullmatch(r"[a-z][a-z0-9_]{0,40}", kind):
        return None
    spec = importlib.util.find_spec(kind)  # a top-level name: found, not imported
    folders = (spec.submodule_search_locations or []) if spec is not None else []
    if not any((Path(folder) / "core" / "section.py").is_file() for folder in folders):
        return None
    section = getattr(importlib.import_module(f"{kind}.core.section"), "SECTION", None)
    return section if isinstance(section, CoreSection) else None
