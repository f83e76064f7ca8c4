"""Reads of the annotation app. Every query that returns judgments is scoped to what the caller may see."""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from django.core.paginator import Page, Paginator
from django.db import connection
from django.db.models import (
    Case,
    CharField,
    Count,
    Exists,
    F,
    Max,
    Min,
    Model,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.functions import MD5, Cast, Coalesce, Concat
from django.utils.crypto import constant_time_compare

from access import roles
from access.checks import user_sees_all_studies
from annotation import rules
from annotation.kinds import conversation_check, kind_of
from annotation.models import (
    BLINDING_KEY_BYTES,
    Assignment,
    AttributeDefinition,
    ConversationProgress,
    FormerStudyMember,
    Judgment,
    JudgmentRevision,
    QueueProgress,
    Round,
    RoundItem,
    Schema,
    SessionLabel,
    Span,
    SpanSubcategory,
    Study,
    StudyMember,
)
from annotation.page_forms import AttrForm, AttributeGroup, JudgmentShown, attribute_groups
from benchmark.models import Conversation, Dataset, ModelResponse, Session, Turn
from common.lookups import any_of
from common.rounds import round_name, round_parse
from common.rows import ModelColumns


def studies_visible_to(*, user: User) -> QuerySet[Study]:
    studies = Study.objects.select_related("schema").prefetch_related("rounds")
    if not user_sees_all_studies(user=user):
        studies = studies.filter(members__user=user)
    return studies.order_by("slug")


def home_studies(*, user: User) -> tuple[QuerySet[Study], bool]:
    """The home page's list of studies, and whether it shows how many conversations each study's rounds hold. That
    count goes over every round item of the study: researchers' information (admins and researchers), which a
    researcher-only figure may aggregate for; a reviewer's home page, which must cost the same however large the
    study (issue 34, docs/benchmarks.md#issue-34-reviewer-pages-whose-cost-does-not-grow-with-the-study), lists
    its studies without it."""
    staff = user_sees_all_studies(user=user)
    studies = Study.objects.select_related("schema").prefetch_related("rounds").order_by("slug")
    if not staff:
        return studies.filter(members__user=user), False
    return studies.annotate(conversation_count=Count("rounds__items__turn__conversation", distinct=True)), True


def schema_get(*, slug: str) -> Schema:
    return Schema.objects.prefetch_related("attributes__subcategories").get(slug=slug)


# --- the reviewer's queue and turn view ----------------------------------------------------------------------

RESPONSE_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass
class ResponseCard:
    response: ModelResponse
    handle: str
    label: str
    judgments: dict[str, JudgmentShown]
    groups: list[tuple[AttributeGroup, list[AttrForm]]]

    @property
    def text_id(self) -> str:
        return f"text-{self.handle}"

    @property
    def forms(self) -> list[AttrForm]:
        return [f for _, forms in self.groups for f in forms]

    @property
    def scored(self) -> int:
        return sum(1 for f in self.forms if f.scored)


@dataclass
class TurnView:
    assignment: Assignment
    round: Round
    study: Study
    turn: Turn
    earlier_turns: list[Turn]
    turn_groups: list[AttributeGroup]
    response_groups: list[AttributeGroup]
    turn_judgments: dict[str, JudgmentShown]
    turn_forms: list[tuple[AttributeGroup, list[AttrForm]]]
    cards: list[ResponseCard]
    schema: SchemaAttributes
    position: int
    total: int
    done: int
    conversation_total: int
    conversation_done: int
    previous_position: int | None
    next_position: int | None
    # A session's checklist (its kind's ``session_checklist``), on the turn that ends the session.
    checklist_session: Session | None = None
    session_forms: list[tuple[AttributeGroup, list[AttrForm]]] = field(default_factory=list)

    def all_forms(self) -> Iterator[AttrForm]:
        """Every form of the page, turn attributes first, then each response card's, then the session's."""
        for _, forms in self.turn_forms:
            yield from forms
        for card in self.cards:
            for _, forms in card.groups:
                yield from forms
        for _, forms in self.session_forms:
            yield from forms

    @property
    def attributes(self) -> list[AttributeDefinition]:
        """The attributes coded on this page, each once (their definitions and anchors are sent once per page)."""
        return _page_attributes(self.turn_groups, self.response_groups, self.schema)

    @property
    def scorable(self) -> int:
        return sum(1 for _ in self.all_forms())

    @property
    def scored(self) -> int:
        """How many of the page's attributes have a score (the per-turn progress; the page keeps it current)."""
        return sum(1 for f in self.all_forms() if f.scored)


def _page_attributes(turn_groups: list[AttributeGroup], response_groups: list[AttributeGroup],
                     schema: SchemaAttributes) -> list[AttributeDefinition]:
    return [a for group in [*turn_groups, *response_groups] for a in group.attributes] + [
        a for a in schema.attributes if a.unit == AttributeDefinition.Unit.SESSION]


def coding_page_schema(*, study: Study) -> tuple[list[AttributeDefinition], list[SpanSubcategory]]:
    """What the schema's parts of the study's turn pages are built from (``annotation.views.coding_parts``): the
    attributes a turn page codes, each once and in the page's order (``TurnView.attributes``), and their span
    subcategories in the schema's order (the palette's). The same for every turn page of the study."""
    schema = schema_attributes(study=study)
    attributes = [a for a in schema.attributes if a.unit != AttributeDefinition.Unit.CONVERSATION]
    unit = AttributeDefinition.Unit
    turn_groups, response_groups = (attribute_groups([a for a in attributes if a.unit == kind], study.schema)
                                    for kind in (unit.TURN, unit.RESPONSE))
    return (_page_attributes(turn_groups, response_groups, schema),
            [s for a in attributes for s in a.subcategories.all()])


def coder_assignments(*, user: User) -> QuerySet[Assignment]:
    """A coder's assignments in the studies they are still a member of: removing someone from a study takes their
    pages and saves away at once (their judgments stay)."""
    return Assignment.objects.filter(coder=user, round__study__members__user=user)


def coder_assignment(*, user: User, round_id: int, position: int, page: bool = False) -> Assignment | None:
    """The coder's assignment at ``position`` of the round, with its round, study, schema and turn: what
    ``coder_assignments(user=user).select_related("round__study__schema", "turn")`` finds, None where that finds
    nothing. For a save the schema's document (tens of KB of JSON) is deferred, as its attributes come from the
    per-process schema cache; for the turn ``page`` it is read, and the turn's conversation and dataset too.

    Read in one statement written here, not composed as a queryset: every autosave and turn page starts with it,
    and Django compiling the five- to seven-table queryset took more CPU than running it (issue 11's figures).
    Values go through the converters the ORM applies; ``tests/annotation/test_coder_assignment.py`` compares
    both readings."""
    sql, parts = _coder_assignment_statement(page=page)
    with connection.cursor() as cursor:
        cursor.execute(sql, (user.pk, round_id, position, user.pk))
        row = cursor.fetchone()
    if row is None:
        return None
    made: dict[str, Any] = {}
    offset = 0
    for columns, parent in parts:
        made[columns.alias] = columns.instance(row, offset)
        offset += len(columns.fields)
        if parent is not None:  # the relation is loaded, as select_related leaves it
            parent_alias, relation = parent
            made[parent_alias]._meta.get_field(relation).set_cached_value(made[parent_alias], made[columns.alias])
    return made["a"]


# Alias, model, the relation it is reached by from an earlier alias (None for the assignment itself).
_ASSIGNMENT_JOINS: list[tuple[str, type[Model], tuple[str, str] | None]] = [
    ("a", Assignment, None), ("r", Round, ("a", "round")), ("s", Study, ("r", "study")),
    ("sc", Schema, ("s", "schema")), ("t", Turn, ("a", "turn")),
]
_ASSIGNMENT_PAGE_JOINS = [("c", Conversation, ("t", "conversation")), ("d", Dataset, ("c", "dataset"))]
_coder_assignment_statements: dict[bool, tuple[str, list[tuple[ModelColumns, tuple[str, str] | None]]]] = {}


def _coder_assignment_statement(*, page: bool) -> tuple[str, list[tuple[ModelColumns, tuple[str, str] | None]]]:
    """The statement of ``coder_assignment`` and its columns per model (built once per process: they depend only
    on the models)."""
    kept = _coder_assignment_statements.get(page)
    if kept is not None:
        return kept
    quote = connection.ops.quote_name
    models = {alias: model for alias, model, _ in _ASSIGNMENT_JOINS + _ASSIGNMENT_PAGE_JOINS}
    parts, joins = [], []
    for alias, model, parent in _ASSIGNMENT_JOINS + (_ASSIGNMENT_PAGE_JOINS if page else []):
        parts.append((ModelColumns.of(model, alias, leave_out=() if page or model is not Schema else ["definition"]),
                      parent))
        if parent is not None:
            parent_alias, relation = parent
            column = str(models[parent_alias]._meta.get_field(relation).column)  # type: ignore[union-attr]
            joins.append(f"JOIN {quote(model._meta.db_table)} {alias} ON {alias}.id = {parent_alias}.{quote(column)}")
    members = quote(StudyMember._meta.db_table)
    sql = (
        f"SELECT {', '.join(c.select() for c, _ in parts)} FROM {quote(Assignment._meta.db_table)} a "  # noqa: S608  # nosec B608 - names from the models, values bound
        f"{' '.join(joins)} WHERE a.coder_id = %s AND a.round_id = %s AND a.position = %s "
        f"AND EXISTS (SELECT 1 FROM {members} m WHERE m.study_id = r.study_id AND m.user_id = %s)"
    )
    _coder_assignment_statements[page] = (sql, parts)
    return sql, parts


def coder_rounds(*, user: User) -> list[dict]:
    """Open rounds in which the user has assignments (in the studies they are still a member of), with progress and
    where to resume. Read from the queue counters (``QueueProgress``, one row per round and coder) and one index
    probe per round for the resume position: the page costs the same however long the queues are."""
    rows = (
        QueueProgress.objects.filter(coder=user, round__status=Round.Status.OPEN)
        .filter(Exists(StudyMember.objects.filter(study_id=OuterRef("round__study_id"), user=user)))
        .values("round_id", "round__study_id", "round__study__name", "round__kind", "round__number", "total", "done")
        .annotate(resume=_resume_position())
        .order_by("round__study__name", "round__kind", "round__number")
    )
    return [row | {"name": round_name(row["round__kind"], row["round__number"])} for row in rows]


def _queue_of_outer_row() -> QuerySet[Assignment]:
    """The assignments of the round and coder of the row a subquery is part of, by position (the (round, coder,
    position) indexes serve it)."""
    return Assignment.objects.filter(round_id=OuterRef("round_id"), coder_id=OuterRef("coder_id")).order_by("position")


def _position(rows: QuerySet[Assignment], at: int = 0) -> Subquery:
    """The position of the ``at``-th of ``rows`` (in their order): an index probe that reads ``at`` + 1 entries."""
    return Subquery(rows.values("position")[at:at + 1])


def _resume_position() -> Coalesce:
    """Where the coder resumes: the first item not completed, else (all done) the first item. One probe of the
    partial index of items not completed: the (round, coder, position) index would walk past every completed one."""
    mine = _queue_of_outer_row()
    return Coalesce(_position(mine.filter(completed_at__isnull=True)), _position(mine))


def coder_feedback_rounds(*, user: User) -> list[Round]:
    """Closed calibration rounds the user coded in: each has a feedback page. "Coded in" is a probe of the queue
    counters per round, not a join with every assignment the coder has."""
    coded = QueueProgress.objects.filter(round_id=OuterRef("pk"), coder=user)
    return list(
        Round.objects.filter(Exists(coded), kind=Round.Kind.CALIBRATION, status=Round.Status.CLOSED)
        .select_related("study").order_by("study__name", "number")
    )


@dataclass
class ExpertStudy:
    """A study the user sits on the gold panel of: what they have to code there, and the closed calibration rounds
    whose consensus screen they may open (read-only; only when the study lets its experts see it)."""

    study: Study
    rounds: list[dict]  # ``coder_rounds`` rows of the study
    consensus_rounds: list[Round]


def expert_studies(*, user: User, rounds: list[dict]) -> list[ExpertStudy]:
    """The studies in which the user is an expert (``rounds``: the user's ``coder_rounds``), by name."""
    studies = [m.study for m in StudyMember.objects.filter(user=user, role=StudyMember.Role.EXPERT)
               .select_related("study").order_by("study__name", "study__slug")]
    shown = [s.pk for s in studies if s.experts_see_consensus]
    closed: dict[int, list[Round]] = defaultdict(list)
    if shown:
        for round_ in Round.objects.filter(study_id__in=shown, kind=Round.Kind.CALIBRATION,
                                           status=Round.Status.CLOSED).order_by("number"):
            closed[round_.study_id].append(round_)
    return [ExpertStudy(study=s, rounds=[r for r in rounds if r["round__study_id"] == s.pk],
                        consensus_rounds=closed[s.pk]) for s in studies]


QUEUE_PAGE = 100


@dataclass
class QueuePage:
    """One page of a coder's queue in a round: up to ``QUEUE_PAGE`` items from a position on, with the whole
    queue's progress and the positions the page links to."""

    round: Round
    total: int
    done: int
    resume: int  # the first item not completed; the first item when every one is
    assignments: list[Assignment]  # this page's, by position
    start: int  # the position the page was asked to start from (0: the queue's start)
    previous: int | None  # where the page before this one starts; None on the first page
    next: int | None  # where the page after this one starts; None on the last page
    last: int | None  # where the queue's last page (its last QUEUE_PAGE items) starts; None for a shorter queue


def coder_queue_page(*, round_id: int, user: User, start: int = 0) -> QueuePage | None:
    """The page of the coder's queue that starts at the first item at or after position ``start`` (keyset paging:
    positions have gaps, and an OFFSET would read every item before the page). None when the user has no item in
    the round or is no longer a member of its study.

    Two queries whatever the queue's length: the round with its counters (``QueueProgress``) and the probes of the
    (round, coder, position) indexes for where to resume and where the previous and last pages start (each reads at
    most ``QUEUE_PAGE`` index entries); then the page's items with their turns, one more than the page holds to
    know whether another page follows."""
    mine = _queue_of_outer_row()
    before = mine.filter(position__lt=start)
    progress = (
        QueueProgress.objects.filter(round_id=round_id, coder=user)
        .filter(Exists(StudyMember.objects.filter(study_id=OuterRef("round__study_id"), user=user)))
        .select_related("round__study")
        .annotate(resume=_resume_position(),
                  # The QUEUE_PAGE items before ``start``; fewer when the first page is shorter than a page.
                  previous=Coalesce(_position(before.order_by("-position"), QUEUE_PAGE - 1), _position(before)),
                  last=_position(mine.order_by("-position"), QUEUE_PAGE - 1))
        .first()
    )
    if progress is None:
        return None
    items = list(
        Assignment.objects.filter(round_id=round_id, coder=user, position__gte=start)
        .select_related("turn__conversation__dataset").order_by("position")[:QUEUE_PAGE + 1]
    )
    resume, previous, last = (getattr(progress, name) for name in ("resume", "previous", "last"))
    return QueuePage(round=progress.round, total=progress.total, done=progress.done, resume=resume,
                     assignments=items[:QUEUE_PAGE], start=start, previous=previous,
                     next=items[QUEUE_PAGE].position if len(items) > QUEUE_PAGE else None, last=last)


# Blinding. Response ids follow ingestion order, and ingestion follows the model slots, so a reviewer who could see
# or sort them would know every model. A reviewer's pages therefore name a response only by its handle: an
# HMAC-SHA256 of (coder, turn, response) keyed by the study's own blinding key (``Study.blinding_key``), the same on
# every visit and in every tab, different for every reviewer and every study, unguessable without the key and in no
# order related to the ids. The key is the study's, not SECRET_KEY: a guessable SECRET_KEY gives away no model, and
# rotating it changes no handle under an open page; the study's key changes only between rounds
# (services.study_blinding_key_rotate). The order in which a reviewer sees a turn's responses is the order of their
# handles; the server resolves a handle only among the responses of a turn the reviewer is assigned to.
RESPONSE_HANDLE_LENGTH = 16  # hex digits: 64 bits


def studies_rating_whole_sessions(study_ids: set[int]) -> set[int]:
    """Which of these studies are session-rated (their kind's ``assignment_units``): a round item of theirs is a
    whole session, keyed by its first turn, whose page shows the session's transcript. Asked by every ingestion's
    freeze rules (``benchmark.material_rules.on_whole_sessions``, registered by ``AnnotationConfig.ready``)."""
    if not study_ids:
        return set()
    return {study.pk for study in Study.objects.filter(any_of("pk", sorted(study_ids))).select_related("schema")
            if kind_of(study).session_rated}


def sessions_grown_after_coding(*, study: Study, session_ids: Iterable[int]) -> set[int]:
    """Which of these sessions took a reply after the study first coded them as a whole
    (docs/sessions.md#a-session-that-grew-after-it-was-coded): a reply (``ModelResponse``) of a turn of the transcript
    the session's page shows (its own turns and the earlier sessions', as the freeze of ``benchmark.material_rules``
    counts it) created strictly later than the first session code (a judgment of the session unit) of the study's rounds
    on it. Since 7 December 2026 no ingestion adds one (the freeze); a session that took one before is rated on a
    transcript without it. Turns carry no time and a changed reply keeps its creation time, so a turn added without a
    reply, or a reply's text changed, is not found. Strictly later: material ingested in one go and coded after is never
    found, whatever its rows' times share. Only a code given after its conversation was stored here is asked: one
    older than the conversation (a study archive's, which keeps its rows' times, restored onto a copy this
    installation stored later, which the import checks holds no more than the archive) says nothing of the replies'
    times. One query."""
    ids = sorted(set(session_ids))
    if not ids:
        return set()
    first_code = (Judgment.objects.filter(round__study=study, session=OuterRef("pk")).order_by()
                  .values("session").annotate(first=Min("created_at")).values("first"))
    last_turn = (Turn.objects.filter(session=OuterRef("pk")).order_by().values("session")
                 .annotate(last=Max("index")).values("last"))
    later_reply = ModelResponse.objects.filter(turn__conversation_id=OuterRef("conversation_id"),
                                               turn__index__lte=OuterRef("last"), created_at__gt=OuterRef("first"))
    return set(Session.objects.filter(any_of("pk", ids)).annotate(first=Subquery(first_code), last=Subquery(last_turn))
               .filter(last__isnull=False, first__gt=F("conversation__created_at")).filter(Exists(later_reply))
               .values_list("pk", flat=True))


def response_handle(*, study: Study, coder_id: int, turn_id: int, response_id: int) -> str:
    """The name of a response on one coder's pages of ``study``.

    The key's bytes are the HMAC key as they are, so a study migrated from SECRET_KEY-keyed handles (annotation
    migration 0016, which stores the key salted_hmac derived) gives the handles it gave before."""
    digest = hmac.new(_blinding_key(study), f"{coder_id}:{turn_id}:{response_id}".encode(), hashlib.sha256)
    return digest.hexdigest()[:RESPONSE_HANDLE_LENGTH]


# The salt the handles were keyed with from SECRET_KEY before studies had keys of their own (migration 0016).
_SITE_KEY_SALT = b"annotation.response-handle"


def blinding_key_from_site_key(*, study: Study) -> bool:
    """Whether the study's blinding key is still the one migration 0016 derived from SECRET_KEY (or from a key in
    SECRET_KEY_FALLBACKS): anyone who knows or guesses that secret can compute it, so the settings page asks an admin
    to rotate it between rounds."""
    secrets = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]
    return any(constant_time_compare(study.blinding_key, hashlib.sha256(_SITE_KEY_SALT + secret.encode()).hexdigest())
               for secret in secrets)


