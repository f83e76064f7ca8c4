"""Synthetic LongCounsel-8 studies at any size (``generate_lc8_synthetic``), clearly labelled as such, for demos,
load tests and the LC8 benchmark (``perf/lc8_report.py``).

A trajectory is one fictional client's ``S`` counseling sessions (placeholder turns marked [SYNTHETIC]). Its
reference PHQ-8 state is drawn per session from one of four shapes — improving, worsening, fluctuating, stable —
and written as the labels of a reference coder (items and the derived total). Methods predict the total per
session and seed as floats, never rounded or clipped, each with its own error profile (bias, noise, lag behind
the reference, shrinkage towards the client's mean): the first, a lagging method, has a lower current-score MAE
than the second, a biased tracker, but a far worse direction accuracy (magnitude against direction). The ranking's
reversals compare change MAE with direction accuracy, and by change MAE the lagging method is the worse of the two
as well; with four methods the shrunk and the noisy ones make the reversal. Optionally human raters code the
items of a subset of sessions (judgments, unit ``session``, in the main round).

The numbers are this module's own numpy draws (annotation may not import metrics). Rows are written set-based,
the large tables by COPY (a 7,749-trajectory study has about 800,000 session labels). Attribute roles come from
the schema's ``lc8`` block, never from codes written here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, cast

import numpy as np
from django.contrib.auth.models import User
from django.db import connection, models, transaction
from django.utils import timezone

from access import roles
from access.services import user_ensure
from annotation import automated_coders, services
from annotation.kinds import block_of
from annotation.models import (
    Assignment,
    AttributeDefinition,
    Judgment,
    JudgmentRevision,
    Round,
    Schema,
    SessionLabel,
    Study,
    StudyMember,
)
from benchmark.models import Conversation, Dataset, ModelResponse, Session, Turn
from lc8.assign import first_turns
from lc8.kind import LC8

SCHEMA = "lc8-v1"
DATASET = "LC8-synthetic"
SLOT = "Counselor"
TYPES = ("improving", "worsening", "fluctuating", "stable")
# Shares of the drawn shapes (the reference type is what the trajectory-type rule, docs/lc8-metrics.md#definitions,
# says of the drawn series, which a noisy series can change).
TYPE_SHARES = (0.35, 0.2, 0.2, 0.25)


@dataclass(frozen=True)
class MethodProfile:
    """A method's error: ŷ = c + (1 − shrink)·(((1 − lag)·y_t + lag·y_{t−1}) − c) + bias + N(0, sd²), with c the
    trajectory's mean reference total; per seed a small extra bias N(0, 0.2²)."""

    name: str
    bias: float = 0.0
    sd: float = 1.0
    lag: float = 0.0
    shrink: float = 0.0


PROFILES = (
    MethodProfile("lagging", bias=0.0, sd=2.0, lag=0.7),  # low MAE, poor direction
    MethodProfile("biased-tracker", bias=3.0, sd=2.2),  # higher MAE, near-perfect direction
    MethodProfile("shrunk", bias=0.3, sd=1.6, shrink=0.7),
    MethodProfile("noisy", bias=-0.5, sd=3.5),
)


# --- the schema and its roles -------------------------------------------------------------------------------


def lc8_schema_ensure() -> Schema:
    """The ``lc8-v1`` schema (installed by migration annotation 0015)."""
    return Schema.objects.get(slug=SCHEMA)


def lc8_attributes(schema: Schema) -> tuple[list[AttributeDefinition], AttributeDefinition]:
    """(the item attributes in the block's order, the total attribute) of an LC8 schema."""
    block = block_of(schema, LC8)
    if block is None:
        raise ValueError(f"schema {schema.slug} has no lc8 block: not a session-rated PHQ study")
    by_code = {a.code: a for a in schema.attributes.all()}
    return [by_code[code] for code in block["items"]], by_code[block["total"]]


# --- the numbers -------------------------------------------------------------------------------------------


def trajectory_types(totals: np.ndarray, *, large: int = 5) -> np.ndarray:
    """The ordered trajectory-type rule (docs/lc8-metrics.md#definitions) per row of ``totals`` (n × S): index into
    ``TYPES``."""
    delta = totals[:, -1] - totals[:, 0]
    spread = totals.max(axis=1) - totals.min(axis=1)
    return np.where(delta <= -large, 0, np.where(delta >= large, 1, np.where(spread >= large, 2, 3)))


