"""Import judgments in the long format (docs/reference.md#long-format-of-judgments; CSV or JSON Lines), all or
nothing.

Three passes over the rows, then one write: the columns of each row are read (format errors), the units they name
are resolved against the database in a few set-based queries, and every judgment is checked by the same
``rules.judgment_problems`` as the reviewer's autosave, with the same messages. Plain checks instead of a DRF
serializer per row: a paper-scale file has ~700,000 rows, and a serializer per row costs minutes where these
cost seconds. Messages follow the "line N: field: why" form of every importer.
"""

from __future__ import annotations

import io
import json
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction

from access import roles
from access.services import user_ensure
from annotation import rules, selectors, services, session_labels
from annotation.long_format import (
    COLUMNS,
    DEFAULT_ROLE,
    GOLD_ROLE,
    METHOD_ROLE,
    OPTIONAL_COLUMNS,
    ROLES,
    SESSION_INDEX,
    read_rows,
)
from annotation.models import (
    Assignment,
    AttributeDefinition,
    FormerStudyMember,
    Judgment,
    JudgmentRevision,
    Round,
    Schema,
    Span,
    Study,
    StudyMember,
)
from audit.services import audit_record
from benchmark.models import ModelResponse, Session, Turn
from common.errors import RowError, RowErrors, not_utf8, text_newline
from common.rounds import round_parse

_BATCH = 5000  # judgments written at a time (_write)
_USERNAME = re.compile(r"^[\w.@+-]{1,150}$")
_TRUE = {"true", "True", "TRUE", "1"}
_FALSE = {"false", "False", "FALSE", "0"}


@dataclass
class JudgmentImportSummary:
    study_created: bool = False
    rounds_created: list[str] = field(default_factory=list)
    accounts_created: list[str] = field(default_factory=list)
    judgments_created: int = 0
    judgments_unchanged: int = 0
    spans_created: int = 0
    # Session labels of an export (``annotation.session_labels``), imported in the same transaction.
    session_labels_created: int = 0
    session_labels_updated: int = 0
    session_labels_unchanged: int = 0


@dataclass(slots=True)
class _Row:
    """One row as read; slotted, as a paper-scale file holds about 700,000 of them (a ``__dict__`` each was about
    a kilobyte)."""

    line: int
    round: str
    reviewer: str
    is_gold: bool
    dataset: str
    conversation: str
    turn_index: int | None  # None only for a session- or conversation-level attribute
    model: str
    attribute: AttributeDefinition
    score: int
    instance_count: int | None
    spans: Sequence[tuple[Any, Any, Any]]  # (start, end, subcategory slug) as given
    quotes: Sequence[str | None]  # the passage each span says it marks (its "text"), None where it says none
    role: str | None = None  # as given; None when the file leaves it out
    session_index: int | None = None  # longitudinal studies; None when the file leaves it out
    conversation_id: int = 0
    turn_id: int | None = 0
    response_id: int | None = None
    session_id: int | None = None


def _whole(value: Any, *, allow_empty: bool) -> int | None | str:
    """A whole number, None for an allowed empty value, or an error message. Any magnitude: the ranges are the
    judgment rules' (annotation.rules), worded the same on every path."""
    if value is None or value == "":
        return None if allow_empty else "required"
    if isinstance(value, bool):
        return "must be a whole number, not true/false"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]{1,40}", value.strip()):
        value = int(value)
    if isinstance(value, int):
        return value
    return f"must be a whole number, got {value!r}"[:200]


def _boolean(value: Any) -> bool | None:
    if value is True or (isinstance(value, str) and value in _TRUE):
        return True
    if value is False or (isinstance(value, str) and value in _FALSE):
        return False
    return None


def _spans(value: Any) -> tuple[Sequence[tuple[Any, Any, Any]], Sequence[str | None], list[tuple[str, str]]]:
    """Spans as (start, end, slug), the passage each says it marks (its optional ``text``, checked against the
    response text by ``rules.span_problem``) and the (field, message) problems of their shape."""
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except (ValueError, RecursionError):  # ValueError: JSONDecodeError, or a number of more than 4,300 digits
            return (), (), [("spans", "not a JSON list of {start, end, subcategory}")]
    if not value:
        return (), (), []  # most rows: shared empty tuples rather than two new lists each
    if not isinstance(value, list):
        return (), (), [("spans", "must be a list of {start, end, subcategory}")]
    spans, quotes, problems = [], [], []
    for i, span in enumerate(value):
        if not (isinstance(span, dict) and isinstance(span.get("subcategory"), str)):
            problems.append((f"spans[{i}]", "needs integer start and end and a subcategory slug"))
        elif not isinstance(span.get("text", ""), str):
            problems.append((f"spans[{i}]", "text, when given, is the passage the span marks: a string"))
        else:
            spans.append((span.get("start"), span.get("end"), span["subcategory"]))
            quotes.append(span.get("text"))
    return spans, quotes, problems


