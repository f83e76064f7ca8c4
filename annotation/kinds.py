"""A study's kind (docs/architecture.md#study-kinds): the one place that decides it, and the interface a kind
implements.

A study's kind follows from its schema document: a block under a registered kind's slug (an object) makes the
study of that kind, no block the default kind. ``kind_of`` is the only code that reads a schema definition's kind
block (``tests/annotation/test_kinds.py`` keeps it so); ``annotation/schema_document.py`` validates the blocks
before a schema exists. Every other module asks ``kind_of(schema or study)`` and calls the answer's hooks, or takes
its block (``block_of(study, KIND)`` in the kind's own package).

A kind is an app of its own (``settings.STUDY_KINDS``) that registers a ``StudyKind`` when Django starts
(``register_kind`` in its ``AppConfig.ready``); the layers below call only the hooks here, in
``metrics.kind_sections`` (its report section) and in ``reports.kind_pages`` (its dashboard pages). A hook left
None is the default behaviour: nothing more on the turn page, one assignment per turn, no session labels.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from annotation.models import Assignment, AttributeDefinition, Judgment, Schema, Study
    from annotation.selectors import TurnView
    from benchmark.models import Session, Turn


@dataclass
class SessionChecklist:
    """The session-level items a coder rates on a turn page (at the end of a session), with their judgments."""

    session: Session
    items: list[AttributeDefinition]
    judgments: dict[str, Judgment]  # the coder's, by attribute code


@dataclass(frozen=True)
class CodingPage:
    """A page of the kind's own in place of the turn page: its template and what it adds to the turn page's
    context (``v``, ``editable``, ``note_url``, ``flag_choices``)."""

    template: str
    context: dict[str, Any]


@dataclass(frozen=True)
class TurnPage:
    """What a kind adds to the shared turn page: template partials (``file.html#partial``; empty: none) for the
    page's head (styles and scripts), the history above the turn and the session checklist below it, and the
    context they read."""

    head: str = ""
    history: str = ""
    checklist: str = ""
    context: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class KindDemo:
    """A kind's demo study, which ``load_demo --<slug>`` loads for the demo accounts."""

    study: str  # its slug
    label: str  # how load_demo names it ("<label> demo study …")
    option_help: str  # the help of load_demo's option
    said: str  # what load_demo prints once it is there
    load: Callable[..., Any]  # load(admin=, reviewer=, expert=)


def _none(*_: Any, **__: Any) -> None:
    return None


@dataclass(frozen=True)
class StudyKind:
    """A kind of study: its slug (``default`` or the key of its block in a schema document), its human name and,
    as ``kind_of`` answers it, the schema's block (None for the default kind and for the registry's entries), with
    its hooks. Two kinds are equal when their slugs and names are: neither block nor hooks count."""

    slug: str
    name: str
    block: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    # The check of a schema document's block (an object): its problems, each naming where; None: any object.
    # Called as block_problems(block, attributes by code, group units by group code).
    block_problems: Callable[..., list[str]] | None = field(default=None, compare=False, repr=False)
    # The turn page: the session checklist's items and judgments (at a session's end), a page of the kind's own in
    # place of the turn page (None: the turn page), what it adds to the turn page (None: nothing).
    session_checklist: Callable[..., SessionChecklist | None] = field(default=_none, compare=False, repr=False)
    coding_page: Callable[[TurnView, User], CodingPage | None] = field(default=_none, compare=False, repr=False)
    turn_page: Callable[[TurnView, User], TurnPage | None] = field(default=_none, compare=False, repr=False)
    # Assignment: the units a round assigns in place of its turns (a session-rated kind: each session's first
    # turn) and the assignments of the coders' queues of units; None: one assignment per turn.
    assignment_units: Callable[[Sequence[Turn]], list[Turn]] | None = field(default=None, compare=False,
                                                                             repr=False)
    assignment_rows: Callable[..., list[Assignment]] | None = field(default=None, compare=False, repr=False)
    # Session labels (methods' predictions, reference labels) and the attributes they may be of (None: any
    # session attribute); an attribute derived from others, never judged (the reason, or None).
    session_labels: bool = field(default=False, compare=False, repr=False)
    labelled_attributes: Callable[[dict[str, Any]], set[str]] | None = field(default=None, compare=False,
                                                                             repr=False)
    derived_from: Callable[[AttributeDefinition, dict[str, Any]], str | None] | None = field(
        default=None, compare=False, repr=False)
    demo: KindDemo | None = field(default=None, compare=False, repr=False)

    @property
    def is_default(self) -> bool:
        return self.slug == DEFAULT.slug

    @property
    def session_rated(self) -> bool:
        """Whether a round assigns sessions rather than turns."""
        return self.assignment_units is not None


DEFAULT = StudyKind(slug="default", name="default")
_KINDS: dict[str, StudyKind] = {DEFAULT.slug: DEFAULT}
_ORDERED: Mapping[str, StudyKind] = MappingProxyType(dict(_KINDS))  # kinds(), rebuilt by register_kind


def register_kind(kind: StudyKind) -> StudyKind:
    """Add a kind to the registry: its schemas carry a block (an object) under its slug. Refused for a slug already
    registered. ``kind_of`` tries the kinds in slug order."""
    global _ORDERED
    if kind.slug in _KINDS:
        raise ValueError(f"a study kind {kind.slug!r} is already registered")
    _KINDS[kind.slug] = kind
    _ORDERED = MappingProxyType({DEFAULT.slug: DEFAULT, **dict(sorted(
        (slug, known) for slug, known in _KINDS.items() if slug != DEFAULT.slug))})
    return kind


def kinds() -> Mapping[str, StudyKind]:
    """The registered kinds by slug, the default kind first, then by slug (read-only)."""
    return _ORDERED


def kind_of(subject: Schema | Study | AttributeDefinition) -> StudyKind:
    """The kind of a schema, or of a study or attribute through its schema, with the schema's block: the first
    registered kind (by slug) whose block the definition holds as an object, else the default kind. Reads the
    definition loaded with the schema: no query when the schema is loaded."""
    schema = cast("Schema", getattr(subject, "schema", subject))  # a study's or attribute's, or the schema itself
    definition = schema.definition
    if isinstance(definition, dict):
        for kind in kinds().values():
            block = definition.get(kind.slug) if not kind.is_default else None
            if isinstance(block, dict):
                return replace(kind, block=block)
    return DEFAULT


def block_of(subject: Schema | Study | AttributeDefinition, kind: StudyKind) -> dict[str, Any] | None:
    """The schema's block when ``subject`` is of ``kind``, else None (in a kind's package: the roles of its
    attributes)."""
    found = kind_of(subject)
    return found.block if found == kind else None