def draw_reference(n: int, sessions: int, rng: np.random.Generator, *, top: int = 24) -> np.ndarray:
    """Reference totals (n × sessions, whole numbers 0..top): improving, worsening, fluctuating (alternating) and
    stable shapes in ``TYPE_SHARES``, with session noise."""
    shape = rng.choice(len(TYPES), size=n, p=TYPE_SHARES)
    t = np.linspace(0.0, 1.0, sessions)
    y = np.empty((n, sessions))
    for kind in range(len(TYPES)):
        rows = shape == kind
        k = int(rows.sum())
        if kind == 0:
            y[rows] = rng.uniform(13, 22, k)[:, None] - rng.uniform(6, 13, k)[:, None] * t
        elif kind == 1:
            y[rows] = rng.uniform(2, 11, k)[:, None] + rng.uniform(6, 13, k)[:, None] * t
        elif kind == 2:
            swing = rng.uniform(3, 5.5, k) * np.where(rng.random(k) < 0.5, -1, 1)
            y[rows] = rng.uniform(7, 15, k)[:, None] + swing[:, None] * np.where(np.arange(sessions) % 2, 1, -1)
        else:
            y[rows] = rng.uniform(3, 20, k)[:, None]
        y[rows] += rng.normal(0, 0.9 if kind == 3 else 1.0, (k, sessions))
    return np.clip(np.rint(y), 0, top).astype(np.int64)


def items_from_totals(totals: np.ndarray, n_items: int, rng: np.random.Generator, *, top: int = 3) -> np.ndarray:
    """Item scores (… × n_items, whole numbers 0..top) summing to each total: an even share, the remainder on
    randomly chosen items, then random one-point moves between items where the scale allows."""
    flat = totals.reshape(-1)
    base, rest = np.divmod(flat, n_items)
    rank = np.argsort(rng.random((flat.size, n_items)), axis=1).argsort(axis=1)
    items = base[:, None] + (rank < rest[:, None])
    for _ in range(2):
        give, take = rng.integers(0, n_items, flat.size), rng.integers(0, n_items, flat.size)
        rows = np.arange(flat.size)
        ok = (give != take) & (items[rows, give] > 0) & (items[rows, take] < top)
        items[rows[ok], give[ok]] -= 1
        items[rows[ok], take[ok]] += 1
    return items.reshape(*totals.shape, n_items)


def predict(totals: np.ndarray, profile: MethodProfile, rng: np.random.Generator) -> np.ndarray:
    """One seed's predictions (floats, not rounded, not clipped) of ``totals`` under ``profile``."""
    y = totals.astype(float)
    previous = np.concatenate([y[:, :1], y[:, :-1]], axis=1)
    level = (1 - profile.lag) * y + profile.lag * previous
    centre = y.mean(axis=1, keepdims=True)
    level = centre + (1 - profile.shrink) * (level - centre)
    return level + profile.bias + rng.normal(0, 0.2) + rng.normal(0, profile.sd, y.shape)


# --- set-based writes ----------------------------------------------------------------------------------------


def copy_rows(model: type[models.Model], columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
    """Insert ``rows`` (values for the fields ``columns``, by attname) into ``model``'s table in one COPY. Returns
    how many."""
    n = 0
    quote = connection.ops.quote_name
    table = quote(model._meta.db_table)
    column_of = {f.attname: str(f.column) for f in model._meta.concrete_fields}
    names = ", ".join(quote(column_of[c]) for c in columns)
    with connection.cursor() as cursor, cursor.cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)
            n += 1
    return n


@dataclass
class TrajectoryText:
    """One trajectory to write: its id, title and sessions, each a list of (client text, counselor text)."""

    external_id: str
    title: str
    sessions: list[list[tuple[str, str]]]
    topic: str = "Depression"