def _read_coder(raw: dict, study_slug: str) -> tuple[str, bool | None, list[tuple[str, str]]]:
    """The study, round, reviewer and is_gold columns: (reviewer, is_gold, their (field, message) problems)."""
    problems: list[tuple[str, str]] = []
    if str(raw["study"]) != study_slug:
        problems.append(("study", f"row is for study {str(raw['study'])[:100]!r}, the import is into {study_slug!r}"))
    if round_parse(str(raw["round"])) is None:
        problems.append(("round", f"{str(raw['round'])[:100]!r} is not calibration-N or main"))
    reviewer = str(raw["reviewer"] or "")
    if not _USERNAME.match(reviewer):
        problems.append(("reviewer", "required: letters, digits and @.+-_ only, at most 150 characters"))
    is_gold = _boolean(raw["is_gold"])
    if is_gold is None:
        problems.append(("is_gold", f"must be true or false, got {str(raw['is_gold'])[:50]!r}"))
    return reviewer, is_gold, problems


def _role(value: Any, *, is_gold: bool | None) -> tuple[str | None, list[tuple[str, str]]]:
    """The optional role column: (role or None when left out, its (field, message) problems)."""
    if value is None or value == "":
        return None, []
    if value == METHOD_ROLE and not is_gold:
        return METHOD_ROLE, []  # checked against the study's registered methods in _member_roles
    if value not in ROLES:
        return None, [("role", f"must be {' or '.join(ROLES)}, got {str(value)[:50]!r}")]
    if is_gold and value != GOLD_ROLE:
        return None, [("role", f"a gold row is the expert panel's consensus: role must be {GOLD_ROLE} or empty")]
    return str(value), []


def _shared(value: str) -> str:
    """One string object for each value of a column that repeats on row after row (a round, a coder, a dataset, a
    conversation, a model): a paper-scale file names each of them thousands of times."""
    return sys.intern(value)


def _read(line: int, raw: Any, *, study_slug: str, attributes: dict[str, AttributeDefinition],
          schema: Schema) -> _Row | list[RowError]:
    """The columns of one row, checked for their format only."""
    if not isinstance(raw, dict):
        return [RowError(line, "row", "must be an object with the long-format columns")]
    missing = [c for c in COLUMNS if c not in raw and c not in OPTIONAL_COLUMNS]
    if missing:
        return [RowError(line, column, "required") for column in missing]
    reviewer, is_gold, problems = _read_coder(raw, study_slug)
    role, role_problems = _role(raw.get("role"), is_gold=is_gold)
    problems += role_problems
    for column in ("dataset", "conversation_id"):
        if not str(raw[column] or "").strip():
            problems.append((column, "required"))
    attribute = attributes.get(str(raw["attribute"]))
    per_session = attribute is not None and attribute.unit == AttributeDefinition.Unit.SESSION
    per_conversation = attribute is not None and attribute.unit == AttributeDefinition.Unit.CONVERSATION
    # A session's code names its session, not a turn, and a conversation's code its conversation: their turn_index
    # may be left empty (an export leaves a conversation's empty).
    turn_index = _whole(raw["turn_index"], allow_empty=per_session or per_conversation)
    if isinstance(turn_index, str) or (isinstance(turn_index, int) and turn_index < 1):
        problems.append(("turn_index", turn_index if isinstance(turn_index, str) else "must be 1 or more"))
    session_index = _whole(raw.get(SESSION_INDEX), allow_empty=not per_session)
    if isinstance(session_index, str) or (isinstance(session_index, int) and session_index < 1):
        problems.append((SESSION_INDEX, session_index if isinstance(session_index, str) else "must be 1 or more"))
    if attribute is None:
        problems.append(("attribute", f"{str(raw['attribute'])[:50]!r} is not an attribute of schema {schema.slug}"))
    # A nominal code may be given by its value label ("Open"), as an LLM judge writes it.
    given_score = rules.nominal_score(attribute, raw["score"]) if attribute is not None else raw["score"]
    score = _whole(given_score, allow_empty=False)
    if isinstance(score, str):
        nominal = attribute is not None and rules.is_nominal(attribute) and bool(attribute.scale_labels)
        problems.append(("score", (rules.score_problem(attribute, given_score, required=True) or score)
                         if nominal and given_score not in (None, "") and attribute is not None else score))
    instance_count = _whole(raw.get("instance_count"), allow_empty=True)
    if isinstance(instance_count, str):
        problems.append(("instance_count", instance_count))
    spans, quotes, span_problems = _spans(raw.get("spans"))
    problems += span_problems
    if problems:
        return [RowError(line, name, message) for name, message in problems]
    assert attribute is not None and isinstance(score, int) and not isinstance(turn_index, str)
    return _Row(line=line, round=_shared(str(raw["round"])), reviewer=_shared(reviewer), is_gold=bool(is_gold),
                dataset=_shared(str(raw["dataset"])), conversation=_shared(str(raw["conversation_id"])),
                turn_index=turn_index, model=_shared(str(raw.get("model") or "")), attribute=attribute, score=score,
                instance_count=instance_count if isinstance(instance_count, int) else None, spans=spans,
                quotes=quotes,
                role=role, session_index=session_index if isinstance(session_index, int) else None)


