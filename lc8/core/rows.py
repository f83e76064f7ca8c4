"""The rows a LongCounsel-8 study's report section reads, as plain values and numpy columns, and the one function that
turns them into the core's arrays (``lc8_inputs_from_rows``): the server's loader (``lc8.inputs``) fills
``Lc8Rows`` from the database, the recompute of a study bundle (``metrics.core.recompute``) from the bundle's
``data/lc8_*.csv`` and ``run.json`` (docs/bundle.md#recompute), so both hand ``lc8_report`` the same arrays.

The choices (trajectories, the reference, methods and people, what is left out) are listed in
``lc8.inputs``; their code is here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from common.cells import unneutralise
from metrics.core.grown_sessions import KEY as GROWN
from metrics.core.grown_sessions import grown_entry, grown_read
from metrics.core.history_names import history_names
from metrics.core.section_csv import csv_rows
from metrics.core.tables import ReportParams

from .tracking import CoderLabels, Lc8Rules, Lc8Study, lc8_report

REFERENCE, METHOD = "reference", "method"
FORMER = "former member"
# Why a session label or a judgment of the study is left out of the lc8 section (``lc8.input``), in this order.
LABELS_DROPPED = ("not_an_item", "other_coder", "not_a_trajectory", "reference_seed", "unavailable")
JUDGMENTS_DROPPED = ("unscored", "gold", "not_a_session", "not_an_item", "method", "not_a_trajectory", "recoded",
                     "unavailable")
# The rows in a study bundle (docs/bundle.md#what-each-kind-gets): three CSVs, and the block, the schema's slug, the
# item and total codes it has and the members in run.json's "lc8".
SESSIONS_FILE = "data/lc8_sessions.csv"
LABELS_FILE = "data/lc8_labels.csv"
JUDGMENTS_FILE = "data/lc8_judgments.csv"
SESSIONS_COLUMNS = ("dataset", "conversation_id", "session_index")
LABELS_COLUMNS = ("coder", "seed", "session", "attribute", "value")
JUDGMENTS_COLUMNS = ("coder", "is_gold", "session", "attribute", "score")


class Lc8Unavailable(ValueError):
    """The study cannot be measured yet (no reference coder, no trajectory): the section says why."""


@dataclass(frozen=True)
class Lc8Rows:
    """``sessions``: the sessions of the study's longitudinal conversations, (dataset, the trajectory's name: its
    conversation id, or DATASET/ID when two trajectories share the id, index), in conversation order then index.
    Labels (one array each, a row per session label of the study, by coder, seed, session, attribute and value: the
    server's order, whatever order the database gave them in): ``label_coder`` indexes ``members`` (-1: none
    of them), ``label_seed`` (None as 0 with ``label_seedless``),
    ``label_session`` indexes ``sessions`` (-1: a session of no trajectory), ``label_attribute`` indexes
    ``block["items"]`` then the total (-1: neither), ``label_value``. ``judgments``, in round order (the one that
    counts of a coder's session and item last: ``annotation.selectors.judgments_in_round_order``): (coder name, gold,
    session (None: not on a session; -1: of no trajectory; else an index of ``sessions``), item column (-1: not an
    item), score (None: not scored))."""

    block: Mapping[str, Any]
    study: str  # the study's and its schema's slugs, named in what the section says
    schema: str
    codes: Sequence[str]  # which of the block's items and total are attributes of the schema
    members: Sequence[tuple[str, str]]  # (username, role) of who is or was a member (the role they had), by username
    sessions: Sequence[tuple[str, str, int]]
    label_coder: np.ndarray
    label_seed: np.ndarray
    label_seedless: np.ndarray
    label_session: np.ndarray
    label_attribute: np.ndarray
    label_value: np.ndarray
    judgments: Sequence[tuple[str, bool, int | None, int, int | None]]
    # the sessions that took a reply after the study first rated them (trajectory name -> session indexes, those with
    # any: ``annotation.selectors.sessions_grown_after_coding``), which the section counts as rated all the same
    grown: Mapping[str, tuple[int, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Lc8Inputs:
    study: Lc8Study
    reference_name: str
    # coder name -> the member's role, or the one they had when taken off (method, reference, reviewer, expert;
    # "former member" for a coder of judgments who is no member and whose role was not kept)
    roles: dict[str, str]
    # the report's lc8.input: trajectories, the labels and judgments read, used, and left out by reason
    input: dict[str, Any] = field(default_factory=dict)


@dataclass
class Counts:
    """What the section read and left out (``lc8.input``)."""

    labels: int = 0
    labels_dropped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(LABELS_DROPPED, 0))
    judgments: int = 0
    dropped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(JUDGMENTS_DROPPED, 0))

    def input(self, trajectories: int) -> dict[str, Any]:
        return {"trajectories": trajectories,
                "labels": self.labels, "labels_used": self.labels - sum(self.labels_dropped.values()),
                "labels_dropped": dict(self.labels_dropped),
                "judgments": self.judgments, "used": self.judgments - sum(self.dropped.values()),
                "dropped": dict(self.dropped)}


def item_codes(block: Mapping[str, Any]) -> tuple[list[str], str | None]:
    """(the block's items, in order; its total or None)."""
    total = block.get("total")
    return [str(code) for code in block.get("items") or []], str(total) if total else None


@dataclass
class _Grid:
    names: list[str]
    position: np.ndarray  # session (index of rows.sessions) -> (row, column)
    width: int

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.names), self.width


