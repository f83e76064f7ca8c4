"""Turn the string-keyed input tables into integer codes once, so every metric works on dense int arrays.

Identity rules (from the interface): a response-level unit is (dataset, conversation, turn, model), a
turn-level unit is (dataset, conversation, turn) with the model forced empty, a conversation-level unit is
(dataset, conversation) with turn 0. A judgment is keyed by (round, coder, unit, attribute); gold rows share
one pseudo-coder per round whatever name they carry. Rows the schema cannot interpret are dropped and counted
(unknown attribute, score outside the attribute's scale), and a re-coded judgment keeps its last row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .common import dense_ids, factorize, factorize_many, keep_last
from .tables import AttributeSpec, Categorical, JudgmentTable, SpanTable, check_columns

GOLD = -1  # coder code of the gold pseudo-coder


@dataclass(frozen=True)
class Schema:
    """Lookup tables derived from the AttributeSpecs (index = attribute position in the schema)."""

    attributes: tuple[AttributeSpec, ...]
    offset: int  # score s of attribute a lives at column s - offset of the lookup tables
    label: np.ndarray  # (A, width) position of the score in the attribute's scale, -1 = not on the scale
    bucket: np.ndarray  # (A, width) compact bucket code, -1 = not on the scale
    risk: np.ndarray  # (A, width) risk in [0, 1], NaN = no risk encoding / not on the scale
    normalised: np.ndarray  # (A, width) score / max(scale) (UIRI and user-score trajectories)
    n_labels: int  # longest scale

    @property
    def codes(self) -> list[str]:
        return [a.code for a in self.attributes]

    def indices(self, predicate: Callable[[AttributeSpec], bool]) -> list[int]:
        return [i for i, a in enumerate(self.attributes) if predicate(a)]

    @classmethod
    def build(cls, attributes: Sequence[AttributeSpec]) -> Schema:
        attributes = tuple(attributes)
        for spec in attributes:
            spec.validate()
        codes = [a.code for a in attributes]
        duplicated = sorted({c for c in codes if codes.count(c) > 1})
        if duplicated:
            raise ValueError(f"duplicate attribute codes in the schema: {duplicated}")
        values = [v for a in attributes for v in a.scale] or [0]
        offset, width = min(values), max(values) - min(values) + 1
        shape = (len(attributes), width)
        label = np.full(shape, -1, dtype=np.int64)
        bucket_value = np.zeros(shape, dtype=np.int64)
        risk = np.full(shape, np.nan)
        normalised = np.full(shape, np.nan)
        for i, spec in enumerate(attributes):
            top = max(spec.scale)
            for position, value in enumerate(spec.scale):
                label[i, value - offset] = position
                bucket_value[i, value - offset] = spec.bucket.get(value, value)
                if spec.risk is not None:
                    risk[i, value - offset] = float(spec.risk[value])
                if top > 0:
                    normalised[i, value - offset] = value / top
        on_scale = label >= 0
        _, compact = np.unique(bucket_value[on_scale], return_inverse=True)
        bucket = np.full(shape, -1, dtype=np.int64)
        bucket[on_scale] = compact
        n_labels = max((len(a.scale) for a in attributes), default=1)
        return cls(attributes, offset, label, bucket, risk, normalised, n_labels)


@dataclass(frozen=True)
class Keys:
    """Unit/turn/conversation numbering shared by judgments and spans."""

    datasets: list[str]
    models: list[str]  # includes "" (turn- and conversation-level units)
    conversation_dataset: np.ndarray  # per conversation id
    conversation_name: list[str]  # per conversation id (external id)
    turn_conversation: np.ndarray  # per turn id
    turn_index: np.ndarray  # per turn id (0 for conversation-level units)
    unit_turn: np.ndarray  # per unit id
    unit_model: np.ndarray  # per unit id (code into models)

    @property
    def empty_model(self) -> int:
        return self.models.index("") if "" in self.models else -1


@dataclass(frozen=True)
class Judgments:
    """Encoded judgment rows (after dropping uninterpretable rows and duplicates)."""

    round: np.ndarray  # code into rounds
    coder: np.ndarray  # code into coders, GOLD for gold rows
    attribute: np.ndarray
    score: np.ndarray  # raw score
    label: np.ndarray  # position on the attribute's scale
    bucket: np.ndarray  # compact bucket code
    unit: np.ndarray

    def __len__(self) -> int:
        return len(self.round)


@dataclass(frozen=True)
class Spans:
    round: np.ndarray
    coder: np.ndarray  # GOLD for gold rows
    attribute: np.ndarray
    unit: np.ndarray
    start: np.ndarray
    end: np.ndarray
    subcategory: np.ndarray  # code into subcategories


@dataclass(frozen=True)
class Encoded:
    schema: Schema
    rounds: list[str]
    coders: list[str]
    subcategories: list[str]
    keys: Keys
    judgments: Judgments
    spans: Spans | None
    dropped: dict[str, int]


def _column(table: object, name: str) -> np.ndarray:
    return np.asarray(getattr(table, name))


def _recode(names: list[str], codes: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Renumber codes into ``names`` over the names actually used, in sorted order (what ``factorize`` of the
    decoded strings would give)."""
    return factorize(Categorical(codes, names))