def _blinding_key(study: Study) -> bytes:
    key = bytes.fromhex(study.blinding_key)
    if len(key) != BLINDING_KEY_BYTES:  # never an empty or short key, whatever reached this instance
        raise ValueError(f"study {study.slug} has no blinding key of {BLINDING_KEY_BYTES} bytes")
    return key


def response_by_handle(*, study: Study, coder_id: int, turn: Turn, handle: str) -> ModelResponse | None:
    """The response of ``turn`` (among those the study codes) that this coder's pages call ``handle``; None for
    any other handle (another coder's, another turn's, another study's, a forged one)."""
    if len(handle) != RESPONSE_HANDLE_LENGTH:
        return None
    key = (study.pk, str(study.created_at), tuple(study.model_slots or ()), turn.pk)
    kept = _turn_responses.get(key)
    fresh = kept is None or time.monotonic() - kept[0] >= TURN_RESPONSES_SECONDS
    responses = _turn_responses_load(key, study, turn) if fresh else kept[1]  # type: ignore[index]
    found = _response_named(responses, study=study, coder_id=coder_id, turn_id=turn.pk, handle=handle)
    if found is None and not fresh:  # a response added since they were kept: look again in the database
        found = _response_named(_turn_responses_load(key, study, turn), study=study, coder_id=coder_id,
                                turn_id=turn.pk, handle=handle)
    return found


