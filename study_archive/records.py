"""The study archive's format: record types and their order, the models and columns it covers, one record's
line, reading lines back and the end record's checksum.

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
model and relation is covered), and an installation whose model lacks a column an archive holds refuses the archive
by its line rather than leave the column out (``NESTED``). The file is a function of the study and of the software
version that writes it: no export time, no database ids, rows in a fixed order, so the same study always gives the
same bytes.

The study record carries the study's blinding key (``Study.blinding_key``), deliberately: it is the study's state,
and a file that names every response's model is no less secret than the key. Handles are made of the key and
database ids, so a study restored where its turns, responses and accounts still are keeps its handles; an archive
written before studies had keys (no ``blinding_key``) imports with a new random one.

Not in an archive: passwords (an account created by an import has no usable password: an admin sends the person
a password link), API tokens and idempotency records, sessions and sign-in attempts, superuser status. Accounts
carry their role groups, given to the accounts an import creates (staff status follows the role, as for any
account); existing accounts are used as they are. Audit events are copied as written: a target or datum that
named a database id (``metric_run:17``) still names the id in the installation it came from.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import models

from annotation.models import (
    Assignment,
    AttributeDefinition,
    ConversationProgress,
    FormerStudyMember,
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
from benchmark.models import Conversation, Dataset, ModelResponse, Session, Turn
from metrics.models import MetricRun

FORMAT = "cab-study-archive"
VERSION = 1
ORDER = ("archive", "user", "schema", "study", "member", "former_member", "dataset", "conversation", "round",
         "assignment", "judgment", "session_label", "workshop_note", "alert", "metric_run", "audit_event", "end")
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
    FormerStudyMember: {"study", "user"},  # someone taken off the study: their role stays their judgments'
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
# The keys of a record besides its model's columns and relations: the rows nested in it, and a conversation's
# ``owned``. A record's every other key is a column this installation's model lacks (an archive written by a newer
# version, where a field was added): the import refuses it rather than leave the column out.
NESTED: dict[type[models.Model], set[str]] = {
    Schema: {"attributes", "subcategories"},
    Conversation: {"owned", "sessions", "turns"},
    Turn: {"responses"},
    Round: {"items"},
    Judgment: {"spans", "revisions"},
}
# A user record's keys (an account is archived by these, not by its model's columns): any other is refused as the
# columns above are.
USER_KEYS = {"type", "username", "first_name", "last_name", "email", "roles"}
# Columns that are not copied: the audit event's study id is the new study's.
NOT_COPIED: dict[type[models.Model], set[str]] = {AuditEvent: {"study_id"}}


class ArchiveError(Exception):
    """The archive cannot be imported (or the study exported); the message names the line and the record."""


@dataclass(frozen=True)
class Unplaceable:
    """A conversation of the archive that its study's kind cannot place (the kind's ``conversation_problems``:
    ``annotation.selectors.placement_problem``), e.g. a history of more sessions than the kind's section has
    columns for: one stored before the kind checked it (0.2.0's study ingestion asked no kind), so the study's report
    could not place it either (the kind's section says so, naming it). Kept as stored: the export warns of it, the
    import restores it as stored and warns of it (README, "Backups and moving a study"). ``line`` is its line in the
    archive."""

    line: int
    conversation: str  # DATASET/ID
    problem: str  # FIELD: why, the kind's first

    def __str__(self) -> str:
        return f"line {self.line} (conversation): {self.conversation} {self.problem}"

    def audited(self) -> dict[str, Any]:
        return {"line": self.line, "conversation": self.conversation, "problem": self.problem}


def unplaceable_exported(slug: str, found: list[Unplaceable]) -> str:
    """``export_study``'s warning: which conversations of the study its kind cannot place, and what the restore
    does with them."""
    one = len(found) == 1
    it, conversations = ("it", "conversation") if one else ("them", "conversations")
    return "\n".join([
        f"warning: study {slug!r} holds {len(found)} {conversations} its kind cannot place (stored before the kind "
        f"checked {it}, e.g. under 0.2.0); the study's report cannot place {it} either. The archive holds {it} as "
        f"stored and import_study restores {it} as stored, with this warning, so the restored study's report says "
        "what this one's does; every other path into a study refuses " + ("it:" if one else "them:"),
        *(f"  {unplaceable}" for unplaceable in found)])


def unplaceable_imported(found: list[Unplaceable]) -> str:
    """``import_study``'s warning (also in its ``study.import`` audit event, as ``unplaceable``): the conversations
    it restored as stored though the study's kind cannot place them."""
    one = len(found) == 1
    it = "it" if one else "them"
    return "\n".join([
        f"warning: {len(found)} " + ("conversation of the archive is one" if one else
                                     "conversations of the archive are ones")
        + f" the study's kind cannot place (stored before the kind checked {it}, e.g. under 0.2.0), imported as "
        f"stored, as the archived study held {it}: the study's report cannot place {it}, as the archived study's "
        f"could not; every other path into a study refuses {it}:",
        *(f"  {unplaceable}" for unplaceable in found)])


def items_short_imported(back: int) -> str:
    """``import_study``'s warning (counted in its ``study.import`` audit event, in ``turns_back_in_queues``):
    completed items it sent back to their coders' queues, as the archive itself holds a response of their turn that
    their coder never coded (an archive made under 0.2.0, which left such items completed)."""
    items, queues, whose = (("completed item", "its coder's queue", "its coder") if back == 1 else
                            ("completed items", "their coders' queues", "their coders"))
    return (f"warning: {back} {items} of the study's open rounds went back to {queues}: the archive itself holds a "
            f"response of the study's model slots in {'its turn' if back == 1 else 'their turns'} that {whose} never "
            "coded (completed short of it, as 0.2.0 left such items)")


def items_back_imported(back: int) -> str:
    """``import_study``'s warning (counted in its ``study.import`` audit event, in ``turns_back_in_queues``):
    completed items it sent back to their coders' queues, as their turns here hold a response the archive lacks,
    added by another study's ingestion to a reused conversation, which the archive's coders never coded."""
    items, queues, whose = (("completed item", "its coder's queue", "its") if back == 1 else
                            ("completed items", "their coders' queues", "their"))
    return (f"warning: {back} {items} of the study's open rounds went back to {queues}: this installation's copy of "
            f"{whose} conversation, reused, holds a response of the study's model slots that the archive does not "
            "(added by another study's ingestion), which no coder of the archive coded")


@functools.cache
def columns(model: type[models.Model]) -> list[models.Field]:
    """The plain columns of an archived model: every concrete field but the primary key and the relations."""
    skip = NOT_COPIED.get(model, set())
    return [field for field in model._meta.concrete_fields
            if not field.is_relation and not field.primary_key and field.attname not in skip]


def column_names(model: type[models.Model]) -> list[str]:
    return [field.attname for field in columns(model)]


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"cannot archive a {type(value).__name__}")


def dumps(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_json_default)



def plain_values(instance: models.Model) -> dict[str, Any]:
    return {name: getattr(instance, name) for name in column_names(type(instance))}


def schema_record(schema: Schema) -> dict[str, Any]:
    attributes = [plain_values(attribute) for attribute in AttributeDefinition.objects.filter(schema=schema)
                  .order_by("position", "code")]
    subcategories = [{"attribute": sub.attribute.code, **plain_values(sub)} for sub in SpanSubcategory.objects
                     .filter(schema=schema).select_related("attribute")
                     .order_by("attribute__position", "position", "slug")]
    return {**plain_values(schema), "attributes": attributes, "subcategories": subcategories}



def read_records(lines: Iterable[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) for each line; an error names the line."""
    number = 0
    try:
        for number, line in enumerate(lines, start=1):
            try:
                record = json.loads(line)
            except ValueError as error:
                raise ArchiveError(f"line {number}: not a JSON record ({error})") from error
            except RecursionError as error:  # json.loads of, say, 100,000 "[": not a ValueError
                raise ArchiveError(f"line {number}: not a JSON record (nested too deeply)") from error
            if not isinstance(record, dict) or not isinstance(record.get("type"), str):
                raise ArchiveError(f"line {number}: not an archive record (an object with a 'type')")
            yield number, record
    except (EOFError, OSError, UnicodeDecodeError) as error:
        # gzip raises EOFError on a cut file and OSError (BadGzipFile) on a damaged one.
        raise ArchiveError(f"after line {number}: the file cannot be read ({error}); is it truncated?") from error



class Checksum:
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
