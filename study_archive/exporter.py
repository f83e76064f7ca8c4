"""Writing a study's archive (``study_export``): one consistent snapshot of the study, read table by table in
fixed orders through server-side cursors and written record by record in the order of ``records.ORDER`` (the
format: ``study_archive/records.py``)."""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import operator
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from typing import IO, Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection, models, transaction

from access import roles
from annotation.kinds import conversation_check
from annotation.models import (
    Assignment,
    FormerStudyMember,
    Judgment,
    JudgmentRevision,
    ReviewerAlert,
    Round,
    RoundItem,
    SessionLabel,
    Span,
    Study,
    StudyMember,
    WorkshopNote,
)
from annotation.selectors import placement_problem
from audit.models import AuditEvent
from benchmark.models import Conversation, Dataset, ModelResponse, Session, Turn
from common.rounds import round_name
from metrics.models import MetricRun
from study_archive.records import (
    CHUNK,
    FORMAT,
    ORDER,
    VERSION,
    Unplaceable,
    column_names,
    dumps,
    plain_values,
    schema_record,
    unplaceable_exported,
)


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


def study_export(*, study: Study, out: IO[str], warn: Callable[[str], None]) -> Counter[str]:
    """Write the study's archive to ``out`` record by record (constant memory but for the conversations' and
    users' ids). Returns the number of records of each type. Every conversation is written as stored, also one
    the study's kind cannot place (stored before the kind checked it, e.g. under 0.2.0): a backup can always be
    made. Those are then named to ``warn``, by line, once the archive is written (``records.unplaceable_exported``:
    ``import_study`` restores them as stored)."""
    counts: Counter[str] = Counter()
    digest = hashlib.sha256()
    check = conversation_check(study)
    unplaceable: list[Unplaceable] = []

    def emit(kind: str, record: dict[str, Any]) -> None:
        counts[kind] += 1
        line = dumps({"type": kind, **record}) + "\n"
        digest.update(line.encode())
        out.write(line)
        if kind == "conversation" and check is not None and (problem := _placement_problem(check, record)):
            unplaceable.append(Unplaceable(line=counts.total(), conversation=f"{record['dataset']}/"
                                           f"{record['external_id']}", problem=problem))

    with _snapshot():
        emit("archive", {"format": FORMAT, "version": VERSION, "study": study.slug,
                         "software": {"version": settings.CAB_VERSION, "commit": settings.CAB_COMMIT}})
        for kind, record in _export_records(study):
            emit(kind, record)
        records = {kind: counts[kind] for kind in ORDER if kind in counts and kind != "archive"}
        out.write(dumps({"type": "end", "records": records, "sha256": digest.hexdigest()}) + "\n")
    counts["end"] += 1
    if unplaceable:
        warn(unplaceable_exported(study.slug, unplaceable))
    return counts


def _placement_problem(check: Callable[[dict[str, Any]], list[tuple[str, str]]],
                       record: dict[str, Any]) -> str | None:
    """The kind's first problem placing a conversation as its record holds it (the import asks the same of it)."""
    return placement_problem(check, dataset=record["dataset"], external_id=record["external_id"],
                             kind=record["kind"], sessions=[(session["index"], session["kind"], session["crisis_type"])
                                                            for session in record.get("sessions", [])])


