"""The report section of a study kind (docs/architecture.md#study-kinds): the metric run, the study bundle and the
report's API ask here for the section a study's kind adds to its report, never the kind's package itself.

A kind with a section registers it when Django starts (its ``AppConfig.ready``); the default kind has none. The
section's slug is its key in the report (the kind's slug).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from annotation.kinds import kind_of
from metrics.parameters import DEFAULT_BOOTSTRAP

if TYPE_CHECKING:
    from annotation.models import Study
    from metrics.core.provenance import KindRows


@dataclass(frozen=True)
class ReportSection:
    """A kind's section of the report: ``section_and_rows(study=, seed=, resamples=)`` computes it with the rows it
    read (the input fingerprint covers them; the study bundle ships them); ``bundle_rows(study)`` reads those rows
    once and answers a function that iterates them afresh at each call (the bundle writes them and fingerprints
    them). ``help_text`` describes the section in the report's API schema; ``files`` (path → description) and
    ``columns`` (name → (Frictionless type, description)) describe the rows' files in the bundle's
    ``datapackage.json`` (columns the kinds share are described there once). ``bootstrap``: the resamples B of a
    run of the kind's studies that asks for none, when the kind's definition sets one (None: ``DEFAULT_BOOTSTRAP``;
    ``default_bootstrap``)."""

    slug: str
    help_text: str
    section_and_rows: Callable[..., tuple[dict, KindRows] | None]
    bundle_rows: Callable[[Study], Callable[[], KindRows]]
    files: Mapping[str, str] = field(default_factory=dict)
    columns: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    bootstrap: int | None = None


_SECTIONS: dict[str, ReportSection] = {}


def register_section(section: ReportSection) -> ReportSection:
    """Add a kind's section (refused for a slug already registered)."""
    if section.slug in _SECTIONS:
        raise ValueError(f"a report section {section.slug!r} is already registered")
    _SECTIONS[section.slug] = section
    return section


def report_sections() -> list[ReportSection]:
    """Every registered section, by slug."""
    return [_SECTIONS[slug] for slug in sorted(_SECTIONS)]


def section_of(study: Study) -> ReportSection | None:
    """The section of the study's kind; None for a kind without one (the default kind)."""
    return _SECTIONS.get(kind_of(study).slug)


def default_bootstrap(study: Study) -> int:
    """The bootstrap resamples B of a run of ``study`` that asks for none (docs/metrics.md#parameters-of-a-run): its
    kind's, else ``DEFAULT_BOOTSTRAP``. Every path that starts a run with the default asks here: the overview's
    form, the API, ``metrics_report`` and the service (a run a round's close or a gold change starts)."""
    section = section_of(study)
    return section.bootstrap if section is not None and section.bootstrap is not None else DEFAULT_BOOTSTRAP
