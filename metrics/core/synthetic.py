"""Deterministic synthetic studies for benchmarks and property tests (no real data, any schema).

Scores come from a latent turn severity plus a per-model, per-attribute shift, quantised onto each
attribute's scale, so correlations, clusters and trajectories are non-trivial. Calibration reviewers copy the
gold score with a reviewer-specific probability and otherwise pick a uniform scale value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from common.rounds import CALIBRATION, MAIN, round_name

from .tables import AttributeSpec, JudgmentTable, SpanTable

_WORDS = np.array(
    [
        "you",
        "feel",
        "it",
        "sounds",
        "like",
        "that",
        "is",
        "hard",
        "maybe",
        "we",
        "could",
        "try",
        "talking",
        "about",
        "what",
        "matters",
        "most",
    ]
)


@dataclass(frozen=True)
class SyntheticStudy:
    judgments: JudgmentTable
    spans: SpanTable
    response_texts: dict[tuple[str, str, int, str], str]
    conversation_kinds: dict[tuple[str, str], str]


@dataclass
class _Columns:
    round: list[np.ndarray]
    coder: list[np.ndarray]
    is_gold: list[np.ndarray]
    dataset: list[np.ndarray]
    conversation: list[np.ndarray]
    turn: list[np.ndarray]
    model: list[np.ndarray]
    attribute: list[np.ndarray]
    score: list[np.ndarray]

    @classmethod
    def empty(cls) -> _Columns:
        return cls([], [], [], [], [], [], [], [], [])

    def table(self) -> JudgmentTable:
        def cat(parts: list[np.ndarray], dtype: npt.DTypeLike) -> np.ndarray:
            return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype=dtype)

        return JudgmentTable(
            round=cat(self.round, object),
            coder=cat(self.coder, object),
            is_gold=cat(self.is_gold, bool),
            dataset=cat(self.dataset, object),
            conversation=cat(self.conversation, object),
            turn=cat(self.turn, np.int64),
            model=cat(self.model, object),
            attribute=cat(self.attribute, object),
            score=cat(self.score, np.int64),
        )


def _quantise(latent: np.ndarray, scale: Sequence[int]) -> np.ndarray:
    """Map a standard-normal-ish latent onto the scale by equal-probability cut points."""
    cuts = np.linspace(-0.8, 0.8, len(scale) - 1) if len(scale) > 1 else np.zeros(0)
    return np.asarray(scale)[np.searchsorted(cuts, latent)]


def generate(
    attributes: Sequence[AttributeSpec],
    *,
    models: Sequence[str] = ("Claude", "GPT", "Gemini", "Llama", "Qwen"),
    single_turn_conversations: int = 20,
    multi_turn_conversations: int = 5,
    multi_turn_turns: int = 40,
    calibration_rounds: int = 2,
    calibration_turns: int = 10,
    reviewers: int = 7,
    main_coders: int = 6,
    main_overlap: float = 0.0,
    spans_per_response: float = 1.0,
    subcategory_attribute: Mapping[str, str] | None = None,
    seed: int = 0,
) -> SyntheticStudy:
    """A study in the shape of the reference protocol: single- and multi-turn conversations, calibration
    rounds coded by every reviewer and gold, a main round coded once (or twice for `main_overlap` of turns).
    """
    rng = np.random.default_rng(seed)
    models = list(models)
    n_multi_turns = max(multi_turn_turns, 2 * multi_turn_conversations) if multi_turn_conversations else 0
    extra = (
        rng.multinomial(
            n_multi_turns - 2 * multi_turn_conversations,
            [1 / max(multi_turn_conversations, 1)] * max(multi_turn_conversations, 1),
        )
        if multi_turn_conversations
        else np.zeros(0, int)
    )
    lengths = np.concatenate([np.ones(single_turn_conversations, dtype=int), 2 + extra]).astype(int)
    conv_dataset = np.array(
        [("CounselChat" if i % 2 == 0 else "PAIR") for i in range(single_turn_conversations)]
        + [("CARE-Bench" if i % 2 == 0 else "HOPE") for i in range(multi_turn_conversations)],
        dtype=object,
    )
    conv_name = np.array([f"c{i:05d}" for i in range(len(lengths))], dtype=object)
    turn_conv = np.repeat(np.arange(len(lengths)), lengths)
    turn_index = np.concatenate([np.arange(1, n + 1) for n in lengths]) if len(lengths) else np.zeros(0, int)
    n_turns = len(turn_conv)
    drift = rng.normal(0, 0.05, len(lengths))[turn_conv] * turn_index
    severity = rng.normal(0, 1, n_turns) + drift
    shift = rng.normal(0, 0.4, (len(models), len(attributes)))
    turn_attrs = [i for i, a in enumerate(attributes) if a.unit != "response"]
    resp_attrs = [i for i, a in enumerate(attributes) if a.unit == "response"]

    def true_scores(turns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(turns x turn-attrs) and (turns x models x response-attrs) true scores."""
        noise_t = rng.normal(0, 0.7, (len(turns), len(turn_attrs)))
        user = (
            np.column_stack(
                [_quantise(severity[turns] + noise_t[:, k], attributes[a].scale) for k, a in enumerate(turn_attrs)]
            )
            if turn_attrs
            else np.zeros((len(turns), 0), int)
        )
        noise_r = rng.normal(0, 0.8, (len(turns), len(models), len(resp_attrs)))
        latent = 0.5 * severity[turns][:, None, None] + shift[:, resp_attrs][None, :, :] + noise_r
        resp = (
            np.stack([_quantise(latent[:, :, k], attributes[a].scale) for k, a in enumerate(resp_attrs)], axis=-1)
            if resp_attrs
            else np.zeros((len(turns), len(models), 0), int)
        )
        return user, resp

    cols = _Columns.empty()

    def _perturb(scores: np.ndarray, probability: float) -> np.ndarray:
        """Replace each response score by a uniform scale value with the given probability."""
        noisy = (
            np.stack([rng.choice(attributes[a].scale, scores.shape[:2]) for a in resp_attrs], axis=-1)
            if resp_attrs
            else scores
        )
        return np.where(rng.random(scores.shape) < probability, noisy, scores)

    def _perturb_user(scores: np.ndarray, probability: float) -> np.ndarray:
        noisy = (
            np.column_stack([rng.choice(attributes[a].scale, len(scores)) for a in turn_attrs])
            if turn_attrs
            else scores
        )
        return np.where(rng.random(scores.shape) < probability, noisy, scores)

    def emit(round_name: str, coder: str, gold: bool, turns: np.ndarray, user: np.ndarray, resp: np.ndarray) -> None:
        _emit(
            cols,
            attributes,
            models,
            turn_attrs,
            resp_attrs,
            round_name,
            coder,
            gold,
            (conv_dataset[turn_conv[turns]], conv_name[turn_conv[turns]], turn_index[turns]),
            user,
            resp,
        )

    reviewer_names = [f"reviewer{r + 1:02d}" for r in range(reviewers)]
    accuracy = np.linspace(0.9, 0.55, max(reviewers, 1))  # reviewer i copies gold with this probability
    calibration_sets = []
    for r in range(calibration_rounds):
        turns = np.sort(rng.choice(n_turns, size=min(calibration_turns, n_turns), replace=False))
        calibration_sets.append(turns)
        user, resp = true_scores(turns)
        emit(round_name(CALIBRATION, r + 1), "gold-panel", True, turns, user, resp)
        for i, name in enumerate(reviewer_names):
            miss = 1.0 - accuracy[i] - 0.05 * r
            emit(round_name(CALIBRATION, r + 1), name, False, turns, _perturb_user(user, miss), _perturb(resp, miss))

    all_turns = np.arange(n_turns)
    user, resp = true_scores(all_turns)
    panel = reviewer_names[:main_coders]
    primary = rng.integers(0, max(len(panel), 1), n_turns)
    for i, name in enumerate(panel):
        mine = primary == i
        emit(MAIN, name, False, all_turns[mine], user[mine], resp[mine])
    if main_overlap > 0 and len(panel) > 1:
        second = (primary + 1 + rng.integers(0, len(panel) - 1, n_turns)) % len(panel)
        twice = rng.random(n_turns) < main_overlap
        for i, name in enumerate(panel):
            mine = all_turns[twice & (second == i)]
            emit(MAIN, name, False, mine, user[mine], _perturb(resp[mine], 0.2))
    judgments = cols.table()

    texts = _response_texts(rng, models, conv_dataset, conv_name, turn_conv, turn_index)
    spans = _spans(judgments, attributes, texts, subcategory_attribute, spans_per_response, rng)
    kinds = {
        (str(conv_dataset[c]), str(conv_name[c])): ("single" if lengths[c] == 1 else "multi")
        for c in range(len(lengths))
    }
    return SyntheticStudy(judgments, spans, texts, kinds)


