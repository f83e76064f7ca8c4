"""Synthetic studies at any size, clearly labelled as such, for demos, load tests and benchmarks.

Every unit gets a synthetic gold score; each reviewer copies gold with their own accuracy (drawn around
``agreement``) and otherwise picks a neighbouring value, so agreement with gold is controllable. Conversations
go through the normal importer; judgments, spans and their history are written through COPY, their rules checked
set-based (``annotation.bulk``). The same seed gives the same study.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, cast

import numpy as np
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.utils import timezone

from access import roles
from access.services import user_ensure
from annotation import bulk, rules, services
from annotation.models import (
    Assignment,
    AttributeDefinition,
    Judgment,
    JudgmentRevision,
    Round,
    Schema,
    Span,
    SpanSubcategory,
    Study,
    StudyMember,
)
from benchmark import conversation_ingest
from benchmark.models import TOPICS, ModelResponse, Turn

WORD = re.compile(r"\S+")
MODEL_NAMES = ["GPT", "Claude", "Gemini", "Llama", "Qwen"]
_CLIENT = [
    "I haven't been sleeping well since the move.",
    "My partner and I keep arguing about money.",
    "I feel like nobody at work takes me seriously.",
    "Some days I can't get out of bed at all.",
    "My mother criticises everything I do.",
    "I'm scared I'll have another panic attack on the train.",
    "I don't know if I should quit my job.",
    "Since the funeral I can't concentrate on anything.",
    "I keep checking my phone to see if they replied.",
    "Is it normal to feel this numb?",
]
_RESPONSE = [
    "That sounds really hard to carry on your own.",
    "What do you notice in yourself when that happens?",
    "You should try a regular sleep schedule.",
    "Many people feel this way after a big change — it’s understandable.",
    "It might help to talk to a licensed therapist.",
    "What would feel like a small, manageable first step for you?",
    "I wonder what you already know about what helps you.",
    "Have you considered writing down your thoughts before bed?",
    "It seems like part of you wants to stay and part wants to leave.",
    "Your feelings make sense given everything you’ve described. Ça compte.",
]


@dataclass
class SyntheticSpec:
    conversations: int
    models: int = 5
    reviewers: int = 7
    experts: int = 2
    seed: int = 0
    responses: int | None = None
    multi_share: float = 0.2
    agreement: float = 0.8
    calibration_rounds: int = 2
    calibration_turns: int = 10
    coders_per_turn: int = 1
    panel_size: int = 6
    span_rate: float = 0.3
    slug: str | None = None


@dataclass
class SyntheticResult:
    study: Study
    conversations: int
    turns: int
    responses: int
    judgments: int
    spans: int
    reviewer_accuracy: dict[str, float] = field(default_factory=dict)


def _turn_counts(spec: SyntheticSpec, rng: np.random.Generator) -> list[int]:
    n = spec.conversations
    n_multi = round(n * spec.multi_share) if n > 1 else 0
    n_single = n - n_multi
    if spec.responses is None:
        multi = list(rng.integers(2, 13, size=n_multi))
    else:
        total_turns = math.ceil(spec.responses / spec.models)
        spare = total_turns - n_single - 2 * n_multi
        if spare < 0 or (n_multi == 0 and spare > 0):
            raise ValueError(
                f"{spec.responses} responses cannot be spread over {n_single} single-turn and {n_multi} multi-turn "
                f"conversations with {spec.models} models"
            )
        multi = list(2 + rng.multinomial(spare, np.full(n_multi, 1 / n_multi))) if n_multi else []
    return [1] * n_single + [int(t) for t in multi]


def _records(spec: SyntheticSpec, slug: str, rng: np.random.Generator) -> list[dict]:
    models = [MODEL_NAMES[i] if i < len(MODEL_NAMES) else f"Model{i + 1}" for i in range(spec.models)]
    counts = _turn_counts(spec, rng)
    remaining = spec.responses if spec.responses is not None else sum(counts) * spec.models
    records = []
    for number, n_turns in enumerate(counts, start=1):
        kind = "single" if n_turns == 1 else "multi"
        turns = []
        for index in range(1, n_turns + 1):
            take = min(spec.models, remaining)
            remaining -= take
            turns.append({
                "index": index,
                "client": " ".join(rng.choice(_CLIENT, size=2, replace=False)),
                "therapist_reference": "",
                "responses": [
                    {"model": model, "model_version": "synthetic-1",
                     "text": f"[synthetic] {' '.join(rng.choice(_RESPONSE, size=3, replace=False))}"}
                    for model in models[:take]
                ],
            })
        records.append({
            "dataset": f"Synthetic {kind}-turn",
            "conversation_id": f"{slug}-{number:05d}",
            "kind": kind,
            "topic": TOPICS[int(rng.integers(0, len(TOPICS)))],
            "complexity": ["high", "medium", "low"][int(rng.integers(0, 3))] if kind == "single" else None,
            "title": "[SYNTHETIC] generated conversation",
            "turns": turns,
        })
    return records


def draw_gold(attribute: AttributeDefinition, size: int, rng: np.random.Generator) -> np.ndarray:
    values = np.arange(attribute.scale_min, attribute.scale_max + 1)
    weights = rng.dirichlet(np.full(len(values), 2.0))
    return rng.choice(values, size=size, p=weights)


def perturb(gold: np.ndarray, accuracy: float, attribute: AttributeDefinition, rng: np.random.Generator) -> np.ndarray:
    """Copy gold with probability ``accuracy``; otherwise step one point up or down (staying on the scale)."""
    miss = rng.random(gold.shape) >= accuracy
    step = np.where(rng.random(gold.shape) < 0.5, -1, 1)
    moved = gold + step
    moved = np.where(moved < attribute.scale_min, gold + 1, moved)
    moved = np.where(moved > attribute.scale_max, gold - 1, moved)
    return np.where(miss, moved, gold)


@dataclass(frozen=True)
class TurnUnits:
    """A turn to code, with its responses as (response id, text)."""

    turn_id: int
    conversation_id: int
    responses: Sequence[tuple[int, str]]


_CODING_FIELDS = ("round_id", "coder_id", "is_gold", "attribute_id", "conversation_id", "turn_id", "response_id",
                  "score", "instance_count")


@dataclass
class Codings:
    """Generated judgments as plain rows (``_CODING_FIELDS``), spans as (row, subcategory, start, end)."""

    rows: list[tuple] = field(default_factory=list)
    spans: list[tuple[int, int, int, int]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.rows)

    def save(self) -> None:
        """Judgments, spans, and the start of each judgment's history (as an import by the system), through COPY
        (``annotation.bulk``; a 10x study has 7 million judgments)."""
        slugs = dict(SpanSubcategory.objects.filter(pk__in={sub for _, sub, _, _ in self.spans})
                     .values_list("pk", "slug"))
        with transaction.atomic(), connection.cursor() as cursor, bulk.checked_in_bulk(
                cursor, (Judgment, Span, JudgmentRevision)) as raw:
            ids = self._copy_judgments(raw)
            spans_of: dict[int, list[tuple[int, int, str]]] = {}
            span_lines = []
            for i, sub, start, end in self.spans:
                span_lines.append(f"{ids[i]}\t{sub}\t{start}\t{end}")
                spans_of.setdefault(i, []).append((start, end, slugs[sub]))
            bulk.copy_lines(raw, Span, ("judgment_id", "subcategory_id", "start", "end"), span_lines)
            del span_lines
            # The history's first revision of each judgment, its value as ``services.judgment_value`` puts it
            # (computed once per distinct value: most judgments share a handful).
            source, at = bulk.copy_text(JudgmentRevision.Source.IMPORT), bulk.copy_text(timezone.now())
            gold_at, score_at, count_at = (_CODING_FIELDS.index(name) for name in ("is_gold", "score",
                                                                                    "instance_count"))
            values: dict[tuple, str] = {}

            def revision_lines() -> Iterator[str]:  # made while the server takes the ones before
                for i, row in enumerate(self.rows):
                    key = (row[gold_at], row[score_at], row[count_at], tuple(spans_of.get(i, ())))
                    value = values.get(key)
                    if value is None:
                        judgment = cast("Judgment", SimpleNamespace(is_gold=key[0], score=key[1],
                                                                    instance_count=key[2], note=""))
                        value = bulk.copy_text(json.dumps(services.judgment_value(judgment, spans=key[3]),
                                                          ensure_ascii=False))
                        if not key[3]:
                            values[key] = value
                    yield f"{ids[i]}\t1\t\\N\t{source}\t{at}\t\\N\t{value}"

            bulk.copy_lines(raw, JudgmentRevision,
                            ("judgment_id", "version", "changed_by_id", "source", "at", "before", "after"),
                            revision_lines())

    def _copy_judgments(self, cursor: Any) -> Sequence[int]:
        """COPY the rows; returns their ids, in row order."""
        now = timezone.now()
        constants = {
            str(f.column): now if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False)
            else f.get_default()
            for f in Judgment._meta.concrete_fields if not f.primary_key and f.attname not in _CODING_FIELDS
        }
        quote = connection.ops.quote_name
        table = quote(Judgment._meta.db_table)
        rounds = sorted({row[0] for row in self.rows})
        cursor.execute(f"SELECT COALESCE(MAX(id), 0) FROM {table}")  # noqa: S608  # nosec B608 - table name from the model
        (before,) = cursor.fetchone()
        tail = "\t" + "\t".join(bulk.copy_text(v) for v in constants.values()) if constants else ""
        # Values are ints, bools and None only: str() gives PostgreSQL's text form, "None" becomes NULL.
        bulk.copy_lines(cursor, Judgment, (*_CODING_FIELDS, *constants),
                        ("\t".join(map(str, row)).replace("None", "\\N") + tail for row in self.rows))
        # One session's COPY takes its ids from the sequence in row order: ascending ids are the rows in order.
        # Without another writer in between they are one run of numbers, which needs no list from the database.
        cursor.execute(f"SELECT COUNT(*), MIN(id), MAX(id) FROM {table} WHERE round_id = ANY(%s) AND id > %s",  # noqa: S608  # nosec B608
                       [rounds, before])
        count, low, high = cursor.fetchone()
        ids: Sequence[int]
        if count == len(self.rows) and (count == 0 or high - low + 1 == count):
            ids = range(low or 0, (high or 0) + 1) if count else []
        else:
            cursor.execute(f"SELECT id FROM {table} WHERE round_id = ANY(%s) AND id > %s ORDER BY id",  # noqa: S608  # nosec B608
                           [rounds, before])
            ids = [pk for (pk,) in cursor.fetchall()]
        if len(ids) != len(self.rows):
            raise RuntimeError(f"{len(self.rows)} judgments written but {len(ids)} found: were the rounds written to "
                               "at the same time?")
        return ids


def codings_generate(
    codings: Codings, *, round: Round, turns: Sequence[TurnUnits], attributes: Sequence[AttributeDefinition],
    coders_of: Callable[[int], Sequence[int]], accuracy: Mapping[int, float], gold_coder: int | None,
    span_rate: float, rng: np.random.Generator, max_extra_words: int = 5,
) -> None:
    """Seeded codings of every unit of ``turns`` (the units of each attribute, as ``rules.units_of`` says): a
    gold value per unit, and for each coder a copy of it at their ``accuracy`` (``perturb``); a gold judgment too
    when ``gold_coder`` is given. A positive score gets a one-to-few-word span at ``span_rate``. The one generator
    behind the demo's illustrative panel and every synthetic study."""
    for attribute in attributes:
        subcategories = [sub.pk for sub in attribute.subcategories.all()]
        units = [(turn, unit) for turn in turns for unit in rules.units_of(attribute, turn.responses)]
        if not units:
            continue
        gold = draw_gold(attribute, len(units), rng)
        coder_lists = [coders_of(turn.turn_id) for turn, _ in units]
        # Coders in id order (a set's order depends on the ids' values: the same seed gave other data when the
        # ids wrapped round the set's table; in a fresh database the two orders agree).
        scores = {pk: perturb(gold, accuracy[pk], attribute, rng).tolist()
                  for pk in sorted({c for cs in coder_lists for c in cs})}
        gold_scores = gold.tolist()
        counted = attribute.has_instance_count
        # The same draws in the same order as one row at a time always did (same data for the same seed); only
        # the bookkeeping is lighter: 7 million rows at 10x.
        rows, spans, random, integers = codings.rows, codings.spans, rng.random, rng.integers
        round_id, attribute_id, n_subcategories = round.pk, attribute.pk, len(subcategories)
        for i, (turn, unit) in enumerate(units):
            coded = [(coder, False, scores[coder][i]) for coder in coder_lists[i]]
            if gold_coder is not None:
                coded.append((gold_coder, True, gold_scores[i]))
            if unit is None or not subcategories:
                for coder, is_gold, score in coded:
                    rows.append((round_id, coder, is_gold, attribute_id, turn.conversation_id, turn.turn_id,
                                 unit[0] if unit is not None else None, score, 0 if counted else None))
                continue
            response_id, text = unit
            for coder, is_gold, score in coded:
                n_spans = 1 if score > 0 and random() < span_rate else 0
                rows.append((round_id, coder, is_gold, attribute_id, turn.conversation_id, turn.turn_id,
                             response_id, score, n_spans if counted else None))
                if n_spans:
                    words = _words(text)
                    first = int(integers(0, len(words)))
                    last = min(len(words) - 1, first + int(integers(0, max_extra_words + 1)))
                    spans.append((len(rows) - 1, subcategories[int(integers(0, n_subcategories))],
                                  words[first][0], words[last][1]))


