"""Synthetic studies at any size, clearly labelled as such, for demos, load tests and benchmarks.

Every unit gets a synthetic gold score; each reviewer copies gold with their own accuracy (drawn around
``agreement``) and otherwise picks a neighbouring value, so agreement with gold is controllable. Conversations
go through the normal importer; judgments and spans are written with set-based inserts.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np
from django.contrib.auth import get_user_model
from django.db import transaction

from annotation import roles, services
from annotation.models import Assignment, AttributeDefinition, Judgment, Round, Schema, Span, Study, StudyMember
from benchmark import services as benchmark_services
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


@transaction.atomic
def synthetic_generate(spec: SyntheticSpec) -> SyntheticResult:  # noqa: C901 - one generation pipeline
    rng = np.random.default_rng(spec.seed)
    slug = spec.slug or f"synthetic-{spec.seed}"
    if Study.objects.filter(slug=slug).exists():
        raise ValueError(f"study {slug!r} exists already; choose another --slug or --seed")
    records = _records(spec, slug, rng)
    benchmark_services.conversations_import(rows=enumerate(records, start=1), is_synthetic=True)

    admin = services.user_ensure(username=f"{slug}-admin", role=roles.ADMIN)
    schema = Schema.objects.get(slug="cab-v1")
    study = services.study_create(
        slug=slug, name=f"[SYNTHETIC] seed {spec.seed}, {spec.conversations} conversations", schema=schema,
        model_slots=[MODEL_NAMES[i] if i < len(MODEL_NAMES) else f"Model{i + 1}" for i in range(spec.models)],
        by=admin, is_synthetic=True,
        description="Generated by generate_synthetic: not real conversations, not real judgments.",
    )
    reviewers = [services.user_ensure(username=f"{slug}-r{i:02d}", role=roles.REVIEWER)
                 for i in range(1, spec.reviewers + 1)]
    experts = [services.user_ensure(username=f"{slug}-e{i}", role=roles.EXPERT) for i in range(1, spec.experts + 1)]
    for user in reviewers:
        services.study_member_add(study=study, user=user, role=StudyMember.Role.REVIEWER)
    for user in experts:
        services.study_member_add(study=study, user=user, role=StudyMember.Role.EXPERT)
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
    subcategories = {a.pk: [s.pk for s in a.subcategories.all()] for a in attributes}

    single = [t for t in turns if t[2] == "single"]
    n_cal = min(spec.calibration_turns * spec.calibration_rounds, len(single))
    picked = rng.choice(len(single), size=n_cal, replace=False) if n_cal else np.array([], dtype=int)
    calibration_sets = [[single[i] for i in picked[r::spec.calibration_rounds]] for r in range(spec.calibration_rounds)]
    used = {t[0] for group in calibration_sets for t in group}
    main_turns = [t for t in turns if t[0] not in used]

    judgments: list[Judgment] = []
    span_plan: list[tuple[int, int, int, int]] = []  # (judgment index, subcategory, start, end)

    def code(round_: Round, turn_set, coders_for_turn, with_gold: bool) -> None:
        for attribute in attributes:
            if attribute.unit == AttributeDefinition.Unit.TURN:
                units = [(t_id, conv_id, None, "") for t_id, conv_id, _ in turn_set]
            else:
                units = [(t_id, conv_id, r_id, text) for t_id, conv_id, _ in turn_set
                         for r_id, text in responses_by_turn[t_id]]
            if not units:
                continue
            gold = draw_gold(attribute, len(units), rng)
            coder_lists = [coders_for_turn(unit[0]) for unit in units]
            all_coders = {c.pk: c for coders in coder_lists for c in coders}
            scores = {pk: perturb(gold, accuracy[pk], attribute, rng) for pk in all_coders}
            spans_on = bool(subcategories[attribute.pk])
            for i, (turn_id, conversation_id, response_id, text) in enumerate(units):
                rows = [(c.pk, False, int(scores[c.pk][i])) for c in coder_lists[i]]
                if with_gold:
                    rows.append((experts[0].pk if experts else admin.pk, True, int(gold[i])))
                for coder_id, is_gold, score in rows:
                    n_spans = 1 if spans_on and score > 0 and rng.random() < spec.span_rate else 0
                    judgments.append(Judgment(
                        round=round_, coder_id=coder_id, is_gold=is_gold, attribute=attribute,
                        conversation_id=conversation_id, turn_id=turn_id, response_id=response_id, score=score,
                        instance_count=n_spans if attribute.has_instance_count else None,
                    ))
                    if n_spans:
                        words = [(m.start(), m.end()) for m in WORD.finditer(text)]
                        first = int(rng.integers(0, len(words)))
                        last = min(len(words) - 1, first + int(rng.integers(0, 6)))
                        span_plan.append((len(judgments) - 1, subcategories[attribute.pk][int(rng.integers(0, 2))],
                                          words[first][0], words[last][1]))

    everyone = reviewers + experts
    for number, turn_set in enumerate(calibration_sets, start=1):
        round_ = services.round_ensure(study=study, kind=Round.Kind.CALIBRATION, number=number, by=admin)
        services.round_items_set(round=round_, turns=[Turn(pk=t[0]) for t in turn_set], by=admin)
        code(round_, turn_set, lambda _turn: everyone, with_gold=True)
        Round.objects.filter(pk=round_.pk).update(status=Round.Status.CLOSED)

    main = services.round_ensure(study=study, kind=Round.Kind.MAIN, by=admin)
    panel = reviewers[: spec.panel_size] or reviewers
    StudyMember.objects.filter(study=study, user__in=panel).update(retained=True)
    per_turn = min(spec.coders_per_turn, len(panel))
    main_coders = {t[0]: [panel[(i + j) % len(panel)] for j in range(per_turn)] for i, t in enumerate(main_turns)}
    if panel and main_turns:
        code(main, main_turns, lambda turn_id: main_coders[turn_id], with_gold=False)
        Assignment.objects.bulk_create(
            [Assignment(round=main, coder=coder, turn_id=turn_id, position=i, completed_at=None)
             for i, (turn_id, coders) in enumerate(main_coders.items(), start=1) for coder in coders],
            batch_size=5000,
        )
    Round.objects.filter(pk=main.pk).update(status=Round.Status.OPEN)
    Study.objects.filter(pk=study.pk).update(status=Study.Status.OPEN)

    Judgment.objects.bulk_create(judgments, batch_size=5000)
    Span.objects.bulk_create(
        [Span(judgment_id=judgments[i].pk, subcategory_id=sub, start=start, end=end)
         for i, sub, start, end in span_plan],
        batch_size=5000,
    )
    study.refresh_from_db()
    User = get_user_model()
    return SyntheticResult(
        study=study, conversations=len(records), turns=sum(len(r["turns"]) for r in records),
        responses=len(responses), judgments=len(judgments), spans=len(span_plan),
        reviewer_accuracy={User.objects.get(pk=pk).username: round(a, 3) for pk, a in accuracy.items()},
    )