def _emit(
    cols: _Columns,
    attributes: Sequence[AttributeSpec],
    models: Sequence[str],
    turn_attrs: Sequence[int],
    resp_attrs: Sequence[int],
    round_name: str,
    coder: str,
    gold: bool,
    units: tuple[np.ndarray, np.ndarray, np.ndarray],
    user: np.ndarray,
    resp: np.ndarray,
) -> None:
    """Append one coder's judgments of the given turns (dataset, conversation, turn index per turn): every
    turn-level attribute, then every response attribute of every model."""
    dataset, conversation, turn = units
    nt = len(turn)
    for k, a in enumerate(turn_attrs):
        _append(
            cols,
            round_name,
            coder,
            gold,
            dataset,
            conversation,
            turn,
            np.full(nt, "", dtype=object),
            attributes[a].code,
            user[:, k],
        )
    for m, model in enumerate(models):
        for k, a in enumerate(resp_attrs):
            _append(
                cols,
                round_name,
                coder,
                gold,
                dataset,
                conversation,
                turn,
                np.full(nt, model, dtype=object),
                attributes[a].code,
                resp[:, m, k],
            )


def _response_texts(
    rng: np.random.Generator,
    models: Sequence[str],
    conv_dataset: np.ndarray,
    conv_name: np.ndarray,
    turn_conv: np.ndarray,
    turn_index: np.ndarray,
) -> dict[tuple[str, str, int, str], str]:
    """A random word string of 40-159 words for every model's response to every turn."""
    n_turns = len(turn_conv)
    texts: dict[tuple[str, str, int, str], str] = {}
    n_words = rng.integers(40, 160, (n_turns, len(models)))
    word_draws = rng.integers(0, len(_WORDS), int(n_words.sum()))
    offset = 0
    for t in range(n_turns):
        for m, model in enumerate(models):
            k = int(n_words[t, m])
            texts[(str(conv_dataset[turn_conv[t]]), str(conv_name[turn_conv[t]]), int(turn_index[t]), model)] = (
                " ".join(_WORDS[word_draws[offset : offset + k]].tolist())
            )
            offset += k
    return texts


