"""Load a CARE study (a schema with a ``care`` block, docs/care.md) into the pure core's input types
(``metrics.core.care_metrics``: CareHistory, CareCoding, ChecklistItem, CareParams), and the report's ``care`` section.

Seven queries whatever the study's size (study members, attributes, sessions, turns, response slots, judgments, and
the coders' names, only when some coder is no longer a member), each a ``values_list`` of a few columns: no Python
object per model row, no query per row.

Choices (also in docs/metrics.md#choices, item 18):

- The histories are the study's conversations that have sessions (``benchmark.Session``): the conversations of
  ``annotation.selectors.conversations_of_study`` (the README's rule: those it ingested, and those it judged, put in
  a round or labelled, whoever ingested them); a history's model is its responses' model slot (M1 of the core: one
  assistant per history; with several, the first in name order).
- The judgments read are those of the study's rounds. What the section leaves out is counted, by reason, in
  ``care.input`` (``CareInputs.dropped``): a judgment without a score, on a conversation without sessions (no
  history), of an attribute the ``care`` block gives no role (nor a checklist item), on a unit its role does not
  read, or replaced by a later judgment of the same unit and coder.
- The **reference coding** (states, alignment, control windows, quality) is the study's gold codings (``is_gold``,
  the consensus of the gold panel) when it has any; else the coder named by ``reference`` (a run parameter of this
  loader); else the first expert (by username) with codings; else the first human coder with codings; else the
  first method. ``CareInputs.reference_name`` says which, and the report carries it (``care.reference``).
- The coders compared for validation are every non-gold coder (humans and methods) with codings, the reference coder
  included when it is one of them (judge vs each human and human vs human are the pairs docs/care.md#metrics asks for).
- A coder's codes come from every round of the study; a unit coded twice (two rounds) keeps the later judgment.
- Nominal scores become their scale labels; the marker's labels map onto the engine's states through the ``care``
  block's ``states`` (by position); flags are 0/1. Roles (marker, hold, strategy, …) are looked up through the
  ``care`` block, never by attribute code.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from annotation.models import AttributeDefinition, Judgment, Study, StudyMember
from annotation.selectors import conversations_of_study
from benchmark.models import ModelResponse, Session, Turn
from common.lookups import any_of

if TYPE_CHECKING:
    from metrics.core.care import UserCode
    from metrics.core.care_metrics import CareCoding, CareHistory, CareParams, ChecklistItem
    from metrics.core.report import AttributeSpec

# The core (numpy, scipy, scikit-learn) is imported inside the loaders: web workers import this module for
# ``is_care_study`` (the report navigation) and must not load the science stack with it (tests/cab/test_urls.py).

GOLD = "gold"
USER_ROLES = ("crisis", "marker", "request", "ambiguous", "sudden", "hold", "reactance")
ASSISTANT_ROLES = ("strategy", "horizon", "safety_critical")
V = TypeVar("V")
# Why a judgment of the study is left out of the care section (``care.input.dropped``), in this order.
DROPPED = ("unscored", "not_a_history", "no_role", "wrong_unit", "recoded")


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

    @property
    def input(self) -> dict[str, Any]:
        """The report's ``care.input``: histories, judgments read, used, and dropped by reason."""
        dropped = {reason: int(self.dropped.get(reason, 0)) for reason in DROPPED}
        return {"histories": len(self.histories), "judgments": self.judgments,
                "used": self.judgments - sum(dropped.values()), "dropped": dropped}


def care_block(study: Study) -> dict[str, Any] | None:
    """The schema's ``care`` block (which attribute plays each role), None for a study that is not a CARE study."""
    care = (study.schema.definition or {}).get("care")
    return care if isinstance(care, dict) else None


def core_attributes(attributes: Sequence[AttributeSpec]) -> list[AttributeSpec]:
    """The attributes the main report's core computes over: all but session-unit ones (CARE checklist items), which
    only the care section reads (its quality rates); their judgments count as dropped in ``input``. Every attribute
    of a study without session units, unchanged."""
    return [a for a in attributes if a.unit != AttributeDefinition.Unit.SESSION]


def is_care_study(study: Study) -> bool:
    return care_block(study) is not None


def _label(attribute: tuple[str, dict[str, str]], score: int) -> str:
    return attribute[1].get(str(score), str(score))


