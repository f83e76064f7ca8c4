"""The rows a CARE study's report section reads, as plain values, and the one function that turns them into the
core's inputs (``care_inputs_from_rows``): the server's loader (``care.inputs``) fills ``CareRows`` from the
database, the recompute of a study bundle (``metrics.core.recompute``) from the bundle's ``data/care_*.csv`` and
``run.json`` (docs/bundle.md#recompute), so both hand ``care_report`` the same histories and codings.

The choices (which judgments count, the reference coding, roles through the ``care`` block) are listed in
``care.inputs`` and docs/metrics.md#choices, item 18; their code is here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from common.cells import unneutralise
from metrics.core.grown_sessions import KEY as GROWN
from metrics.core.grown_sessions import grown_entry, grown_read
from metrics.core.section_csv import csv_rows

from .metrics import (
    QUALITY_SCOPES,
    CareCoding,
    CareHistory,
    CareParams,
    CareSession,
    ChecklistItem,
    quality_sessions,
)
from .recovery import NO_MARKER, STATES, AssistantCode, UserCode, lacks_horizon, stray_horizon

GOLD = "gold"
USER_ROLES = ("crisis", "marker", "request", "ambiguous", "sudden", "hold", "reactance")
ASSISTANT_ROLES = ("strategy", "horizon", "safety_critical")
SESSION_UNIT = "session"
# the member roles whose coders may be the reference, in the order they are tried (docs/care.md)
REFERENCE_ROLES = ("expert", "reviewer", "method")
V = TypeVar("V")
# Why a judgment of the study is left out of the care section (``care.input.dropped``), in this order.
DROPPED = ("unscored", "not_a_history", "several_slots", "no_role", "wrong_unit", "recoded")
# The rows in a study bundle (docs/bundle.md#what-each-kind-gets): two CSVs, and the block, the attributes and the
# members in run.json's "care".
SESSIONS_FILE = "data/care_sessions.csv"
JUDGMENTS_FILE = "data/care_judgments.csv"
DEFAULT_QUALITY_SCOPE = CareParams.quality_scope  # a study that never chose one; run.json then names none
SESSIONS_COLUMNS = ("dataset", "conversation_id", "model", "session_index", "kind", "crisis_type", "turns")
JUDGMENTS_COLUMNS = ("coder", "is_gold", "attribute", "conversation_id", "turn_index", "on_response",
                     "session_index", "score")


@dataclass(frozen=True)
class CareAttribute:
    """An attribute of the schema as the care section reads it (in schema order)."""

    code: str
    unit: str
    labels: Mapping[str, str]  # score (as text) -> its scale label
    item_type: str  # a checklist item's type; empty for any other attribute
    crisis_types: tuple[str, ...] = ()


@dataclass(frozen=True)
class CareSessionRow:
    """A session of a history: its conversation's dataset, the history's name (the external id, or DATASET/EXTERNAL_ID
    when two histories of the study share it: ``metrics.core.history_names``, applied by the loader), the history's
    model slot, the session and the indexes of its turns."""

    dataset: str
    conversation: str
    model: str
    index: int
    kind: str
    crisis_type: str | None
    turns: tuple[int, ...]


@dataclass(frozen=True)
class CareJudgmentRow:
    """A judgment of the study's rounds, in round order (the one that counts of a coder's unit last:
    ``annotation.selectors.judgments_in_round_order``): its coder by name (a gold coding's: who recorded it), the
    history's name (None: a conversation without sessions, no history), the turn or session it is on by index,
    whether it is on a response, and its score (None: not scored yet)."""

    coder: str
    is_gold: bool
    attribute: str
    conversation: str | None
    turn: int | None
    on_response: bool
    session: int | None
    score: int | None


@dataclass(frozen=True)
class CareRows:
    block: Mapping[str, Any]  # the schema's care block
    attributes: Sequence[CareAttribute]
    members: Sequence[tuple[str, str]]  # (username, role) of who is or was a member (the role they had)
    sessions: Sequence[CareSessionRow]  # by conversation, then session index
    judgments: Sequence[CareJudgmentRow]
    quality_scope: str = DEFAULT_QUALITY_SCOPE  # the study's setting (Q1 of docs/care.md): CareParams.quality_scope
    reference: str = ""  # the study's setting reference_coding: the coder it chose (empty: the default order)
    # the histories whose replies are under several model slots (name -> its slots), which the section leaves out
    several_slots: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # the sessions that took a reply after the study first coded their checklist (name -> session indexes, those
    # with any), which the section counts as coded all the same
    grown: Mapping[str, tuple[int, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class CareInputs:
    histories: list[CareHistory]
    reference: CareCoding
    reference_name: str
    coders: dict[str, CareCoding]
    items: list[ChecklistItem]
    params: CareParams
    # what the section left out: the judgments read, those used, and the rest by reason (the report's care.input)
    judgments: int = 0
    dropped: Mapping[str, int] = field(default_factory=dict)
    # the judgments used of the reference coding, when the study chose its reference coder (None: it did not)
    reference_judgments: int | None = None
    # the histories left out because their replies are under several model slots (name -> its slots)
    several_slots: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def input(self) -> dict[str, Any]:
        """The report's ``care.input``: histories, judgments read, used, dropped by reason, the reference coding's
        action turns without a primary horizon by model (``no_horizon``) and its replies of another strategy given
        one (``stray_horizon``), its quality sessions without a coded checklist (``no_checklist``); the judgments used
        of the reference
        coding when the study chose its reference coder (the warning of a chosen coder who has coded nothing yet);
        and the histories left out with their model slots (``several_slots``) when there are any."""
        dropped = {reason: int(self.dropped.get(reason, 0)) for reason in DROPPED}
        chosen = {} if self.reference_judgments is None else {"reference_judgments": self.reference_judgments}
        several = {"several_slots": {name: list(slots) for name, slots in sorted(self.several_slots.items())}
                   } if self.several_slots else {}
        return {"histories": len(self.histories), "judgments": self.judgments,
                "used": self.judgments - sum(dropped.values()), "dropped": dropped,
                "no_horizon": self.no_horizon, "stray_horizon": self.stray_horizon,
                "no_checklist": self.no_checklist, **chosen, **several}

    @property
    def no_checklist(self) -> dict[str, int]:
        """The sessions the quality scope takes (``quality_sessions``) whose checklist the reference coding has not
        coded, by model (those with any): session quality (ProdR, UnprodR, OmitR, ``n_sessions``) is over the coded
        ones alone (Q1), so these are left out of it, which nothing else says."""
        counts: dict[str, int] = defaultdict(int)
        for history in self.histories:
            for session, _ in quality_sessions(history, self.params.quality_scope):
                if (history.conversation, session.index) not in self.reference.checklists:
                    counts[history.model] += 1
        return dict(sorted(counts.items()))

    @property
    def no_horizon(self) -> dict[str, int]:
        """The reference coding's action turns without a primary horizon, by model (those with any): each counts in
        N_action, so in AR's and PR's denominators, with no label (A4). A judge may leave the horizon out, and its
        labels are imported all the same (docs/care-data.md#the-codings-of-care-v1): the report says so here."""
        return self._reference_turns(lacks_horizon)

    @property
    def stray_horizon(self) -> dict[str, int]:
        """The reference coding's replies of a strategy that is no action strategy given a primary horizon all the
        same, by model (those with any): the section reads no horizon of them (A5), so they count in no rate, where
        the coder may have meant an action strategy. The coding page does not complete such a turn; an import takes
        it (docs/care-data.md#the-codings-of-care-v1): the report says so here."""
        return self._reference_turns(stray_horizon)

    def _reference_turns(self, rule: Callable[[AssistantCode | None, frozenset[str]], bool]) -> dict[str, int]:
        """The reference coding's assistant turns that ``rule`` (of ``care.core.recovery``) finds, by model."""
        counts: dict[str, int] = defaultdict(int)
        for history in self.histories:
            for session in history.sessions:
                for turn in session.turns:
                    code = self.reference.assistant.get((history.conversation, turn))
                    if rule(code, self.params.action_strategies):
                        counts[history.model] += 1
        return dict(sorted(counts.items()))


def care_histories(sessions: Sequence[CareSessionRow]) -> list[CareHistory]:
    """The histories of the sessions, by name (a session's turns in its ``turns``)."""
    by_name: dict[str, list[CareSessionRow]] = defaultdict(list)
    for row in sessions:
        by_name[row.conversation].append(row)
    return [CareHistory(name, rows[0].model, tuple(CareSession(r.index, r.kind, r.crisis_type, r.turns) for r in rows))
            for name, rows in sorted(by_name.items())]


def care_inputs_from_rows(rows: CareRows, *, reference: str | None = None, seed: int = 0,
                          resamples: int = 1000) -> CareInputs:
    """The histories and codings of the rows as ``care_report`` takes them (``care.inputs``' choices). The reference
    coding is gold's when the rows have gold codings; else ``reference``'s (a coder named by the caller: ValueError
    when they have no codings); else the study's chosen coder's (``rows.reference``: an empty coding when they have
    none yet, which the section's warning says); else the default order's. A history whose replies are under several
    model slots (``rows.several_slots``) is left out, its judgments counted as ``several_slots``: its reply codes
    are no one assistant's (docs/care.md#a-history-under-several-model-slots)."""
    care = rows.block
    states = list(care.get("states") or STATES)
    params = CareParams(action_strategies=frozenset(care.get("action_strategies") or ()), resamples=resamples,
                        seed=seed, quality_scope=rows.quality_scope)
    labels = {a.code: dict(a.labels) for a in rows.attributes}
    items = [ChecklistItem(a.code, a.item_type, frozenset(a.crisis_types)) for a in rows.attributes
             if a.unit == SESSION_UNIT and a.item_type]
    role_of = {code: role for role, code in care.items() if role in (*USER_ROLES, *ASSISTANT_ROLES)}
    item_ids = {item.id for item in items}

    # (coder, conversation, turn index) -> {role: label or flag}; (coder, conversation, session index) -> {item: 0/1}
    user: dict[tuple[str, str, int], dict[str, Any]] = defaultdict(dict)
    assistant: dict[tuple[str, str, int], dict[str, Any]] = defaultdict(dict)
    checklists: dict[tuple[str, str, int], dict[str, int]] = defaultdict(dict)
    coded_by: dict[str, int] = defaultdict(int)
    dropped: dict[str, int] = defaultdict(int)
    for row in rows.judgments:
        coder = GOLD if row.is_gold else row.coder
        role = role_of.get(row.attribute)
        if row.score is None:  # spans highlighted, no score yet
            dropped["unscored"] += 1
            continue
        if row.conversation is None:  # a conversation of the study without sessions: not a history
            dropped["not_a_history"] += 1
            continue
        if row.conversation in rows.several_slots:
            dropped["several_slots"] += 1
            continue
        if row.session is not None and row.turn is None and row.attribute in item_ids:
            _later(checklists[(coder, row.conversation, row.session)], row.attribute, int(row.score), dropped)
        elif row.turn is not None and role in USER_ROLES and not row.on_response:
            _later(user[(coder, row.conversation, row.turn)], role,
                   _value(role, labels.get(row.attribute, {}), row.score), dropped)
        elif row.turn is not None and role in ASSISTANT_ROLES and row.on_response:
            _later(assistant[(coder, row.conversation, row.turn)], role,
                   _value(role, labels.get(row.attribute, {}), row.score), dropped)
        else:
            dropped["no_role" if role is None and row.attribute not in item_ids else "wrong_unit"] += 1
            continue
        coded_by[coder] += 1

    codings: dict[str, CareCoding] = {}
    for coder in coded_by:
        codings[coder] = CareCoding(
            user={(c, t): _user_code(fields, states) for (who, c, t), fields in user.items() if who == coder},
            assistant={(c, t): AssistantCode(fields.get("strategy"), fields.get("horizon"),
                                             bool(fields.get("safety_critical")))
                       for (who, c, t), fields in assistant.items() if who == coder},
            checklists={(c, s): found for (who, c, s), found in checklists.items() if who == coder},
        )
    reference_name = _reference_name(codings, rows.members, reference, rows.reference)
    return CareInputs(
        histories=care_histories([row for row in rows.sessions if row.conversation not in rows.several_slots]),
        reference=codings.get(reference_name, CareCoding()),
        reference_name=reference_name,
        coders={name: coding for name, coding in sorted(codings.items()) if name != GOLD},
        items=items,
        params=params,
        judgments=len(rows.judgments),
        dropped=dict(dropped),
        reference_judgments=coded_by.get(reference_name, 0) if rows.reference else None,
        several_slots=rows.several_slots,
    )


def care_section_from_rows(rows: CareRows, *, reference: str | None = None, seed: int = 0,
                           resamples: int = 1000) -> dict[str, Any]:
    """The report's ``care`` section of the rows: ``care_report`` of their inputs, plus ``reference`` (whose codings
    the states, alignment and quality come from), ``input`` (``CareInputs.input``) and ``parameters`` (the study's
    settings the figures depend on: ``quality_scope``, and ``reference_coding`` when the study chose one)."""
    from .metrics import care_report

    inputs = care_inputs_from_rows(rows, reference=reference, seed=seed, resamples=resamples)
    section = care_report(inputs.histories, inputs.reference, inputs.coders, inputs.items, inputs.params)
    section["reference"] = inputs.reference_name
    section["input"] = {**inputs.input, **grown_entry(rows.grown)}
    chosen = {"reference_coding": rows.reference} if rows.reference else {}
    section["parameters"] = {"quality_scope": inputs.params.quality_scope, **chosen}
    return section


def _later(codes: dict[str, V], name: str, value: V, dropped: dict[str, int]) -> None:
    """Set a unit's code; a unit coded twice (two rounds) keeps the later judgment, the earlier counted as recoded."""
    if name in codes:
        dropped["recoded"] += 1
    codes[name] = value


def _value(role: str, labels: Mapping[str, str], score: int) -> Any:
    if role in ("ambiguous", "sudden", "hold", "reactance", "safety_critical"):
        return bool(score)
    return labels.get(str(score), str(score))


def _user_code(fields: Mapping[str, Any], states: list[str]) -> UserCode:
    marker = fields.get("marker")
    if marker is not None:  # the schema's states, in order, are the engine's
        marker = STATES[states.index(marker)] if marker in states and states.index(marker) < len(STATES) else NO_MARKER
    return UserCode(marker=marker, crisis=fields.get("crisis"), ambiguous=bool(fields.get("ambiguous")),
                    sudden=bool(fields.get("sudden")), hold=bool(fields.get("hold")),
                    reactance=bool(fields.get("reactance")), request=fields.get("request"))


def _reference_name(codings: Mapping[str, CareCoding], members: Sequence[tuple[str, str]],
                    named: str | None, chosen: str) -> str:
    """Whose coding is the reference (``care_inputs_from_rows``): gold, the coder ``named`` by the caller, the
    study's ``chosen`` coder (codings or not: never a silent switch to another coder), the default order."""
    if GOLD in codings:
        return GOLD
    if named:
        if named not in codings:
            raise ValueError(f"reference coder {named!r} has no CARE codings in this study")
        return named
    if chosen:
        return chosen
    by_role: dict[str, list[str]] = defaultdict(list)
    for username, role in members:
        if username in codings:
            by_role[str(role)].append(username)
    for role in REFERENCE_ROLES:
        if by_role[role]:
            return sorted(by_role[role])[0]
    return sorted(codings)[0] if codings else ""


# --- the rows in a study bundle ------------------------------------------------------------------------------------


def care_tables(rows: CareRows) -> dict[str, tuple[Sequence[str], Iterable[Sequence[Any]]]]:
    """The rows' two CSVs (path -> (header, rows)), as the bundle writes them (``common.cells.csv_stream``)."""
    return {
        SESSIONS_FILE: (SESSIONS_COLUMNS, ((r.dataset, r.conversation, r.model, r.index, r.kind, r.crisis_type,
                                            " ".join(str(t) for t in r.turns)) for r in rows.sessions)),
        JUDGMENTS_FILE: (JUDGMENTS_COLUMNS, ((r.coder, r.is_gold, r.attribute, r.conversation, r.turn, r.on_response,
                                              r.session, r.score) for r in rows.judgments)),
    }


def care_kind_rows(rows: CareRows) -> tuple[dict[str, Any], dict[str, tuple[Sequence[str], Iterable[Sequence[Any]]]]]:
    """What a bundle holds of the rows and the input fingerprint covers (``provenance.fingerprint_rows``): run.json's
    ``care`` and the two CSVs."""
    return {"care": care_run_block(rows)}, care_tables(rows)


def care_run_block(rows: CareRows) -> dict[str, Any]:
    """run.json's ``care``: the block, the attributes as the section reads them, the members, the quality scope
    when the study chose another than the default and the reference coder when it chose one (so a study at the
    defaults keeps the fingerprint and the bundle it had before these were settings, and such a bundle still
    recomputes); and the histories whose replies are under several model slots, with their slots, and the sessions
    that grew after their checklist was coded (``grown_after_rating``), when there are any (every other study keeps
    its fingerprint)."""
    scope = {} if rows.quality_scope == DEFAULT_QUALITY_SCOPE else {"quality_scope": rows.quality_scope}
    chosen = {"reference_coding": rows.reference} if rows.reference else {}
    several = {"several_slots": {name: list(slots) for name, slots in rows.several_slots.items()}
               } if rows.several_slots else {}
    return {"block": dict(rows.block),
            "attributes": [{"code": a.code, "unit": a.unit, "labels": dict(a.labels), "item_type": a.item_type,
                            "crisis_types": list(a.crisis_types)} for a in rows.attributes],
            "members": [list(member) for member in rows.members], **scope, **chosen, **several,
            **grown_entry(rows.grown)}


def care_rows_read(run_block: Mapping[str, Any], sessions_csv: str, judgments_csv: str) -> CareRows:
    """The rows from a bundle's run.json ``care`` and its two CSVs (``care_tables``); ValueError names what is
    wrong and where."""
    try:
        attributes = [CareAttribute(str(a["code"]), str(a["unit"]), {str(k): str(v) for k, v in a["labels"].items()},
                                    str(a["item_type"]), tuple(str(t) for t in a["crisis_types"]))
                      for a in run_block["attributes"]]
        members = [(str(name), str(role)) for name, role in run_block["members"]]
        block = dict(run_block["block"])
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise ValueError(f"run.json: care is not a block, attributes and members ({error!r})") from error
    scope = run_block.get("quality_scope", DEFAULT_QUALITY_SCOPE)
    if not isinstance(scope, str) or scope not in QUALITY_SCOPES:
        raise ValueError(f"run.json: care.quality_scope is {str(scope)[:40]!r}, none of "
                         f"{', '.join(sorted(QUALITY_SCOPES))} (absent: {DEFAULT_QUALITY_SCOPE})")
    reference = run_block.get("reference_coding", "")
    if not isinstance(reference, str) or "reference_coding" in run_block and not reference:
        raise ValueError(f"run.json: care.reference_coding is {str(reference)[:40]!r}, not a coder's name (absent: "
                         "the default order)")
    several = _several_slots_read(run_block.get("several_slots", {}))
    grown = grown_read(run_block.get(GROWN, {}), "care")
    sessions = [CareSessionRow(text(r, "dataset"), text(r, "conversation_id"), text(r, "model"),
                               number(r, "session_index", line), text(r, "kind"), text(r, "crisis_type") or None,
                               tuple(_whole(t, SESSIONS_FILE, line[1], "turns") for t in r["turns"].split()))
                for line, r in csv_rows(sessions_csv, SESSIONS_FILE, SESSIONS_COLUMNS)]
    judgments = [CareJudgmentRow(text(r, "coder"), _flag(r, "is_gold", line), text(r, "attribute"),
                                 text(r, "conversation_id") or None, optional(r, "turn_index", line),
                                 _flag(r, "on_response", line), optional(r, "session_index", line),
                                 optional(r, "score", line))
                 for line, r in csv_rows(judgments_csv, JUDGMENTS_FILE, JUDGMENTS_COLUMNS)]
    return CareRows(block=block, attributes=attributes, members=members, sessions=sessions, judgments=judgments,
                    quality_scope=scope, reference=reference, several_slots=several, grown=grown)


def _several_slots_read(value: Any) -> dict[str, tuple[str, ...]]:
    """run.json's ``care.several_slots`` (absent: none): each history's name and its model slots, two or more."""
    if not isinstance(value, dict) or not all(
            isinstance(slots, list) and len(slots) > 1 and all(isinstance(slot, str) for slot in slots)
            for slots in value.values()):
        raise ValueError(f"run.json: care.several_slots is {str(value)[:40]!r}, not an object of history names and "
                         "their model slots, two or more each (absent: none)")
    return {str(name): tuple(slots) for name, slots in value.items()}


def text(row: Mapping[str, str], column: str) -> str:
    return unneutralise(row[column])


def number(row: Mapping[str, str], column: str, line: tuple[str, int]) -> int:
    return _whole(row[column], line[0], line[1], column)


def optional(row: Mapping[str, str], column: str, line: tuple[str, int]) -> int | None:
    return _whole(row[column], line[0], line[1], column) if row[column] else None


def _flag(row: Mapping[str, str], column: str, line: tuple[str, int]) -> bool:
    if row[column] not in ("true", "false"):
        raise ValueError(f"{line[0]} line {line[1]}: {column} must be true or false")
    return row[column] == "true"


def _whole(cell: str, name: str, line: int, column: str) -> int:
    try:
        return int(cell)
    except ValueError as error:
        raise ValueError(f"{name} line {line}: {column} {cell!r} is not a whole number") from error

