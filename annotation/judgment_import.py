"""Import judgments in the SPEC §6 long format (CSV or JSON Lines), all or nothing.

Rows are checked by hand-written code rather than a DRF serializer: a paper-scale file has ~700,000 rows, and a
serializer per row costs minutes where these plain checks cost seconds. The messages follow the same
"line N: field: why" form as every other importer.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from annotation import roles, services
from annotation.models import AttributeDefinition, Judgment, Round, Schema, Span, Study, StudyMember
from benchmark.models import ModelResponse, Turn
from cab.errors import RowError, RowErrors

COLUMNS = ("study", "round", "reviewer", "is_gold", "dataset", "conversation_id", "turn_index", "model",
           "attribute", "score", "instance_count", "spans")
_ROUND = re.compile(r"^(?:calibration-([1-9][0-9]*)|main)$")
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


def read_rows(stream: IO[str], *, fmt: str) -> Iterator[tuple[int, Any]]:
    """(line number, row) pairs from a CSV (header required) or JSON Lines stream."""
    if fmt == "jsonl":
        for number, line in enumerate(stream, start=1):
            if line.strip():
                try:
                    yield number, json.loads(line)
                except json.JSONDecodeError as error:
                    yield number, RowError(number, "line", f"not valid JSON ({error.msg} at column {error.colno})")
        return
    reader = csv.DictReader(stream)
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        yield 1, RowError(1, "header", f"missing column(s) {', '.join(missing)}; expected {', '.join(COLUMNS)}")
        return
    from annotation.exports import unneutralise  # our CSV exports quote formula-like cells; undo exactly that

    for row in reader:
        yield reader.line_num, {key: unneutralise(value) if isinstance(value, str) else value
                                for key, value in row.items()}


def _int(value: Any, *, allow_empty: bool) -> int | None | str:
    """An integer, None for an allowed empty value, or an error message."""
    if value is None or value == "":
        return None if allow_empty else "required"
    if isinstance(value, bool):
        return "must be a whole number, not true/false"
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value.strip()):
        return int(value)
    return f"must be a whole number, got {value!r}"


@dataclass
class _Row:
    line: int
    round: str
    reviewer: str
    is_gold: bool
    attribute: AttributeDefinition
    conversation_id: int
    turn_id: int
    response_id: int | None
    score: int
    instance_count: int | None
    spans: list[tuple[int, int, int]]  # (start, end, subcategory id)


@transaction.atomic
def judgments_import(  # noqa: C901 - one validation pass over every field, then one write
    *, rows: Iterable[tuple[int, Any]], study_slug: str, by: AbstractBaseUser | None
) -> JudgmentImportSummary:
    study = Study.objects.select_related("schema").filter(slug=study_slug).first()
    schema = study.schema if study else Schema.objects.get(slug="cab-v1")
    attributes = {a.code: a for a in AttributeDefinition.objects.filter(schema=schema)}
    subcategories = {s.slug: s for s in schema.subcategories.all()}
    errors: list[RowError] = []
    parsed: list[tuple[int, dict]] = []
    wanted_conversations: set[tuple[str, str]] = set()

    for line, raw in rows:
        if isinstance(raw, RowError):
            errors.append(raw)
            continue
        if not isinstance(raw, dict):
            errors.append(RowError(line, "row", "must be an object with the long-format columns"))
            continue
        row_errors = []

        def bad(field_name: str, message: str, line: int = line, row_errors: list = row_errors) -> None:
            row_errors.append(RowError(line, field_name, message))

        missing = [c for c in COLUMNS if c not in raw and c not in ("model", "instance_count", "spans")]
        for column in missing:
            bad(column, "required")
        if missing:
            errors += row_errors
            continue
        if str(raw["study"]) != study_slug:
            bad("study", f"row is for study {raw['study']!r}, the import is into {study_slug!r}")
        round_name = str(raw["round"])
        if not _ROUND.match(round_name):
            bad("round", f"{round_name!r} is not calibration-N or main")
        reviewer = str(raw["reviewer"] or "")
        if not _USERNAME.match(reviewer):
            bad("reviewer", "required: letters, digits and @.+-_ only, at most 150 characters")
        is_gold = raw["is_gold"]
        if is_gold is True or (isinstance(is_gold, str) and is_gold in _TRUE):
            is_gold = True
        elif is_gold is False or (isinstance(is_gold, str) and is_gold in _FALSE):
            is_gold = False
        else:
            bad("is_gold", f"must be true or false, got {is_gold!r}")
        for column in ("dataset", "conversation_id"):
            if not str(raw[column] or "").strip():
                bad(column, "required")
        turn_index = _int(raw["turn_index"], allow_empty=False)
        if isinstance(turn_index, str) or (isinstance(turn_index, int) and turn_index < 1):
            bad("turn_index", turn_index if isinstance(turn_index, str) else "must be 1 or more")
        attribute = attributes.get(str(raw["attribute"]))
        if attribute is None:
            bad("attribute", f"{raw['attribute']!r} is not an attribute of schema {schema.slug}")
        model = raw.get("model") or ""
        score = _int(raw["score"], allow_empty=False)
        instance_count = _int(raw.get("instance_count"), allow_empty=True)
        spans_raw = raw.get("spans")
        if isinstance(spans_raw, str):
            try:
                spans_raw = json.loads(spans_raw) if spans_raw.strip() else []
            except json.JSONDecodeError:
                bad("spans", "not a JSON list of {start, end, subcategory}")
                spans_raw = []
        spans_raw = spans_raw or []
        spans: list[tuple[int, int, str]] = []
        if not isinstance(spans_raw, list):
            bad("spans", "must be a list of {start, end, subcategory}")
        else:
            for i, span in enumerate(spans_raw):
                if not (isinstance(span, dict) and isinstance(span.get("start"), int) and
                        isinstance(span.get("end"), int) and isinstance(span.get("subcategory"), str)
                        and not isinstance(span.get("start"), bool) and not isinstance(span.get("end"), bool)):
                    bad(f"spans[{i}]", "needs integer start and end and a subcategory slug")
                else:
                    spans.append((span["start"], span["end"], span["subcategory"]))
        if attribute is not None:
            code = attribute.code
            if isinstance(score, str):
                bad("score", score)
            elif not attribute.scale_min <= score <= attribute.scale_max:
                bad("score", services.score_error(attribute, score))
            if isinstance(instance_count, str):
                bad("instance_count", instance_count)
            elif instance_count is not None and (not attribute.has_instance_count or instance_count < 0):
                bad("instance_count", f"{code} takes no instance count" if not attribute.has_instance_count
                    else "must be 0 or more")
            if attribute.unit == AttributeDefinition.Unit.RESPONSE and not model:
                bad("model", f"{code} is coded once per model response: the model is required")
            elif attribute.unit != AttributeDefinition.Unit.RESPONSE and model:
                bad("model", f"{code} is coded once per {attribute.unit}: leave the model empty")
            for i, (_start, _end, slug) in enumerate(spans):
                sub = subcategories.get(slug)
                if sub is None or sub.attribute_id != attribute.pk:
                    bad(f"spans[{i}]", f"{code}: subcategory {slug!r} is not one of this attribute's")
        if row_errors:
            errors += row_errors
            continue
        wanted_conversations.add((str(raw["dataset"]), str(raw["conversation_id"])))
        parsed.append((line, {"round": round_name, "reviewer": reviewer, "is_gold": is_gold,
                              "dataset": str(raw["dataset"]), "conversation": str(raw["conversation_id"]),
                              "turn": turn_index, "model": model, "attribute": attribute, "score": score,
                              "instance_count": instance_count, "spans": spans}))

    # Resolve units against the database: conversations must already be imported.
    turns = {
        (d, c, i): (turn_id, conv_id)
        for turn_id, conv_id, d, c, i in Turn.objects.filter(
            conversation__external_id__in={c for _, c in wanted_conversations}
        ).values_list("id", "conversation_id", "conversation__dataset__name", "conversation__external_id", "index")
        if (d, c) in wanted_conversations
    }
    responses = {
        (turn_id, model): (response_id, length)
        for response_id, turn_id, model, length in ModelResponse.objects.filter(
            turn_id__in=[t for t, _ in turns.values()]
        ).values_list("id", "turn_id", "model_slot", "text")
        .iterator()
        for length in [len(length)]
    }
    resolved: list[_Row] = []
    seen: dict[tuple, int] = {}
    for line, r in parsed:
        unit = turns.get((r["dataset"], r["conversation"], r["turn"]))
        if unit is None:
            known = any((d, c) == (r["dataset"], r["conversation"]) for d, c, _ in turns)
            errors.append(RowError(line, "turn_index" if known else "conversation_id",
                                   f"turn {r['turn']} of {r['dataset']}/{r['conversation']} is not imported"
                                   if known else f"{r['dataset']}/{r['conversation']} is not imported"))
            continue
        turn_id, conversation_id = unit
        response_id = None
        if r["model"]:
            found = responses.get((turn_id, r["model"]))
            if found is None:
                errors.append(RowError(line, "model", f"turn {r['turn']} of {r['conversation']} has no "
                                                      f"{r['model']!r} response"))
                continue
            response_id, length = found
            for i, (start, end, _slug) in enumerate(r["spans"]):
                if not 0 <= start < end <= length:
                    errors.append(RowError(line, f"spans[{i}]", f"[{start}, {end}) is outside the response text "
                                                                f"(0–{length} characters)"))
        key = (r["round"], None if r["is_gold"] else r["reviewer"], r["is_gold"], r["attribute"].pk, turn_id,
               response_id)
        if key in seen:
            what = "gold judgment" if r["is_gold"] else f"judgment by {r['reviewer']}"
            errors.append(RowError(line, "attribute", f"a second {what} of {r['attribute'].code} on this unit in "
                                                      f"{r['round']} (first on line {seen[key]})"))
            continue
        seen[key] = line
        resolved.append(_Row(line, r["round"], r["reviewer"], r["is_gold"], r["attribute"], conversation_id,
                             turn_id, response_id, r["score"], r["instance_count"],
                             [(s, e, subcategories[slug].pk) for s, e, slug in r["spans"]]))
    if errors:
        raise RowErrors(errors)
    return _write(study=study, study_slug=study_slug, schema=schema, rows=resolved, by=by)


def _write(*, study: Study | None, study_slug: str, schema: Schema, rows: list[_Row],
           by: AbstractBaseUser | None) -> JudgmentImportSummary:
    summary = JudgmentImportSummary()
    if study is None:
        study = services.study_create(slug=study_slug, name=study_slug, schema=schema, model_slots=[], by=by)
        summary.study_created = True
    rounds = {r.name: r for r in study.rounds.all()}
    for name in sorted({row.round for row in rows} - set(rounds)):
        match = _ROUND.match(name)
        kind, number = ("calibration", int(match.group(1))) if match.group(1) else ("main", 1)
        rounds[name] = Round.objects.create(study=study, kind=kind, number=number, status=Round.Status.CLOSED)
        summary.rounds_created.append(name)
    from django.contrib.auth import get_user_model

    User = get_user_model()
    users = {u.username: u for u in User.objects.filter(username__in={row.reviewer for row in rows})}
    for username, is_gold in sorted({(row.reviewer, row.is_gold) for row in rows}):
        if username not in users:
            users[username] = services.user_ensure(username=username, role=roles.EXPERT if is_gold else roles.REVIEWER)
            summary.accounts_created.append(username)
        role = StudyMember.Role.EXPERT if is_gold else StudyMember.Role.REVIEWER
        services.study_member_add(study=study, user=users[username], role=role)

    existing: dict[tuple, tuple] = {}
    for j_id, round_id, coder_id, gold, attr_id, turn_id, response_id, score, count in Judgment.objects.filter(
        round__study=study
    ).values_list("id", "round_id", "coder_id", "is_gold", "attribute_id", "turn_id", "response_id", "score",
                  "instance_count"):
        existing[(round_id, None if gold else coder_id, gold, attr_id, turn_id, response_id)] = (j_id, score, count)
    existing_spans: dict[int, list] = {}
    for j_id, start, end, sub in Span.objects.filter(judgment__round__study=study).values_list(
        "judgment_id", "start", "end", "subcategory_id"
    ):
        existing_spans.setdefault(j_id, []).append((start, end, sub))
    conflicts: list[RowError] = []
    new: list[tuple[Judgment, _Row]] = []
    for row in rows:
        coder = users[row.reviewer]
        key = (rounds[row.round].pk, None if row.is_gold else coder.pk, row.is_gold, row.attribute.pk, row.turn_id,
               row.response_id)
        if key in existing:
            j_id, score, count = existing[key]
            if (score, count, sorted(existing_spans.get(j_id, []))) == (row.score, row.instance_count,
                                                                         sorted(row.spans)):
                summary.judgments_unchanged += 1
            else:
                conflicts.append(RowError(row.line, "score", f"the study already has a different {row.attribute.code} "
                                                             f"judgment for this unit (score {score}); an import never "
                                                             "overwrites a judgment"))
            continue
        new.append((Judgment(round=rounds[row.round], coder=coder, is_gold=row.is_gold, attribute=row.attribute,
                             conversation_id=row.conversation_id, turn_id=row.turn_id, response_id=row.response_id,
                             score=row.score, instance_count=row.instance_count), row))
    if conflicts:
        raise RowErrors(conflicts)
    Judgment.objects.bulk_create([j for j, _ in new], batch_size=5000)
    spans = [Span(judgment_id=j.pk, start=s, end=e, subcategory_id=sub) for j, row in new for s, e, sub in row.spans]
    Span.objects.bulk_create(spans, batch_size=5000)
    if study.status == Study.Status.SETUP:
        Study.objects.filter(pk=study.pk).update(status=Study.Status.OPEN)
    summary.judgments_created = len(new)
    summary.spans_created = len(spans)
    return summary