def care_inputs(*, study: Study, reference: str | None = None, seed: int = 0, resamples: int = 1000,
                conversation: str | None = None) -> CareInputs:
    """The study's histories and codings as the core takes them (see the module's choices). ``reference`` names
    the coder whose codings are the reference when the study has no gold codings; ``conversation`` (an external
    id) loads that one history only (the admin timeline)."""
    from metrics.core.care import STATES, AssistantCode
    from metrics.core.care_metrics import CareCoding, CareParams, ChecklistItem

    care = care_block(study)
    if care is None:
        raise ValueError(f"study {study.slug} is not a CARE study (its schema has no care block)")
    states = list(care.get("states") or STATES)
    params = CareParams(action_strategies=frozenset(care.get("action_strategies") or ()), resamples=resamples,
                        seed=seed)

    members = {user_id: (username, role) for user_id, username, role in StudyMember.objects.filter(study=study)
               .values_list("user_id", "user__username", "role")}
    attributes: dict[int, tuple[str, dict[str, str]]] = {}
    items: list[ChecklistItem] = []
    for pk, code, unit, labels, item_type, crisis_types in (
            AttributeDefinition.objects.filter(schema_id=study.schema_id).order_by("position")
            .values_list("pk", "code", "unit", "scale_labels", "item_type", "crisis_types")):
        attributes[pk] = (code, labels or {})
        if unit == AttributeDefinition.Unit.SESSION and item_type:
            items.append(ChecklistItem(code, item_type, frozenset(crisis_types or ())))
    role_of = {code: role for role, code in care.items() if role in (*USER_ROLES, *ASSISTANT_ROLES)}
    item_ids = {item.id for item in items}

    one = {"conversation__external_id": conversation} if conversation is not None else {}
    conversation_name, session_index, turn_index, histories = _histories(study, one)

    # (coder, conversation, turn index) -> {role: label or flag}; (coder, conversation, session index) -> {item: 0/1}
    user: dict[tuple[str, str, int], dict[str, Any]] = defaultdict(dict)
    assistant: dict[tuple[str, str, int], dict[str, Any]] = defaultdict(dict)
    checklists: dict[tuple[str, str, int], dict[str, int]] = defaultdict(dict)
    coded_by: dict[str, int] = defaultdict(int)
    dropped: dict[str, int] = defaultdict(int)
    # Every judgment of the study's rounds (whoever ingested the material it is on), unscored ones too: counted.
    rows = (Judgment.objects.filter(round__study=study, **one)
            .order_by("pk").values_list("coder_id", "is_gold", "attribute_id", "conversation_id", "turn_id",
                                        "response_id", "session_id", "score"))
    judged: list[tuple[Any, ...]] = list(rows)
    unknown_coders = {row[0] for row in judged if row[0] not in members}
    names = dict(members_names(unknown_coders))
    for coder_id, is_gold, attribute_id, conversation_id, turn_id, response_id, session_id, score in judged:
        coder = GOLD if is_gold else (members[coder_id][0] if coder_id in members else names.get(coder_id, ""))
        code, _labels = attributes.get(attribute_id, ("", {}))
        conversation = conversation_name.get(conversation_id)
        role = role_of.get(code)
        if score is None:  # spans highlighted, no score yet
            dropped["unscored"] += 1
            continue
        if conversation is None:  # a conversation of the study without sessions: not a history
            dropped["not_a_history"] += 1
            continue
        if session_id is not None and turn_id is None and code in item_ids:
            _later(checklists[(coder, conversation, session_index[session_id])], code, int(score), dropped)
        elif turn_id is not None and role in USER_ROLES and response_id is None:
            _later(user[(coder, conversation, turn_index[turn_id])], role,
                   _value(role, attributes[attribute_id], score), dropped)
        elif turn_id is not None and role in ASSISTANT_ROLES and response_id is not None:
            _later(assistant[(coder, conversation, turn_index[turn_id])], role,
                   _value(role, attributes[attribute_id], score), dropped)
        else:
            dropped["no_role" if role is None and code not in item_ids else "wrong_unit"] += 1
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
    reference_name = _reference_name(codings, members, reference)
    return CareInputs(
        histories=histories,
        reference=codings.get(reference_name, CareCoding()),
        reference_name=reference_name,
        coders={name: coding for name, coding in sorted(codings.items()) if name != GOLD},
        items=items,
        params=params,
        judgments=len(judged),
        dropped=dict(dropped),
    )