@dataclass
class _Texts:
    """What the rules need of the response texts the rows name, read as each text goes by so that memory does not
    grow with the file: every text's length, the texts whose spans a row quotes, and the span offsets that fall
    inside a character of their text (``rules.grapheme_cuts``; only responses with such an offset have an entry)."""

    lengths: dict[int, int] = field(default_factory=dict)
    quoted: dict[int, str] = field(default_factory=dict)
    cuts: dict[int, dict[int, str]] = field(default_factory=dict)


def _response_texts(rows: list[_Row], turns: dict[tuple[str, str, int], tuple[int, int]]
                    ) -> tuple[dict[tuple[int, str], int], _Texts]:
    """The responses of the rows' turns, (turn id, model) -> response id, and what the rules need of their texts."""
    quoting: set[tuple[int, str]] = set()
    offsets: dict[tuple[int, str], set[int]] = {}
    for r in rows:
        if r.spans and (key := (r.dataset, r.conversation, r.turn_index)) in turns:
            offsets.setdefault((turns[key][0], r.model), set()).update(
                offset for span in r.spans for offset in span[:2] if isinstance(offset, int))
            if any(q is not None for q in r.quotes):
                quoting.add((turns[key][0], r.model))
    responses: dict[tuple[int, str], int] = {}
    texts = _Texts()
    for response_id, turn_id, model, text in ModelResponse.objects.filter(
        turn_id__in=[t for t, _ in turns.values()]
    ).values_list("id", "turn_id", "model_slot", "text").iterator():
        responses[(turn_id, model)] = response_id
        texts.lengths[response_id] = len(text)
        if (turn_id, model) in quoting:
            texts.quoted[response_id] = text
        if (turn_id, model) in offsets and (inside := rules.grapheme_cuts(text, offsets[(turn_id, model)])):
            texts.cuts[response_id] = inside
    return responses, texts


def _resolve(rows: list[_Row]) -> tuple[list[_Row], list[RowError], _Texts]:
    """Find each row's turn and response; returns the resolved rows, the errors and what the rules need of the
    response texts."""
    wanted = {(r.dataset, r.conversation) for r in rows}
    turns = {
        (d, c, i): (turn_id, conversation_id)
        for turn_id, conversation_id, d, c, i in Turn.objects.filter(
            conversation__external_id__in={c for _, c in wanted}
        ).values_list("id", "conversation_id", "conversation__dataset__name", "conversation__external_id", "index")
        if (d, c) in wanted
    }
    responses, texts = _response_texts(rows, turns)
    known = {(d, c) for d, c, _ in turns}
    conversations = {(d, c): conversation_id for (d, c, _), (_, conversation_id) in turns.items()}
    sessions, session_of_turn = _sessions(rows, wanted)
    resolved, errors = [], []
    for r in rows:
        if r.attribute.unit == AttributeDefinition.Unit.CONVERSATION and r.turn_index is None \
                and r.session_index is None:  # a conversation's code: the conversation is its unit
            r.conversation_id, r.turn_id = conversations.get((r.dataset, r.conversation), 0), None
            if not r.conversation_id:
                errors.append(RowError(r.line, "conversation_id", f"{r.dataset}/{r.conversation} is not imported"))
            else:
                resolved.append(r)
            continue
        if r.session_index is not None or r.turn_index is None:
            problem = _session_resolve(r, turns, sessions, session_of_turn)
            if problem is not None:
                errors.append(problem)
                continue
            if r.turn_index is None or r.attribute.unit == AttributeDefinition.Unit.SESSION:
                resolved.append(r)  # a session's code: its turn_index, if any, only located it
                continue
        unit = turns.get((r.dataset, r.conversation, r.turn_index))
        if unit is None:
            errors.append(RowError(r.line, "turn_index", f"turn {r.turn_index} of {r.dataset}/{r.conversation} is "
                                                         "not imported") if (r.dataset, r.conversation) in known
                          else RowError(r.line, "conversation_id", f"{r.dataset}/{r.conversation} is not imported"))
            continue
        r.turn_id, r.conversation_id = unit
        if r.model:
            r.response_id = responses.get((r.turn_id, r.model))
            if r.response_id is None:
                errors.append(RowError(r.line, "model", f"turn {r.turn_index} of {r.conversation} has no "
                                                        f"{r.model!r} response"))
                continue
        resolved.append(r)
    return resolved, errors, texts