def _export_records(study: Study) -> Iterator[tuple[str, dict[str, Any]]]:  # noqa: C901 - one pass in ORDER
    rounds = Round.objects.filter(study=study)
    judgments = Judgment.objects.filter(round__study=study)
    agreements = Judgment.agreed_by.through.objects.filter(judgment__round__study=study)
    revisions = JudgmentRevision.objects.filter(judgment__round__study=study)
    events = AuditEvent.objects.filter(study_id=study.pk)

    user_ids = _ids(
        StudyMember.objects.filter(study=study).values_list("user_id", flat=True),
        FormerStudyMember.objects.filter(study=study).values_list("user_id", flat=True),
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

    yield "schema", schema_record(study.schema)
    yield "study", {"schema": study.schema.slug, **plain_values(study)}
    for member in StudyMember.objects.filter(study=study).select_related("user").order_by("user__username"):
        yield "member", {"user": member.user.username, **plain_values(member)}
    for former in FormerStudyMember.objects.filter(study=study).select_related("user").order_by("user__username"):
        yield "former_member", {"user": former.user.username, **plain_values(former)}

    conversation_ids = _ids(
        Conversation.objects.filter(study=study).values_list("pk", flat=True),
        judgments.values_list("conversation_id", flat=True),
        RoundItem.objects.filter(round__study=study).values_list("turn__conversation_id", flat=True),
        Assignment.objects.filter(round__study=study).values_list("turn__conversation_id", flat=True),
        WorkshopNote.objects.filter(round__study=study).values_list("turn__conversation_id", flat=True),
        SessionLabel.objects.filter(study=study).values_list("session__conversation_id", flat=True),
    )
    for dataset in Dataset.objects.filter(conversations__pk__in=conversation_ids).distinct().order_by("name"):
        yield "dataset", plain_values(dataset)
    ordered = list(Conversation.objects.filter(pk__in=conversation_ids).order_by("dataset__name", "external_id")
                   .values_list("pk", flat=True))
    for start in range(0, len(ordered), CHUNK):
        yield from (("conversation", record) for record in _conversation_records(ordered[start:start + CHUNK], study))

    for round_ in rounds.order_by("kind", "number"):
        items = RoundItem.objects.filter(round=round_).order_by("position").values_list(
            "position", "turn__conversation__dataset__name", "turn__conversation__external_id", "turn__index")
        yield "round", {**plain_values(round_), "items": [list(item) for item in items]}

    yield from (("assignment", record) for record in _rows(
        Assignment.objects.filter(round__study=study).order_by("pk"), Assignment,
        {"round": ("round__kind", "round__number"), "coder": ("coder__username",),
         "turn": ("turn__conversation__dataset__name", "turn__conversation__external_id", "turn__index")}))

    yield from (("judgment", record) for record in _judgment_records(study))
    # Methods' predictions per seed and the reference labels (session labels): each value as the float it is stored as
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



def _rows(queryset: Any, model: type[models.Model], keys: dict[str, tuple[str, ...]]) -> Iterator[dict[str, Any]]:
    """The rows as records: each natural key (a round name, a username, a turn's [dataset, id, index]) first, then
    the plain columns. Streams through a server-side cursor."""
    names = column_names(model)
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
        responses[response.turn_id].append(plain_values(response))
    # A history's sessions (every one, with turns or not: a session label may name it) and each turn's session
    # index: keys only a history has, so the records of every other conversation stay exactly as they were.
    sessions: dict[int, dict[int, dict[str, Any]]] = defaultdict(dict)
    index_of: dict[int, int] = {}
    for session in Session.objects.filter(conversation_id__in=ids).order_by("conversation_id", "index"):
        sessions[session.conversation_id][session.index] = plain_values(session)
        index_of[session.pk] = session.index
    for turn in Turn.objects.filter(conversation_id__in=ids).order_by("conversation_id", "index"):
        session_key = {} if turn.session_id is None else {"session": index_of[turn.session_id]}
        turns[turn.conversation_id].append({**plain_values(turn), **session_key, "responses": responses[turn.pk]})
    found = {c.pk: c for c in Conversation.objects.filter(pk__in=ids).select_related("dataset")}
    for pk in ids:
        conversation = found[pk]
        yield {"dataset": conversation.dataset.name, **plain_values(conversation),
               "owned": conversation.study_id == study.pk,
               **({"sessions": [sessions[pk][i] for i in sorted(sessions[pk])]} if sessions[pk] else {}),
               "turns": turns[pk]}


def _judgment_records(study: Study) -> Iterator[dict[str, Any]]:
    """Judgments in id order (creation order), each with its spans, the experts who agreed to it and its revisions:
    four streams in judgment id order, merged here, so the cost is linear in the study's size."""
    of_study = {"judgment__round__study": study}
    names = column_names(Judgment)
    lookups = ("pk", "round__kind", "round__number", "coder__username", "is_gold", "attribute__code",
               "conversation__dataset__name", "conversation__external_id", "turn__index", "response__model_slot",
               "session__index")
    plain = [name for name in names if name != "is_gold"]
    revision_names = column_names(JudgmentRevision)
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

