"""A study's kind (docs/architecture.md#study-kinds): the one place that decides it, and the interface a kind
implements.

A study's kind follows from its schema document: a block under a registered kind's slug (an object) makes the
study of that kind, no block the default kind. ``kind_of`` is the only code that reads a schema definition's kind
block (``tests/annotation/test_kinds.py`` keeps it so); ``annotation/schema_document.py`` validates the blocks
before a schema exists. Every other module asks ``kind_of(schema or study)`` and calls the answer's hooks, or takes
its block (``block_of(study, KIND)`` in the kind's own package).

A kind's own study settings (``KindSetting``, or ``CoderSetting`` for one whose value is one of the study's coders)
are declared here by the kind and stored in ``Study.kind_settings`` under their names; ``setting_value`` reads one
(its default when the study never set it), and the study services check every value written
(``kind_settings_problems``).

A kind is an app of its own (``settings.STUDY_KINDS``) that registers a ``StudyKind`` when Django starts
(``register_kind`` in its ``AppConfig.ready``); the layers below call only the hooks here, in
``metrics.kind_sections`` (its report section) and in ``reports.kind_pages`` (its dashboard pages). A hook left
None is the default behaviour: nothing more on the turn page, a turn complete once every form has a score, one
assignment per turn, no session labels.
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


@dataclass(frozen=True)
class KindSetting:
    """A study setting of a kind's own: its name (the form field's, the API's and ``create_study``'s option), its
    label and help on the study pages, its choices (value, description) and the value of a study that never set
    it. Stored in ``Study.kind_settings``; offered on the New study form (for a schema of the kind) and on the
    settings page of a study of the kind (docs/architecture.md#study-kinds)."""

    name: str
    label: str
    choices: tuple[tuple[str, str], ...]
    default: str
    help_text: str = ""

    @property
    def values(self) -> tuple[str, ...]:
        return tuple(value for value, _ in self.choices)

    @property
    def default_said(self) -> str:
        """The default as the pages say it: its description, not its stored value."""
        return dict(self.choices)[self.default]


@dataclass(frozen=True)
class CoderSetting(KindSetting):
    """A kind's own setting whose value is one of the study's coders: the username of someone who is or was a
    member in one of ``roles`` (``annotation.selectors.study_coders``: one taken off the study keeps the role they
    had, so stays a valid value), blank for the kind's default (``default_said`` says what it is). A new study has
    no coders, so it is offered on the settings page of a study of the kind alone, its choices that study's coders
    of those roles; the New study form, ``create_study`` and the API do not take it."""

    choices: tuple[tuple[str, str], ...] = ()
    default: str = ""
    roles: tuple[str, ...] = ()
    default_said: str = "the default"


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
    # Completing a turn: what the kind's rules still want of the page's codes once every form has a score, each
    # "where · code: why" (the page links it to its form); None: nothing beyond a score of every form.
    turn_missing: Callable[[TurnView], list[str]] | None = field(default=None, compare=False, repr=False)
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
    # Study settings of the kind's own (stored in Study.kind_settings).
    settings: tuple[KindSetting, ...] = field(default=(), compare=False, repr=False)
    # The check of a conversation ingested into a study of the kind (a record as the conversations importer
    # validated it, ``benchmark.sessions``): its problems as (field, why), e.g. a trajectory with more sessions than
    # the kind's report can place; None: any conversation. Called as conversation_problems(block, record).
    conversation_problems: Callable[[dict[str, Any], dict[str, Any]], list[tuple[str, str]]] | None = field(
        default=None, compare=False, repr=False)

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
    taken = {setting.name for known in _KINDS.values() for setting in known.settings}
    for setting in kind.settings:
        if setting.name in taken or not isinstance(setting, CoderSetting) and setting.default not in setting.values:
            raise ValueError(f"study setting {setting.name!r}: its name is another kind's, or its default is "
                             "none of its choices")
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


def conversation_check(study: Study) -> Callable[[dict[str, Any]], list[tuple[str, str]]] | None:
    """The check a conversation ingested into ``study`` must pass, by its kind (its ``conversation_problems`` with
    the study's block), for every ingestion through a study (``benchmark.conversation_ingest``'s ``problems``);
    None when its kind has none."""
    kind = kind_of(study)
    check, block = kind.conversation_problems, kind.block
    if check is None or block is None:
        return None
    return lambda record: check(block, record)


def block_of(subject: Schema | Study | AttributeDefinition, kind: StudyKind) -> dict[str, Any] | None:
    """The schema's block when ``subject`` is of ``kind``, else None (in a kind's package: the roles of its
    attributes)."""
    found = kind_of(subject)
    return found.block if found == kind else None



def kind_settings() -> dict[str, tuple[StudyKind, KindSetting]]:
    """Every registered kind's own study settings by name, with their kind (kinds in ``kinds()`` order)."""
    return {setting.name: (kind, setting) for kind in kinds().values() for setting in kind.settings}


def setting_value(study: Study, setting: KindSetting) -> str:
    """The study's value of a setting of its kind's own: the one it set, else the setting's default (a study created
    before the setting existed has the default). A coder setting's value was checked against the study's coders when
    it was written, and a coder stays one of them when taken off the study."""
    value = (study.kind_settings or {}).get(setting.name)
    if isinstance(setting, CoderSetting):
        return value if isinstance(value, str) else setting.default
    return value if isinstance(value, str) and value in setting.values else setting.default


def kind_settings_problems(schema: Schema, values: Mapping[str, Any], *,
                           coders: Mapping[str, str] | None = None) -> dict[str, str]:
    """Why each of ``values`` (setting name -> value) cannot be a setting of a study of ``schema``, by name: a name
    no kind declares, a setting of another kind than the schema's, or a value none of its choices. A coder setting's
    value must be blank or the username of one of ``coders`` (username -> role: the study's, as
    ``annotation.selectors.study_coders`` has them) in one of its roles; None: a new study, which has no coders and
    is given none. Empty: all fine."""
    problems: dict[str, str] = {}
    known = kind_settings()
    own = kind_of(schema)
    for name, value in values.items():
        if name not in known:
            problems[name] = "not a study setting of any study kind"
            continue
        kind, setting = known[name]
        if kind != own:
            problems[name] = f"a setting of {kind.name} studies only; schema {schema.slug} is not a {kind.name} schema"
        elif isinstance(setting, CoderSetting):
            problem = _coder_problem(setting, value, coders)
            if problem:
                problems[name] = problem
        elif value not in setting.values:
            problems[name] = f"must be one of {', '.join(setting.values)} (not {str(value)[:40]!r})"
    return problems


def _coder_problem(setting: CoderSetting, value: Any, coders: Mapping[str, str] | None) -> str | None:
    """Why ``value`` cannot be the coder setting's value among ``coders`` (None: a new study), or None."""
    roles = " or ".join(setting.roles)
    if coders is None:
        return f"chosen on the study's settings page once the study has coders ({roles}); a new study has none"
    if not isinstance(value, str):
        return f"must be a username (not {str(value)[:40]!r})"
    if value == "":
        return None
    if value not in coders:
        return f"{value[:150]!r} is no coder of this study; choose one of its coders ({roles}), or none"
    if coders[value] not in setting.roles:
        return f"{value!r} is a {coders[value]} of this study; choose one of its coders ({roles}), or none"
    return None