def _append(
    cols: _Columns,
    round_name: str,
    coder: str,
    gold: bool,
    dataset: np.ndarray,
    conversation: np.ndarray,
    turn: np.ndarray,
    model: np.ndarray,
    attribute: str,
    score: np.ndarray,
) -> None:
    n = len(score)
    cols.round.append(np.full(n, round_name, dtype=object))
    cols.coder.append(np.full(n, coder, dtype=object))
    cols.is_gold.append(np.full(n, gold))
    cols.dataset.append(dataset)
    cols.conversation.append(conversation)
    cols.turn.append(np.asarray(turn))
    cols.model.append(model)
    cols.attribute.append(np.full(n, attribute, dtype=object))
    cols.score.append(np.asarray(score))


def _spans(
    judgments: JudgmentTable,
    attributes: Sequence[AttributeSpec],
    texts: Mapping[tuple[str, str, int, str], str],
    subcategory_attribute: Mapping[str, str] | None,
    rate: float,
    rng: np.random.Generator,
) -> SpanTable:
    """About `rate` spans per response judgment with a non-zero score, on a subcategory of its attribute."""
    names = ("round", "coder", "is_gold", "dataset", "conversation", "turn", "model", "attribute")
    if not subcategory_attribute or rate <= 0:
        empty = {n: np.zeros(0, dtype=bool if n == "is_gold" else object) for n in names}
        return SpanTable(**empty, start=np.zeros(0, int), end=np.zeros(0, int), subcategory=np.zeros(0, object))
    by_attribute: dict[str, list[str]] = {}
    for slug, code in subcategory_attribute.items():
        by_attribute.setdefault(code, []).append(slug)
    response_codes = {a.code for a in attributes if a.unit == "response"}
    candidates = np.flatnonzero(
        np.isin(judgments.attribute, [c for c in by_attribute if c in response_codes]) & (judgments.score > 0)
    )
    chosen = candidates[rng.random(len(candidates)) < min(rate, 1.0)]
    starts, ends, slugs = [], [], []
    for row in chosen.tolist():
        text = texts[
            (
                str(judgments.dataset[row]),
                str(judgments.conversation[row]),
                int(judgments.turn[row]),
                str(judgments.model[row]),
            )
        ]
        start = int(rng.integers(0, max(len(text) - 20, 1)))
        starts.append(start)
        ends.append(min(len(text), start + int(rng.integers(5, 60))))
        options = by_attribute[str(judgments.attribute[row])]
        slugs.append(options[int(rng.integers(0, len(options)))])
    columns = {n: np.asarray(getattr(judgments, n))[chosen] for n in names}
    return SpanTable(
        **columns,
        start=np.array(starts, dtype=np.int64),
        end=np.array(ends, dtype=np.int64),
        subcategory=np.array(slugs, dtype=object),
    )