@functools.lru_cache(maxsize=4096)
def _words(text: str) -> list[tuple[int, int]]:
    """Where each word of ``text`` starts and ends (generated texts repeat: a handful of phrases)."""
    return [(m.start(), m.end()) for m in WORD.finditer(text)]


SYNTHETIC_STAGES = ["conversations", "study and accounts", "calibration rounds", "main round", "saving judgments"]


@transaction.atomic
def synthetic_generate(spec: SyntheticSpec, *,  # noqa: C901 - one generation pipeline
                       progress: Callable[[str], None] = lambda stage: None) -> SyntheticResult:
    """``progress``: called with each of SYNTHETIC_STAGES as it starts (generate_synthetic's bar)."""
    rng = np.random.default_rng(spec.seed)
    slug = spec.slug or f"synthetic-{spec.seed}"
    services.study_slug_check(slug=slug)  # before any conversation is made under its name
    if Study.objects.filter(slug=slug).exists():
        raise ValueError(f"study {slug!r} exists already; choose another --slug or --seed")
    progress("conversations")
    records = _records(spec, slug, rng)
    conversation_ingest.conversations_import(rows=enumerate(records, start=1), is_synthetic=True)

    progress("study and accounts")
    admin = user_ensure(username=f"{slug}-admin", role=roles.ADMIN)
    schema = Schema.objects.get(slug="cab-v1")
    study = services.study_create(
        slug=slug, name=f"[SYNTHETIC] seed {spec.seed}, {spec.conversations} conversations", schema=schema,
        model_slots=[MODEL_NAMES[i] if i < len(MODEL_NAMES) else f"Model{i + 1}" for i in range(spec.models)],
        by=admin, is_synthetic=True,
        description="Generated by generate_synthetic: not real conversations, not real judgments.",
    )
    reviewers = [user_ensure(username=f"{slug}-r{i:02d}", role=roles.REVIEWER) for i in range(1, spec.reviewers + 1)]
    experts = [user_ensure(username=f"{slug}-e{i}", role=roles.EXPERT) for i in range(1, spec.experts + 1)]
    for user in reviewers:
        services.study_member_add(study=study, user=user, role=StudyMember.Role.REVIEWER, by=admin)
    for user in experts:
        services.study_member_add(study=study, user=user, role=StudyMember.Role.EXPERT, by=admin)
    accuracy = {u.pk: float(np.clip(spec.agreement + rng.normal(0, 0.08), 0.3, 0.99)) for u in reviewers}
    accuracy |= {u.pk: float(np.clip(spec.agreement + 0.1, 0.3, 0.99)) for u in experts}

    turns = list(Turn.objects.filter(conversation__external_id__startswith=f"{slug}-", responses__isnull=False)
                 .distinct().values_list("id", "conversation_id", "conversation__kind").order_by("id"))
    responses = list(ModelResponse.objects.filter(turn__conversation__external_id__startswith=f"{slug}-")
                     .values_list("id", "turn_id", "text").order_by("id"))
    responses_by_turn: dict[int, list[tuple[int, str]]] = {}
    for response_id, turn_id, text in responses:
        responses_by_turn.setdefault(turn_id, []).append((response_id, text))
    attributes = list(schema.attributes.prefetch_related("subcategories"))

    single = [t for t in turns if t[2] == "single"]
    n_cal = min(spec.calibration_turns * spec.calibration_rounds, len(single))
    picked = rng.choice(len(single), size=n_cal, replace=False) if n_cal else np.array([], dtype=int)
    calibration_sets = [[single[i] for i in picked[r::spec.calibration_rounds]] for r in range(spec.calibration_rounds)]
    used = {t[0] for group in calibration_sets for t in group}
    main_turns = [t for t in turns if t[0] not in used]

    codings = Codings()
    units = {t[0]: TurnUnits(t[0], t[1], responses_by_turn.get(t[0], [])) for t in turns}
    gold_coder = experts[0].pk if experts else admin.pk

    everyone = reviewers + experts
    progress("calibration rounds")
    for number, turn_set in enumerate(calibration_sets, start=1):
        round_ = services.round_ensure(study=study, kind=Round.Kind.CALIBRATION, number=number, by=admin)
        services.round_items_set(round=round_, turns=[Turn(pk=t[0]) for t in turn_set], by=admin)
        codings_generate(codings, round=round_, turns=[units[t[0]] for t in turn_set], attributes=attributes,
                         coders_of=lambda _turn: [c.pk for c in everyone], accuracy=accuracy, gold_coder=gold_coder,
                         span_rate=spec.span_rate, rng=rng)
        Round.objects.filter(pk=round_.pk).update(status=Round.Status.CLOSED)

    progress("main round")
    main = services.round_ensure(study=study, kind=Round.Kind.MAIN, by=admin)
    panel = reviewers[: spec.panel_size] or reviewers
    StudyMember.objects.filter(study=study, user__in=panel).update(retained=True)
    per_turn = min(spec.coders_per_turn, len(panel))
    main_coders = {t[0]: [panel[(i + j) % len(panel)] for j in range(per_turn)] for i, t in enumerate(main_turns)}
    if panel and main_turns:
        codings_generate(codings, round=main, turns=[units[t[0]] for t in main_turns], attributes=attributes,
                         coders_of=lambda turn_id: [c.pk for c in main_coders[turn_id]], accuracy=accuracy,
                         gold_coder=None, span_rate=spec.span_rate, rng=rng)
        Assignment.objects.bulk_create(
            [Assignment(round=main, coder=coder, turn_id=turn_id, position=i, completed_at=None)
             for i, (turn_id, coders) in enumerate(main_coders.items(), start=1) for coder in coders],
            batch_size=5000,
        )
    Round.objects.filter(pk=main.pk).update(status=Round.Status.OPEN)
    services.study_opens(study_id=study.pk)  # its main round is open: coded data came in

    progress("saving judgments")
    codings.save()
    study.refresh_from_db()
    User = get_user_model()
    return SyntheticResult(
        study=study, conversations=len(records), turns=sum(len(r["turns"]) for r in records),
        responses=len(responses), judgments=len(codings), spans=len(codings.spans),
        reviewer_accuracy={User.objects.get(pk=pk).username: round(a, 3) for pk, a in accuracy.items()},
    )
