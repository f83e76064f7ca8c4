"""A whole study as one file, to move it between installations: ``study_export`` writes it, ``study_import``
reads it back, all or nothing (commands ``export_study`` / ``import_study``; README, "Backups and moving a study").

Why here: an archive holds rows of benchmark (the material), annotation (schema, study, members, rounds,
assignments, judgments with spans, gold agreements and revisions, session labels, workshop notes, alerts),
metrics (metric runs) and audit (the study's trail). ``metrics`` is the lowest layer that may import all of them;
``calibration`` above it would also reach the protocol's services, which an archive must never call.

Why tables and not services: a restore copies rows as they were, every value, version and timestamp (the
``auto_now`` ones too), where a service would make new history. It is still an ordinary writer for the database:
the PostgreSQL triggers check every row, so rows go in the order they accept (schema before the study that
freezes it, responses before judgments, judgments before their spans), and the importer checks every reference,
scale and span first so that an error names the archive's line instead of a trigger's id. An import writes no
judgment revisions of its own (the archived history is the history); it is one ``study.import`` audit event.

Format (``VERSION`` 1): JSON Lines, UTF-8, gzip-compressed when the file name ends in ``.gz``. Line 1 is the
header ``{"type": "archive", "format": FORMAT, "version": 1, "study": slug, "software": {"version", "commit"}}`` (the
installation that wrote it: docs/metrics.md#provenance); then one record per line, types in the order of ``ORDER``;
the last line is ``{"type": "end", "records": {type: count}, "sha256": hex}``, so a truncated file is refused, and
so is one whose lines before the end record are not the bytes that were written (their SHA-256; an archive without
``sha256``, written before it was added, is read as before). Records name things by natural keys only: usernames,
the schema slug and attribute codes, dataset name + conversation external id (+ turn index, + model slot; + session
index for a session label), round names (``calibration-N``, ``main``), subcategory slugs. A judgment's line carries
its spans, the experts who agreed to it (gold) and its revisions. Every other column is written under its model
field's name, so a field added to one of these models is archived without a change here (a test checks that every
model and relation is covered). The file is a function of the study and of the software version that writes it:
no export time, no database ids, rows in a fixed order, so the same study always gives the same bytes.

The study record carries the study's blinding key (``Study.blinding_key``), deliberately: it is the study's state,
and a file that names every response's model is no less secret than the key. Handles are made of the key and
database ids, so a study restored where its turns, responses and accounts still are keeps its handles; an archive
written before studies had keys (no ``blinding_key``) imports with a new random one.

Not in an archive: passwords (an account created by an import has no usable password: an admin sends the person
a password link), API tokens and idempotency records, sessions and sign-in attempts, superuser status. Accounts
carry their role groups, given to the accounts an import creates (staff status follows the role, as for any
account); existing accounts are used as they are. Audit events are copied as written: a target or datum that
named a database id (``metric_run:17``) still names the id in the installation it came from.

Importing: the schema is reused when the target has one with the same slug and the same definition (attributes
and subcategories included), and refused when it differs. A dataset is reused by name. A conversation that
exists is reused when every archived turn and response is there with the same text (its owning study is left as
it is), and refused otherwise. The study's slug must be free (``as_slug`` imports under another one).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import json
import math
import operator
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import IO, Any, TypeVar

from django.conf import settings
from django.contrib.auth.models import Group, User
from django.core.exceptions import ValidationError
from django.db import DatabaseError, connection, models, transaction

from access import roles
from annotation.models import (
    Assignment,
    AttributeDefinition,
    ConversationProgress,
    Judgment,
    JudgmentRevision,
    QueueProgress,
    ReviewerAlert,
    Round,
    RoundItem,
    Schema,
    SessionLabel,
    Span,
    SpanSubcategory,
    Study,
    StudyMember,
    WorkshopNote,
)
from audit.models import AuditEvent
from audit.services import audit_record
from benchmark.models import Conversation, Dataset, ModelResponse, Session, Turn
from common.rounds import round_name
from metrics.models import MetricRun

FORMAT = "cab-study-archive"
VERSION = 1
ORDER = ("archive", "user", "schema", "study", "member", "dataset", "conversation", "round", "assignment",
         "judgment", "session_label", "workshop_note", "alert", "metric_run", "audit_event", "end")
# Rows per query on export and per INSERT batch on import.
CHUNK = 2000

# Tables PostgreSQL derives from the archived ones (the queue counters, kept by triggers on the assignments:
# migration annotation/0017): not archived, rebuilt on import as the assignments are written.
DERIVED: tuple[type[models.Model], ...] = (QueueProgress, ConversationProgress)

# The relations each archived model has, each written as a natural key (or implied by nesting). A relation added
# to one of these models must be added here and to the export and import, or the tests fail.
RELATIONS: dict[type[models.Model], set[str]] = {
    Schema: set(),
    AttributeDefinition: {"schema"},
    SpanSubcategory: {"schema", "attribute"},
    Study: {"schema"},
    StudyMember: {"study", "user"},
    Dataset: set(),
    Conversation: {"dataset", "study"},
    Session: {"conversation"},  # nested in its conversation's record (longitudinal histories)
    Turn: {"conversation", "session"},
    ModelResponse: {"turn"},
    Round: {"study"},
    RoundItem: {"round", "turn"},
    Assignment: {"round", "coder", "turn"},
    Judgment: {"round", "coder", "attribute", "conversation", "turn", "response", "session", "agreed_by"},
    SessionLabel: {"study", "coder", "session", "attribute"},  # coder by username, session by its key
    Span: {"judgment", "subcategory"},
    JudgmentRevision: {"judgment", "changed_by"},
    WorkshopNote: {"round", "attribute", "turn", "response", "written_by"},
    ReviewerAlert: {"study", "reviewer"},
    MetricRun: {"study", "requested_by"},
    AuditEvent: {"actor"},
}
# Columns that are not copied: the audit event's study id is the new study's.
NOT_COPIED: dict[type[models.Model], set[str]] = {AuditEvent: {"study_id"}}


class ArchiveError(Exception):
    """The archive cannot be imported (or the study exported); the message names the line and the record."""


@functools.cache
def columns(model: type[models.Model]) -> list[models.Field]:
    """The plain columns of an archived model: every concrete field but the primary key and the relations."""
    skip = NOT_COPIED.get(model, set())
    return [field for field in model._meta.concrete_fields
            if not field.is_relation and not field.primary_key and field.attname not in skip]


def _names(model: type[models.Model]) -> list[str]:
    return [field.attname for field in columns(model)]


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"cannot archive a {type(value).__name__}")


def _dumps(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_json_default)


# --- export --------------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _snapshot() -> Iterator[None]:
    """One consistent view of the study while people keep working: a read-only REPEATABLE READ transaction (when
    not already inside a transaction, whose snapshot then applies)."""
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost:
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        yield


def _ids(*querysets: Any) -> set[int]:
    found: set[int] = set()
    for queryset in querysets:
        found.update(value for value in queryset.order_by().distinct() if value is not None)
    return found


def study_export(*, study: Study, out: IO[str]) -> Counter[str]:
    """Write the study's archive to ``out`` record by record (constant memory but for the conversations' and
    users' ids). Returns the number of records of each type."""
    counts: Counter[str] = Counter()
    digest = hashlib.sha256()

    def emit(kind: str, record: dict[str, Any]) -> None:
        counts[kind] += 1
        line = _dumps({"type": kind, **record}) + "\n"
        digest.update(line.encode())
        out.write(line)

    with _snapshot():
        emit("archive", {"format": FORMAT, "version": VERSION, "study": study.slug,
                         "software": {"version": settings.CAB_VERSION, "commit": settings.CAB_COMMIT}})
        for kind, record in _export_records(study):
            emit(kind, record)
        records = {kind: counts[kind] for kind in ORDER if kind in counts and kind != "archive"}
        out.write(_dumps({"type": "end", "records": records, "sha256": digest.hexdigest()}) + "\n")
    counts["end"] += 1
    return counts