def _histories(
    study: Study, one: Mapping[str, str],
) -> tuple[dict[int, str], dict[int, int], dict[int, int], list[CareHistory]]:
    """(conversation id -> name, session id -> index, turn id -> index, the histories): three queries. The
    histories are the conversations of the study (``conversations_of_study``) that have sessions."""
    from metrics.core.care_metrics import CareHistory, CareSession

    conversation_name: dict[int, str] = {}
    session_rows: dict[int, list[tuple[int, int, str, str | None]]] = defaultdict(list)
    session_index: dict[int, int] = {}
    for pk, conversation_id, external_id, index, kind, crisis_type in (
            Session.objects.filter(conversation__in=conversations_of_study(study=study), **one)
            .order_by("conversation__external_id", "index")
            .values_list("pk", "conversation_id", "conversation__external_id", "index", "kind", "crisis_type")):
        conversation_name[conversation_id] = external_id
        session_rows[conversation_id].append((pk, index, kind, crisis_type))
        session_index[pk] = index
    history_ids = sorted(conversation_name)  # their turns and responses by id: one array parameter each
    turn_index: dict[int, int] = {}
    session_turns: dict[int, list[int]] = defaultdict(list)
    for pk, session_id, index in (Turn.objects.filter(any_of("conversation_id", history_ids))
                                  .order_by("index").values_list("pk", "session_id", "index")):
        turn_index[pk] = index
        if session_id in session_index:
            session_turns[session_id].append(index)
    model_of: dict[int, str] = {}
    for conversation_id, slot in (ModelResponse.objects.filter(any_of("turn__conversation_id", history_ids))
                                  .values_list("turn__conversation_id", "model_slot").distinct()
                                  .order_by("turn__conversation_id", "model_slot")):
        model_of.setdefault(conversation_id, slot)
    return conversation_name, session_index, turn_index, [
        CareHistory(name, model_of.get(conversation_id, ""), tuple(
            CareSession(index, kind, crisis_type, tuple(session_turns.get(pk, ())))
            for pk, index, kind, crisis_type in session_rows[conversation_id]))
        for conversation_id, name in sorted(conversation_name.items(), key=lambda c: c[1])
    ]


def history_texts(*, study: Study, conversation: str) -> dict[int, str]:
    """Turn index -> the user's message, of one history of the study (the timeline shows them)."""
    return dict(Turn.objects.filter(conversation__in=conversations_of_study(study=study),
                                    conversation__external_id=conversation)
                .values_list("index", "client_text"))


def members_names(user_ids: set[int]) -> list[tuple[int, str]]:
    """Usernames of coders who are not (or no longer) members of the study: one query, only when there are any."""
    if not user_ids:
        return []
    from django.contrib.auth import get_user_model

    return list(get_user_model().objects.filter(pk__in=sorted(user_ids)).values_list("pk", "username"))


def _later(codes: dict[str, V], name: str, value: V, dropped: dict[str, int]) -> None:
    """Set a unit's code; a unit coded twice (two rounds) keeps the later judgment, the earlier counted as recoded."""
    if name in codes:
        dropped["recoded"] += 1
    codes[name] = value


def _value(role: str, attribute: tuple[str, dict[str, str]], score: int) -> Any:
    if role in ("ambiguous", "sudden", "hold", "reactance", "safety_critical"):
        return bool(score)
    return _label(attribute, score)


def _user_code(fields: Mapping[str, Any], states: list[str]) -> UserCode:
    from metrics.core.care import NO_MARKER, STATES, UserCode

    marker = fields.get("marker")
    if marker is not None:  # the schema's states, in order, are the engine's
        marker = STATES[states.index(marker)] if marker in states and states.index(marker) < len(STATES) else NO_MARKER
    return UserCode(marker=marker, crisis=fields.get("crisis"), ambiguous=bool(fields.get("ambiguous")),
                    sudden=bool(fields.get("sudden")), hold=bool(fields.get("hold")),
                    reactance=bool(fields.get("reactance")), request=fields.get("request"))


def _reference_name(codings: Mapping[str, CareCoding], members: Mapping[int, tuple[str, str]],
                    chosen: str | None) -> str:
    if GOLD in codings:
        return GOLD
    if chosen:
        if chosen not in codings:
            raise ValueError(f"reference coder {chosen!r} has no CARE codings in this study")
        return chosen
    by_role: dict[str, list[str]] = defaultdict(list)
    for username, role in members.values():
        if username in codings:
            by_role[role].append(username)
    for role in (StudyMember.Role.EXPERT, StudyMember.Role.REVIEWER, StudyMember.Role.METHOD):
        if by_role[role]:
            return sorted(by_role[role])[0]
    return sorted(codings)[0] if codings else ""


def care_section(*, study: Study, seed: int = 0, resamples: int = 1000, reference: str | None = None) -> dict | None:
    """The report's ``care`` section of a CARE study (None for any other study): ``care_report`` of the loaded
    inputs, plus ``reference`` (whose codings the states, alignment and quality come from) and ``input`` (the
    histories, the judgments read and used, and what was left out by reason: ``CareInputs.input``)."""
    if not is_care_study(study):
        return None
    from metrics.core.care_metrics import care_report

    inputs = care_inputs(study=study, reference=reference, seed=seed, resamples=resamples)
    section = care_report(inputs.histories, inputs.reference, inputs.coders, inputs.items, inputs.params)
    section["reference"] = inputs.reference_name
    section["input"] = inputs.input
    return section