def trajectories_write(*, study: Study, dataset: str, trajectories: Sequence[TrajectoryText],
                       model_slot: str = SLOT, model_version: str = "synthetic") -> tuple[np.ndarray, np.ndarray]:
    """Write longitudinal conversations owned by ``study`` (set-based), each session of kind ``counseling`` with
    its turns (numbered through the whole trajectory) and the counselor's reply under ``model_slot``. Returns the
    conversation ids (n) and the session ids (n × S), in trajectory and session order."""
    now = timezone.now()
    data, _ = Dataset.objects.get_or_create(name=dataset)
    conversations = Conversation.objects.bulk_create(
        [Conversation(dataset=data, external_id=t.external_id, kind=Conversation.Kind.LONGITUDINAL, topic=t.topic,
                      complexity=None, title=t.title, is_synthetic=study.is_synthetic, study=study)
         for t in trajectories], batch_size=10000)
    ids = [c.pk for c in conversations]
    copy_rows(Session, ("conversation_id", "index", "kind", "crisis_type"),
              ((cid, s, Session.Kind.COUNSELING, None) for cid, t in zip(ids, trajectories, strict=True)
               for s in range(1, len(t.sessions) + 1)))
    session_of = {(c, i): pk for pk, c, i in
                  Session.objects.filter(conversation_id__in=ids).values_list("pk", "conversation_id", "index")}

    def turns() -> Iterable[tuple]:
        for cid, t in zip(ids, trajectories, strict=True):
            index = 0
            for s, session in enumerate(t.sessions, start=1):
                for client, _ in session:
                    index += 1
                    yield cid, session_of[(cid, s)], index, client, ""

    copy_rows(Turn, ("conversation_id", "session_id", "index", "client_text", "therapist_reference"), turns())
    turn_of = {(c, i): pk for pk, c, i in
               Turn.objects.filter(conversation_id__in=ids).values_list("pk", "conversation_id", "index")}

    def replies() -> Iterable[tuple]:
        for cid, t in zip(ids, trajectories, strict=True):
            texts = [reply for session in t.sessions for _, reply in session]
            for index, reply in enumerate(texts, start=1):
                yield turn_of[(cid, index)], model_slot, model_version, reply, now, now

    copy_rows(ModelResponse, ("turn_id", "model_slot", "model_version", "text", "created_at", "updated_at"),
              replies())
    return np.array(ids, dtype=np.int64), np.array([[session_of[(cid, s)] for s in range(1, len(t.sessions) + 1)]
                                                    for cid, t in zip(ids, trajectories, strict=True)],
                                                   dtype=np.int64)


def session_labels_write(*, study: Study, coder: StudyMember, seed: int | None, session_ids: np.ndarray,
                         attribute: AttributeDefinition, values: np.ndarray) -> int:
    """One coder's values (floats, stored exactly) of one attribute for the sessions ``session_ids`` (same shape)."""
    now = timezone.now()
    flat_ids, flat_values = session_ids.reshape(-1).tolist(), values.reshape(-1).tolist()
    # COPY's text form written directly (a row object per label costs most of the time at 800,000 labels);
    # repr of a float is its shortest exact form, which PostgreSQL reads back to the same double.
    quote = connection.ops.quote_name
    column_of = {f.attname: str(f.column) for f in SessionLabel._meta.concrete_fields}
    names = ", ".join(quote(column_of[c]) for c in ("study_id", "coder_id", "seed", "session_id",
                                                     "attribute_id", "value", "created_at", "updated_at"))
    null = "\\N"  # COPY's NULL
    head = f"{study.pk}\t{coder.pk}\t{null if seed is None else int(seed)}\t"
    tail, attribute_id = f"\t{now.isoformat()}\t{now.isoformat()}\n", attribute.pk
    with connection.cursor() as cursor, cursor.cursor.copy(
            f"COPY {quote(SessionLabel._meta.db_table)} ({names}) FROM STDIN") as copy:
        for start in range(0, len(flat_ids), 50000):
            copy.write("".join(f"{head}{sid}\t{attribute_id}\t{float(v)!r}{tail}" for sid, v in
                               zip(flat_ids[start:start + 50000], flat_values[start:start + 50000],
                                   strict=True)))
    return len(flat_ids)


def reference_labels_write(*, study: Study, coder: StudyMember, session_ids: np.ndarray, items: np.ndarray,
                           item_attributes: Sequence[AttributeDefinition], total: AttributeDefinition) -> int:
    """The reference coder's item labels (n × S × items) and their sum as the total."""
    n = sum(session_labels_write(study=study, coder=coder, seed=None, session_ids=session_ids, attribute=attribute,
                                 values=items[..., k].astype(float))
            for k, attribute in enumerate(item_attributes))
    return n + session_labels_write(study=study, coder=coder, seed=None, session_ids=session_ids, attribute=total,
                                    values=items.sum(axis=-1).astype(float))