def _sessions(rows: list[_Row], wanted: set[tuple[str, str]]) -> tuple[dict[tuple[str, str, int], tuple[int, int]],
                                                                        dict[int, int]]:
    """The sessions of the conversations the rows name, (dataset, conversation, session index) -> (session id,
    conversation id), and each of their turns' session index (turn id -> index); no query when no row names a
    session."""
    if not any(r.session_index is not None or r.turn_index is None for r in rows):
        return {}, {}
    sessions: dict[tuple[str, str, int], tuple[int, int]] = {}
    index_of: dict[int, int] = {}
    for session_id, conversation_id, d, c, index in Session.objects.filter(
        conversation__external_id__in={c for _, c in wanted}
    ).values_list("id", "conversation_id", "conversation__dataset__name", "conversation__external_id", "index"):
        if (d, c) in wanted:
            sessions[(d, c, index)] = (session_id, conversation_id)
            index_of[session_id] = index
    session_of_turn = {turn_id: index_of[session_id] for turn_id, session_id in Turn.objects.filter(
        session_id__in=list(index_of)).values_list("id", "session_id")}
    return sessions, session_of_turn


def _session_resolve(r: _Row, turns: dict[tuple[str, str, int], tuple[int, int]],
                     sessions: dict[tuple[str, str, int], tuple[int, int]],
                     session_of_turn: dict[int, int]) -> RowError | None:
    """Check a row's session_index against the history (and against its turn's session); a session's code gets its
    session. None when the row is consistent."""
    where = f"{r.dataset}/{r.conversation}"
    if r.session_index is None:
        return None  # a session-level attribute without session_index: _read has reported it
    found = sessions.get((r.dataset, r.conversation, r.session_index))
    if found is None:
        return RowError(r.line, SESSION_INDEX, f"{where} has no session {r.session_index}")
    if r.turn_index is not None:
        unit = turns.get((r.dataset, r.conversation, r.turn_index))
        if unit is None:
            return RowError(r.line, "turn_index", f"turn {r.turn_index} of {where} is not imported")
        if session_of_turn.get(unit[0]) != r.session_index:
            return RowError(r.line, SESSION_INDEX, f"turn {r.turn_index} of {where} is in session "
                                                   f"{session_of_turn.get(unit[0])}, not {r.session_index}")
    if r.attribute.unit == AttributeDefinition.Unit.SESSION:
        r.session_id, r.conversation_id = found
        r.turn_id = None
    return None


def _check(rows: list[_Row], texts: _Texts, subcategories: dict[int, set[str]], *,
           model_slots: list[str]) -> list[RowError]:
    """The judgment rules (shared with the autosave) and one judgment per unit within the file; a response of a
    model the study does not code (``model_slots``) is refused as the autosave and gold refuse it."""
    errors: list[RowError] = []
    seen: dict[tuple, int] = {}
    for r in rows:
        if r.response_id is not None and (problem := rules.model_problem(model_slots, r.model)):
            errors.append(RowError(r.line, "model", problem))
            continue
        problems = rules.judgment_problems(
            attribute=r.attribute, score=r.score, score_required=True, has_turn=r.turn_id is not None,
            has_response=r.response_id is not None, has_session=r.session_id is not None,
            instance_count=r.instance_count, spans=r.spans,
            subcategories=subcategories.get(r.attribute.pk, set()),
            text_length=texts.lengths.get(r.response_id) if r.response_id is not None else None,
            quotes=r.quotes, text=texts.quoted.get(r.response_id) if r.response_id is not None else None,
            cuts=texts.cuts.get(r.response_id, {}) if r.response_id is not None else None,
        )
        # The long format names a response by its model column.
        errors += [RowError(r.line, _unit_column(r) if name == "unit" else name, message)
                   for name, message in problems.items()]
        key = (r.round, None if r.is_gold else r.reviewer, r.is_gold, r.attribute.pk, r.conversation_id, r.turn_id,
               r.response_id, r.session_id)
        if key in seen:
            what = "gold judgment" if r.is_gold else f"judgment by {r.reviewer}"
            errors.append(RowError(r.line, "attribute", f"a second {what} of {r.attribute.code} on this unit in "
                                                        f"{r.round} (first on line {seen[key]})"))
        seen.setdefault(key, r.line)
    return errors


