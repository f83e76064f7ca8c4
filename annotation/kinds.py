"""A study's kind (docs/architecture.md#study-kinds): the one place that decides it.

A study's kind follows from its schema document: a ``care`` block makes it a CARE study, an ``lc8`` block a
LongCounsel-8 study, neither the default kind. ``kind_of`` is the only code that reads a schema definition's kind
block (``tests/annotation/test_kinds.py`` keeps it so); ``annotation/schema_document.py`` validates the blocks
before a schema exists. Every other module asks ``kind_of(schema or study)`` and compares the answer with a kind of
the registry (``kind_of(study) == LC8``) or takes its block (``block_of(study, CARE)``).

The registry lists the known kinds in the order ``kind_of`` tries them; ``register_kind`` adds one (its schemas
carry a block under the kind's slug). There is no plug-in loading: a kind is registered by the module that defines
it, here for the built-in ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from annotation.models import AttributeDefinition, Schema, Study


@dataclass(frozen=True)
class StudyKind:
    """A kind of study: its slug (``default``, ``care``, ``lc8``; the key of its block in a schema document), its
    human name and, as ``kind_of`` answers it, the schema's block (None for the default kind and for the registry's
    entries). Two kinds are equal when their slugs and names are: the block does not count."""

    slug: str
    name: str
    block: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    @property
    def is_default(self) -> bool:
        return self.slug == DEFAULT.slug


DEFAULT = StudyKind(slug="default", name="default")
_KINDS: dict[str, StudyKind] = {DEFAULT.slug: DEFAULT}


def register_kind(slug: str, name: str) -> StudyKind:
    """Add a kind to the registry: its schemas carry a block (an object) under ``slug``. Refused for a slug already
    registered. ``kind_of`` tries the kinds in the order they were registered."""
    if slug in _KINDS:
        raise ValueError(f"a study kind {slug!r} is already registered")
    kind = StudyKind(slug=slug, name=name)
    _KINDS[slug] = kind
    return kind


CARE = register_kind("care", "CARE")
LC8 = register_kind("lc8", "LongCounsel-8")


def kinds() -> Mapping[str, StudyKind]:
    """The registered kinds by slug, the default kind first (read-only)."""
    return MappingProxyType(_KINDS)


def kind_of(subject: Schema | Study | AttributeDefinition) -> StudyKind:
    """The kind of a schema, or of a study or attribute through its schema, with the schema's block: the first
    registered kind whose block the definition holds as an object (CARE before LongCounsel-8), else the default
    kind. Reads the definition loaded with the schema: no query when the schema is loaded."""
    schema = cast("Schema", getattr(subject, "schema", subject))  # a study's or attribute's, or the schema itself
    definition = schema.definition
    if isinstance(definition, dict):
        for kind in _KINDS.values():
            block = definition.get(kind.slug) if not kind.is_default else None
            if isinstance(block, dict):
                return replace(kind, block=block)
    return DEFAULT


def block_of(subject: Schema | Study | AttributeDefinition, kind: StudyKind) -> dict[str, Any] | None:
    """The schema's block when ``subject`` is of ``kind``, else None (``block_of(study, CARE)``: the roles of a
    CARE study's attributes)."""
    found = kind_of(subject)
    return found.block if found == kind else None