# --- the generator -------------------------------------------------------------------------------------------


@dataclass
class Lc8SyntheticSpec:
    trajectories: int
    sessions: int = 5
    methods: int = 2
    seeds: int = 3
    turns_per_session: int = 2
    raters: int = 0
    rated_trajectories: int = 100
    rater_accuracy: float = 0.75
    seed: int = 0
    slug: str | None = None


@dataclass
class Lc8SyntheticResult:
    study: Study
    trajectories: int
    sessions: int
    turns: int
    reference_labels: int
    predictions: int
    judgments: int
    reference_types: dict[str, int] = field(default_factory=dict)
    methods: list[str] = field(default_factory=list)


def _check(spec: Lc8SyntheticSpec) -> None:
    bad = {"trajectories": spec.trajectories >= 1, "sessions": spec.sessions >= 2, "methods": spec.methods >= 0,
           "seeds": spec.seeds >= 1, "turns-per-session": spec.turns_per_session >= 1, "raters": spec.raters >= 0,
           "rated-trajectories": spec.rated_trajectories >= 0, "rater-accuracy": 0 <= spec.rater_accuracy <= 1}
    wrong = [name for name, ok in bad.items() if not ok]
    if wrong:
        raise ValueError(f"out of range: --{', --'.join(wrong)}")


def _placeholder_texts(slug: str, n: int, sessions: int, turns: int) -> list[TrajectoryText]:
    return [TrajectoryText(
        external_id=f"{slug}-{i:05d}",
        title=f"[SYNTHETIC] generated trajectory {i} (placeholder text, not a real client)",
        sessions=[[(f"[SYNTHETIC] client message {t} (session {s})",
                    f"[SYNTHETIC] counselor reply {t} (session {s}).") for t in range(1, turns + 1)]
                  for s in range(1, sessions + 1)],
    ) for i in range(1, n + 1)]


def _rater_items(items: np.ndarray, accuracy: float, rng: np.random.Generator, *, top: int) -> np.ndarray:
    """A rater's copy of the reference items: exact at ``accuracy``, otherwise one point off (on the scale)."""
    miss = rng.random(items.shape) >= accuracy
    moved = items + np.where(rng.random(items.shape) < 0.5, -1, 1)
    moved = np.where(moved < 0, items + 1, np.where(moved > top, items - 1, moved))
    return np.where(miss, moved, items)


def _rater_judgments(*, study: Study, main: Round, raters: list[User], conversation_ids: np.ndarray,
                     session_ids: np.ndarray, items: np.ndarray, item_attributes: Sequence[AttributeDefinition],
                     accuracy: float, rng: np.random.Generator) -> int:
    """Every rater's item judgments (unit session) of the given sessions, their history, and one completed
    session assignment each (keyed by the session's first turn)."""
    if not raters or session_ids.size == 0:
        return 0
    now = timezone.now()
    top = int(item_attributes[0].scale_max)
    coded = {r.pk: _rater_items(items, accuracy, rng, top=top) for r in raters}
    n, sessions = session_ids.shape
    rows = [(main.pk, rater.pk, False, attribute.pk, int(conversation_ids[i]), int(session_ids[i, s]), None, None,
             int(coded[rater.pk][i, s, k]), None, 1, "", now, now)
            for rater in raters for i in range(n) for s in range(sessions)
            for k, attribute in enumerate(item_attributes)]
    columns = ("round_id", "coder_id", "is_gold", "attribute_id", "conversation_id", "session_id", "turn_id",
               "response_id", "score", "instance_count", "version", "note", "created_at", "updated_at")
    copy_rows(Judgment, columns, rows)
    # read before the history's COPY starts: no other query may run on the connection during a COPY
    saved = list(Judgment.objects.filter(round=main, coder__in=raters).values_list("pk", "score"))
    services.revisions_start(
        created=((cast("Judgment", SimpleNamespace(pk=pk, version=1, note="", is_gold=False, score=score,
                                                   instance_count=None)), ()) for pk, score in saved),
        by=None, source=JudgmentRevision.Source.IMPORT)
    first = first_turns(list(Session.objects.filter(pk__in=session_ids.reshape(-1).tolist())))
    Assignment.objects.bulk_create(
        [Assignment(round=main, coder=rater, turn=first[int(sid)], position=p, completed_at=now)
         for rater in raters for p, sid in enumerate(session_ids.reshape(-1).tolist(), start=1)], batch_size=10000)
    return len(rows)