def _export_records(study: Study) -> Iterator[tuple[str, dict[str, Any]]]:  # noqa: C901 - one pass in ORDER
    rounds = Round.objects.filter(study=study)
    judgments = Judgment.objects.filter(round__study=study)
    agreements = Judgment.agreed_by.through.objects.filter(judgment__round__study=study)
    revisions = JudgmentRevision.objects.filter(judgment__round__study=study)
    events = AuditEvent.objects.filter(study_id=study.pk)

    user_ids = _ids(
        StudyMember.objects.filter(study=study).values_list("user_id", flat=True),
        Assignment.objects.filter(round__study=study).values_list("coder_id", flat=True),
        judgments.values_list("coder_id", flat=True),
        agreements.values_list("user_id", flat=True),
        revisions.values_list("changed_by_id", flat=True),
        WorkshopNote.objects.filter(round__study=study).values_list("written_by_id", flat=True),
        ReviewerAlert.objects.filter(study=study).values_list("reviewer_id", flat=True),
        MetricRun.objects.filter(study=study).values_list("requested_by_id", flat=True),
        events.values_list("actor_id", flat=True),
    )
    user_roles: dict[int, list[str]] = defaultdict(list)
    for user_id, group in (User.groups.through.objects.filter(user_id__in=user_ids, group__name__in=roles.ROLES)
                           .order_by("group__name").values_list("user_id", "group__name")):
        user_roles[user_id].append(group)
    for user in User.objects.filter(pk__in=user_ids).order_by("username"):
        yield "user", {"username": user.username, "first_name": user.first_name, "last_name": user.last_name,
                       "email": user.email, "roles": user_roles[user.pk]}

    yield "schema", _schema_record(study.schema)
    yield "study", {"schema": study.schema.slug, **_plain(study)}
    for member in StudyMember.objects.filter(study=study).select_related("user").order_by("user__username"):
        yield "member", {"user": member.user.username, **_plain(member)}

    conversation_ids = _ids(
        Conversation.objects.filter(study=study).values_list("pk", flat=True),
        judgments.values_list("conversation_id", flat=True),
        RoundItem.objects.filter(round__study=study).values_list("turn__conversation_id", flat=True),
        Assignment.objects.filter(round__study=study).values_list("turn__conversation_id", flat=True),
        WorkshopNote.objects.filter(round__study=study).values_list("turn__conversation_id", flat=True),
        SessionLabel.objects.filter(study=study).values_list("session__conversation_id", flat=True),
    )
    for dataset in Dataset.objects.filter(conversations__pk__in=conversation_ids).distinct().order_by("name"):
        yield "dataset", _plain(dataset)
    ordered = list(Conversation.objects.filter(pk__in=conversation_ids).order_by("dataset__name", "external_id")
                   .values_list("pk", flat=True))
    for start in range(0, len(ordered), CHUNK):
        yield from (("conversation", record) for record in _conversation_records(ordered[start:start + CHUNK], study))

    for round_ in rounds.order_by("kind", "number"):
        items = RoundItem.objects.filter(round=round_).order_by("position").values_list(
            "position", "turn__conversation__dataset__name", "turn__conversation__external_id", "turn__index")
        yield "round", {**_plain(round_), "items": [list(item) for item in items]}

    yield from (("assignment", record) for record in _rows(
        Assignment.objects.filter(round__study=study).order_by("pk"), Assignment,
        {"round": ("round__kind", "round__number"), "coder": ("coder__username",),
         "turn": ("turn__conversation__dataset__name", "turn__conversation__external_id", "turn__index")}))

    yield from (("judgment", record) for record in _judgment_records(study))
    # Methods' predictions per seed and the reference labels (LC8): each value as the float it is stored as
    # (JSON writes a float's shortest exact form, so it reads back bit for bit).
    yield from (("session_label", record) for record in _rows(
        SessionLabel.objects.filter(study=study).order_by(
            "coder__user__username", "seed", "session__conversation__dataset__name",
            "session__conversation__external_id", "session__index", "attribute__position", "attribute__code"),
        SessionLabel,
        {"coder": ("coder__user__username",),
         "session": ("session__conversation__dataset__name", "session__conversation__external_id", "session__index"),
         "attribute": ("attribute__code",)}))

    yield from (("workshop_note", record) for record in _rows(
        WorkshopNote.objects.filter(round__study=study).order_by("pk"), WorkshopNote,
        {"round": ("round__kind", "round__number"), "attribute": ("attribute__code",),
         "turn": ("turn__conversation__dataset__name", "turn__conversation__external_id", "turn__index"),
         "response": ("response__model_slot",), "written_by": ("written_by__username",)}))
    yield from (("alert", record) for record in _rows(
        ReviewerAlert.objects.filter(study=study).order_by("created_at", "pk"), ReviewerAlert,
        {"reviewer": ("reviewer__username",)}))
    yield from (("metric_run", record) for record in _rows(
        MetricRun.objects.filter(study=study).order_by("created_at", "pk"), MetricRun,
        {"requested_by": ("requested_by__username",)}))
    yield from (("audit_event", record) for record in _rows(
        events.order_by("at", "pk"), AuditEvent, {"actor": ("actor__username",)}))