# The responses of a turn, kept per process for the autosave, which resolves a handle on every save. A response's
# text cannot change while its turn is in an open round or judged (benchmark.material_rules, "frozen text"), and a
# save is refused outside an open round, so what is kept is what the save checks spans against; a response added
# meanwhile is looked up in the database on a miss, and the time limit bounds the rest. PostgreSQL's triggers check
# span offsets against the stored text again.
TURN_RESPONSES_SECONDS = 60.0
TURN_RESPONSES_KEPT = 512
_turn_responses: dict[tuple[int, str, tuple[str, ...], int], tuple[float, list[ModelResponse]]] = {}


def _turn_responses_load(key: tuple[int, str, tuple[str, ...], int], study: Study, turn: Turn) -> list[ModelResponse]:
    responses = study_responses(study=study, turn_ids=[turn.pk]).get(turn.pk, [])
    if len(_turn_responses) >= TURN_RESPONSES_KEPT:
        _turn_responses.clear()
    _turn_responses[key] = (time.monotonic(), responses)
    return responses


def _response_named(responses: list[ModelResponse], *, study: Study, coder_id: int, turn_id: int,
                    handle: str) -> ModelResponse | None:
    for response in responses:
        mine = response_handle(study=study, coder_id=coder_id, turn_id=turn_id, response_id=response.pk)
        if constant_time_compare(mine, handle):
            return response
    return None


def responses_as_seen(*, study: Study, coder_id: int, turn_id: int, responses: list[ModelResponse],
                      handles: dict[int, str] | None = None) -> list[tuple[ModelResponse, str]]:
    """The turn's responses in the order and with the labels this coder sees them ("Response A"… in a blinded
    study): the one home of that, for the turn page and for anything that points back at a response.

    The order is that of the coder's handles: a shuffle per coder and turn that only the server can compute (a
    seed made of the coder's and the turn's ids alone could be recomputed by anyone who guessed them), and that
    leaves the others in place when a response is added. ``handles``: the responses' handles by id, where the
    caller has them already."""
    if handles is None:
        handles = {r.pk: response_handle(study=study, coder_id=coder_id, turn_id=turn_id, response_id=r.pk)
                   for r in responses}
    ordered = sorted(responses, key=lambda r: handles[r.pk])
    return [(r, r.model_slot if study.show_model_names else f"Response {RESPONSE_LETTERS[i]}")
            for i, r in enumerate(ordered)]