def _unit_column(r: _Row) -> str:
    """The column that names a row's unit: the model (a response), or session_index (a session)."""
    if r.attribute.unit == AttributeDefinition.Unit.SESSION or r.session_id is not None:
        return SESSION_INDEX
    return "model"


class StudyMissing(LookupError):
    """The import names a study that does not exist, and was not asked to create it (``create_study``): nothing read
    or written. ``manage.py import_judgments`` says it as every command does (``common.commands.study_missing``)."""

    def __init__(self, slug: str):
        super().__init__(slug)
        self.slug = slug


def judgments_file_import(*, file: IO[bytes], fmt: str, study_slug: str, by: User | None,
                          create_study: bool = False) -> JudgmentImportSummary:
    """Import a long-format file of format ``fmt`` ("csv" or "jsonl"), a binary file read from its start, all or
    nothing: what ``manage.py import_judgments`` and the import API both call, so that a file is read alike by
    either (UTF-8 with or without a byte order mark, its lines as ``text_newline`` says). The file is read a line at a
    time, never whole; a file that is not UTF-8 is refused by the first line that is not (its RowError).
    ``create_study``: as ``judgments_import``."""
    text = io.TextIOWrapper(file, encoding="utf-8-sig", newline=text_newline(fmt))
    try:
        return judgments_import(rows=read_rows(text, fmt=fmt), study_slug=study_slug, by=by, typed=fmt == "jsonl",
                                create_study=create_study)
    except UnicodeDecodeError as error:
        file.seek(0)
        raise RowErrors([not_utf8(file)]) from error
    finally:
        text.detach()  # the file stays the caller's to close


@transaction.atomic
def judgments_import(
    *, rows: Iterable[tuple[int, Any]], study_slug: str, by: User | None, typed: bool | None = None,
    create_study: bool = False,
) -> JudgmentImportSummary:
    """Import the (line, row) pairs of a long-format file, all or nothing.

    Into the study ``study_slug``; a study of that slug that does not exist is ``StudyMissing``, nothing read, unless
    ``create_study`` says to create it (schema ``cab-v1``, with the rounds and accounts the file names): a slug
    mistyped never files a study's judgments into a new, empty one.

    The session labels of an export (rows without a round whose role is method or reference,
    ``session_labels.is_session_label_row``) go to ``session_labels.session_labels_import`` in the same
    transaction: an error in a judgment or in a label writes nothing, and every error of both is reported by its
    line. ``typed``: the file is JSON (a label's number must be a JSON number) or CSV (text cells); None reads it
    from the label rows (CSV rows hold text only)."""
    study = _study_locked(study_slug, create_study=create_study)
    if study is None:
        _new_study_check(study_slug)
    elif study.status == Study.Status.ARCHIVED:
        raise RowErrors([RowError(1, "study", f"study {study_slug!r} is archived: {services.ARCHIVED_JUDGMENTS}")])
    schema = study.schema if study else Schema.objects.get(slug="cab-v1")
    attributes = {a.code: a for a in AttributeDefinition.objects.filter(schema=schema)}
    subcategories: dict[int, set[str]] = {}
    for attribute_id, slug in schema.subcategories.values_list("attribute_id", "slug"):
        subcategories.setdefault(attribute_id, set()).add(slug)
    errors: list[RowError] = []
    parsed: list[_Row] = []
    labels: list[tuple[int, Any]] = []
    for line, raw in rows:
        if session_labels.is_session_label_row(raw):
            labels.append((line, raw))
            continue
        read = raw if isinstance(raw, RowError) else _read(line, raw, study_slug=study_slug, attributes=attributes,
                                                           schema=schema)
        if isinstance(read, _Row):
            parsed.append(read)
        else:
            errors += [read] if isinstance(read, RowError) else read
    resolved, unresolved, texts = _resolve(parsed)
    if study is not None:  # a conversation the study's kind cannot place would become the study's by its judgment
        unplaceable = selectors.conversations_unplaceable(study=study,
                                                          conversations={r.conversation_id for r in resolved})
        errors += [RowError(r.line, "conversation_id", unplaceable[r.conversation_id])
                   for r in resolved if r.conversation_id in unplaceable]
        resolved = [r for r in resolved if r.conversation_id not in unplaceable]
    errors += unresolved + _check(resolved, texts, subcategories, model_slots=study.model_slots if study else [])
    member_roles, taken_off, role_errors = _member_roles(parsed, study)
    errors += role_errors
    label_summary, label_errors = _session_labels(study=study, study_slug=study_slug, labels=labels, by=by,
                                                  typed=typed)
    errors += label_errors
    if errors:
        raise RowErrors(errors)
    if parsed or not labels:
        summary = _write(study=study, study_slug=study_slug, schema=schema, rows=resolved, member_roles=member_roles,
                         taken_off=taken_off, by=by)
    else:
        summary = JudgmentImportSummary()  # the file holds session labels only
    if label_summary is not None:
        summary.session_labels_created = label_summary.created
        summary.session_labels_updated = label_summary.updated
        summary.session_labels_unchanged = label_summary.unchanged
    return summary