def encode(attributes: Sequence[AttributeSpec], judgments: JudgmentTable, spans: SpanTable | None) -> Encoded:
    schema = Schema.build(attributes)
    check_columns(judgments, "judgments")
    if spans is not None:
        check_columns(spans, "spans")
    n = len(judgments.round)
    tables: list[JudgmentTable | SpanTable] = [judgments] if spans is None else [judgments, spans]

    def joined(name: str) -> tuple[list[str], np.ndarray]:
        return factorize_many([getattr(t, name) for t in tables])

    attribute_names, attribute_codes = joined("attribute")
    to_schema = np.array([schema.codes.index(c) if c in schema.codes else -1 for c in attribute_names] or [-1])
    attribute = to_schema[attribute_codes] if len(attribute_codes) else attribute_codes
    # index -1 (attribute not in the schema) lands on the trailing placeholder; those rows are dropped below
    # the unit of each row's attribute as an integer code (a lookup per row, not a string comparison per row)
    unit_kinds = sorted({a.unit for a in schema.attributes} | {"response"})
    unit_of_attribute = np.array([unit_kinds.index(a.unit) for a in schema.attributes] + [unit_kinds.index("response")])
    unit_kind = unit_of_attribute[attribute]
    is_response = unit_kind == unit_kinds.index("response")
    is_conversation = unit_kind == (unit_kinds.index("conversation") if "conversation" in unit_kinds else -1)

    rounds, round_code = joined("round")
    is_gold = np.concatenate([_column(t, "is_gold").astype(bool) for t in tables])
    named_coders, coder_code = joined("coder")
    # coder names that appear only on gold rows are not coders; renumber over non-gold names only
    used = np.bincount(coder_code[~is_gold], minlength=len(named_coders))
    non_gold_names = sorted({named_coders[c] for c in np.flatnonzero(used).tolist()})
    rename = np.array([non_gold_names.index(c) if c in non_gold_names else GOLD for c in named_coders] or [GOLD])
    coder = np.where(is_gold, GOLD, rename[coder_code] if len(coder_code) else coder_code)

    model_names, raw_model_code = joined("model")
    if "" not in model_names:
        model_names = [*model_names, ""]
    models, model_code = _recode(model_names, np.where(is_response, raw_model_code, model_names.index("")))
    datasets, dataset_code = joined("dataset")
    conversation_names, conversation_code = joined("conversation")
    turn_parts = [t.turn for t in tables]
    if all(isinstance(p, np.ndarray) and p.dtype.kind in "iu" for p in turn_parts):
        turns = np.concatenate(turn_parts).astype(np.int64)
    else:  # a conversation-level row may carry no turn
        turns = np.asarray([0 if v is None else v for p in turn_parts for v in np.asarray(p).tolist()], dtype=np.int64)
    turn_number = np.where(is_conversation, 0, turns)

    conversation, conversation_first = dense_ids(dataset_code, conversation_code)
    turn, turn_first = dense_ids(conversation, turn_number)
    unit, unit_first = dense_ids(turn, model_code)
    keys = Keys(
        datasets=datasets,
        models=models,
        conversation_dataset=dataset_code[conversation_first],
        conversation_name=[conversation_names[c] for c in conversation_code[conversation_first].tolist()],
        turn_conversation=conversation[turn_first],
        turn_index=turn_number[turn_first],
        unit_turn=turn[unit_first],
        unit_model=model_code[unit_first],
    )

    j = slice(0, n)
    # a null or fractional score cannot be on any integer scale: it becomes an off-scale row, not a crash
    raw_score = np.asarray(_column(judgments, "score"), dtype=float)
    integral = np.isfinite(raw_score) & (raw_score == np.round(raw_score))
    score = np.where(integral, raw_score, schema.offset - 1).astype(np.int64)
    column = score - schema.offset
    width = schema.label.shape[1]
    in_range = (column >= 0) & (column < width) & (attribute[j] >= 0)
    safe_column = np.clip(column, 0, width - 1)
    # unknown attributes (-1) look up a trailing all-invalid row, so the lookup never goes out of bounds
    safe_attribute = np.where(attribute[j] >= 0, attribute[j], len(schema.attributes))
    invalid_row = np.full((1, width), -1, dtype=np.int64)
    label_table = np.vstack([schema.label, invalid_row])
    bucket_table = np.vstack([schema.bucket, invalid_row])
    label = np.where(in_range, label_table[safe_attribute, safe_column], -1)
    unknown_attribute = int((attribute[j] < 0).sum())
    off_scale = int(((label < 0) & (attribute[j] >= 0)).sum())
    keep = np.flatnonzero(label >= 0)
    # a re-coded judgment keeps its last row; gold rows of one round share one pseudo-coder
    dedupe_key = dense_ids(round_code[j][keep], coder[j][keep] + 1, unit[j][keep], attribute[j][keep])[0]
    keep = keep[keep_last(dedupe_key)]
    encoded_judgments = Judgments(
        round=round_code[j][keep],
        coder=coder[j][keep],
        attribute=attribute[j][keep],
        score=score[keep],
        label=label[keep],
        bucket=bucket_table[safe_attribute[keep], safe_column[keep]],
        unit=unit[j][keep],
    )
    dropped = {
        "unknown_attribute": unknown_attribute,
        "off_scale": off_scale,
        "duplicate": int(n - unknown_attribute - off_scale - len(keep)),
    }

    encoded_spans = None
    subcategories: list[str] = []
    if spans is not None:
        s = slice(n, None)
        subcategories, subcategory_code = factorize(spans.subcategory)
        start = np.asarray(_column(spans, "start"), dtype=np.int64)
        end = np.asarray(_column(spans, "end"), dtype=np.int64)
        usable = np.flatnonzero((attribute[s] >= 0) & (end > start) & (start >= 0))
        dropped["span_unusable"] = int(len(start) - len(usable))
        encoded_spans = Spans(
            round=round_code[s][usable],
            coder=coder[s][usable],
            attribute=attribute[s][usable],
            unit=unit[s][usable],
            start=start[usable],
            end=end[usable],
            subcategory=subcategory_code[usable],
        )
    return Encoded(schema, rounds, non_gold_names, subcategories, keys, encoded_judgments, encoded_spans, dropped)