@transaction.atomic
def lc8_synthetic_build(spec: Lc8SyntheticSpec) -> Lc8SyntheticResult:
    """A clearly labelled synthetic LC8 study (see the module docstring). Refuses an existing slug."""
    _check(spec)
    slug = spec.slug or f"lc8-synthetic-{spec.seed}"
    services.study_slug_check(slug=slug)  # before any account is made under its name
    if Study.objects.filter(slug=slug).exists():
        raise ValueError(f"study {slug!r} exists already; choose another --slug or --seed")
    rng = np.random.default_rng(spec.seed)
    schema = lc8_schema_ensure()
    item_attributes, total = lc8_attributes(schema)
    most = int((block_of(schema, LC8) or {})["sessions"])
    if spec.sessions > most:  # the section places session i in column i: a sixth makes it unavailable
        raise ValueError(f"out of range: --sessions {spec.sessions}; a trajectory of {schema.slug} has at most "
                         f"{most} (the sessions of its lc8 block)")
    top = int(item_attributes[0].scale_max)
    totals = draw_reference(spec.trajectories, spec.sessions, rng, top=top * len(item_attributes))
    items = items_from_totals(totals, len(item_attributes), rng, top=top)

    admin = user_ensure(username=f"{slug}-admin", role=roles.ADMIN)
    study = services.study_create(
        slug=slug, name=f"[SYNTHETIC] LC8, seed {spec.seed}, {spec.trajectories} trajectories", schema=schema,
        model_slots=[SLOT], by=admin, is_synthetic=True,
        description="Generated by generate_lc8_synthetic: not real clients, not real counselors, not real methods "
                    "or raters; the reference PHQ-8 states are drawn, not measured.",
    )
    conversation_ids, session_ids = trajectories_write(study=study, dataset=DATASET, trajectories=_placeholder_texts(
        slug, spec.trajectories, spec.sessions, spec.turns_per_session))
    reference = automated_coders.reference_register(study=study, name=f"{slug}-reference", by=admin)
    n_reference = reference_labels_write(study=study, coder=reference, session_ids=session_ids, items=items,
                                         item_attributes=item_attributes, total=total)
    n_predictions, names = 0, []
    for m in range(spec.methods):
        profile = PROFILES[m % len(PROFILES)]
        name = f"{slug}-m{m + 1}-{profile.name}"
        member = automated_coders.method_register(study=study, name=name, version="synthetic", prompt_id=profile.name,
                                                  by=admin)
        names.append(name)
        for seed in range(spec.seeds):
            n_predictions += session_labels_write(study=study, coder=member, seed=seed, session_ids=session_ids,
                                                  attribute=total, values=predict(totals, profile, rng))

    main = services.round_ensure(study=study, kind=Round.Kind.MAIN, by=admin)
    raters = [user_ensure(username=f"{slug}-r{i:02d}", role=roles.REVIEWER) for i in range(1, spec.raters + 1)]
    for user in raters:
        services.study_member_add(study=study, user=user, role=StudyMember.Role.REVIEWER, by=admin)
    services.round_open(round=main, by=admin)
    rated = min(spec.rated_trajectories, spec.trajectories)
    n_judgments = _rater_judgments(study=study, main=main, raters=raters, conversation_ids=conversation_ids[:rated],
                                   session_ids=session_ids[:rated], items=items[:rated],
                                   item_attributes=item_attributes, accuracy=spec.rater_accuracy, rng=rng)
    study.refresh_from_db()
    kinds = np.bincount(trajectory_types(totals), minlength=len(TYPES))
    return Lc8SyntheticResult(
        study=study, trajectories=spec.trajectories, sessions=int(session_ids.size),
        turns=int(session_ids.size) * spec.turns_per_session, reference_labels=n_reference,
        predictions=n_predictions, judgments=n_judgments,
        reference_types={name: int(k) for name, k in zip(TYPES, kinds, strict=True)}, methods=names,
    )