def _study_locked(study_slug: str, *, create_study: bool) -> Study | None:
    """The study, locked as the archiving locks it: a study archived meanwhile is refused, never written into after.
    ``StudyMissing`` when there is none and the import may not create it (``create_study``); None when it is to
    create it: then the creation of its slug is locked (``services.study_slug_lock``), so the same file sent twice at
    once creates it once, the second finding the first's study and rows as a resend after it does (its rows counted
    unchanged). FOR NO KEY UPDATE, as ``services.study_locked``: a row naming the study (a reviewer's check-item
    alert raised meanwhile) is not held up, where the import then waits for that reviewer's lock to update their
    alert."""
    studies = Study.objects.select_related("schema").select_for_update(of=("self",), no_key=True).filter(
        slug=study_slug)
    study = studies.first()
    if study is None and not create_study:
        raise StudyMissing(study_slug)
    if study is None:
        services.study_slug_lock(study_slug)
        study = studies.first()
    return study


def _new_study_check(study_slug: str) -> None:
    """A study the import would create: its slug must be one a study can have (``services.study_slug_check``), else
    a row error on the study column, before anything is read or written."""
    try:
        services.study_slug_check(slug=study_slug)
    except ValidationError as error:
        raise RowErrors([RowError(1, "study", f"no study {study_slug[:100]!r}, and the import cannot create it: "
                                              f"{message}") for message in error.messages]) from error


def _session_labels(*, study: Study | None, study_slug: str, labels: list[tuple[int, Any]], by: User | None,
                    typed: bool | None) -> tuple[session_labels.SessionLabelImportSummary | None, list[RowError]]:
    """Import the file's session labels (written, when right, inside the caller's transaction, which rolls them
    back if any judgment is wrong); their summary, or their errors by the file's lines."""
    if not labels:
        return None, []
    if study is None:
        return None, [RowError(labels[0][0], "reviewer", f"study {study_slug!r} does not exist: session labels (role "
                                                         "method or reference, no round) need the study and its "
                                                         "registered method and reference coders; create the study "
                                                         f"and register them (POST /api/v1/studies/{study_slug}/"
                                                         "methods/) first")]
    if typed is None:  # a CSV row holds text only; a JSON row has typed values
        typed = any(not isinstance(value, str | None) for _, raw in labels for key, value in raw.items()
                    if key is not None)
    try:
        # A savepoint of its own: a refused import leaves the caller's transaction usable.
        with transaction.atomic():
            summary = session_labels.session_labels_import(study=study, rows=labels, by=by, numbered=True,
                                                           typed=typed)
    except RowErrors as error:
        return None, list(error.errors)
    return summary, []