def _plain(instance: models.Model) -> dict[str, Any]:
    return {name: getattr(instance, name) for name in _names(type(instance))}


def _schema_record(schema: Schema) -> dict[str, Any]:
    attributes = [_plain(attribute) for attribute in AttributeDefinition.objects.filter(schema=schema)
                  .order_by("position", "code")]
    subcategories = [{"attribute": sub.attribute.code, **_plain(sub)} for sub in SpanSubcategory.objects
                     .filter(schema=schema).select_related("attribute")
                     .order_by("attribute__position", "position", "slug")]
    return {**_plain(schema), "attributes": attributes, "subcategories": subcategories}


def _rows(queryset: Any, model: type[models.Model], keys: dict[str, tuple[str, ...]]) -> Iterator[dict[str, Any]]:
    """The rows as records: each natural key (a round name, a username, a turn's [dataset, id, index]) first, then
    the plain columns. Streams through a server-side cursor."""
    names = _names(model)
    lookups = [lookup for parts in keys.values() for lookup in parts]
    for values in queryset.values_list(*lookups, *names).iterator(chunk_size=CHUNK):
        record: dict[str, Any] = {}
        at = 0
        for key, parts in keys.items():
            record[key] = _key(key, values[at:at + len(parts)])
            at += len(parts)
        record.update(zip(names, values[at:], strict=True))
        yield record


def _key(key: str, parts: tuple[Any, ...]) -> Any:
    if key == "round":
        return round_name(*parts)
    return parts[0] if len(parts) == 1 else list(parts)


def _conversation_records(ids: list[int], study: Study) -> Iterator[dict[str, Any]]:
    turns: dict[int, list[dict[str, Any]]] = defaultdict(list)
    responses: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for response in ModelResponse.objects.filter(turn__conversation_id__in=ids).order_by("turn_id", "model_slot"):
        responses[response.turn_id].append(_plain(response))
    # A history's sessions (every one, with turns or not: a session label may name it) and each turn's session
    # index: keys only a history has, so the records of every other conversation stay exactly as they were.
    sessions: dict[int, dict[int, dict[str, Any]]] = defaultdict(dict)
    index_of: dict[int, int] = {}
    for session in Session.objects.filter(conversation_id__in=ids).order_by("conversation_id", "index"):
        sessions[session.conversation_id][session.index] = _plain(session)
        index_of[session.pk] = session.index
    for turn in Turn.objects.filter(conversation_id__in=ids).order_by("conversation_id", "index"):
        session_key = {} if turn.session_id is None else {"session": index_of[turn.session_id]}
        turns[turn.conversation_id].append({**_plain(turn), **session_key, "responses": responses[turn.pk]})
    found = {c.pk: c for c in Conversation.objects.filter(pk__in=ids).select_related("dataset")}
    for pk in ids:
        conversation = found[pk]
        yield {"dataset": conversation.dataset.name, **_plain(conversation),
               "owned": conversation.study_id == study.pk,
               **({"sessions": [sessions[pk][i] for i in sorted(sessions[pk])]} if sessions[pk] else {}),
               "turns": turns[pk]}


def _judgment_records(study: Study) -> Iterator[dict[str, Any]]:
    """Judgments in id order (creation order), each with its spans, the experts who agreed to it and its revisions:
    four streams in judgment id order, merged here, so the cost is linear in the study's size."""
    of_study = {"judgment__round__study": study}
    names = _names(Judgment)
    lookups = ("pk", "round__kind", "round__number", "coder__username", "is_gold", "attribute__code",
               "conversation__dataset__name", "conversation__external_id", "turn__index", "response__model_slot",
               "session__index")
    plain = [name for name in names if name != "is_gold"]
    revision_names = _names(JudgmentRevision)
    spans = _ByJudgment(Span.objects.filter(**of_study)
                        .order_by("judgment_id", "start", "end", "subcategory__slug", "pk")
                        .values_list("judgment_id", "start", "end", "subcategory__slug"))
    agreed = _ByJudgment(Judgment.agreed_by.through.objects.filter(**of_study)
                         .order_by("judgment_id", "user__username").values_list("judgment_id", "user__username"))
    history = _ByJudgment(JudgmentRevision.objects.filter(**of_study).order_by("judgment_id", "at", "pk")
                          .values_list("judgment_id", "changed_by__username", *revision_names))
    rows = Judgment.objects.filter(round__study=study).order_by("pk").values_list(*lookups, *plain)
    for pk, kind, number, coder, is_gold, code, dataset, external_id, turn, response, session, *values in \
            rows.iterator(chunk_size=CHUNK):
        yield {"round": round_name(kind, number), "coder": coder, "is_gold": is_gold, "attribute": code,
               "conversation": [dataset, external_id], "turn": turn, "response": response,
               **({"session": session} if session is not None else {}),  # a session's code
               **dict(zip(plain, values, strict=True)),
               "agreed_by": [username for username, in agreed.of(pk)],
               "spans": [list(span) for span in spans.of(pk)],
               "revisions": [{"changed_by": changed_by, **dict(zip(revision_names, rest, strict=True))}
                             for changed_by, *rest in history.of(pk)]}