def study_responses(*, study: Study, turn_ids: Iterable[int]) -> dict[int, list[ModelResponse]]:
    """The responses of each turn that the study codes (its model slots), ordered by model slot."""
    responses = ModelResponse.objects.filter(turn_id__in=list(turn_ids)).order_by("turn_id", "model_slot")
    if study.model_slots:
        responses = responses.filter(model_slot__in=study.model_slots)
    by_turn: dict[int, list[ModelResponse]] = defaultdict(list)
    for response in responses:
        by_turn[response.turn_id].append(response)
    return by_turn


def _annotate_for_ui(attributes: list[AttributeDefinition]) -> None:
    """Precomputed once per attribute: the template repeats these for every response."""
    for a in attributes:
        anchors = [(v, a.anchors.get(str(v), "")) for v in a.scale]
        a.ui_choices = anchors  # type: ignore[attr-defined]
        a.ui_tooltip = "\n".join([a.definition] + [f"{v}: {text}" for v, text in anchors if text])  # type: ignore[attr-defined]
        a.ui_has_spans = bool(a.subcategories.all())  # type: ignore[attr-defined]


@dataclass
class SchemaAttributes:
    """A schema's attributes in order, each with its subcategories prefetched and its ``ui_*`` values set: what
    every turn page and autosave of a study reads. Shared between requests once the schema is frozen, so treat it
    as read-only."""

    attributes: list[AttributeDefinition]
    by_code: dict[str, AttributeDefinition]
    # Rendered parts of the turn page that depend on the schema alone, by name (the template fills it).
    fragments: dict[str, str] = field(default_factory=dict)


# A schema is frozen once a study using it is open (``services.schema_install`` refuses to change it then), so the
# attributes of a study that is no longer in set-up can be kept per process instead of being read (two queries and
# ~100 model instances) by every page and autosave. The key carries the schema's version and creation time, so a
# schema replaced under a reused id is never taken for the old one; the time limit bounds how long an edit made
# behind the services' back (the Django admin) can go unseen by a worker. The database's triggers guard the
# judgment rules whatever a worker holds.
SCHEMA_CACHE_SECONDS = 300.0
_schema_cache: dict[tuple[int, int, str], tuple[float, SchemaAttributes]] = {}
_schema_cache_lock = threading.Lock()


def _schema_attributes_load(schema_id: int) -> SchemaAttributes:
    # With their schema (a join, no query more): what a save asks of an attribute's kind (``kinds.kind_of``) is then
    # read with them, not once per attribute and process.
    attributes = list(
        AttributeDefinition.objects.filter(schema_id=schema_id).select_related("schema")
        .prefetch_related("subcategories").order_by("position")
    )
    _annotate_for_ui(attributes)
    return SchemaAttributes(attributes=attributes, by_code={a.code: a for a in attributes})


def schema_attributes(*, study: Study) -> SchemaAttributes:
    """The attributes of the study's schema (see ``SchemaAttributes``); read once per process and schema while
    the schema is frozen, from the database every time while the study is still being set up."""
    if study.status == Study.Status.SETUP:
        return _schema_attributes_load(study.schema_id)
    schema = study.schema
    key = (schema.pk, schema.version, schema.created_at.isoformat() if schema.created_at else "")
    now = time.monotonic()
    hit = _schema_cache.get(key)
    if hit is not None and now - hit[0] < SCHEMA_CACHE_SECONDS:
        return hit[1]
    loaded = _schema_attributes_load(schema.pk)
    with _schema_cache_lock:
        if len(_schema_cache) > 64:  # schemas are few; never let a long-lived worker grow without bound
            _schema_cache.clear()
        _schema_cache[key] = (now, loaded)
    return loaded


def schema_attributes_forget() -> None:
    """Drop every schema and turn's responses kept by this process (tests that change frozen material behind the
    services' back)."""
    with _schema_cache_lock:
        _schema_cache.clear()
    _turn_responses.clear()


def turn_view(*, round_id: int, user: User, position: int) -> TurnView | None:
    """Everything the turn page shows, in a fixed number of queries however many judgments exist.

    None when the user has no assignment at that position: other people's work is unreachable by URL.
    """
    assignment = coder_assignment(user=user, round_id=round_id, position=position, page=True)
    if assignment is None:
        return None
    round_ = assignment.round
    study = round_.study
    turn = assignment.turn
    schema = schema_attributes(study=study)
    attributes = [a for a in schema.attributes if a.unit != AttributeDefinition.Unit.CONVERSATION]
    page = _turn_page_rows(assignment=assignment, study=study, turn=turn)
    earlier, responses, judgments, spans = page.earlier, page.responses, page.judgments, page.spans
    codes = {a.pk: a.code for a in attributes}
    judged: dict[int | None, dict[str, JudgmentShown]] = defaultdict(dict)
    for j in judgments:
        if j.attribute_id in codes:
            judged[j.response_id][codes[j.attribute_id]] = j
    handles = {r.pk: response_handle(study=study, coder_id=user.pk, turn_id=turn.pk, response_id=r.pk)
               for r in responses}
    seen = responses_as_seen(study=study, coder_id=user.pk, turn_id=turn.pk, responses=responses, handles=handles)
    ordered = [r for r, _ in seen]
    labels: dict[int | None, str] = {r.pk: label for r, label in seen}
    unit = AttributeDefinition.Unit
    turn_groups = attribute_groups([a for a in attributes if a.unit == unit.TURN], study.schema)
    response_groups = attribute_groups([a for a in attributes if a.unit == unit.RESPONSE], study.schema)

    # The units each attribute is coded on in this turn, by response id (None: the turn), asked once per attribute.
    units = {a.code: {None if u is None else u.pk for u in rules.units_of(a, ordered)} for a in attributes}

    def forms(group: AttributeGroup, response: ModelResponse | None) -> list[AttrForm]:
        key = response.pk if response is not None else None
        handle = handles[key] if key is not None else None
        prefix = f"r{handle}" if handle is not None else "t"
        made = []
        for a in group.attributes:
            if key not in units[a.code]:
                continue
            judgment = judged[key].get(a.code)
            made.append(AttrForm(a, judgment, f"{prefix}-{a.code}", handle, labels.get(key, ""),
                                 ",".join(spans[judgment.pk]) if judgment is not None else ""))
        return made

    cards = [
        ResponseCard(response=r, handle=handles[r.pk], label=labels[r.pk], judgments=judged[r.pk],
                     groups=[(g, forms(g, r)) for g in response_groups])
        for r in ordered
    ]
    progress = page.progress
    return TurnView(
        assignment=assignment,
        round=round_,
        study=study,
        turn=turn,
        earlier_turns=earlier,
        turn_groups=turn_groups,
        response_groups=response_groups,
        turn_judgments=judged[None],
        turn_forms=[(g, forms(g, None)) for g in turn_groups],
        cards=cards,
        schema=schema,
        position=position,
        total=progress["total"],
        done=progress["done"],
        conversation_total=progress["conversation_total"],
        conversation_done=progress["conversation_done"],
        previous_position=progress["previous"],
        next_position=progress["next"],
        **_session_forms(round=round_, user=user, turn=turn, attributes=attributes, schema=study.schema),
    )


@dataclass
class _TurnPageRows:
    progress: dict[str, Any]
    earlier: list[Turn]
    responses: list[ModelResponse]
    judgments: list[JudgmentShown]
    spans: dict[int, list[str]]