def _member_roles(rows: list[_Row], study: Study | None) -> tuple[dict[str, str], set[str], list[RowError]]:
    """Each coder's membership role, from the role column; the coders taken off the study; the rows that
    contradict a role.

    A coder's own rows say their role (all of them the same one; left out = reviewer); a coder with gold rows
    only recorded the panel's consensus: an expert's account, never made a member (``_accounts``). A member of the
    study keeps their role: a row that names another one is refused rather than silently moving someone between the
    panel and the reviewers. So does a coder taken off the study, who keeps the role they had
    (``FormerStudyMember``, as the exports and reports do) and stays off it: their judgments come in, their access
    does not come back.
    """
    members = dict(StudyMember.objects.filter(study=study).values_list("user__username", "role")) if study else {}
    former = dict(FormerStudyMember.objects.filter(study=study).exclude(user__username__in=members)
                  .values_list("user__username", "role")) if study else {}
    given: dict[str, tuple[str, int]] = {}  # username -> (role, first line that gives it)
    errors: list[RowError] = []
    for r in rows:
        if r.is_gold or r.role is None:
            continue
        role, line = given.setdefault(r.reviewer, (r.role, r.line))
        if role != r.role:
            errors.append(RowError(r.line, "role", f"{r.reviewer} is {role} on line {line}: a coder has one role "
                                                   "in a study"))
    had = {**former, **members}
    for username, (role, line) in given.items():
        if role == METHOD_ROLE and had.get(username) != METHOD_ROLE:
            errors.append(RowError(line, "role", f"must be {' or '.join(ROLES)}: {METHOD_ROLE} is only for a method "
                                                 f"registered in the study, with its version and prompt id, and "
                                                 f"{username} is not one"))
        elif username in members and members[username] != role:
            errors.append(RowError(line, "role", f"{username} is a member of the study as {members[username]}; an "
                                                 "import never changes a member's role"))
        elif username in former and former[username] != role:
            errors.append(RowError(line, "role", f"{username} was taken off the study as {former[username]}; an "
                                                 "import never changes the role a coder had"))
    coding = {r.reviewer for r in rows if not r.is_gold}
    roles_of = {}
    for username in {r.reviewer for r in rows}:
        if username in had:
            roles_of[username] = had[username]
        elif username in given:
            roles_of[username] = given[username][0]
        else:
            roles_of[username] = DEFAULT_ROLE if username in coding else GOLD_ROLE
    joining = {username for username in coding if username not in had and roles_of[username] != METHOD_ROLE}
    return roles_of, set(former) & set(roles_of), errors + _members_refused(rows, joining, roles_of)


def _members_refused(rows: list[_Row], joining: set[str], roles_of: dict[str, str]) -> list[RowError]:
    """The coders the import would make members (``joining``) whose accounts cannot code in the study
    (``services.member_refusal``: one that sees every study would not code blind), each by their first row."""
    first_lines: dict[str, int] = {}
    for r in rows:
        if not r.is_gold:
            first_lines.setdefault(r.reviewer, r.line)
    return [RowError(first_lines[user.get_username()], "reviewer", refusal)
            for user in get_user_model().objects.filter(username__in=joining).order_by("username")
            if (refusal := services.member_refusal(user=user, role=roles_of[user.get_username()]))]


def _accounts(*, study: Study, roles_of: dict[str, str], coding: set[str], taken_off: set[str],
              summary: JudgmentImportSummary, by: User | None) -> dict[str, User]:
    """The coders the import writes judgments of (``roles_of``) as accounts, and those of them it writes codings of
    their own of (``coding``) as members: a new account gets its role, a new member that role too. A coder of gold
    rows only recorded the panel's consensus, which is no coding of theirs: they get an account (an expert's) when
    they have none, and are not made a member, so a study's export imported into it emptied does not put whoever
    recorded its gold (an admin) on its panel. A coder taken off the study (``taken_off``) is not made a member
    again."""
    users = {u.get_username(): u for u in get_user_model().objects.filter(username__in=set(roles_of))}
    for username, role in sorted(roles_of.items()):
        # a method registered in the study, or a coder taken off it (_member_roles): their account exists
        if role == METHOD_ROLE or username in taken_off:
            continue
        if username not in users:
            account_role = roles.EXPERT if role == StudyMember.Role.EXPERT else roles.REVIEWER
            users[username] = user_ensure(username=username, role=account_role)
            summary.accounts_created.append(username)
        if username in coding:
            services.study_member_add(study=study, user=users[username], role=role, by=by)
    return users