def _grid(rows: Lc8Rows, width: int) -> _Grid:
    index: dict[tuple[str, str], int] = {}
    keys: list[tuple[str, str]] = []
    position = np.zeros((len(rows.sessions), 2), dtype=np.int64)
    for at, (dataset, name, session) in enumerate(rows.sessions):
        if not 1 <= session <= width:
            raise ValueError(f"trajectory {name}: session {session} is outside 1..{width} (the lc8 block's sessions)")
        if (dataset, name) not in index:
            index[(dataset, name)] = len(keys)
            keys.append((dataset, name))
        position[at] = (index[(dataset, name)], session - 1)
    # The loader names the trajectories; a bundle written before it did may hold one id in two datasets, named here
    # by the same rule (the names the loader gives it leaves as they are).
    names = history_names(keys)
    return _Grid([names[key] for key in keys], position, width)


def _session_labels(rows: Lc8Rows, grid: _Grid, items: int, total: str | None,
                    counts: Counts) -> dict[tuple[int, int | None], tuple[Any, Any, int]]:
    """(member, seed) -> (totals (n, S), items (n, S, K) or None, how many label rows) of the reference and method
    members' labels: the total is the typed one, else the sum of the items when every item is there."""
    coder, seed, seedless = rows.label_coder, rows.label_seed, rows.label_seedless.astype(np.int64)
    session, attribute, value = rows.label_session, rows.label_attribute, rows.label_value
    roles = np.array([role in (REFERENCE, METHOD) for _name, role in rows.members] + [False], dtype=bool)
    an_item = attribute >= 0
    a_label_coder = roles[coder]  # -1: the appended False
    found = session >= 0
    counts.labels += len(coder)
    counts.labels_dropped["not_an_item"] += int((~an_item).sum())
    counts.labels_dropped["other_coder"] += int((an_item & ~a_label_coder).sum())
    counts.labels_dropped["not_a_trajectory"] += int((an_item & a_label_coder & ~found).sum())
    found &= an_item & a_label_coder
    r, c = grid.position[session[found], 0], grid.position[session[found], 1]
    coder, seed, seedless, attribute, value = coder[found], seed[found], seedless[found], attribute[found], value[found]
    is_total = attribute == (items if total is not None else -1)
    labels: dict[tuple[int, int | None], tuple[Any, Any, int]] = {}
    for member, seed_value, no_seed in sorted({(int(m), int(s), int(z)) for m, s, z in
                                               np.unique(np.column_stack([coder, seed, seedless]), axis=0)}):
        mine = (coder == member) & (seed == seed_value) & (seedless == no_seed)
        totals = np.full(grid.shape, np.nan)
        typed = mine & is_total
        totals[r[typed], c[typed]] = value[typed]
        given = mine & ~is_total
        coded = None
        if given.any():
            coded = np.full((*grid.shape, items), np.nan)
            coded[r[given], c[given], attribute[given]] = value[given]
            missing = np.isnan(totals)
            totals[missing] = coded.sum(axis=2)[missing]  # NaN unless every item is there
        labels[(member, None if no_seed else seed_value)] = (totals, coded, int(mine.sum()))
    return labels