# The turn page's reads after its assignment, in one statement written here (built once per process): the coder's
# progress (the counters PostgreSQL keeps and one probe each of the (round, coder, position) index for the previous
# and next items, as ``turn_progress``), the earlier turns of the conversation, the turn's responses that the study
# codes (``study_responses``), the coder's judgments of the turn with their spans. Each list comes back as one JSON
# array (an ARRAY of its rows, probed by index: no aggregate over the judgments, which
# tests/annotation/test_reviewer_pages_cost.py refuses). Five statements, each compiled by the ORM on every page,
# took more CPU than everything else the page did (issue 34); tests/annotation/test_views_turn_page.py compares
# what this one reads with the querysets it replaced.
_TURN_FIELDS = ("id", "conversation_id", "session_id", "index", "client_text", "therapist_reference")
_RESPONSE_FIELDS = ("id", "turn_id", "model_slot", "model_version", "text", "created_at", "updated_at")
# JudgmentShown's fields, in its order.
_JUDGMENT_FIELDS = ("id", "coder_id", "attribute_id", "response_id", "score", "instance_count", "version")
_turn_page_statement: list[str] = []


def _turn_page_sql() -> str:
    if _turn_page_statement:
        return _turn_page_statement[0]
    quote = connection.ops.quote_name

    def table(model: type[Model]) -> str:
        return quote(model._meta.db_table)

    def columns(model: type[Model], alias: str, names: tuple[str, ...]) -> str:
        return ", ".join(f"{alias}.{quote(str(model._meta.get_field(n).column))}"  # type: ignore[union-attr]
                         for n in names)

    mine = "round_id = %(round)s AND {0}.coder_id = %(coder)s"
    queue, conversation, assignments = table(QueueProgress), table(ConversationProgress), table(Assignment)
    sql = f"""SELECT
        COALESCE((SELECT q.total FROM {queue} q WHERE q.{mine.format("q")}), 0),
        COALESCE((SELECT q.done FROM {queue} q WHERE q.{mine.format("q")}), 0),
        COALESCE((SELECT c.total FROM {conversation} c WHERE c.{mine.format("c")}
                  AND c.conversation_id = %(conversation)s), 0),
        COALESCE((SELECT c.done FROM {conversation} c WHERE c.{mine.format("c")}
                  AND c.conversation_id = %(conversation)s), 0),
        (SELECT n.position FROM {assignments} n WHERE n.{mine.format("n")} AND n.position < %(position)s
         ORDER BY n.position DESC LIMIT 1),
        (SELECT n.position FROM {assignments} n WHERE n.{mine.format("n")} AND n.position > %(position)s
         ORDER BY n.position LIMIT 1),
        to_json(ARRAY(SELECT json_build_array({columns(Turn, "e", _TURN_FIELDS)}) FROM {table(Turn)} e
                      WHERE e.conversation_id = %(conversation)s AND e.{quote("index")} < %(index)s
                      ORDER BY e.{quote("index")})),
        to_json(ARRAY(SELECT json_build_array({columns(ModelResponse, "r", _RESPONSE_FIELDS)})
                      FROM {table(ModelResponse)} r WHERE r.turn_id = %(turn)s
                      AND (NOT %(some_slots)s OR r.model_slot = ANY(%(slots)s)) ORDER BY r.model_slot)),
        to_json(ARRAY(SELECT json_build_array({columns(Judgment, "j", _JUDGMENT_FIELDS)},
                (SELECT string_agg(concat_ws(' ', sp.start, sp.{quote("end")}, sc.slug), ','
                                   ORDER BY sp.start, sp.{quote("end")})
                 FROM {table(Span)} sp JOIN {table(SpanSubcategory)} sc ON sc.id = sp.subcategory_id
                 WHERE sp.judgment_id = j.id))
                      FROM {table(Judgment)} j WHERE j.{mine.format("j")} AND NOT j.is_gold AND j.turn_id = %(turn)s))
    """  # noqa: S608  # nosec B608 - names from the models, values bound
    _turn_page_statement.append(sql)
    return sql


def _instances(model: type[Model], names: tuple[str, ...], rows: list[list[Any]] | None) -> list[Any]:
    """Model instances from JSON arrays of ``names``' values, each converted as the field reads it (a timestamp
    comes as text)."""
    fields = [model._meta.get_field(n) for n in names]
    attnames = [str(f.attname) for f in fields]  # type: ignore[union-attr]
    text_of = [i for i, f in enumerate(fields) if f.get_internal_type() in {"DateTimeField", "DateField"}]
    made = []
    for row in rows or ():
        for i in text_of:
            if row[i] is not None:
                row[i] = fields[i].to_python(row[i])  # type: ignore[union-attr]
        made.append(model.from_db(connection.alias, attnames, row))
    return made


def _turn_page_rows(*, assignment: Assignment, study: Study, turn: Turn) -> _TurnPageRows:
    with connection.cursor() as cursor:
        cursor.execute(_turn_page_sql(), {
            "round": assignment.round_id, "coder": assignment.coder_id, "position": assignment.position,
            "conversation": turn.conversation_id, "index": turn.index, "turn": turn.pk,
            "some_slots": bool(study.model_slots), "slots": list(study.model_slots or [])})
        row = cursor.fetchone()
    total, done, conversation_total, conversation_done, previous, following, earlier, responses, judged = row
    spans: dict[int, list[str]] = defaultdict(list)
    for judgment in judged or ():
        if judgment[-1]:
            spans[judgment[0]] = judgment[-1].split(",")
    return _TurnPageRows(
        progress={"total": total, "done": done, "conversation_total": conversation_total,
                  "conversation_done": conversation_done, "previous": previous, "next": following},
        earlier=_instances(Turn, _TURN_FIELDS, earlier),
        responses=_instances(ModelResponse, _RESPONSE_FIELDS, responses),
        judgments=[JudgmentShown(*j[:-1]) for j in judged or ()],
        spans=spans)


def turn_progress(*, assignment: Assignment, conversation_id: int) -> dict[str, Any]:
    """The coder's progress as the turn page shows it, in one query whose cost does not grow with the queue: the
    totals from the counters that PostgreSQL keeps (``QueueProgress``, ``ConversationProgress``: migration 0017),
    the previous and next positions from one probe each of the (round, coder, position) index."""
    mine = {"round_id": OuterRef("round_id"), "coder_id": OuterRef("coder_id")}
    queue = QueueProgress.objects.filter(**mine)
    conversation = ConversationProgress.objects.filter(**mine, conversation_id=conversation_id)
    neighbours = Assignment.objects.filter(**mine)

    def first(rows: QuerySet, field: str) -> Subquery:
        return Subquery(rows.values(field)[:1])

    return dict(Assignment.objects.filter(pk=assignment.pk).values(
        total=Coalesce(first(queue, "total"), 0),
        done=Coalesce(first(queue, "done"), 0),
        conversation_total=Coalesce(first(conversation, "total"), 0),
        conversation_done=Coalesce(first(conversation, "done"), 0),
        previous=first(neighbours.filter(position__lt=OuterRef("position")).order_by("-position"), "position"),
        next=first(neighbours.filter(position__gt=OuterRef("position")).order_by("position"), "position"),
    ).get())


def _session_forms(*, round: Round, user: User, turn: Turn, attributes: list[AttributeDefinition],
                   schema: Schema) -> dict:
    """The session checklist's forms of a turn page (the study kind's ``session_checklist``); nothing, and no
    query, for a turn without sessions or a kind without a checklist."""
    if turn.session_id is None:
        return {}
    checklist = kind_of(schema).session_checklist(round=round, user=user, turn=turn, attributes=attributes,
                                                  schema=schema)
    if checklist is None:
        return {}
    return {"checklist_session": checklist.session, "session_forms": [
        (group, [AttrForm(a, checklist.judgments.get(a.code), f"s-{a.code}", None) for a in group.attributes])
        for group in attribute_groups(checklist.items, schema)]}


def assistant_replies(*, study: Study, turn_ids: list[int]) -> dict[int, str]:
    """The assistant's reply to each turn: the response of the study's first model slot that has one."""
    if not turn_ids:
        return {}
    responses = ModelResponse.objects.filter(turn_id__in=turn_ids)
    if study.model_slots:
        responses = responses.filter(model_slot__in=study.model_slots)
    order = {slot: i for i, slot in enumerate(study.model_slots or [])}
    found: dict[int, tuple[int, str]] = {}
    for turn_id, slot, text in responses.values_list("turn_id", "model_slot", "text"):
        rank = order.get(slot, len(order))
        if turn_id not in found or rank < found[turn_id][0]:
            found[turn_id] = (rank, text)
    return {turn_id: text for turn_id, (_, text) in found.items()}


