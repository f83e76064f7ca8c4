"""Reads for coding longitudinal histories (docs/care-data.md) on the turn page: the history as coders read it (earlier
sessions folded away, the current episode highlighted), the session checklist at the end of a crisis or callback
session, the judge's labels where the study shows them to its coders, and what completing a turn still wants (a
primary horizon for an action turn).

Nothing here runs for a conversation without sessions (every CAB conversation): the turn page of those costs no
query more. The shared turn page calls this module only through the kind's hooks (``session_checklist``,
``turn_page``: care.hooks), so it may build on ``annotation.selectors`` without a circle.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.contrib.auth.models import User
from django.db.models import Max

from annotation import automated_coders, rules
from annotation.kinds import SessionChecklist, block_of
from annotation.models import AttributeDefinition, Judgment, Round, Schema
from annotation.selectors import assistant_replies
from benchmark.models import Session, Turn
from care.core.recovery import HORIZONS, AssistantCode, lacks_horizon, stray_horizon
from care.kind import CARE

if TYPE_CHECKING:
    from annotation.page_forms import AttrForm
    from annotation.selectors import TurnView


@dataclass
class HistoryTurn:
    index: int
    user_text: str
    reply: str  # the assistant's reply (the study's model slot); empty when there is none


@dataclass
class HistorySession:
    index: int
    kind: str
    kind_label: str
    crisis_label: str
    in_episode: bool  # from the latest crisis or callback session up to the current one
    current: bool  # the session of the turn being coded
    turns: list[HistoryTurn] = field(default_factory=list)

    @property
    def title(self) -> str:
        return " · ".join(p for p in (f"Session {self.index}", self.kind_label, self.crisis_label) if p)


@dataclass
class CareHistory:
    folded: list[HistorySession]  # before the current episode (or before the current session): collapsed
    shown: list[HistorySession]  # the current episode, or the current session when no episode has begun
    session: HistorySession  # the current one
    # The judges' labels this coder may see, by the id of the form they sit beside: empty when the study blinds
    # its coders (``annotation.automated_coders.method_labels_visible_to``).
    judge_labels: dict[str, list[dict[str, Any]]]


def session_checklist(*, round: Round, user: User, turn: Turn, attributes: list[AttributeDefinition],
                      schema: Schema | None = None) -> SessionChecklist | None:
    """The checklist of the turn's session when the turn ends a crisis or callback session (the items that apply to
    its crisis type, ``rules.session_items``) with the coder's judgments; None otherwise. Two queries."""
    if turn.session_id is None:
        return None
    session = Session.objects.filter(pk=turn.session_id).annotate(last=Max("turns__index")).first()
    if session is None or turn.index != session.last:  # annotated
        return None
    items = rules.session_items(attributes, kind=session.kind, crisis_type=session.crisis_type)
    if not items:
        return None
    judged = Judgment.objects.filter(round=round, coder=user, is_gold=False, session=session,
                                     attribute__in=items).only("id", "attribute_id", "score", "instance_count",
                                                               "version")
    codes = {a.pk: a.code for a in items}
    return SessionChecklist(session=session, items=items, judgments={codes[j.attribute_id]: j for j in judged})


def care_history(*, view: TurnView, user: User) -> CareHistory | None:
    """The history around the turn being coded; None for a conversation without sessions (no query then)."""
    turn = view.turn
    if turn.session_id is None:
        return None
    sessions = list(Session.objects.filter(conversation_id=turn.conversation_id).order_by("index"))
    current = next(s for s in sessions if s.pk == turn.session_id)
    opened = [s.index for s in sessions if s.index <= current.index and s.kind in rules.CHECKLIST_SESSION_KINDS]
    episode_start = opened[-1] if opened else None
    replies = assistant_replies(study=view.study, turn_ids=[t.pk for t in view.earlier_turns])
    shown: dict[int, HistorySession] = {}
    for s in sessions:
        if s.index > current.index:
            break
        in_episode = episode_start is not None and s.index >= episode_start
        shown[s.pk] = HistorySession(
            index=s.index, kind=s.kind, kind_label=s.get_kind_display(),
            crisis_label=s.get_crisis_type_display() if s.crisis_type else "", in_episode=in_episode,
            current=s.pk == current.pk)
    for t in view.earlier_turns:
        if t.session_id in shown:
            shown[t.session_id].turns.append(HistoryTurn(index=t.index, user_text=t.client_text,
                                                         reply=replies.get(t.pk, "")))
    ordered = list(shown.values())
    first_open = episode_start if episode_start is not None else current.index
    return CareHistory(
        folded=[s for s in ordered if s.index < first_open], shown=[s for s in ordered if s.index >= first_open],
        session=shown[current.pk], judge_labels=_judge_labels(view=view, user=user),
    )


def _judge_labels(*, view: TurnView, user: User) -> dict[str, list[dict[str, Any]]]:
    """The methods' labels on the page's forms, through the one read that honours the study's blinding."""
    handles = {card.response.pk: card.handle for card in view.cards}
    labels = list(automated_coders.method_labels_visible_to(user=user, study=view.study, turn_ids=[view.turn.pk]))
    if view.session_forms and view.checklist_session is not None:
        labels += automated_coders.method_labels_visible_to(user=user, study=view.study,
                                                            session_ids=[view.checklist_session.pk])
    found: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for label in labels:
        code = label.attribute.code
        if label.session_id is not None:
            form_id = f"s-{code}"
        elif label.response_id is not None:
            if label.response_id not in handles:
                continue
            form_id = f"r{handles[label.response_id]}-{code}"
        else:
            form_id = f"t-{code}"
        value = (label.attribute.scale_labels or {}).get(str(label.score), "")
        found[form_id][label.coder.get_username()] = {
            "judge": label.coder.get_username(), "score": label.score, "label": value, "note": label.note}
    return {form_id: list(by_judge.values()) for form_id, by_judge in found.items()}


def turn_missing(view: TurnView) -> list[str]:
    """What completing the turn still wants of its codes: a primary horizon on each reply coded with an action
    strategy (docs/care-data.md#the-codings-of-care-v1), without which the turn gets no alignment label (care.md A4),
    and horizon none on each reply coded with another strategy (A5). The forms' unscored codes are the shared
    check's; no query."""
    care = block_of(view.study, CARE)
    if care is None:
        return []
    actions = frozenset(care.get("action_strategies") or ())
    missing = []
    for card in view.cards:
        forms = {form.attribute.code: form for form in card.forms}
        strategy, horizon = forms.get(care["strategy"]), forms.get(care["horizon"])
        if strategy is None or horizon is None or not strategy.scored or not horizon.scored:
            continue
        code = AssistantCode(_label(strategy), _label(horizon))
        where = f"{card.label} · {horizon.attribute.code}" if card.label else horizon.attribute.code
        if lacks_horizon(code, actions):
            missing.append(f"{where}: the strategy is {code.strategy}, which needs a primary horizon "
                           f"({', '.join(HORIZONS)}); without one the turn gets no alignment label")
        elif stray_horizon(code, actions):
            advice = " or ".join(care["action_strategies"])
            missing.append(f"{where}: the strategy is {code.strategy}, which gives no advice, so its horizon is none "
                           f"(not {code.horizon}); a primary horizon is for {advice} alone")
    return missing


def _label(form: AttrForm) -> str:
    score = form.judgment.score if form.judgment is not None else None
    return (form.attribute.scale_labels or {}).get(str(score), str(score))