class _ByJudgment:
    """The rows of a table that points to judgments, read in judgment id order beside the judgments themselves
    (a server-side cursor each): ``of(pk)`` for ascending ids gives each judgment's rows, without its id."""

    def __init__(self, rows: Any) -> None:
        self._groups = itertools.groupby(rows.iterator(chunk_size=CHUNK), key=operator.itemgetter(0))
        self._next = next(self._groups, None)

    def of(self, judgment_id: int) -> list[tuple[Any, ...]]:
        while self._next is not None and self._next[0] < judgment_id:
            self._next = next(self._groups, None)
        if self._next is None or self._next[0] != judgment_id:
            return []
        rows = [row[1:] for row in self._next[1]]
        self._next = next(self._groups, None)
        return rows


# --- import --------------------------------------------------------------------------------------------------------


def read_records(lines: Iterable[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) for each line; an error names the line."""
    number = 0
    try:
        for number, line in enumerate(lines, start=1):
            try:
                record = json.loads(line)
            except ValueError as error:
                raise ArchiveError(f"line {number}: not a JSON record ({error})") from error
            if not isinstance(record, dict) or not isinstance(record.get("type"), str):
                raise ArchiveError(f"line {number}: not an archive record (an object with a 'type')")
            yield number, record
    except (EOFError, OSError, UnicodeDecodeError) as error:
        # gzip raises EOFError on a cut file and OSError (BadGzipFile) on a damaged one.
        raise ArchiveError(f"after line {number}: the file cannot be read ({error}); is it truncated?") from error


@contextlib.contextmanager
def _stored_timestamps() -> Iterator[None]:
    """Let INSERTs keep the archived ``auto_now`` / ``auto_now_add`` values, which ``bulk_create`` would replace
    with the time of the import (it calls each field's ``pre_save``). This flips the flags on the field objects,
    which are process-wide, for the duration of an import: commands run one import per process, and nothing else
    of this process saves those models meanwhile."""
    fields = [field for model in RELATIONS for field in model._meta.concrete_fields
              if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False)]
    saved = [(field, field.auto_now, field.auto_now_add) for field in fields]  # type: ignore[attr-defined]
    try:
        for field in fields:
            field.auto_now = field.auto_now_add = False  # type: ignore[attr-defined]
        yield
    finally:
        for field, auto_now, auto_now_add in saved:
            field.auto_now, field.auto_now_add = auto_now, auto_now_add  # type: ignore[attr-defined]


class _Checksum:
    """The SHA-256 of an archive's lines but its last, as they are read: what its end record's ``sha256`` says of
    the lines before it. The line being read is held back until the next one comes, so when the end record is read
    the digest covers exactly the lines before it."""

    def __init__(self) -> None:
        self.digest = hashlib.sha256()

    def through(self, lines: Iterable[str]) -> Iterator[str]:
        pending = b""
        for line in lines:
            self.digest.update(pending)
            pending = (line if line.endswith("\n") else line + "\n").encode()
            yield line


def study_import(*, lines: Iterable[str], as_slug: str | None = None, by: User | None = None) -> Study:
    """Import an archive (its lines, as read from the file), all or nothing: any problem raises ArchiveError naming
    the line, and nothing is written. Records the import in the audit trail."""
    importer = _Importer(as_slug=as_slug)
    with transaction.atomic():
        with _stored_timestamps():
            importer.run(read_records(importer.checksum.through(lines)))
        study = importer.study
        audit_record(by=by, action="study.import", study=study, target=f"study:{study.slug}",
                     archived_as=importer.archived_slug, records=dict(importer.counts),
                     conversations_reused=importer.conversations_reused)
    return study


Record = tuple[int, dict[str, Any]]
T = TypeVar("T")


class _Importer:
    """Reads records in ``ORDER``, buffers each type in batches, checks every reference of a batch against what
    was imported (or reused) before it, and inserts the batch."""

    BATCH = {"conversation": 500, "assignment": CHUNK, "judgment": CHUNK, "audit_event": CHUNK}

    def __init__(self, *, as_slug: str | None) -> None:
        self.as_slug = as_slug
        self.archived_slug = ""
        self.counts: Counter[str] = Counter()
        self.checksum = _Checksum()
        self._study: Study | None = None
        self.schema: Schema | None = None
        self.users: dict[str, User] = {}
        self.attributes: dict[str, AttributeDefinition] = {}
        self.subcategories: dict[str, SpanSubcategory] = {}
        self.datasets: dict[str, Dataset] = {}
        self.conversations: dict[tuple[str, str], int] = {}
        self.turns: dict[tuple[str, str, int], tuple[int, int]] = {}  # -> (turn id, conversation id)
        self.sessions: dict[tuple[str, str, int], int] = {}  # (dataset, conversation, session index) -> session id
        self.responses: dict[tuple[int, str], tuple[int, int]] = {}  # (turn id, slot) -> (response id, length)
        self.rounds: dict[str, Round] = {}
        self.members: dict[str, StudyMember] = {}  # username -> the new study's member
        self.conversations_reused = 0

    @property
    def study(self) -> Study:
        if self._study is None:
            raise ArchiveError("the archive has no study record")
        return self._study

    def run(self, records: Iterator[Record]) -> None:
        handlers: dict[str, Callable[[list[Record]], None]] = {
            "user": self._users, "schema": self._schema, "study": self._studies, "member": self._members,
            "dataset": self._datasets, "conversation": self._conversations, "round": self._rounds,
            "assignment": self._assignments, "judgment": self._judgments, "session_label": self._session_labels,
            "workshop_note": self._workshop_notes,
            "alert": self._alerts, "metric_run": self._metric_runs, "audit_event": self._audit_events,
        }
        first = next(records, None)
        if first is None:
            raise ArchiveError("the archive is empty")
        self._header(*first)
        phase = 0
        batch: list[Record] = []
        for number, record in records:
            kind = record["type"]
            if kind not in ORDER or kind == "archive":
                raise ArchiveError(f"line {number}: unknown record type {kind!r}")
            position = ORDER.index(kind)
            if position < phase:
                raise ArchiveError(f"line {number}: a {kind} record after the {ORDER[phase]} records")
            if batch and (position != phase or len(batch) >= self.BATCH.get(kind, CHUNK)):
                self._flush(handlers, ORDER[phase], batch)
                batch = []
            phase = position
            if kind == "end":
                self._end(number, record)
                if next(records, None) is not None:
                    raise ArchiveError(f"line {number + 1}: records after the end record")
                return
            self.counts[kind] += 1
            batch.append((number, record))
        raise ArchiveError("the archive ends without its end record: it is truncated")

    def _flush(self, handlers: dict[str, Callable[[list[Record]], None]], kind: str, batch: list[Record]) -> None:
        where = f"line {batch[0][0]}" if len(batch) == 1 else f"lines {batch[0][0]}–{batch[-1][0]}"
        try:
            handlers[kind](batch)
        except (KeyError, TypeError, ValueError, ValidationError) as error:
            raise ArchiveError(f"{where} ({kind}): {_message(error)}") from error
        except DatabaseError as error:
            raise ArchiveError(f"{where} ({kind}): refused by the database: {str(error).strip()}") from error

    def _header(self, number: int, record: dict[str, Any]) -> None:
        if record.get("type") != "archive" or record.get("format") != FORMAT:
            raise ArchiveError(f"line {number}: not a study archive (the first line must be the {FORMAT} header)")
        if record.get("version") != VERSION:
            raise ArchiveError(f"line {number}: archive format version {record.get('version')!r}; this installation "
                               f"reads version {VERSION}")
        self.archived_slug = str(record.get("study", ""))

    def _end(self, number: int, record: dict[str, Any]) -> None:
        expected = record.get("records")
        found = {kind: self.counts[kind] for kind in ORDER if self.counts[kind]}
        if expected != found:
            raise ArchiveError(f"line {number}: the end record counts {expected}, the archive holds {found}")
        stated = record.get("sha256")
        if stated is not None and stated != self.checksum.digest.hexdigest():
            raise ArchiveError(f"line {number}: the lines before the end record do not have the SHA-256 it states: "
                               "the archive was changed or damaged after it was written")

    # --- references ---

    def _maybe_user(self, username: Any) -> User | None:
        return None if username is None else self._user(username)

    def _user(self, username: Any) -> User:
        if username not in self.users:
            raise ValueError(f"user {username!r} is not among the archive's users")
        return self.users[username]

    def _round(self, name: Any) -> Round:
        if name not in self.rounds:
            raise ValueError(f"round {name!r} is not among the archive's rounds")
        return self.rounds[name]

    def _attribute(self, code: Any) -> AttributeDefinition:
        if code not in self.attributes:
            raise ValueError(f"attribute {code!r} is not in the schema")
        return self.attributes[code]

    def _turn(self, key: Any) -> tuple[int, int]:
        if not isinstance(key, list) or len(key) != 3 or tuple(key) not in self.turns:
            raise ValueError(f"turn {key!r} is not among the archive's conversations")
        return self.turns[tuple(key)]

    def _response(self, turn_id: int, slot: Any, where: Any) -> tuple[int, int]:
        if (turn_id, slot) not in self.responses:
            raise ValueError(f"turn {where!r} has no response of model {slot!r}")
        return self.responses[(turn_id, slot)]

    # --- records ---

    def _users(self, batch: list[Record]) -> None:
        usernames = [record["username"] for _, record in batch]
        self.users.update({user.username: user for user in User.objects.filter(username__in=usernames)})
        groups = {group.name: group for group in Group.objects.filter(name__in=roles.ROLES)}

        def create(record: dict[str, Any]) -> None:
            if record["username"] in self.users:
                return  # an existing account is used as it is
            wanted = record.get("roles", [])
            if not set(wanted) <= set(groups):
                raise ValueError(f"user {record['username']!r}: unknown roles {sorted(set(wanted) - set(groups))}")
            user = User(username=record["username"], first_name=record.get("first_name", ""),
                        last_name=record.get("last_name", ""), email=record.get("email", ""),
                        is_staff=bool(set(wanted) & roles.STAFF_ROLES))
            user.set_unusable_password()
            user.full_clean(exclude=["password"])
            user.save()
            user.groups.set([groups[name] for name in wanted])
            self.users[user.username] = user

        _built(batch, create)

    def _schema(self, batch: list[Record]) -> None:
        if len(batch) != 1 or self.schema is not None:
            raise ValueError("an archive holds one schema")
        record = batch[0][1]
        existing = Schema.objects.filter(slug=record["slug"]).first()
        if existing is not None:
            mine = _schema_record(existing)
            if _without_created(mine) != _without_created(record):
                raise ValueError(f"schema {record['slug']!r} exists in this installation with another definition; "
                                 "import the study into an installation without it, or rename one of them")
            self.schema = existing
        else:
            self.schema = _new(Schema, record)
            self.schema.save(force_insert=True)
            attributes = [_new(AttributeDefinition, row, schema=self.schema) for row in record["attributes"]]
            AttributeDefinition.objects.bulk_create(attributes)
            codes = {attribute.code: attribute for attribute in attributes}
            SpanSubcategory.objects.bulk_create(
                _new(SpanSubcategory, row, schema=self.schema, attribute=codes[row["attribute"]])
                for row in record["subcategories"])
        self.attributes = {a.code: a for a in AttributeDefinition.objects.filter(schema=self.schema)}
        self.subcategories = {s.slug: s for s in SpanSubcategory.objects.filter(schema=self.schema)}

    def _studies(self, batch: list[Record]) -> None:
        if len(batch) != 1 or self._study is not None:
            raise ValueError("an archive holds one study")
        record = dict(batch[0][1])
        if self.schema is None or record["schema"] != self.schema.slug:
            raise ValueError(f"the study's schema {record['schema']!r} is not the archive's schema")
        if self.as_slug:
            record["slug"] = self.as_slug
        if Study.objects.filter(slug=record["slug"]).exists():
            raise ValueError(f"a study {record['slug']!r} exists in this installation; import under another slug "
                             "(--as NEW_SLUG)")
        study = _new(Study, record, schema=self.schema)
        study.save(force_insert=True)
        self._study = study

    def _members(self, batch: list[Record]) -> None:
        members = _built(batch, lambda record: _new(StudyMember, record, study=self.study,
                                                    user=self._user(record["user"])))
        StudyMember.objects.bulk_create(members)
        self.members.update({member.user.username: member for member in members})

    def _datasets(self, batch: list[Record]) -> None:
        names = _built(batch, lambda record: record["name"])
        self.datasets.update({d.name: d for d in Dataset.objects.filter(name__in=names)})
        new = _built([(n, r) for n, r in batch if r["name"] not in self.datasets], lambda r: _new(Dataset, r))
        Dataset.objects.bulk_create(new)
        self.datasets.update({d.name: d for d in new})

    def _conversations(self, batch: list[Record]) -> None:
        def natural_key(record: dict[str, Any]) -> tuple[str, str]:
            if record["dataset"] not in self.datasets:
                raise ValueError(f"dataset {record['dataset']!r} is not among the archive's datasets")
            return record["dataset"], record["external_id"]

        keys = _built(batch, natural_key)
        candidates = Conversation.objects.select_related("dataset").filter(
            dataset__name__in={name for name, _ in keys}, external_id__in={external_id for _, external_id in keys})
        wanted = set(keys)
        existing = {key: c for c in candidates if (key := (c.dataset.name, c.external_id)) in wanted}
        self.conversations_reused += self._check_reused(batch, existing)

        sessions_of: dict[int, dict[int, Session]] = {}  # id(conversation) -> session index -> session

        def build(record: dict[str, Any]) -> tuple[Conversation, list[tuple[Turn, list[ModelResponse]]]]:
            conversation = _new(Conversation, record, dataset=self.datasets[record["dataset"]],
                                study=self.study if record["owned"] else None)
            sessions = sessions_of[id(conversation)] = _sessions_built(record, conversation)
            return conversation, [(_new(Turn, turn, conversation=conversation,
                                        session=sessions.get(turn.get("session"))),
                                   [_new(ModelResponse, response) for response in turn["responses"]])
                                  for turn in record["turns"]]

        new = _built([(n, r) for n, r in batch if (r["dataset"], r["external_id"]) not in existing], build)
        # Each bulk_create gives its rows their ids, which the rows built to point to them then take over.
        Conversation.objects.bulk_create([conversation for conversation, _ in new])
        Session.objects.bulk_create([session for conversation, _ in new
                                     for session in sessions_of[id(conversation)].values()])
        Turn.objects.bulk_create([turn for _, turns in new for turn, _ in turns])
        responses = []
        for _, turns in new:
            for turn, turn_responses in turns:
                for response in turn_responses:
                    response.turn = turn
                responses += turn_responses
        ModelResponse.objects.bulk_create(responses)
        for conversation, turns in new:
            key_ = (conversation.dataset.name, conversation.external_id)
            self.conversations[key_] = conversation.pk
            self.sessions.update({(*key_, index): s.pk for index, s in sessions_of[id(conversation)].items()})
            for turn, _ in turns:
                self.turns[(*key_, turn.index)] = (turn.pk, conversation.pk)
        for response in responses:
            self.responses[(response.turn_id, response.model_slot)] = (response.pk, len(response.text))

    def _check_reused(self, batch: list[Record], existing: dict[tuple[str, str], Conversation]) -> int:
        """A conversation that exists is reused if it holds every archived turn and response with the same text."""
        if not existing:
            return 0
        ids = [c.pk for c in existing.values()]
        stored_turns = {(t.conversation_id, t.index): t for t in Turn.objects.filter(conversation_id__in=ids)}
        stored_responses = {(r.turn_id, r.model_slot): r
                            for r in ModelResponse.objects.filter(turn__conversation_id__in=ids)}
        stored_sessions = {(s.conversation_id, s.index): s for s in Session.objects.filter(conversation_id__in=ids)}
        for number, record in batch:
            key = (record["dataset"], record["external_id"])
            conversation = existing.get(key)
            if conversation is None:
                continue
            name = f"line {number} (conversation): {key[0]}/{key[1]}"
            for field in ("kind", "topic", "complexity", "title"):
                if getattr(conversation, field) != record[field]:
                    raise ArchiveError(f"{name} exists in this installation with another {field}")
            for session_record in record.get("sessions", []):
                session = stored_sessions.get((conversation.pk, session_record.get("index")))
                if session is None or (session.kind, session.crisis_type) != (session_record.get("kind"),
                                                                             session_record.get("crisis_type")):
                    raise ArchiveError(f"{name} exists in this installation with another session "
                                       f"{session_record.get('index')}")
                self.sessions[(key[0], key[1], session.index)] = session.pk
            for turn_record in record["turns"]:
                turn = stored_turns.get((conversation.pk, turn_record["index"]))
                if turn is None or (turn.client_text, turn.therapist_reference) != (
                        turn_record["client_text"], turn_record["therapist_reference"]):
                    raise ArchiveError(f"{name} exists in this installation with another turn {turn_record['index']}")
                for response_record in turn_record["responses"]:
                    response = stored_responses.get((turn.pk, response_record["model_slot"]))
                    if response is None or response.text != response_record["text"]:
                        raise ArchiveError(f"{name} exists in this installation with another response of model "
                                         f"{response_record['model_slot']!r} in turn {turn.index}")
                    self.responses[(turn.pk, response.model_slot)] = (response.pk, len(response.text))
                self.turns[(key[0], key[1], turn.index)] = (turn.pk, conversation.pk)
            self.conversations[key] = conversation.pk
        return len(existing)

    def _rounds(self, batch: list[Record]) -> None:
        def build(record: dict[str, Any]) -> tuple[Round, list[RoundItem]]:
            round_ = _new(Round, record, study=self.study)
            items = []
            for item in record["items"]:
                if not isinstance(item, list) or len(item) != 4:
                    raise ValueError(f"an item is [position, dataset, id, turn index], not {item!r}")
                items.append(RoundItem(round=round_, position=item[0], turn_id=self._turn(item[1:])[0]))
            return round_, items

        for round_, items in _built(batch, build):
            round_.save(force_insert=True)
            for item in items:
                item.round = round_
            RoundItem.objects.bulk_create(items)
            self.rounds[round_.name] = round_

    def _assignments(self, batch: list[Record]) -> None:
        Assignment.objects.bulk_create(_built(batch, lambda record: _new(
            Assignment, record, round=self._round(record["round"]), coder=self._user(record["coder"]),
            turn_id=self._turn(record["turn"])[0])))

    def _judgments(self, batch: list[Record]) -> None:
        through = Judgment.agreed_by.through

        def build(record: dict[str, Any]) -> tuple[Judgment, list[Span], list[Any], list[JudgmentRevision]]:
            judgment = self._judgment(record)
            agreements = [through(judgment=judgment, user=self._user(username)) for username in record["agreed_by"]]
            revisions = [_new(JudgmentRevision, revision, judgment=judgment,
                              changed_by=self._maybe_user(revision["changed_by"])) for revision in record["revisions"]]
            return judgment, self._spans(record, judgment), agreements, revisions

        built = _built(batch, build)
        Judgment.objects.bulk_create([judgment for judgment, *_ in built])
        spans = [span for _, spans, _, _ in built for span in spans]
        agreements = [agreement for _, _, agreements, _ in built for agreement in agreements]
        revisions = [revision for *_, revisions in built for revision in revisions]
        Span.objects.bulk_create(spans)
        through.objects.bulk_create(agreements)
        JudgmentRevision.objects.bulk_create(revisions)

    def _judgment(self, record: dict[str, Any]) -> Judgment:
        attribute = self._attribute(record["attribute"])
        conversation_key = record["conversation"]
        if not isinstance(conversation_key, list) or tuple(conversation_key) not in self.conversations:
            raise ValueError(f"conversation {conversation_key!r} is not among the archive's conversations")
        turn_id = response_id = session_id = None
        if record.get("session") is not None:
            session_id = self.sessions.get((*conversation_key, record["session"]))
            if session_id is None:
                raise ValueError(f"session {record['session']} of {conversation_key!r} is not in the archive")
        if record["turn"] is not None:
            turn_id = self._turn([*conversation_key, record["turn"]])[0]
        if record["response"] is not None:
            if turn_id is None:
                raise ValueError("a judgment of a response names its turn")
            response_id = self._response(turn_id, record["response"], [*conversation_key, record["turn"]])[0]
        unit = {"conversation": (False, False, False), "turn": (True, False, False), "response": (True, True, False),
                "session": (False, False, True)}[attribute.unit]
        if (turn_id is not None, response_id is not None, session_id is not None) != unit:
            raise ValueError(f"attribute {attribute.code} is coded once per {attribute.unit}")
        judgment = _new(Judgment, record, round=self._round(record["round"]), coder=self._user(record["coder"]),
                        attribute=attribute, conversation_id=self.conversations[tuple(conversation_key)],
                        turn_id=turn_id, response_id=response_id, session_id=session_id)
        if judgment.score is not None and not attribute.scale_min <= judgment.score <= attribute.scale_max:
            raise ValueError(f"score {judgment.score} is outside the scale {attribute.scale_min}–{attribute.scale_max}"
                             f" of attribute {attribute.code}")
        return judgment

    def _spans(self, record: dict[str, Any], judgment: Judgment) -> list[Span]:
        spans = []
        for span in record["spans"]:
            if (not isinstance(span, list) or len(span) != 3 or not all(type(n) is int for n in span[:2])):
                raise ValueError(f"a span is [start, end, subcategory], not {span!r}")
            start, end, slug = span
            subcategory = self.subcategories.get(slug)
            if subcategory is None or subcategory.attribute_id != judgment.attribute_id:
                raise ValueError(f"span {span}: {slug!r} is not a subcategory of attribute {record['attribute']}")
            if judgment.response_id is None:
                raise ValueError(f"span {span}: only judgments of a response have spans")
            length = self._response(judgment.turn_id, record["response"], record["turn"])[1]  # type: ignore[arg-type]
            if not 0 <= start < end <= length:
                raise ValueError(f"span {span} is outside the response text ({length} characters)")
            spans.append(Span(judgment=judgment, subcategory=subcategory, start=start, end=end))
        return spans

    def _session_labels(self, batch: list[Record]) -> None:
        """Methods' predictions and reference labels (LC8), checked as ``annotation.session_labels`` checks
        them (a method's value any finite number, as it is; a reference label a whole number on the scale)."""

        def build(record: dict[str, Any]) -> SessionLabel:
            member = self.members.get(record["coder"])
            if member is None:
                raise ValueError(f"coder {record['coder']!r} is not among the archive's study members")
            if member.role not in (StudyMember.Role.METHOD, StudyMember.Role.REFERENCE):
                raise ValueError(f"{record['coder']} is a {member.role} of the study: session labels are a method's "
                                 "or the reference's")
            key = record["session"]
            if not isinstance(key, list) or len(key) != 3 or tuple(key) not in self.sessions:
                raise ValueError(f"session {key!r} is not among the archive's conversations' sessions")
            attribute = self._attribute(record["attribute"])
            if attribute.unit != AttributeDefinition.Unit.SESSION:
                raise ValueError(f"attribute {attribute.code} is not coded per session")
            if type(record.get("value")) not in (int, float):
                raise ValueError(f"value must be a number, not {record.get('value')!r}"[:200])
            label = _new(SessionLabel, record, study=self.study, coder=member, session_id=self.sessions[tuple(key)],
                         attribute=attribute)
            if not math.isfinite(label.value):
                raise ValueError(f"value must be a finite number, not {label.value!r}")
            if member.role == StudyMember.Role.REFERENCE and label.seed is not None:
                raise ValueError(f"a reference label has no seed, not seed {label.seed}")
            if member.role == StudyMember.Role.REFERENCE and (
                    not label.value.is_integer() or not attribute.scale_min <= label.value <= attribute.scale_max):
                raise ValueError(f"a reference label of {attribute.code} is a whole number from {attribute.scale_min} "
                                 f"to {attribute.scale_max}, not {label.value!r}")
            return label

        SessionLabel.objects.bulk_create(_built(batch, build))

    def _workshop_notes(self, batch: list[Record]) -> None:
        def build(record: dict[str, Any]) -> WorkshopNote:
            turn_id = self._turn(record["turn"])[0]
            response_id = (None if record["response"] is None
                           else self._response(turn_id, record["response"], record["turn"])[0])
            return _new(WorkshopNote, record, round=self._round(record["round"]),
                        attribute=self._attribute(record["attribute"]), turn_id=turn_id, response_id=response_id,
                        written_by=self._user(record["written_by"]))

        WorkshopNote.objects.bulk_create(_built(batch, build))

    def _alerts(self, batch: list[Record]) -> None:
        ReviewerAlert.objects.bulk_create(_built(batch, lambda record: _new(
            ReviewerAlert, record, study=self.study, reviewer=self._user(record["reviewer"]))))

    def _metric_runs(self, batch: list[Record]) -> None:
        MetricRun.objects.bulk_create(_built(batch, lambda record: _new(
            MetricRun, record, study=self.study, requested_by=self._maybe_user(record["requested_by"]))))

    def _audit_events(self, batch: list[Record]) -> None:
        AuditEvent.objects.bulk_create(_built(batch, lambda record: _new(
            AuditEvent, record, study_id=self.study.pk, actor=self._maybe_user(record["actor"]))))


def _sessions_built(record: dict[str, Any], conversation: Conversation) -> dict[int, Session]:
    """A history's sessions by index (none for any other conversation); every turn's session must be one of them."""
    sessions = {s["index"]: _new(Session, s, conversation=conversation) for s in record.get("sessions", [])}
    for turn in record["turns"]:
        if turn.get("session") is not None and turn["session"] not in sessions:
            raise ValueError(f"turn {turn.get('index')} is in session {turn['session']}, which the conversation does "
                             "not have")
    return sessions


def _built(batch: list[Record], build: Callable[[dict[str, Any]], T]) -> list[T]:
    """``build`` applied to each record; a problem with a record is an ArchiveError naming its line."""
    built = []
    for number, record in batch:
        try:
            built.append(build(record))
        except (KeyError, TypeError, ValueError, ValidationError) as error:
            raise ArchiveError(f"line {number} ({record['type']}): {_message(error)}") from error
    return built


def _new(model: type[models.Model], record: dict[str, Any], **relations: Any) -> Any:
    """An unsaved instance from a record's plain columns (checked and converted by the model fields, so a bad value
    is a ValidationError naming the field) and the resolved relations."""
    values: dict[str, Any] = {}
    for field in columns(model):
        if field.attname not in record:
            if field.has_default():
                continue
            raise ValueError(f"{model._meta.model_name}: no {field.attname!r}")
        value = record[field.attname]
        try:
            value = field.to_python(value)
            if value is None and not field.null:
                raise ValidationError("may not be empty")
            if value is not None:
                field.run_validators(value)
        except ValidationError as error:
            raise ValidationError(f"{model._meta.model_name} {field.attname}: {_message(error)}") from error
        values[field.attname] = value
    return model(**values, **relations)


def _message(error: BaseException) -> str:
    if isinstance(error, ValidationError):
        return "; ".join(error.messages)
    if isinstance(error, KeyError):
        return f"no {error.args[0]!r}"
    return str(error)


def _without_created(record: dict[str, Any]) -> dict[str, Any]:
    """A schema record as JSON gives it back, without its creation time (which differs between installations)."""
    return {key: value for key, value in json.loads(_dumps(record)).items() if key not in ("type", "created_at")}