# --- API reads -----------------------------------------------------------------------------------------------


def study_visible_get(*, user: User, slug: str) -> Study | None:
    """The study, when the user may see it (staff roles see every study, others those they are members of)."""
    studies = Study.objects.select_related("schema").filter(slug=slug)
    if not user_sees_all_studies(user=user):
        studies = studies.filter(members__user=user)
    return studies.first()


def model_names_hidden(*, user: User | AnonymousUser, study: Study) -> bool:
    """Coders of a blinded study never learn which model wrote a response."""
    return not study.show_model_names and not user_sees_all_studies(user=user)


def session_order_hidden(*, user: User | AnonymousUser, study: Study) -> bool:
    """Coders of a study whose session order is blinded (docs/sessions.md#study-settings) are never told which
    trajectory an item is of or where in it: no conversation id, no conversation-wide turn index (which dates a
    session), no session index; on the queue page as on the session page and in the API."""
    return study.session_order == Study.SessionOrder.BLINDED and not user_sees_all_studies(user=user)


def round_lookup(name: str) -> dict | None:
    """``calibration-N`` / ``main`` as filter arguments on Round; None when the name is neither."""
    parsed = round_parse(name)
    return {"kind": parsed[0], "number": parsed[1]} if parsed else None


JUDGMENT_BLIND_ORDER = "blind_order"


def judgments_visible_to(
    *,
    user: User,
    study: Study,
    round_name: str | None = None,
    reviewer: str | None = None,
    model: str | None = None,
    attribute: str | None = None,
) -> QuerySet[Judgment]:
    """A study's judgments as the user may see them, filtered; ordered for cursor paging.

    Staff roles (admin, researcher) see all of them, ordered by id. Everyone else sees only their own non-gold
    judgments (never gold and never another reviewer's, whatever the state of the round) ordered by
    ``JUDGMENT_BLIND_ORDER``, a hash of the id keyed per user and study: judgments created in bulk (an import, generated
    data) have ids in model-slot order within each turn, and a list in id order would give that away.
    """
    # Unscored drafts (spans highlighted, score still to come) are not judgments yet, as in the export.
    judgments = Judgment.objects.filter(round__study=study, score__isnull=False)
    staff = user_sees_all_studies(user=user)
    if not staff:
        judgments = judgments.filter(coder=user, is_gold=False)
    if round_name:
        lookup = round_lookup(round_name)
        judgments = judgments.filter(**{f"round__{k}": v for k, v in lookup.items()}) if lookup else judgments.none()
    if reviewer:
        judgments = judgments.filter(coder__username=reviewer)
    if model:
        judgments = judgments.filter(response__model_slot=model)
    if attribute:
        judgments = judgments.filter(attribute__code=attribute)
    judgments = (
        judgments.select_related("round", "coder", "conversation__dataset", "turn__session", "response", "attribute",
                                 "session")
        .only("id", "is_gold", "score", "instance_count", "updated_at", "round__kind", "round__number",
              "coder__username", "conversation__external_id", "conversation__dataset__name", "turn__index",
              "turn__session__index", "response__model_slot", "attribute__code", "session__index")
        .prefetch_related(Prefetch("spans", queryset=Span.objects.select_related("subcategory").only(
            "judgment_id", "start", "end", "subcategory__slug").order_by("start", "end", "subcategory__slug")))
    )
    if staff:
        return judgments.order_by("id")
    # Keyed by the study's blinding key, as the handles are: the cursors carry positions in this order, which a
    # guessed SECRET_KEY would otherwise let a reviewer invert into judgment ids.
    key = hmac.new(_blinding_key(study), f"judgment-order:{user.pk}".encode(), hashlib.sha256).hexdigest()
    return judgments.annotate(**{JUDGMENT_BLIND_ORDER: MD5(Concat(Value(key), Cast("id", CharField())))}).order_by(
        JUDGMENT_BLIND_ORDER)


def rounds_progress(*, user: User, study: Study) -> list[dict]:
    """Each round of the study with its item count and assignment progress, per coder; coders see their own. The
    progress is read from the queue counters (``QueueProgress``, one row per round and coder): a coder's call costs
    the same however long their queues are; the item count is counted on the round items' (round, position) index."""
    rounds = list(study.rounds.annotate(n_items=Count("items")).order_by("kind", "number"))
    queues = QueueProgress.objects.filter(round__study=study)
    if not user_sees_all_studies(user=user):
        queues = queues.filter(coder=user)
    per_coder: dict[int, list[dict]] = {}
    for round_id, username, assigned, completed in (
        queues.values_list("round_id", "coder__username", "total", "done").order_by("round_id", "coder__username")
    ):
        per_coder.setdefault(round_id, []).append(
            {"reviewer": username, "assigned": assigned, "completed": completed}
        )
    return [
        {
            "name": r.name, "kind": r.kind, "number": r.number, "status": r.status, "opened_at": r.opened_at,
            "closed_at": r.closed_at, "n_items": r.n_items,
            "assigned": sum(p["assigned"] for p in per_coder.get(r.pk, [])),
            "completed": sum(p["completed"] for p in per_coder.get(r.pk, [])),
            "progress": per_coder.get(r.pk, []),
        }
        for r in rounds
    ]


def assignments_visible_to(
    *, user: User, study: Study, round_name: str, reviewer: str | None = None
) -> QuerySet[Assignment]:
    lookup = round_lookup(round_name) or {"pk__in": []}
    assignments = Assignment.objects.filter(round__study=study, **{f"round__{k}": v for k, v in lookup.items()})
    if not user_sees_all_studies(user=user):
        assignments = assignments.filter(coder=user)
    if reviewer:
        assignments = assignments.filter(coder__username=reviewer)
    return (
        assignments.select_related("round", "coder", "turn__conversation__dataset")
        .only("id", "position", "is_check_item", "completed_at", "active_seconds", "round__kind", "round__number",
              "coder__username", "turn__index", "turn__conversation__external_id",
              "turn__conversation__dataset__name")
        .order_by("id")
    )


def studies_for_exports(*, user: User | AnonymousUser) -> QuerySet[Study]:
    """Studies whose full data the user may download: every study for staff roles, none for anyone else."""
    if not user_sees_all_studies(user=user):
        return Study.objects.none()
    return Study.objects.select_related("schema").annotate(
        judgment_count=Count("rounds__judgments", filter=Q(rounds__judgments__score__isnull=False))
    ).order_by("slug")


def study_for_staff(*, user: User | AnonymousUser, slug: str) -> Study | None:
    """One study for a staff page or download (admins and researchers see every study); None for anyone else or an
    unknown slug. Without ``studies_for_exports``' judgment count: pages and downloads must not count a study's
    judgments on every request."""
    if not user_sees_all_studies(user=user):
        return None
    return Study.objects.select_related("schema").filter(slug=slug).first()


# --- hidden check items ---------------------------------------------------------------------------------------


