"""Reads for rating a session of a session-rated study (LongCounsel-8, a schema with an ``lc8`` block): the session page
that the turn page of a session's assignment becomes (see docs/lc8-rating.md#rating-sessions).

The page shows the session's transcript, the items of ``lc8.items`` (required: they decide completion), the derived
total ``lc8.total`` (computed on the page, never a judgment), the optional groups ``lc8.optional_groups`` folded
away, the trajectory's earlier sessions when ``Study.session_history`` shows them, and stored session labels only
where ``Study.reference_labels`` / ``Study.method_labels`` show them. With ``Study.session_order`` blinded, nothing
on the page tells which trajectory or which session of it this is.

Attribute roles come from the schema's ``lc8`` block alone (``annotation.kinds.block_of``). The shared turn page
calls this module only through the kind's hooks (``session_checklist`` for completion, ``coding_page``: lc8.hooks),
so it may build on ``annotation.selectors`` and the page's forms (``annotation.page_forms``) without a circle
(docs/architecture.md#no-circles).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.contrib.auth.models import User

from annotation.automated_coders import session_labels_visible_to
from annotation.kinds import SessionChecklist, block_of
from annotation.models import AttributeDefinition, Judgment, Round, Schema, Study, StudyMember
from annotation.page_forms import AttrForm, attribute_groups
from annotation.selectors import assistant_replies
from benchmark.models import Session, Turn
from lc8.kind import LC8

if TYPE_CHECKING:
    from annotation.selectors import TurnView


def session_checklist(*, round: Round, user: User, turn: Turn, attributes: list[AttributeDefinition],
                      schema: Schema) -> SessionChecklist | None:
    """The required forms of a session-rated study's page: the ``lc8.items`` of the turn's session with the
    coder's judgments (what completing the assignment needs); None when the schema has no ``lc8`` block or the
    turn no session. One query (two with the session)."""
    block = block_of(schema, LC8)
    if block is None or turn.session_id is None:
        return None
    by_code = {a.code: a for a in attributes if a.unit == AttributeDefinition.Unit.SESSION}
    items = [by_code[code] for code in block.get("items", []) if code in by_code]
    session = Session.objects.filter(pk=turn.session_id).first()
    if session is None or not items:
        return None
    judged = Judgment.objects.filter(round=round, coder=user, is_gold=False, session=session,
                                     attribute__in=items).only("id", "attribute_id", "score", "version")
    codes = {a.pk: a.code for a in items}
    return SessionChecklist(session=session, items=items, judgments={codes[j.attribute_id]: j for j in judged})


@dataclass
class TranscriptTurn:
    number: int  # 1-based within its session (never the conversation's turn index: that would date the session)
    client: str
    reply: str  # the counselor's reply (the study's model slot); empty when there is none


@dataclass
class TranscriptSession:
    index: int
    turns: list[TranscriptTurn] = field(default_factory=list)


@dataclass
class ShownLabel:
    source: str  # "Reference" or the method's name (and seed)
    values: list[tuple[str, float]]  # (attribute code, value) in schema order, exactly as stored


@dataclass
class SessionPage:
    session: Session
    numbered: bool  # in_order: the session's number and its trajectory are shown; blinded: neither
    session_count: int
    trajectory: str  # the trajectory's title or id; empty when blinded
    transcript: list[TranscriptTurn]
    history: list[TranscriptSession]  # earlier sessions of the trajectory; empty (never read) when hidden
    items: list[AttrForm]
    optional: list[tuple[str, list[AttrForm]]]  # (group name, forms) of the optional groups
    total: AttributeDefinition | None
    total_value: int | None  # the derived total of the saved items; None until every item is scored
    scale: list[tuple[int, str]]  # the items' shared scale labels, shown once; empty when they differ
    labels: list[ShownLabel]  # stored session labels the study shows its raters; empty when blinded


def session_page(*, view: TurnView, user: User) -> SessionPage | None:
    """The session page of a session-rated study's assignment; None for any other study (no query then)."""
    study = view.study
    block = block_of(study, LC8)
    if block is None or view.turn.session_id is None:
        return None
    session = view.checklist_session or Session.objects.get(pk=view.turn.session_id)
    numbered = study.session_order == Study.SessionOrder.IN_ORDER
    history_shown = study.session_history == Study.SessionHistory.SHOWN
    sessions = list(Session.objects.filter(conversation_id=session.conversation_id).order_by("index")
                    .values_list("pk", "index"))
    wanted = [pk for pk, index in sessions if index == session.index or (history_shown and index < session.index)]
    turns = list(Turn.objects.filter(session_id__in=wanted).order_by("index").only("id", "session_id", "index",
                                                                                     "client_text"))
    replies = assistant_replies(study=study, turn_ids=[t.pk for t in turns])
    index_of = dict(sessions)
    by_session: dict[int, TranscriptSession] = {pk: TranscriptSession(index=index_of[pk]) for pk in wanted}
    for turn in turns:
        part = by_session[turn.session_id]  # type: ignore[index]  # filtered on session
        part.turns.append(TranscriptTurn(number=len(part.turns) + 1, client=turn.client_text,
                                         reply=replies.get(turn.pk, "")))
    items = [f for _, forms in view.session_forms for f in forms]
    schema = view.schema
    optional = _optional_forms(view=view, user=user, session=session, block=block)
    total = schema.by_code.get(str(block.get("total", "")))
    scores = [f.judgment.score if f.judgment is not None else None for f in items]
    conversation = view.turn.conversation
    return SessionPage(
        session=session, numbered=numbered, session_count=len(sessions),
        trajectory=(conversation.title or conversation.external_id) if numbered else "",
        transcript=by_session[session.pk].turns,
        history=[by_session[pk] for pk, index in sessions if pk in by_session and index < session.index],
        items=items, optional=optional, total=total,
        total_value=sum(s for s in scores if s is not None) if items and None not in scores else None,
        scale=_shared_scale([f.attribute for f in items]),
        labels=_labels_shown(study=study, user=user, session=session, order=[a.code for a in schema.attributes]),
    )