def _spec(
    code: str,
    group: str,
    cluster: str | None,
    top: int,
    merged: tuple[int, int] | None,
    risk: dict[int, float] | None,
) -> AttributeSpec:
    scale = tuple(range(top + 1))
    bucket = {v: (merged[0] if merged and v in merged else v) for v in scale}
    return AttributeSpec(
        code=code,
        group=group,
        cluster=cluster,
        scale=scale,
        level="ordinal" if top > 1 else "nominal",
        bucket=bucket,
        risk=risk,
        uiri=group == "user",
        unit="turn" if group == "user" else "response",
    )


_DOWN = {0: 1.0, 1: 0.5, 2: 0.0}  # (2 - x) / 2
_UP = {0: 0.0, 1: 0.5, 2: 1.0}  # x / 2
_BINARY = {0: 0.0, 1: 1.0}  # x

# The default schema `cab-v1` (docs/schema.md#the-default-schema-cab-v1), as data, for synthetic studies and tests. No
# metric reads it: the computation only ever sees the AttributeSpecs it is given.
DEFAULT_SCHEMA: tuple[AttributeSpec, ...] = (
    _spec("U1", "user", None, 2, None, None),
    _spec("U2", "user", None, 2, (1, 2), None),
    _spec("U3", "user", None, 1, None, None),
    _spec("U4", "user", None, 1, None, None),
    _spec("U5", "user", None, 2, (1, 2), None),
    _spec("AUR", "response", "D", 2, (0, 1), _DOWN),
    _spec("TD", "response", "D", 2, None, _DOWN),
    _spec("FIX", "response", "D", 2, None, {0: 0.0, 1: 1.0, 2: 1.0}),
    _spec("REC", "response", "D", 2, None, _UP),
    _spec("EMP", "response", "E", 2, (1, 2), _DOWN),
    _spec("LMT", "response", "E", 2, (0, 1), _DOWN),
    _spec("ME", "response", "E", 2, None, _UP),
    _spec("TN", "response", "R", 2, (0, 1), _DOWN),
    _spec("QOC", "response", "R", 2, None, _DOWN),
    _spec("SEN", "response", "R", 1, None, _BINARY),
    *(_spec(f"F{i}", "flag", "F", 1, None, _BINARY) for i in range(1, 6)),
)

DEFAULT_SUBCATEGORIES: dict[str, str] = {
    slug: code
    for code, pair in (
        ("AUR", ("assumes", "explores")),
        ("TD", ("tentative", "directive")),
        ("FIX", ("problem-solving", "invites-own-solution")),
        ("REC", ("professional-referral", "self-help")),
        ("EMP", ("accurate", "inaccurate")),
        ("LMT", ("matched", "mismatched")),
        ("ME", ("encourager", "affiliative")),
        ("TN", ("topic-shift", "topic-follow")),
        ("QOC", ("open-question", "closed-question")),
        ("SEN", ("safety-language", "overreaction")),
    )
    for slug in pair
}