def check_agreement(*, study: Study, user: User) -> tuple[float | None, int]:
    """Bucketed agreement of a reviewer's main-round codings of the hidden check items they completed with their
    gold, by the metrics engine's own definition; and how many codings it rests on. Only completed items count:
    *Complete turn* is the reviewer's word that an item's codes are theirs, and an item under way (or sent back to
    their queue) may still change. ``annotation.services.check_alert_update`` reads it whenever what it rests on
    changes.

    A unit with gold in several rounds (a reserved gold pool's and a calibration round's, gold imported into the
    main round) is compared with one of them, by the rule of a unit coded in several rounds
    (``judgments_in_round_order``, docs/reference.md#a-unit-coded-in-several-rounds): the gold of the check item's
    own round, the main round, when it has one, else the latest calibration round's by number. Never the order the
    rows were written or read in: before, it was whichever gold the database returned last."""
    check_turns = Assignment.objects.filter(round__study=study, round__kind=Round.Kind.MAIN, coder=user,
                                            is_check_item=True, completed_at__isnull=False).values("turn_id")
    gold: dict[tuple[int | None, int | None, int], int | None] = {}
    for turn_id, response_id, attribute_id, score in judgments_in_round_order(
            Judgment.objects.filter(round__study=study, is_gold=True, turn_id__in=check_turns, score__isnull=False)
    ).values_list("turn_id", "response_id", "attribute_id", "score"):
        gold[(turn_id, response_id, attribute_id)] = score  # a later round's gold replaces an earlier one's
    pairs = [(j.attribute.bucket[str(j.score)], j.attribute.bucket[str(gold[(j.turn_id, j.response_id,
                                                                             j.attribute_id)])])
             for j in Judgment.objects.filter(round__study=study, round__kind=Round.Kind.MAIN, coder=user,
                                              is_gold=False, turn_id__in=check_turns, score__isnull=False)
             .select_related("attribute")
             if (j.turn_id, j.response_id, j.attribute_id) in gold]
    if not pairs:
        return None, 0
    # Imported here: the web workers load numpy only when a check item is completed, never at start-up.
    import numpy as np

    from metrics.core.agreement import agreement_rate

    mine, theirs = np.array(pairs).T
    return agreement_rate(mine, theirs), len(pairs)


# --- who coded a study, as what ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class StudyCoder:
    user_id: int
    username: str
    role: str  # StudyMember.Role
    retained: bool | None
    member: bool  # a member now; False: taken off (``FormerStudyMember``)


def judgments_in_round_order(judgments: QuerySet[Judgment], *within: str) -> QuerySet[Judgment]:
    """``judgments`` in the order of their rounds, the round whose judgment counts last: calibration rounds by
    number, then the main round (docs/reference.md#a-unit-coded-in-several-rounds); within a round by the fields
    ``within``, which the caller takes from what its rows say. A kind's section reads a coder's unit coded in two
    rounds as the later row replacing the earlier: in primary key order, which judgment counted was the order the
    rows were inserted in (an import, a study archive moved to a fresh database), and so was its rows' order,
    which the input fingerprint covers."""
    main_last = Case(When(round__kind=Round.Kind.MAIN, then=Value(1)), default=Value(0))
    return judgments.order_by(main_last, "round__number", *within)


def study_coders(*, study: Study) -> list[StudyCoder]:
    """Everyone who is or was a member of the study, with the role and place on the panel they have, or had when
    they were taken off (``FormerStudyMember``): what a report and an export say of a coder's judgments, which stay
    when their author leaves. One query; by username."""
    columns = ("user_id", "user__username", "role", "retained", "member")
    rows = StudyMember.objects.filter(study=study).annotate(member=Value(True)).values_list(*columns).union(
        FormerStudyMember.objects.filter(study=study).annotate(member=Value(False)).values_list(*columns), all=True)
    coders = {user_id: StudyCoder(user_id, username, role, retained, member)  # a member now wins over a former one
              for user_id, username, role, retained, member in sorted(rows, key=lambda row: row[4])}
    return sorted(coders.values(), key=lambda coder: coder.username)


# --- the conversations of a study, for its report --------------------------------------------------------------


def conversations_of_study(*, study: Study, among: Sequence[int] | None = None) -> QuerySet[Conversation]:
    """The conversations that belong to the study, whoever first ingested them: the README's rule ("Study isolation
    and frozen text") — those its ingestion first wrote (``Conversation.study``) and every one it uses: with a turn
    in one of its rounds (an item or an assignment), judged in one of its rounds — and those with a session it
    labelled (``SessionLabel``: methods' and references').

    Every section of the study's report takes its material from here (``metrics.selectors.report_inputs``, a study
    kind's section's histories or trajectories), so material loaded by ``import_conversations``
    (no study) and then coded by ``import_judgments --study`` or labelled by ``import_session_labels`` is the
    study's like material it ingested itself. The rows each section reads stay the study's own: judgments of its
    rounds, its session labels. Lazy and unordered: a subquery of the query that filters on it, never a query of its
    own.

    Without ``among`` the uses are drawn from the study's own rows (its rounds' judgments, items and assignments, its
    labels), so the cost follows the study's size, never that of the other studies' material stored beside it.
    ``among`` (conversation ids) tests those conversations only: by their owner, else by their uses (an index probe
    per conversation, or the study's rows read once, whichever PostgreSQL finds cheaper): the main report's judged
    conversations, which a study mostly owns."""
    rounds = Round.objects.filter(study=study).values("pk")
    uses = (
        (Judgment.objects.filter(round__in=rounds), "conversation_id"),
        (SessionLabel.objects.filter(study=study), "session__conversation_id"),
        (RoundItem.objects.filter(round__in=rounds), "turn__conversation_id"),
        (Assignment.objects.filter(round__in=rounds), "turn__conversation_id"),
    )
    belongs = Q(study=study)
    for rows, conversation in uses:
        belongs |= (Q(pk__in=rows.values(conversation)) if among is None
                    else Q(Exists(rows.filter(**{conversation: OuterRef("pk")}))))
    return Conversation.objects.filter(belongs) if among is None else (
        Conversation.objects.filter(any_of("pk", among)).filter(belongs))


def conversations_unplaceable(*, study: Study, conversations: Iterable[int] | QuerySet[Any]
                              ) -> dict[int, str]:
    """The conversations among ``conversations`` (ids, or a query of ids) that would become the study's but its
    kind's report cannot place (its ``conversation_problems`` hook, asked of each one as stored, as it asks of one
    ingested through the study: ``annotation.kinds.conversation_check``), by id: why, naming it and the field of
    its first problem. A path that makes a conversation a study's (``conversations_of_study``: a session
    label, a judgment of its rounds, a round item or an assignment) refuses these, so material stored without a
    study (``import_conversations``) cannot reach the report unseen; a study archive's import restores one the
    archive holds so, as the archived study held it (``study_archive.importer``). Those already the study's are not
    asked again: using them more brings nothing in. Empty when the study's kind has no check (no query then)."""
    check = conversation_check(study)
    if check is None:
        return {}
    ids = conversations if isinstance(conversations, QuerySet) else sorted(set(conversations))
    sessions: dict[int, list[tuple[int, str, str | None]]] = defaultdict(list)
    for conversation_id, index, kind, crisis_type in Session.objects.filter(
            conversation_id__in=ids).order_by("conversation_id", "index").values_list(
            "conversation_id", "index", "kind", "crisis_type"):
        sessions[conversation_id].append((index, kind, crisis_type))
    if not sessions:
        return {}
    already = set(conversations_of_study(study=study, among=sorted(sessions)).values_list("pk", flat=True))
    asked = sorted(set(sessions) - already)
    found: dict[int, str] = {}
    for pk, dataset, external_id, kind in (Conversation.objects.filter(any_of("pk", asked)).values_list(
            "pk", "dataset__name", "external_id", "kind") if asked else ()):
        if why := unplaceable_why(check, dataset=dataset, external_id=external_id, kind=kind, sessions=sessions[pk]):
            found[pk] = why
    return found


def unplaceable_why(check: Callable[[dict[str, Any]], list[tuple[str, str]]], *, dataset: str, external_id: str,
                    kind: str, sessions: Iterable[tuple[int, str, str | None]]) -> str | None:
    """Why a study's kind cannot place a conversation (``check``: the study's ``conversation_check``), naming it and
    the field of its first problem, as a path that would make it the study's refuses it; None when it can
    (``placement_problem``)."""
    problem = placement_problem(check, dataset=dataset, external_id=external_id, kind=kind, sessions=sessions)
    if problem is None:
        return None
    return (f"{dataset}/{external_id} {problem}; the study's report could not place it, so it cannot become the "
            "study's")


