"""Reading a study archive back (``study_import``), all or nothing (the format: ``study_archive/records.py``).

Why tables and not services: a restore copies rows as they were, every value, version and timestamp (the
``auto_now`` ones too), where a service would make new history. It is still an ordinary writer for the database:
the PostgreSQL triggers check every row, so rows go in the order they accept (schema before the study that
freezes it, responses before judgments, judgments before their spans), and the importer checks every reference,
scale and span first so that an error names the archive's line instead of a trigger's id. An import writes no
judgment revisions of its own (the archived history is the history); it is one ``study.import`` audit event.

Importing: the schema is reused when the target has one with the same slug and the same definition (attributes
and subcategories included), and refused when it differs; a new one is checked as an install checks its ``indices``
block. A dataset is reused by name. A conversation that
exists is reused when every archived session, turn and response is there as archived (the same texts, each turn in
the same session, each response of the same model version; its owning study is left as it is), and refused
otherwise. It may hold more here, but not under a session code of the archive: a session coded on its transcript as
archived is refused on the code's line when the copy here holds a turn or reply the archive lacks, in that session
or an earlier one (``_session_code_check``; docs/sessions.md), and a conversation-level judgment of the archive
when the copy holds any (``_conversation_code_check``). The study's slug must be free (``as_slug`` imports
under another one).

A conversation the study's kind cannot place (its ``conversation_problems`` hook, which every path that makes a
conversation a study's asks) is restored as the archive holds it, and said (``records.Unplaceable``: by line, in
the ``study.import`` audit event and to ``warn``): the archived study held it so, stored before the kind checked it
(0.2.0's study ingestion asked no kind), and its report could not place it either, so the restored study's report
says what the archived one's did; refusing it would leave the study's backup unrestorable. What the import refuses
is to make the study's report worse than the archived one's: a reused conversation the kind cannot place as stored
in this installation (it holds sessions the archive lacks) while it can place the archived one.
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from django.contrib.auth.models import Group, User
from django.core.exceptions import ValidationError
from django.db import DatabaseError, models, transaction

from access import roles
from annotation.kinds import CoderSetting, conversation_check, kind_settings, kind_settings_problems
from annotation.models import (
    Assignment,
    AttributeDefinition,
    FormerStudyMember,
    Judgment,
    JudgmentRevision,
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
from annotation.schema_document import ari_cluster_problems, index_thresholds
from annotation.selectors import conversations_unplaceable, placement_problem, study_coders
from annotation.services import (
    completions_locked,
    items_short_of_responses_reopened,
    study_slug_check,
    study_slug_lock,
)
from audit.models import AuditEvent
from audit.services import audit_record
from benchmark.models import Conversation, Dataset, ModelResponse, Session, Turn
from common.outage import said
from metrics.models import MetricRun
from study_archive.records import (
    CHUNK,
    FORMAT,
    NESTED,
    ORDER,
    RELATIONS,
    USER_KEYS,
    VERSION,
    ArchiveError,
    Checksum,
    Unplaceable,
    column_names,
    columns,
    dumps,
    items_back_imported,
    items_short_imported,
    read_records,
    schema_record,
    unplaceable_imported,
)

# One import at a time in a process: the flags ``_stored_timestamps`` flips are the process's. Two imports at once
# (threads) would each restore what the other flipped, leaving the times off for the process's later saves.
_ONE_IMPORT = threading.Lock()


@contextlib.contextmanager
def _stored_timestamps() -> Iterator[None]:
    """Let INSERTs keep the archived ``auto_now`` / ``auto_now_add`` values, which ``bulk_create`` would replace
    with the time of the import (it calls each field's ``pre_save``). This flips the flags on the field objects,
    which are process-wide, for the duration of an import (``_ONE_IMPORT`` at a time): commands run one import per
    process, and nothing else of this process saves those models meanwhile."""
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



def study_import(*, lines: Iterable[str], warn: Callable[[str], None], as_slug: str | None = None,
                 by: User | None = None) -> Study:
    """Import an archive (its lines, as read from the file), all or nothing: any problem raises ArchiveError naming
    the line, and nothing is written. Records the import in the audit trail. ``as_slug`` (``--as``) must be a slug
    a new study may have (``annotation.services.study_slug_check``). The conversations the study's kind cannot place,
    restored as stored, are named in the audit event (``unplaceable``) and, once the import has committed, to
    ``warn`` (``records.unplaceable_imported``)."""
    if as_slug is not None:
        try:
            study_slug_check(slug=as_slug)
        except ValidationError as error:
            raise ArchiveError(f"--as {as_slug[:100]!r}: {_message(error)}") from error
    importer = _Importer(as_slug=as_slug)
    with _ONE_IMPORT, transaction.atomic():
        with _stored_timestamps():
            importer.run(read_records(importer.checksum.through(lines)))
        study = importer.study
        unplaceable = sorted(importer.unplaceable, key=lambda found: found.line)
        # A completed item whose turn holds a response of the study's slots its coder never coded goes back to
        # their queue, as on every other path that adds a response to a completed turn (migration 0023's rule, read
        # by what was coded): short in the archive itself (made under 0.2.0, which left such items completed), or
        # its conversation reused and holding more responses here than the archive (added by another study's
        # ingestion into a shared conversation). Those of the archive's own responses first, each said as it is.
        completions_locked(study.pk)
        items = Assignment.objects.filter(round__study=study)
        short = items_short_of_responses_reopened(study=study, assignments=items,
                                                  excluding=importer.responses_not_archived)
        added = items_short_of_responses_reopened(study=study, assignments=items)
        back = short + added
        audit_record(by=by, action="study.import", study=study, target=f"study:{study.slug}",
                     archived_as=importer.archived_slug, records=dict(importer.counts),
                     conversations_reused=importer.conversations_reused,
                     **({"unplaceable": [found.audited() for found in unplaceable]} if unplaceable else {}),
                     **({"turns_back_in_queues": back} if back else {}))
    if unplaceable:
        warn(unplaceable_imported(unplaceable))
    if short:
        warn(items_short_imported(short))
    if added:
        warn(items_back_imported(added))
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
        self.checksum = Checksum()
        self._study: Study | None = None
        self.study_line = 0  # the study record's line
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
        self.responses_not_archived: set[int] = set()  # of reused conversations: added by another study's ingestion
        # reused conversation -> (index, what) of its first turn whose copy here holds more than the archive (the turn,
        # or a reply), and each stored session's last turn: a session code covers its transcript up to there
        self.not_archived_from: dict[tuple[str, str], tuple[int, str]] = {}
        self.session_ends: dict[int, int] = {}
        self.unplaceable: list[Unplaceable] = []  # restored as stored (``_placeable_check``)

    @property
    def study(self) -> Study:
        if self._study is None:
            raise ArchiveError("the archive has no study record")
        return self._study

    def run(self, records: Iterator[Record]) -> None:
        handlers: dict[str, Callable[[list[Record]], None]] = {
            "user": self._users, "schema": self._schema, "study": self._studies, "member": self._members,
            "former_member": self._former_members,
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
            if said(error) is not None:  # an outage or a busy database, not these lines: said as such (manage.py)
                raise
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
        self._coder_settings_check()

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
            if unknown := set(record) - USER_KEYS:
                raise ValueError(f"user: {', '.join(map(repr, sorted(unknown)))} is not a column of this "
                                 "installation's user records, which would leave it out; an archive written by a newer "
                                 "version of the software holds it: import the archive into an installation of that "
                                 "version or newer")
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
            mine = schema_record(existing)
            if _without_created(mine) != _without_created(record):
                raise ValueError(f"schema {record['slug']!r} exists in this installation with another definition; "
                                 "import the study into an installation without it, or rename one of them")
            self.schema = existing
        else:
            self.schema = _new(Schema, record)
            attributes = [_new(AttributeDefinition, row, schema=self.schema) for row in record["attributes"]]
            _schema_check(self.schema, attributes)
            self.schema.save(force_insert=True)
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
        study_slug_check(slug=record["slug"])  # an archive's own slug too: one a study may have here
        study_slug_lock(record["slug"])  # a writer creating it meanwhile (another import) commits first
        if Study.objects.filter(slug=record["slug"]).exists():
            raise ValueError(f"a study {record['slug']!r} exists in this installation; import under another slug "
                             "(--as NEW_SLUG)")
        study = _new(Study, record, schema=self.schema)
        # what the study services refuse: a setting of another kind, or a value none of its choices; a setting whose
        # value is one of the study's coders once they are in (``_coder_settings_check``)
        own = study.kind_settings
        problems = {"": "not an object"} if not isinstance(own, dict) else kind_settings_problems(
            self.schema, {name: value for name, value in own.items() if name not in _coder_settings()})
        if problems:
            raise ValueError(_settings_said(problems))
        study.save(force_insert=True)
        self._study = study
        self.study_line = batch[0][0]

    def _coder_settings_check(self) -> None:
        """The study's settings whose value is one of its coders (``annotation.kinds.CoderSetting``), against its
        members and former members as imported, as the settings service checks them."""
        own = {name: value for name, value in self.study.kind_settings.items() if name in _coder_settings()}
        if not own or self.schema is None:
            return
        coders = {coder.username: str(coder.role) for coder in study_coders(study=self.study)}
        problems = kind_settings_problems(self.schema, own, coders=coders)
        if problems:
            raise ArchiveError(f"line {self.study_line} (study): {_settings_said(problems)}")

    def _members(self, batch: list[Record]) -> None:
        members = _built(batch, lambda record: _new(StudyMember, record, study=self.study,
                                                    user=self._user(record["user"])))
        StudyMember.objects.bulk_create(members)
        self.members.update({member.user.username: member for member in members})

    def _former_members(self, batch: list[Record]) -> None:
        FormerStudyMember.objects.bulk_create(_built(batch, lambda record: _new(
            FormerStudyMember, record, study=self.study, user=self._user(record["user"]))))

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

        fresh = [(n, r) for n, r in batch if (r["dataset"], r["external_id"]) not in existing]
        new = _built(fresh, build)
        self._placeable_check(
            {number: (existing[key], record) for (number, record), key in zip(batch, keys, strict=True)
             if key in existing},
            {number: (conversation, sessions_of[id(conversation)])
             for (number, _), (conversation, _) in zip(fresh, new, strict=True)})
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

    def _placeable_check(self, reused: dict[int, tuple[Conversation, dict[str, Any]]],
                         fresh: dict[int, tuple[Conversation, dict[int, Session]]]) -> None:
        """Every conversation the archive brings into the study, asked of the study's kind as every other path that
        makes one a study's asks it (its ``conversation_problems`` hook: a conversation the kind's report cannot
        place, e.g. a history of more sessions than it has columns for, which makes the study's whole section
        unavailable), by line number. One it cannot place as the archive holds it was the archived study's so (stored
        before the kind checked it): it is restored as stored and kept in ``unplaceable`` (a new one as built from
        its line, a reused one as stored here), so the restored study's report says what the archived one's did.
        A reused one the kind cannot place as stored here but can as archived (this installation's copy holds
        sessions the archive lacks) would make the restored study's report worse than the archived one's: refused on
        the first such line of the batch."""
        check = conversation_check(self.study)
        if check is None:
            return
        stored = conversations_unplaceable(study=self.study, conversations=[c.pk for c, _ in reused.values()])
        refused = {}
        kept = {}  # line -> the reused conversation, which the kind cannot place as archived either
        for number, (conversation, record) in reused.items():
            if conversation.pk not in stored:
                continue
            archived = [(s["index"], s["kind"], s.get("crisis_type")) for s in record.get("sessions", [])]
            if placement_problem(check, dataset=conversation.dataset.name, external_id=conversation.external_id,
                                 kind=conversation.kind, sessions=archived) is None:
                refused[number] = stored[conversation.pk]
            else:
                kept[number] = conversation
        if refused:
            number = min(refused)
            raise ArchiveError(f"line {number} (conversation): {refused[number]}")
        sessions_stored: dict[int, list[tuple[int, str, str | None]]] = {c.pk: [] for c in kept.values()}
        for conversation_id, index, kind, crisis_type in Session.objects.filter(
                conversation_id__in=list(sessions_stored)).order_by("conversation_id", "index").values_list(
                "conversation_id", "index", "kind", "crisis_type"):
            sessions_stored[conversation_id].append((index, kind, crisis_type))
        asked = [(number, conversation, sessions_stored[conversation.pk]) for number, conversation in kept.items()]
        asked += [(number, conversation, [(s.index, s.kind, s.crisis_type)
                                          for s in sorted(sessions.values(), key=lambda session: session.index)])
                  for number, (conversation, sessions) in fresh.items()]
        for number, conversation, sessions in asked:
            if problem := placement_problem(check, dataset=conversation.dataset.name,
                                            external_id=conversation.external_id, kind=conversation.kind,
                                            sessions=sessions):
                self.unplaceable.append(Unplaceable(
                    line=number, conversation=f"{conversation.dataset.name}/{conversation.external_id}",
                    problem=problem))

    def _check_reused(self, batch: list[Record], existing: dict[tuple[str, str], Conversation]) -> int:
        """A conversation that exists is reused if it holds every archived session, turn and response as archived:
        the same texts, each turn in the same session, each response of the same model version."""
        if not existing:
            return 0
        ids = [c.pk for c in existing.values()]
        stored_turns = {(t.conversation_id, t.index): t for t in Turn.objects.filter(conversation_id__in=ids)}
        stored_responses = {(r.turn_id, r.model_slot): r
                            for r in ModelResponse.objects.filter(turn__conversation_id__in=ids)}
        stored_sessions = {(s.conversation_id, s.index): s for s in Session.objects.filter(conversation_id__in=ids)}
        session_index: dict[int | None, int] = {s.pk: s.index for s in stored_sessions.values()}
        turns_of, slots_of = _turns_and_slots(stored_turns, stored_responses)
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
                differs = [] if turn is None else [field for field, stored, archived in (
                    ("client_text", turn.client_text, turn_record["client_text"]),
                    ("therapist_reference", turn.therapist_reference, turn_record["therapist_reference"]),
                    ("session", session_index.get(turn.session_id), turn_record.get("session"))) if stored != archived]
                if turn is None or differs:
                    raise ArchiveError(f"{name} exists in this installation with another turn {turn_record['index']}"
                                       + (f" (its {differs[0]})" if differs else ""))
                for response_record in turn_record["responses"]:
                    response = stored_responses.get((turn.pk, response_record["model_slot"]))
                    differs = [field for field in ("text", "model_version")
                               if response is not None and getattr(response, field) != response_record[field]]
                    if response is None or differs:
                        raise ArchiveError(f"{name} exists in this installation with another response of model "
                                           f"{response_record['model_slot']!r} in turn {turn_record['index']}"
                                           + (f" (its {differs[0]})" if differs else ""))
                    self.responses[(turn.pk, response.model_slot)] = (response.pk, len(response.text))
                self.turns[(key[0], key[1], turn.index)] = (turn.pk, conversation.pk)
            self.conversations[key] = conversation.pk
            self._not_archived_note(key, record, turns_of.get(conversation.pk, []), slots_of)
        archived = {response_id for response_id, _ in self.responses.values()}
        self.responses_not_archived.update(r.pk for r in stored_responses.values() if r.pk not in archived)
        return len(existing)

    def _not_archived_note(self, key: tuple[str, str], record: dict[str, Any], turns: list[Turn],
                           slots_of: dict[int, set[str]]) -> None:
        """Note the first turn of a reused conversation (its stored ``turns``, their replies' slots ``slots_of``) that
        this installation's copy holds more of than the archive (the turn itself, or a reply of it), and the last
        turn of each of its sessions: a session code of the archive covers its session's transcript as archived, up
        to its last turn, with the earlier sessions its page shows (``_session_code_check``)."""
        archived = {turn_record["index"]: {r["model_slot"] for r in turn_record["responses"]}
                    for turn_record in record["turns"]}
        more: list[tuple[int, str]] = []
        for turn in turns:
            if turn.session_id is not None:
                self.session_ends[turn.session_id] = max(self.session_ends.get(turn.session_id, 0), turn.index)
            if turn.index not in archived:
                more.append((turn.index, "turn"))
            elif slots_of.get(turn.pk, set()) - archived[turn.index]:
                more.append((turn.index, "a reply of turn"))
        if more:
            self.not_archived_from[key] = min(more)

    def _session_code_check(self, key: tuple[str, str], session_id: int, index: Any) -> None:
        """A session's code was given on its transcript as archived (docs/sessions.md): restored onto a reused
        conversation whose copy here holds a turn or reply the archive lacks in that session or an earlier one, it
        would be a code of a transcript its coder never saw, counted by the study's report as any other."""
        more = self.not_archived_from.get(key)
        if more is not None and more[0] <= self.session_ends.get(session_id, 0):
            index_of, what = more
            raise ValueError(f"session {index} of {key[0]}/{key[1]} is coded in the archive on its transcript as "
                             f"archived, but this installation's copy of it holds {what} {index_of}, which the archive "
                             "lacks: the code would be of a transcript its coder never saw")

    def _conversation_code_check(self, key: tuple[str, str]) -> None:
        """A conversation-level judgment was given on the conversation's whole transcript as archived (README, "Study
        isolation and frozen text"): restored onto a reused conversation whose copy here holds a turn or reply the
        archive lacks, it would be a judgment of a transcript its coder never saw."""
        more = self.not_archived_from.get(key)
        if more is not None:
            index_of, what = more
            raise ValueError(f"{key[0]}/{key[1]} is judged as a whole in the archive on its transcript as archived, "
                             f"but this installation's copy of it holds {what} {index_of}, which the archive lacks: "
                             "the judgment would be of a transcript its coder never saw")

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
            self._session_code_check(tuple(conversation_key), session_id, record["session"])
        elif attribute.unit == AttributeDefinition.Unit.CONVERSATION:
            self._conversation_code_check(tuple(conversation_key))
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
        """Methods' predictions and reference labels (session labels), checked as ``annotation.session_labels`` checks
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


def _schema_check(schema: Schema, attributes: list[AttributeDefinition]) -> None:
    """A new schema's ``indices`` block as an install and the admin check it: the report's thresholds it sets
    (``schema_document.index_thresholds``) and its ``indices.ari.clusters`` against the archive's attributes
    (``schema_document.ari_cluster_problems``), so no archive brings in a schema neither would take."""
    indices = schema.definition.get("indices") if isinstance(schema.definition, dict) else None
    index_thresholds(indices)
    if isinstance(indices, dict) and (problems := ari_cluster_problems(indices, attributes)):
        raise ValueError(f"schema {schema.slug!r}: " + "; ".join(problems))


def _coder_settings() -> set[str]:
    """The names of the study kinds' settings whose value is one of the study's coders."""
    return {name for name, (_kind, setting) in kind_settings().items() if isinstance(setting, CoderSetting)}


def _settings_said(problems: dict[str, str]) -> str:
    return "study kind_settings: " + "; ".join(f"{name}: {why}".lstrip(": ") for name, why in problems.items())


def _sessions_built(record: dict[str, Any], conversation: Conversation) -> dict[int, Session]:
    """A history's sessions by index (none for any other conversation); every turn's session must be one of them."""
    sessions = {s["index"]: _new(Session, s, conversation=conversation) for s in record.get("sessions", [])}
    for turn in record["turns"]:
        if turn.get("session") is not None and turn["session"] not in sessions:
            raise ValueError(f"turn {turn.get('index')} is in session {turn['session']}, which the conversation does "
                             "not have")
    return sessions


def _turns_and_slots(stored_turns: dict[tuple[int, int], Turn], stored_responses: dict[tuple[int, str], ModelResponse]
                     ) -> tuple[dict[int, list[Turn]], dict[int, set[str]]]:
    """The stored turns by conversation, and the model slots of each turn's stored responses."""
    turns_of: dict[int, list[Turn]] = {}
    for (conversation_id, _), turn in stored_turns.items():
        turns_of.setdefault(conversation_id, []).append(turn)
    slots_of: dict[int, set[str]] = {}
    for turn_id, slot in stored_responses:
        slots_of.setdefault(turn_id, set()).add(slot)
    return turns_of, slots_of


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
    is a ValidationError naming the field) and the resolved relations. A key that is none of the record's columns,
    relations or nested rows (``records.NESTED``) is refused: a column of a newer version's model, which this
    installation would drop."""
    unknown = set(record) - {"type", *column_names(model), *RELATIONS[model], *NESTED.get(model, ())}
    if unknown:
        name = model._meta.model_name
        raise ValueError(f"{name}: {', '.join(map(repr, sorted(unknown)))} is not a column of this installation's "
                         f"{name} records, which would leave it out; an archive written by a newer version of the "
                         "software holds it: import the archive into an installation of that version or newer")
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
    return {key: value for key, value in json.loads(dumps(record)).items() if key not in ("type", "created_at")}