def _optional_forms(*, view: TurnView, user: User, session: Session,
                    block: dict[str, Any]) -> list[tuple[str, list[AttrForm]]]:
    """The forms of ``lc8.optional_groups`` (session attributes not derived), with the coder's judgments."""
    optional_groups = set(block.get("optional_groups", []))
    derived = set(block.get("derived", [])) | {block.get("total")}
    attributes = [a for a in view.schema.attributes if a.group in optional_groups
                  and a.unit == AttributeDefinition.Unit.SESSION and a.code not in derived]
    if not attributes:
        return []
    judged = {j.attribute_id: j for j in Judgment.objects.filter(
        round=view.round, coder=user, is_gold=False, session=session, attribute__in=attributes)
        .only("id", "attribute_id", "score", "version")}
    return [(group.name, [AttrForm(a, judged.get(a.pk), f"s-{a.code}", None) for a in group.attributes])
            for group in attribute_groups(attributes, view.study.schema)]


def _shared_scale(items: list[AttributeDefinition]) -> list[tuple[int, str]]:
    """The items' scale labels when every item has the same ones (PHQ-8: 0 Not at all … 3 Nearly every day)."""
    if not items:
        return []
    first = items[0].scale_labels or {}
    if not first or any((a.scale_labels or {}) != first or (a.scale_min, a.scale_max) !=
                        (items[0].scale_min, items[0].scale_max) for a in items):
        return []
    return [(v, str(first.get(str(v), ""))) for v in range(items[0].scale_min, items[0].scale_max + 1)]


def _labels_shown(*, study: Study, user: User, session: Session, order: list[str]) -> list[ShownLabel]:
    """The stored session labels this rater may see (``automated_coders.session_labels_visible_to``: the reference
    coder's under ``reference_labels``, the methods' under ``method_labels``); no query when both are blinded."""
    if Study.MethodLabels.SHOWN not in (study.reference_labels, study.method_labels):
        return []
    rank = {code: i for i, code in enumerate(order)}
    rows = session_labels_visible_to(user=user, study=study, session_ids=[session.pk])
    found: dict[tuple[int, int | None], ShownLabel] = {}
    for label in rows:
        member = label.coder
        if (member.pk, label.seed) not in found:
            if member.role == StudyMember.Role.REFERENCE:
                source = "Reference"
            else:
                source = member.method_name or member.user.get_username()
                if member.method_version:
                    source += f" {member.method_version}"
            if label.seed is not None:
                source += f" (seed {label.seed})"
            found[(member.pk, label.seed)] = ShownLabel(source=source, values=[])
        found[(member.pk, label.seed)].values.append((label.attribute.code, label.value))
    for shown in found.values():
        shown.values.sort(key=lambda pair: rank.get(pair[0], len(rank)))
    return list(found.values())