def _people_labels(rows: Lc8Rows, grid: _Grid, items: int, counts: Counts) -> dict[str, Any]:
    """name -> items (n, S, K) of every person with non-gold session judgments on the items (methods' judgments
    left out): the later judgment of a session kept."""
    methods = {name for name, role in rows.members if role == METHOD}
    latest: dict[tuple[str, int, int], int] = {}  # in round order: a later one replaces an earlier one
    for coder, is_gold, session, column, score in rows.judgments:
        counts.judgments += 1
        if score is None:
            why: str | None = "unscored"
        elif is_gold:
            why = "gold"
        elif session is None:
            why = "not_a_session"
        elif column < 0:
            why = "not_an_item"
        elif coder in methods:
            why = "method"
        elif session < 0:
            why = "not_a_trajectory"
        else:
            why = "recoded" if (coder, session, column) in latest else None
            latest[(coder, session, column)] = score
        if why is not None:
            counts.dropped[why] += 1
    people: dict[str, np.ndarray] = {}
    for (coder, session, column), score in latest.items():
        if coder not in people:
            people[coder] = np.full((*grid.shape, items), np.nan)
        row, at = grid.position[session]
        people[coder][row, at, column] = score
    return dict(sorted(people.items()))


def _references(rows: Lc8Rows, reference: str | None) -> list[tuple[int, str]]:
    """The reference members the reference is chosen from, (index in ``rows.members``, name) by username: the one
    named, else every one."""
    references = [(at, name) for at, (name, role) in enumerate(rows.members) if role == REFERENCE]
    if reference is not None:
        chosen = [(at, name) for at, name in references if name == reference]
        if not chosen:
            raise ValueError(f"reference coder {reference!r} is not a reference member of study {rows.study}")
        return chosen
    if not references:
        raise Lc8Unavailable("the study has no reference coder (a member with role reference) yet")
    return references


def lc8_inputs_from_rows(rows: Lc8Rows, *, reference: str | None = None, conversation: str | None = None) -> Lc8Inputs:
    """The rows as the core's arrays (``lc8.inputs``' choices; ``conversation``: the rows are that one
    trajectory's). Raises ``Lc8Unavailable`` when there is no reference coder or no trajectory, ValueError for data
    the arrays cannot hold (named)."""
    one_trajectory = conversation is not None
    rules = Lc8Rules.from_block(dict(rows.block))
    items, total = item_codes(rows.block)
    missing = [code for code in items if code not in rows.codes]
    if missing or not items:
        raise ValueError(f"schema {rows.schema}: lc8.items {missing or items} are not attributes of the schema")
    references = _references(rows, reference)
    grid = _grid(rows, rules.sessions)
    if not grid.names:
        raise Lc8Unavailable("the study has no trajectory (a longitudinal conversation with sessions) yet"
                             if not one_trajectory else f"no trajectory {conversation!r} in this study")

    counts = Counts()
    labels = _session_labels(rows, grid, len(items), total if total in rows.codes else None, counts)
    coders: dict[str, CoderLabels] = {}
    roles: dict[str, str] = {}
    kept: dict[int, tuple[Any, Any]] = {}
    per_method: dict[int, dict[int | None, Any]] = defaultdict(dict)
    # A reference's labels have no seed; where it sent some under seeds, its seedless ones (else its lowest seed's)
    # are its labels, and the others are counted as left out (reference_seed).
    for (member, seed), (totals, coded, count) in sorted(labels.items(),
                                                         key=lambda g: (g[0][0], g[0][1] is not None, g[0][1] or 0)):
        if rows.members[member][1] == REFERENCE:
            if member in kept:
                counts.labels_dropped["reference_seed"] += count
            else:
                kept[member] = (totals, coded)
        else:
            per_method[member][seed] = (totals, coded)  # coded None: this seed sent none
    # the first reference with labels, else the first: a reference taken off has none (its labels keep its membership)
    reference_at, reference_name = next(((at, name) for at, name in references if at in kept), references[0])
    for member, (totals, coded) in kept.items():
        if member != reference_at:  # another label source (e.g. a self-report) compared with the reference
            name, roles[name] = rows.members[member]
            coders[name] = CoderLabels(totals={None: totals}, items=None if coded is None else {None: coded})
    method_names = []
    for member, per_seed in per_method.items():
        name, roles[name] = rows.members[member]
        ordered = sorted(per_seed.items(), key=lambda s: (s[0] is not None, s[0] or 0))
        sent = {seed: coded for seed, (_totals, coded) in ordered if coded is not None}
        coders[name] = CoderLabels(totals={seed: totals for seed, (totals, _coded) in ordered}, items=sent or None)
        method_names.append(name)
    role_of = dict(rows.members)
    for name, coded in _people_labels(rows, grid, len(items), counts).items():
        roles[name] = role_of.get(name, FORMER)
        coders[name] = CoderLabels(totals={None: coded.sum(axis=2)}, items={None: coded})

    if reference_at not in kept and not one_trajectory:
        raise Lc8Unavailable(f"the reference coder {reference_name} has no labels yet")
    reference_totals, reference_items = kept.get(reference_at) or (np.full(grid.shape, np.nan), None)
    arrays = Lc8Study(trajectories=tuple(grid.names), reference=reference_totals, reference_items=reference_items,
                      coders=dict(sorted(coders.items())), rules=rules, methods=tuple(sorted(method_names)))
    return Lc8Inputs(study=arrays, reference_name=reference_name, roles=dict(sorted(roles.items())),
                     input=counts.input(len(grid.names)))