def placement_problem(check: Callable[[dict[str, Any]], list[tuple[str, str]]], *, dataset: str, external_id: str,
                      kind: str, sessions: Iterable[tuple[int, str, str | None]]) -> str | None:
    """The first problem the study's kind (``check``: the study's ``conversation_check``) has placing a conversation,
    as ``FIELD: why``; None when it can place it. The conversation is given by its sessions (index, kind, crisis
    type), as stored or as a study archive holds it, and asked in the conversations importer's record shape
    (``benchmark.sessions``), which the hook expects: the one place that shape is made of anything but an import's
    record. The study archive says it of a conversation it keeps as stored (``study_archive``)."""
    record = {"dataset": dataset, "conversation_id": external_id, "kind": kind,
              "sessions": [{"index": index, "kind": session_kind, "crisis_type": crisis_type}
                           for index, session_kind, crisis_type in sessions]}
    if not (problems := check(record)):
        return None
    where, why = problems[0]
    return f"{where}: {why}"


# --- a study's material with its texts, for the API (admins and researchers) -----------------------------------


def _study_responses(study: Study) -> QuerySet[ModelResponse]:
    """Responses under the study's model slots (all of them when it names none), as the study data page shows."""
    responses = ModelResponse.objects.all()
    return responses.filter(model_slot__in=study.model_slots) if study.model_slots else responses


def conversations_with_texts(*, study: Study, dataset: str | None = None, conversation_id: str | None = None,
                             kind: str | None = None) -> QuerySet[Conversation]:
    """The study's conversations (``conversations_of_study``: the README's rule of which material is a study's) with
    their sessions, turns and the responses of its model slots, in a fixed number of queries a page."""
    conversations = conversations_of_study(study=study).select_related("dataset")
    if dataset is not None:
        conversations = conversations.filter(dataset__name=dataset)
    if conversation_id is not None:
        conversations = conversations.filter(external_id=conversation_id)
    if kind is not None:
        conversations = conversations.filter(kind=kind)
    turns = Turn.objects.order_by("index").select_related("session").prefetch_related(
        Prefetch("responses", queryset=_study_responses(study).order_by("model_slot")))
    return conversations.prefetch_related(Prefetch("sessions", queryset=Session.objects.order_by("index")),
                                          Prefetch("turns", queryset=turns))


def study_models(*, study: Study) -> list[str]:
    """The models a study codes, which its API's ``model`` filters name: its model slots, or for a study that names
    none (one an import made: every model is coded), those of its conversations' responses."""
    if study.model_slots:
        return list(study.model_slots)
    return list(_study_responses(study).filter(turn__conversation__in=conversations_of_study(study=study))
                .values_list("model_slot", flat=True).distinct())


def study_dataset_names(*, study: Study) -> list[str]:
    """The datasets of the study's conversations (``conversations_of_study``), which its API's ``dataset`` filters
    name."""
    return list(Dataset.objects.filter(conversations__in=conversations_of_study(study=study))
                .values_list("name", flat=True).distinct())


def study_judgment_coders(*, study: Study) -> list[str]:
    """The usernames a study's judgments may name as their coder: its coders (``study_coders``: members and former
    members) and whoever recorded its gold (the long format's reviewer of a gold row, a member or not)."""
    gold = Judgment.objects.filter(round__study=study, is_gold=True).values_list("coder__username", flat=True)
    return sorted({coder.username for coder in study_coders(study=study)} | set(gold.distinct()))


def responses_with_texts(*, study: Study, dataset: str | None = None, conversation_id: str | None = None,
                         turn_index: int | None = None, model: str | None = None) -> QuerySet[ModelResponse]:
    """The responses of the study's conversations under its model slots, each with what names it."""
    responses = _study_responses(study).filter(turn__conversation__in=conversations_of_study(study=study))
    if dataset is not None:
        responses = responses.filter(turn__conversation__dataset__name=dataset)
    if conversation_id is not None:
        responses = responses.filter(turn__conversation__external_id=conversation_id)
    if turn_index is not None:
        responses = responses.filter(turn__index=turn_index)
    if model is not None:
        responses = responses.filter(model_slot=model)
    return responses.select_related("turn__conversation__dataset")


# --- a study's material, for its admins ----------------------------------------------------------------------

STUDY_DATA_PAGE = 25


def _study_material(study: Study) -> QuerySet[Conversation]:
    """Conversations with at least one response of the study's models (all material when it names none)."""
    responses = ModelResponse.objects.all()
    if study.model_slots:
        responses = responses.filter(model_slot__in=study.model_slots)
    return Conversation.objects.filter(turns__responses__in=responses).distinct()


def study_datasets(*, study: Study) -> list[tuple[str, int]]:
    return list(
        _study_material(study).values_list("dataset__name").annotate(n=Count("id", distinct=True))
        .order_by("dataset__name")
    )


def study_conversations(*, study: Study, dataset: str = "", kind: str = "", page: int | None = None) -> Page:
    """One page of the study's conversations with their turns and responses (a fixed number of queries)."""
    conversations = _study_material(study).select_related("dataset").order_by("dataset__name", "external_id")
    if dataset:
        conversations = conversations.filter(dataset__name=dataset)
    if kind:
        conversations = conversations.filter(kind=kind)
    responses = ModelResponse.objects.order_by("model_slot")
    if study.model_slots:
        responses = responses.filter(model_slot__in=study.model_slots)
    conversations = conversations.prefetch_related(
        Prefetch("turns", queryset=Turn.objects.order_by("index").prefetch_related(
            Prefetch("responses", queryset=responses))))
    return Paginator(conversations, STUDY_DATA_PAGE).get_page(page or 1)


def round_item_turn(*, round: Round, turn_id: int) -> Turn | None:
    """The turn, if it is an item of the round: in the round's set or pool, or judged in it (an imported round
    has no set). One query."""
    return Turn.objects.select_related("conversation__dataset").filter(
        Exists(RoundItem.objects.filter(round=round, turn=OuterRef("pk")))
        | Exists(Judgment.objects.filter(round=round, turn=OuterRef("pk"))),
        pk=turn_id,
    ).first()


def item_history(*, round: Round, turn: Turn) -> QuerySet[JudgmentRevision]:
    """Every recorded change of every judgment on one item (a turn of a round: its turn- and response-level
    judgments, everyone's and gold), newest first, with what a page needs to name them (no query per row).
    For study admins only: it names coders and models."""
    return (
        JudgmentRevision.objects.filter(judgment__round=round, judgment__turn=turn)
        .select_related("changed_by", "judgment__coder", "judgment__attribute", "judgment__response")
        .order_by("-at", "-id")
    )


def member_candidates(*, study: Study) -> list[tuple[str, str]]:
    """The accounts the study page offers to add as members: active accounts in the reviewer or expert role that
    are not members yet, as (username, role), by username. One query."""
    rows = (User.objects.filter(is_active=True, groups__name__in=[roles.REVIEWER, roles.EXPERT])
            .exclude(study_memberships__study=study)
            .order_by("username", "groups__name").values_list("username", "groups__name"))
    return list(dict(rows).items())


def study_state_said(*, study: Study) -> str:
    """What a study holds now, in a sentence: its material, its judgments and its rounds' states (what ``load_demo``
    says of a demo study it finds already loaded, rather than repeat what it first made). Three queries."""
    conversations = conversations_of_study(study=study).count()
    counts = Judgment.objects.filter(round__study=study).aggregate(total=Count("pk"), gold=Count("pk", filter=Q(
        is_gold=True)))
    rounds = [f"{r.name} {r.get_status_display().lower()}" for r in study.rounds.order_by("kind", "number")]
    return (f"{conversations} conversation{'' if conversations == 1 else 's'} in use, {counts['total']} judgments "
            f"({counts['gold']} gold); rounds: {', '.join(rounds) or 'none'}")