def _write(*, study: Study | None, study_slug: str, schema: Schema, rows: list[_Row],
           member_roles: dict[str, str], taken_off: set[str], by: User | None) -> JudgmentImportSummary:
    summary = JudgmentImportSummary()
    if study is None:
        study = services.study_create(slug=study_slug, name=study_slug, schema=schema, model_slots=[], by=by)
        summary.study_created = True
    rounds = {r.name: r for r in study.rounds.all()}
    for name in sorted({row.round for row in rows} - set(rounds)):
        kind, number = round_parse(name) or ("main", 1)
        rounds[name] = Round.objects.create(study=study, kind=kind, number=number, status=Round.Status.CLOSED)
        summary.rounds_created.append(name)
    # A save holds a shared lock on its round while it writes (services.judgment_save). Locked here, a save under
    # way lands before the study's judgments are read, so a differing one is a row error (an import never
    # overwrites), and none lands between that read and the insert, where it would meet the unique index (a 500,
    # nothing written). Saves into these rounds wait for the import; rounds it does not name go on.
    list(Round.objects.select_for_update().filter(pk__in={rounds[row.round].pk for row in rows}).values_list("pk"))
    # The accounts the file names that exist; a coder without one has no judgment here yet (gold rows excepted, which
    # are the panel's whoever recorded them), so each of their rows is new.
    users = {u.get_username(): u for u in get_user_model().objects.filter(username__in=set(member_roles))}
    slugs = {s.slug: s.pk for s in schema.subcategories.all()}
    existing: dict[tuple, tuple] = {}
    for j_id, round_id, coder_id, gold, attr_id, conversation_id, turn_id, response_id, session_id, score, count \
            in Judgment.objects.filter(round__study=study).values_list(
                "id", "round_id", "coder_id", "is_gold", "attribute_id", "conversation_id", "turn_id", "response_id",
                "session_id", "score", "instance_count"):
        existing[(round_id, None if gold else coder_id, gold, attr_id, conversation_id, turn_id, response_id,
                  session_id)] = (j_id, score, count)
    existing_spans: dict[int, list] = {}
    for j_id, start, end, sub in Span.objects.filter(judgment__round__study=study).values_list(
        "judgment_id", "start", "end", "subcategory_id"
    ):
        existing_spans.setdefault(j_id, []).append((start, end, sub))
    conflicts: list[RowError] = []
    new: list[_Row] = []
    for row in rows:
        coder = users.get(row.reviewer)
        spans = sorted((s, e, slugs[slug]) for s, e, slug in row.spans)
        key = (rounds[row.round].pk, None if row.is_gold or coder is None else coder.pk, row.is_gold, row.attribute.pk,
               row.conversation_id, row.turn_id, row.response_id, row.session_id)
        if key in existing:
            j_id, score, count = existing[key]
            if (score, count, sorted(existing_spans.get(j_id, []))) == (row.score, row.instance_count, spans):
                summary.judgments_unchanged += 1
            else:
                conflicts.append(RowError(row.line, "score", f"the study already has a different {row.attribute.code} "
                                                             f"judgment for this unit (score {score}); an import never "
                                                             "overwrites a judgment"))
            continue
        new.append(row)
    if conflicts:
        raise RowErrors(conflicts)
    # Accounts only for the coders the import writes a judgment of, and members only for those it writes a coding of
    # their own of: the study's own export imported again adds nobody, and into the study emptied it adds no gold
    # row's coder (whoever recorded the consensus, on the page an admin, no member).
    writers = {row.reviewer for row in new}
    users = _accounts(study=study, roles_of={u: r for u, r in member_roles.items() if u in writers},
                      coding={row.reviewer for row in new if not row.is_gold}, taken_off=taken_off,
                      summary=summary, by=by)
    # Written a batch at a time, all in the caller's transaction: the model instances of one batch at most are
    # alive at once (a paper-scale file's 700,000 of them took about a gigabyte).
    for start in range(0, len(new), _BATCH):
        batch = [(Judgment(round=rounds[row.round], coder=users[row.reviewer], is_gold=row.is_gold,
                           attribute=row.attribute, conversation_id=row.conversation_id, turn_id=row.turn_id,
                           response_id=row.response_id, session_id=row.session_id, score=row.score,
                           instance_count=row.instance_count), row) for row in new[start:start + _BATCH]]
        Judgment.objects.bulk_create([j for j, _ in batch])
        spans_written = Span.objects.bulk_create(
            [Span(judgment_id=j.pk, start=s, end=e, subcategory_id=slugs[slug])
             for j, row in batch for s, e, slug in row.spans])
        summary.spans_created += len(spans_written)
        # Each judgment's history starts with the import (an import only ever creates judgments).
        services.revisions_start(created=((j, row.spans) for j, row in batch), by=by,
                                 source=JudgmentRevision.Source.IMPORT)
    services.study_opens(study_id=study.pk)
    if any(row.is_gold for row in new):  # what the reviewers' completed check items are compared with
        services.check_alerts_update(assignments=Assignment.objects.filter(round__study=study))
    summary.judgments_created = len(new)
    audit_data = {"created": len(new), "unchanged": summary.judgments_unchanged, "spans": summary.spans_created,
                  "rounds_created": summary.rounds_created, "accounts_created": len(summary.accounts_created)}
    audit_record(by=by, action="judgments.import", study=study, target=f"study:{study.slug}", **audit_data)
    return summary