def lc8_section_from_rows(rows: Lc8Rows, *, seed: int = 0, resamples: int = 2000, reference: str | None = None,
                          level: float = ReportParams.ci_level) -> dict[str, Any]:
    """The report's ``lc8`` section of the rows: ``lc8_report`` of their arrays (intervals at ``level``, the
    report's ``ci_level``), plus ``reference`` and ``roles``; a
    study that cannot be measured gets ``{"unavailable": why, "input": …}`` (every label and judgment left out)."""
    try:
        inputs = lc8_inputs_from_rows(rows, reference=reference)
    except ValueError as why:  # Lc8Unavailable, or data the arrays cannot hold: said, the rest of the report kept
        counts = Counts(labels=len(rows.label_coder), judgments=len(rows.judgments))
        counts.labels_dropped["unavailable"], counts.dropped["unavailable"] = counts.labels, counts.judgments
        return {"unavailable": str(why), "input": {**counts.input(len({(d, name) for d, name, _s in rows.sessions})),
                                                   **grown_entry(rows.grown)}}
    section = lc8_report(inputs.study, resamples=resamples, seed=seed, level=level)
    section["reference"] = inputs.reference_name
    section["roles"] = inputs.roles
    section["input"] = {**inputs.input, **grown_entry(rows.grown)}
    return section


# --- the rows in a study bundle ------------------------------------------------------------------------------------


def _session_cell(session: int | None) -> int | None:
    """A session as the CSVs give it: its row of lc8_sessions.csv (from 1), 0 for a session of no trajectory, None
    (empty) for no session."""
    return None if session is None else session + 1


def lc8_tables(rows: Lc8Rows) -> dict[str, tuple[Sequence[str], Iterable[Sequence[Any]]]]:
    """The rows' three CSVs (path -> (header, rows)), as the bundle writes them (``common.cells.csv_stream``)."""
    names = [name for name, _role in rows.members] + [None]  # -1: the appended None
    items, total = item_codes(rows.block)
    codes = [*items, total, None]
    labels = zip(rows.label_coder.tolist(), rows.label_seed.tolist(), rows.label_seedless.tolist(),
                 rows.label_session.tolist(), rows.label_attribute.tolist(), rows.label_value.tolist(), strict=True)
    return {
        SESSIONS_FILE: (SESSIONS_COLUMNS, rows.sessions),
        # the value as a number (``csv_cell`` writes its repr): as text, a negative one (a method's prediction, used
        # unclipped) took the formula guard's leading quote, which no reader of a number takes
        LABELS_FILE: (LABELS_COLUMNS, ((names[coder], None if seedless else seed, session + 1, codes[attribute],
                                        float(value))
                                       for coder, seed, seedless, session, attribute, value in labels)),
        JUDGMENTS_FILE: (JUDGMENTS_COLUMNS, ((coder, is_gold, _session_cell(session), codes[column], score)
                                             for coder, is_gold, session, column, score in rows.judgments)),
    }


def lc8_kind_rows(rows: Lc8Rows) -> tuple[dict[str, Any], dict[str, tuple[Sequence[str], Iterable[Sequence[Any]]]]]:
    """What a bundle holds of the rows and the input fingerprint covers (``provenance.fingerprint_rows``): run.json's
    ``lc8`` and the three CSVs."""
    return {"lc8": lc8_run_block(rows)}, lc8_tables(rows)


def lc8_run_block(rows: Lc8Rows) -> dict[str, Any]:
    """run.json's ``lc8``: the block, the study's and schema's slugs, which item and total codes are attributes of
    the schema, and the members (username, role) by username; and the sessions that grew after their rating
    (``grown_after_rating``, trajectory name -> session indexes) when there are any (every other study keeps its
    fingerprint and bundle)."""
    return {"block": dict(rows.block), "study": rows.study, "schema": rows.schema, "codes": list(rows.codes),
            "members": [list(member) for member in rows.members], **grown_entry(rows.grown)}


def lc8_rows_read(run_block: Mapping[str, Any], sessions_csv: str, labels_csv: str, judgments_csv: str) -> Lc8Rows:
    """The rows from a bundle's run.json ``lc8`` and its three CSVs (``lc8_tables``); ValueError names what is wrong
    and where."""
    try:
        block = dict(run_block["block"])
        members = [(str(name), str(role)) for name, role in run_block["members"]]
        study, schema, codes = str(run_block["study"]), str(run_block["schema"]), [str(c) for c in run_block["codes"]]
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise ValueError(f"run.json: lc8 is not a block, slugs, codes and members ({error!r})") from error
    grown = grown_read(run_block.get(GROWN, {}), "lc8")
    items, total = item_codes(block)
    column = {code: at for at, code in enumerate([*items, *([total] if total else [])])}
    member = {name: at for at, (name, _role) in enumerate(members)}
    sessions = [(unneutralise(r["dataset"]), unneutralise(r["conversation_id"]),
                 _number(r["session_index"], line, "session_index"))
                for line, r in csv_rows(sessions_csv, SESSIONS_FILE, SESSIONS_COLUMNS)]
    coder, seed, seedless, session, attribute, value = [], [], [], [], [], []
    for line, r in csv_rows(labels_csv, LABELS_FILE, LABELS_COLUMNS):
        coder.append(member.get(unneutralise(r["coder"]), -1) if r["coder"] else -1)
        seedless.append(not r["seed"])
        seed.append(_number(r["seed"], line, "seed") if r["seed"] else 0)  # as the server's COALESCE(seed, 0)
        session.append(_number(r["session"], line, "session") - 1)
        attribute.append(column.get(unneutralise(r["attribute"]), -1) if r["attribute"] else -1)
        value.append(_real(r["value"], line, "value"))
    judgments: list[tuple[str, bool, int | None, int, int | None]] = []
    for line, r in csv_rows(judgments_csv, JUDGMENTS_FILE, JUDGMENTS_COLUMNS):
        if r["is_gold"] not in ("true", "false"):
            raise ValueError(f"{JUDGMENTS_FILE} line {line[1]}: is_gold must be true or false")
        judgments.append((unneutralise(r["coder"]), r["is_gold"] == "true",
                          _number(r["session"], line, "session") - 1 if r["session"] else None,
                          column.get(unneutralise(r["attribute"]), -1) if r["attribute"] else -1,
                          _number(r["score"], line, "score") if r["score"] else None))
    return Lc8Rows(block=block, study=study, schema=schema, codes=codes, members=members, sessions=sessions,
                   label_coder=np.array(coder, dtype=np.int64), label_seed=np.array(seed, dtype=np.int64),
                   label_seedless=np.array(seedless, dtype=bool), label_session=np.array(session, dtype=np.int64),
                   label_attribute=np.array(attribute, dtype=np.int64), label_value=np.array(value, dtype=float),
                   judgments=judgments, grown=grown)


def _number(cell: str, line: tuple[str, int], column: str) -> int:
    try:
        return int(cell)
    except ValueError as error:
        raise ValueError(f"{line[0]} line {line[1]}: {column} {cell!r} is not a whole number") from error


def _real(cell: str, line: tuple[str, int], column: str) -> float:
    try:
        return float(cell)
    except ValueError as error:
        raise ValueError(f"{line[0]} line {line[1]}: {column} {cell!r} is not a number") from error

