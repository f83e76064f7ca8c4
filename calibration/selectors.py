"""Reads of the calibration protocol: candidate turns, the gold panel's consensus table, the workshop's
disagreement items, the memo, time on task, a reviewer's feedback and the panel ranking (from the latest metrics
report)."""

from __future__ import annotations

import hashlib
import itertools
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet, Sum

from access.checks import is_study_admin
from annotation import rules
from annotation.models import (
    Assignment,
    AttributeDefinition,
    FormerStudyMember,
    Judgment,
    JudgmentRevision,
    QueueProgress,
    Round,
    RoundItem,
    Span,
    Study,
    StudyMember,
    WorkshopNote,
)
from annotation.selectors import (
    RESPONSE_LETTERS,
    StudyCoder,
    conversations_unplaceable,
    response_handle,
    responses_as_seen,
    study_coders,
    study_responses,
)
from benchmark.models import ModelResponse, Turn
from common.markdown import md_text
from common.rounds import round_name
from common.segments import text_segments
from metrics.models import MetricRun
from metrics.selectors import metric_run_latest_succeeded, metric_runs_for


def _candidate_turns(*, study: Study, round: Round | None = None) -> QuerySet[Turn]:
    """Turns with responses of the study's models that no round of the study uses but ``round`` (a draft whose set
    is drawn again may draw its own turns again), but none of a conversation its kind's report cannot place
    (``annotation.selectors.conversations_unplaceable``: a round's turn makes its conversation the study's)."""
    held = RoundItem.objects.filter(round__study=study)
    used = (held.exclude(round=round) if round is not None else held).values("turn_id")
    responses = ModelResponse.objects.all()
    if study.model_slots:
        responses = responses.filter(model_slot__in=study.model_slots)
    turns = Turn.objects.filter(pk__in=responses.values("turn_id")).exclude(pk__in=used)
    unplaceable = conversations_unplaceable(study=study, conversations=turns.values("conversation_id"))
    return turns.exclude(conversation_id__in=sorted(unplaceable)) if unplaceable else turns


def calibration_candidates(*, study: Study, round: Round | None = None) -> list[Turn]:
    """Turns with responses of the study's models that no other round of the study than ``round`` uses."""
    return list(_candidate_turns(study=study, round=round).select_related("conversation__dataset").order_by("pk"))


def calibration_candidates_count(*, study: Study, round: Round | None = None) -> int:
    """How many turns the calibration set of ``round`` may be drawn from (``calibration_candidates``), in one
    query: the study page offers at most that many."""
    return _candidate_turns(study=study, round=round).count()


@dataclass
class ConsensusItem:
    turn: Turn
    response: ModelResponse | None
    attribute: AttributeDefinition
    expert_scores: dict[str, int | None]  # the gold panel's (``gold_panel``): its experts, then those taken off
    gold: Judgment | None
    label: str = ""  # the response as the viewer knows it: its model slot, or the letter an expert saw
    handle: str = ""  # for an expert reading the screen: the response's opaque handle, never its id
    former: frozenset[str] = frozenset()  # the experts taken off the study since they coded the round
    panel: Mapping[str, bool] = field(default_factory=dict)  # the gold panel: username -> a member now (``gold_panel``)

    @property
    def counted(self) -> dict[str, int | None]:
        """The scores the unit's gold is decided on: every expert's (None: not scored yet), and the score of each
        expert taken off who gave one (they code no more, so a unit they left is not waiting for them)."""
        return {name: score for name, score in self.expert_scores.items()
                if score is not None or name not in self.former}

    @property
    def agreed(self) -> list[tuple[str, int | None]]:
        """Who agreed to the unit's gold, each with their own score where it is another value (None where it is
        the gold value): an expert who agreed to a value they did not code is shown so
        (``annotation.services.gold_agreement_problems``)."""
        if self.gold is None:
            return []
        names = sorted(user.get_username() for user in self.gold.agreed_by.all())
        return [(name, None if self.expert_scores.get(name) in (None, self.gold.score) else self.expert_scores[name])
                for name in names]

    @property
    def agreement_choices(self) -> list[tuple[str, int | None, bool]]:
        """The admin's "who agreed" choices: each expert shown, with their score (None: not scored) and whether the
        gold names them; then anyone else the gold names (recorded before a change made it stale), so that no
        name is dropped unseen when the gold is recorded again."""
        named = {user.get_username() for user in self.gold.agreed_by.all()} if self.gold else set()
        return ([(name, score, name in named) for name, score in self.expert_scores.items()]
                + [(name, None, True) for name in sorted(named - set(self.expert_scores))])

    @cached_property
    def stale(self) -> list[str]:
        """Why the recorded gold's "agreed by" no longer holds (``annotation.rules.agreement_problems``): an expert
        named there whose score changed, or who was taken off, since it was recorded; empty when it holds."""
        if self.gold is None:
            return []
        return rules.agreement_problems(agreed=[user.get_username() for user in self.gold.agreed_by.all()],
                                        panel=self.panel, scores=self.expert_scores, gold=self.gold.score,
                                        round_name=self.gold.round.name)

    @property
    def unanimous(self) -> bool:
        values = list(self.counted.values())
        return bool(values) and None not in values and len(set(values)) == 1

    @property
    def key(self) -> str:
        unit = self.handle or (self.response.pk if self.response else 0)
        return f"{self.turn.pk}-{unit}-{self.attribute.code}"


def consensus_access(*, round: Round, user: User) -> bool:
    """Who may open a calibration round's consensus screen: study admins (to decide gold: True), and the study's
    experts read-only (False) once the round is closed, when the study lets them. Anyone else is refused."""
    if is_study_admin(user):
        return True
    if (round.study.experts_see_consensus and round.kind == Round.Kind.CALIBRATION
            and round.status == Round.Status.CLOSED
            and StudyMember.objects.filter(study=round.study, user=user, role=StudyMember.Role.EXPERT).exists()):
        return False
    raise PermissionDenied("Only study admins, and experts of a closed round when the study allows it, can see "
                           "the consensus screen.")


def gold_panel(*, study: Study) -> list[StudyCoder]:
    """The study's gold panel: its experts and those taken off it as experts (``annotation.selectors.study_coders``),
    by username. An expert's codings keep counting after they leave, as in the reports: a unit's gold is not
    "unanimous" while an expert who scored it otherwise has gone."""
    return [coder for coder in study_coders(study=study) if coder.role == StudyMember.Role.EXPERT]


def gold_panel_users(*, study: Study) -> dict[str, User]:
    """The gold panel's accounts by username (``gold_panel``): who may be named as agreeing on a gold value."""
    ids = [coder.user_id for coder in gold_panel(study=study)]
    return {user.get_username(): user for user in User.objects.filter(pk__in=ids)}


def consensus_items(*, round: Round, seen_by: User | None = None) -> list[ConsensusItem]:
    """Every (unit, attribute) of the round's set with the score of each of the gold panel (``gold_panel``: the
    experts, then those taken off since who coded the round) and the recorded gold, if any.

    Responses are labelled by model slot, or, with ``seen_by`` (an expert reading the screen), as that expert saw
    them while coding: the screen must not unblind them."""
    panel = {coder.user_id: coder for coder in gold_panel(study=round.study)}
    turns = [item.turn for item in round.items.select_related("turn__conversation__dataset").order_by("position")]
    responses = study_responses(study=round.study, turn_ids=[t.pk for t in turns])
    attributes = list(round.study.schema.attributes.exclude(unit="conversation").order_by("position"))
    scores: dict[tuple, dict[str, int | None]] = defaultdict(dict)
    gold: dict[tuple, Judgment] = {}
    coded: set[int] = set()
    for turn_id, response_id, attribute_id, coder_id, score in Judgment.objects.filter(
        round=round, turn__in=turns, is_gold=False, coder_id__in=panel
    ).values_list("turn_id", "response_id", "attribute_id", "coder_id", "score"):
        scores[(turn_id, response_id, attribute_id)][panel[coder_id].username] = score
        coded.add(coder_id)
    shown = [coder for coder in panel.values() if coder.member or coder.user_id in coded]
    names = [coder.username for coder in sorted(shown, key=lambda coder: (not coder.member, coder.username))]
    former = frozenset(coder.username for coder in shown if not coder.member)
    on_panel = {coder.username: coder.member for coder in panel.values()}
    for judgment in Judgment.objects.filter(round=round, is_gold=True).select_related("round").prefetch_related(
            "agreed_by"):
        gold[(judgment.turn_id, judgment.response_id, judgment.attribute_id)] = judgment
    handles: dict[int, str] = {}
    if seen_by is None:
        labels = {r.pk: r.model_slot for rs in responses.values() for r in rs}
    else:
        # As the expert saw them: in their order, named by their letter and handle (ids and slot order unblind).
        labels = {}
        for turn_id, rs in list(responses.items()):
            seen = responses_as_seen(study=round.study, coder_id=seen_by.pk, turn_id=turn_id, responses=rs)
            responses[turn_id] = [r for r, _ in seen]
            labels.update({r.pk: label for r, label in seen})
            handles.update({r.pk: response_handle(study=round.study, coder_id=seen_by.pk, turn_id=turn_id,
                                                  response_id=r.pk)
                            for r, _ in seen})
    items = []
    for turn in turns:
        for attribute in attributes:
            for response in rules.units_of(attribute, responses[turn.pk]):
                key = (turn.pk, response.pk if response else None, attribute.pk)
                items.append(ConsensusItem(turn, response, attribute,
                                           {name: scores[key].get(name) for name in names}, gold.get(key),
                                           labels.get(response.pk, "") if response else "",
                                           handles.get(response.pk, "") if response else "", former,
                                           on_panel))
    return items


@dataclass
class ReviewerNote:
    who: str  # the reviewer's alias (their name when the admin reveals names)
    comment: str
    flags: list[str]  # the flags' labels


@dataclass
class WorkshopItem:
    turn: Turn
    response: ModelResponse | None
    attribute: AttributeDefinition
    gold: int
    scores: dict[str, int]  # reviewer alias -> score
    disagreements: int
    spans: dict[str, list[Span]] = field(default_factory=dict)  # alias ("Gold" too) -> spans
    note: WorkshopNote | None = None
    label: str = ""  # the response's model slot, or a letter when model names are hidden
    # The reviewers' own comments and flags on the item's turn (Assignment.comment / flags), by alias.
    reviewer_notes: list[ReviewerNote] = field(default_factory=list)

    @property
    def distribution(self) -> list[tuple[int, int, bool]]:
        counts = Counter(self.scores.values())
        return [(value, counts.get(value, 0), value == self.gold) for value in self.attribute.scale]

    @property
    def key(self) -> str:
        return f"{self.turn.pk}-{self.response.pk if self.response else 0}-{self.attribute.code}"

    @property
    def segments(self) -> list[dict]:
        """The response text cut at every span boundary; each piece says who highlighted it and as what, so
        every reviewer's spans (and gold's) are overlaid on the one text."""
        if self.response is None:
            return []
        marks = [(s.start, s.end, (who, s.subcategory)) for who, spans in self.spans.items() for s in spans]
        return [{"text": text, "slug": covering[0][1].slug if covering else "", "count": len(covering),
                 "title": "; ".join(f"{who}: {sub.name}" for who, sub in covering)}
                for text, covering in text_segments(self.response.text, marks)]


def reviewer_aliases(*, study: Study, reveal: bool) -> dict[int, str]:
    """The study's reviewers, user id -> alias (their username when ``reveal``): its members and those taken off
    it as reviewers (``FormerStudyMember``, whose alias is theirs alone), so a round's workshop keeps the codings
    and notes of every reviewer who coded it; someone who is a member again in another role is that role now.

    A reviewer without an alias (someone 0.2.0 took off, whose former membership migration 0022 gave back without
    one, since 0.2.0 recorded none) is named ``R`` and their record's id, or, when a reviewer already has that name,
    the first number past every alias in use: the workshop keys each item's scores, spans and notes by the name, so
    two reviewers under one name lost one's scores to the other's without a word."""
    columns = ("user_id", "user__username", "role", "alias", "pk")
    members = StudyMember.objects.filter(study=study)
    rows = members.values_list(*columns).union(FormerStudyMember.objects.filter(study=study).exclude(
        user__in=members.values("user_id")).values_list(*columns), all=True)
    reviewers = sorted((row for row in rows if row[2] == StudyMember.Role.REVIEWER), key=lambda row: (row[4], row[0]))
    if reveal:
        return {user_id: username for user_id, username, *_ in reviewers}
    taken = {alias for *_, alias, _ in reviewers if alias}
    numbers = [int(alias[1:]) for alias in taken if alias[:1] == "R" and alias[1:].isdigit()]
    past = itertools.count(max(numbers, default=0) + 1)
    named: dict[int, str] = {}
    for user_id, _, _, alias, pk in reviewers:
        if not alias:
            alias = f"R{pk}"
            while alias in taken:
                alias = f"R{next(past)}"
            taken.add(alias)
        named[user_id] = alias
    return named


def workshop_items(*, round: Round, reveal: bool = False, attribute: str = "", dataset: str = "",
                   reviewer: str = "") -> list[WorkshopItem]:
    """Items of turns with gold, sorted by how many reviewers disagree with it (bucketed), most first. Their spans
    and response labels are filled in by ``workshop_items_detail`` for the items a page shows. The workshop compares
    turns (a decision note is on a turn): the gold items of sessions or conversations (a history's checklists,
    imported) are not among them, and ``workshop_items_elsewhere`` counts them for the page to say so."""
    aliases = reviewer_aliases(study=round.study, reveal=reveal)
    gold = {(j.turn_id, j.response_id, j.attribute_id): j for j in
            _workshop_gold(round).select_related("attribute", "turn__conversation__dataset", "response")}
    scores: dict[tuple, dict[str, int]] = defaultdict(dict)
    for j in Judgment.objects.filter(round=round, is_gold=False, coder_id__in=aliases, score__isnull=False,
                                     turn__isnull=False).only(
        "turn_id", "response_id", "attribute_id", "coder_id", "score"
    ):
        assert j.score is not None  # filtered on score__isnull=False
        scores[(j.turn_id, j.response_id, j.attribute_id)][aliases[j.coder_id]] = j.score
    notes: dict[tuple, WorkshopNote] = {
        (n.turn_id, n.response_id, n.attribute_id): n for n in WorkshopNote.objects.filter(round=round)
    }
    items = []
    for key, g in gold.items():
        if attribute and g.attribute.code != attribute:
            continue
        # Workshop gold is scored and on a turn (both filtered: ``_workshop_gold``; the sort below needs a turn).
        assert g.turn is not None and g.score is not None
        if dataset and g.turn.conversation.dataset.name != dataset:
            continue
        bucket = g.attribute.bucket
        given = scores.get(key, {})
        disagreements = sum(1 for s in given.values() if bucket.get(str(s)) != bucket.get(str(g.score)))
        if reviewer and (reviewer not in given or bucket.get(str(given[reviewer])) == bucket.get(str(g.score))):
            continue
        items.append(WorkshopItem(g.turn, g.response, g.attribute, g.score, dict(sorted(given.items())),
                                  disagreements, note=notes.get(key)))
    items.sort(key=lambda i: (-i.disagreements, i.turn.pk, i.response.pk if i.response else 0, i.attribute.position))
    return items


def _workshop_gold(round: Round, *, on_a_turn: bool = True) -> QuerySet[Judgment]:
    """The round's scored gold the workshop compares (on a turn), or the rest (of a session or a conversation)."""
    return Judgment.objects.filter(round=round, is_gold=True, score__isnull=False, turn__isnull=not on_a_turn)


def workshop_items_elsewhere(*, round: Round) -> int:
    """How many scored gold items of the round are of a session or a conversation (no turn), which the workshop
    does not list (``workshop_items``): each reviewer's feedback compares them with gold."""
    return _workshop_gold(round, on_a_turn=False).count()


def _blind_labels(responses: dict[int, list[ModelResponse]]) -> dict[int, str]:
    """Letters per turn ("Response A"…) in an order that tells nothing of the model (not its slot's alphabetical
    place), the same on every visit. It is nobody's order from the turn page: each reviewer saw their own shuffle."""
    labels = {}
    for turn_id, turn_responses in responses.items():
        ordered = sorted(turn_responses, key=lambda r: hashlib.sha256(f"workshop:{turn_id}:{r.pk}".encode()).digest())
        labels.update({r.pk: f"Response {RESPONSE_LETTERS[i]}" for i, r in enumerate(ordered)})
    return labels


def workshop_items_detail(*, round: Round, items: Sequence[WorkshopItem], aliases: dict[int, str],
                          model_names: bool = False) -> None:
    """Fill in what the shown items need, in a fixed number of queries: the reviewers' comments and flags on the
    items' turns, every reviewer's spans (named by ``aliases``, of ``reviewer_aliases``; gold's too, if any) on
    their responses, and each response's label (its model slot only when ``model_names``)."""
    _reviewer_notes(round=round, items=items, aliases=aliases)
    responses = [i.response for i in items if i.response is not None]
    if not responses:
        return
    if model_names:
        labels = {r.pk: r.model_slot for r in responses}
    else:
        labels = _blind_labels(study_responses(study=round.study, turn_ids={r.turn_id for r in responses}))
    span_items: dict[tuple, WorkshopItem] = {}
    for item in items:
        if item.response is not None:
            item.label = labels.get(item.response.pk, "")
            span_items[(item.turn.pk, item.response.pk, item.attribute.pk)] = item
    for span in Span.objects.filter(judgment__round=round, judgment__response_id__in={k[1] for k in span_items},
                                    judgment__attribute_id__in={k[2] for k in span_items}
                                    ).select_related("judgment", "subcategory").order_by("start"):
        j = span.judgment
        shown = span_items.get((j.turn_id, j.response_id, j.attribute_id))
        who = "Gold" if j.is_gold else aliases.get(j.coder_id)
        if shown is not None and who:
            shown.spans.setdefault(who, []).append(span)


def _reviewer_notes(*, round: Round, items: Sequence[WorkshopItem], aliases: dict[int, str]) -> None:
    if not items:
        return
    notes: dict[int, list[ReviewerNote]] = defaultdict(list)
    for turn_id, coder_id, comment, flags in (
        Assignment.objects.filter(round=round, turn_id__in={i.turn.pk for i in items}, coder_id__in=aliases)
        .exclude(comment="", flags=[])
        .values_list("turn_id", "coder_id", "comment", "flags")
    ):
        notes[turn_id].append(ReviewerNote(aliases[coder_id], comment,
                                           [Assignment.FLAGS.get(flag, flag) for flag in flags or []]))
    for item in items:
        item.reviewer_notes = sorted(notes.get(item.turn.pk, []), key=lambda note: note.who)


def calibration_memo_markdown(*, round: Round) -> str:
    """The workshop's decision notes as a calibration memo (every name and note typed by a user escaped:
    ``common.markdown.md_text``)."""
    lines = [f"# Calibration memo — {md_text(round.study.name)}, {md_text(round.name)}", "",
             f"Closed {round.closed_at:%Y-%m-%d}." if round.closed_at else "", ""]
    notes = WorkshopNote.objects.filter(round=round).select_related(
        "attribute", "turn__conversation__dataset", "response", "written_by").order_by("attribute__position", "turn_id")
    current = None
    for note in notes:
        if note.attribute.code != current:
            current = note.attribute.code
            lines += [f"## {md_text(note.attribute.code)} · {md_text(note.attribute.name)}", ""]
        where = f"{note.turn.conversation.dataset.name}/{note.turn.conversation.external_id} turn {note.turn.index}"
        if note.response:
            where += f", {note.response.model_slot}"
        lines += [f"- **{md_text(where)}**: {md_text(note.text)} _({md_text(note.written_by.get_username())})_"]
    if current is None:
        lines.append("_No decision notes were recorded._")
    return "\n".join(lines).strip() + "\n"


def time_on_task(*, study: Study) -> list[dict]:
    """Active (non-idle) coding time per coder and round, from the turn pages' reports."""
    rows = (
        Assignment.objects.filter(round__study=study)
        .values("coder__username", "round__kind", "round__number")
        .annotate(seconds=Sum("active_seconds"), turns=Count("id"),
                  done=Count("id", filter=Q(completed_at__isnull=False)))
        .order_by("round__kind", "round__number", "coder__username")
    )
    return [
        row | {"round": round_name(row["round__kind"], row["round__number"]),
               "minutes": round((row["seconds"] or 0) / 60, 1),
               "per_turn": round((row["seconds"] or 0) / row["done"] / 60, 1) if row["done"] else None}
        for row in rows
    ]


def unfinished_coders(*, round: Round) -> list[tuple[str, int, int]]:
    """(username, turns done, turns assigned) of every coder with turns still to do in the round, from the queue
    counters (``QueueProgress``), not a count over the round's assignments."""
    rows = (QueueProgress.objects.filter(round=round, done__lt=F("total"))
            .values_list("coder__username", "done", "total").order_by("coder__username"))
    return [(username, done, total) for username, done, total in rows]


@dataclass
class Feedback:
    round: Round
    n_items: int
    exact: float | None
    bucketed: float | None
    by_attribute: list[dict]
    differences: list[dict]
    previous_round: str | None
    delta_pp: float | None


def _agreement(pairs: list[tuple[int, int, dict]]) -> tuple[float | None, float | None]:
    """Exact and bucketed agreement of (mine, gold, bucket map) pairs, by the metrics engine's own definition."""
    if not pairs:
        return None, None
    # Imported here: web workers load numpy only when a feedback page needs it, never at start-up.
    import numpy as np

    from metrics.core.agreement import agreement_rate

    mine = np.array([m for m, _, _ in pairs])
    gold = np.array([g for _, g, _ in pairs])
    mine_bucket = np.array([b[str(m)] for m, _, b in pairs])
    gold_bucket = np.array([b[str(g)] for _, g, b in pairs])
    return agreement_rate(mine, gold), agreement_rate(mine_bucket, gold_bucket)


def _unit(judgment: Judgment) -> tuple[int | None, ...]:
    """What a judgment is of, to pair a coder's with gold: its turn and response, its session, or its conversation
    (a session's or a conversation's code has neither turn nor response), and its attribute."""
    return (judgment.turn_id, judgment.response_id, judgment.session_id, judgment.conversation_id,
            judgment.attribute_id)


def reviewer_feedback(*, round: Round, user: User) -> Feedback:
    """A reviewer's own agreement with gold in a closed calibration round, where they differed, and their Δ. A main
    round has none: its gold (from a judgments import) is never shown to its reviewers, whose saves there, unlike a
    calibration round's, no feedback lock stops after a reopening."""
    if round.kind != Round.Kind.CALIBRATION:
        raise ValidationError("feedback is given on calibration rounds only")
    if round.status != Round.Status.CLOSED:
        raise ValidationError("feedback is available once the round is closed")

    def pairs_of(r: Round):
        gold = {_unit(j): j.score for j in Judgment.objects.filter(round=r, is_gold=True, score__isnull=False)}
        mine = Judgment.objects.filter(round=r, coder=user, is_gold=False, score__isnull=False).select_related(
            "attribute", "turn__conversation__dataset", "response", "session__conversation__dataset")
        return [(j, gold[_unit(j)]) for j in mine if _unit(j) in gold]

    pairs = pairs_of(round)
    exact, bucketed = _agreement([(j.score, g, j.attribute.bucket) for j, g in pairs])
    per_attribute: dict[str, list] = defaultdict(list)
    for j, g in pairs:
        per_attribute[j.attribute.code].append((j.score, g, j.attribute.bucket, j.attribute))
    by_attribute = []
    for code, rows in sorted(per_attribute.items(), key=lambda kv: kv[1][0][3].position):
        e, b = _agreement([(m, g, bk) for m, g, bk, _ in rows])
        by_attribute.append({"code": code, "name": rows[0][3].name, "n": len(rows), "exact": e, "bucketed": b})
    differing = [(j, g) for j, g in pairs if j.score != g]
    turn_ids = {j.turn_id for j, _ in differing if j.turn_id is not None}
    session_ids = {j.session_id for j, _ in differing if j.session_id is not None}
    # Name each response as this reviewer saw it, and link back to the item in their own queue (a session's item:
    # the assignment of its first turn in the queue).
    labels: dict[int, str] = {}
    handles: dict[int, str] = {}
    for turn_id, responses in study_responses(study=round.study, turn_ids=turn_ids).items():
        handles |= {r.pk: response_handle(study=round.study, coder_id=user.pk, turn_id=turn_id, response_id=r.pk)
                    for r in responses}
        labels |= {r.pk: label for r, label in responses_as_seen(study=round.study, coder_id=user.pk, turn_id=turn_id,
                                                                 responses=responses, handles=handles)}
    mine = Assignment.objects.filter(round=round, coder=user)
    positions = dict(mine.filter(turn_id__in=turn_ids).values_list("turn_id", "position"))
    session_positions: dict[int, int] = {}
    for session_id, position in (mine.filter(turn__session_id__in=session_ids).order_by("-position")
                                 .values_list("turn__session_id", "position")):
        session_positions[session_id] = position
    differences = [
        {"attribute": j.attribute, "turn": j.turn, "session": j.session, "response": j.response, "mine": j.score,
         "gold": g, "my_anchor": j.attribute.anchors.get(str(j.score), ""),
         "gold_anchor": j.attribute.anchors.get(str(g), ""),
         "label": labels.get(j.response_id, "") if j.response_id else "",
         "position": positions.get(j.turn_id) if j.turn_id is not None else session_positions.get(j.session_id)}
        for j, g in differing
    ]
    for d in differences:
        # Each item by its place in the reviewer's queue (a turn's or a session's id rises along its conversation,
        # so it would date it where the session order is blinded), a response by the reviewer's handle of it (its id
        # would tell the model slot's order).
        unit = handles[d["response"].pk] if d["response"] else 0
        d["key"] = (f"s{d['position'] or 0}-{d['attribute'].code}" if d["turn"] is None
                    else f"{d['position']}-{unit}-{d['attribute'].code}" if d["position"] is not None
                    else f"t{d['turn'].pk}-{unit}-{d['attribute'].code}")
    # In the reviewer's queue order, by label within a turn: the judgments come in id order, which may be the
    # model-slot order, and the turns' ids may date them.
    differences.sort(key=lambda d: (d["attribute"].position, d["position"] is None, d["position"] or 0,
                                    d["turn"].pk if d["turn"] is not None and d["position"] is None else 0,
                                    d["label"]))
    # The reviewer's last round: the latest earlier closed calibration round with a scored coding of theirs (the
    # report's Δ is over the rounds reviewers coded), not a reserved gold pool between, which holds none of theirs.
    previous = (Round.objects.filter(study=round.study, kind=Round.Kind.CALIBRATION, number__lt=round.number,
                                     status=Round.Status.CLOSED)
                .filter(Exists(Judgment.objects.filter(round_id=OuterRef("pk"), coder=user, is_gold=False,
                                                       score__isnull=False)))
                .order_by("-number").first()
                if round.kind == Round.Kind.CALIBRATION else None)
    delta = None
    if previous is not None:
        _, before = _agreement([(j.score, g, j.attribute.bucket) for j, g in pairs_of(previous)])
        if before is not None and bucketed is not None:
            delta = 100 * (bucketed - before)
    return Feedback(round, len(pairs), exact, bucketed, by_attribute, differences,
                    previous.name if previous else None, delta)


def feedback_spans(*, round: Round, user: User, differences: Sequence[dict]) -> None:
    """Put on each shown difference (of ``reviewer_feedback``) with a response the reviewer's own spans and the
    expert panel's (the experts' own judgments of that item; gold carries no spans), overlaid on the response text
    as ``segments``. One query, whatever the number of differences; no other reviewer's work is read."""
    wanted = {(d["turn"].pk, d["response"].pk, d["attribute"].pk): d for d in differences if d["response"] is not None}
    for d in wanted.values():
        d.update(my_spans=[], expert_spans=[])
    if not wanted:
        return
    experts = StudyMember.objects.filter(study=round.study, role=StudyMember.Role.EXPERT).exclude(user=user)
    spans = (Span.objects.filter(judgment__round=round, judgment__is_gold=False,
                                 judgment__response_id__in={k[1] for k in wanted},
                                 judgment__attribute_id__in={k[2] for k in wanted})
             .filter(Q(judgment__coder=user) | Q(judgment__coder_id__in=experts.values("user_id")))
             .select_related("judgment", "subcategory").order_by("start", "end"))
    for span in spans:
        j = span.judgment
        difference = wanted.get((j.turn_id, j.response_id, j.attribute_id))
        if difference is not None:
            difference["my_spans" if j.coder_id == user.pk else "expert_spans"].append(span)
    for d in wanted.values():
        text = d["response"].text
        d["my_marks"] = [{"subcategory": s.subcategory, "start": s.start, "end": s.end, "text": text[s.start:s.end]}
                         for s in d["my_spans"]]
        # The panel as one: a span marked alike by several experts is listed once, with how many marked it.
        alike = Counter((s.start, s.end, s.subcategory) for s in d["expert_spans"])
        d["expert_marks"] = [{"subcategory": sub, "start": start, "end": end, "text": text[start:end], "experts": n}
                             for (start, end, sub), n in alike.items()]
        marks = ([(s.start, s.end, ("you", s.subcategory)) for s in d["my_spans"]]
                 + [(s.start, s.end, ("expert", s.subcategory)) for s in d["expert_spans"]])
        d["segments"] = [
            {"text": piece, "mine": any(who == "you" for who, _ in covering),
             "experts": sum(1 for who, _ in covering if who == "expert"),
             "title": "; ".join(f"{'you' if who == 'you' else 'an expert'}: {sub.name}" for who, sub in covering)}
            for piece, covering in text_segments(text, marks)
        ]


def panel_ranking(*, study: Study) -> dict:
    """The panel-selection table: the latest succeeded metrics report's ranking and per-reviewer figures (the run
    the exports page serves), and every reviewer member of the study with their retained state.

    Every figure is the stored report's own: the report already leaves the study's experts out of its reviewers,
    pairs, bootstrap and ranking, and ``rank`` is the report's (ties share a rank; in the top k when fewer than k
    others score higher, as the bootstrap's top-k shares count it). Rows follow the report's ranking; a reviewer
    the report ranks who is no longer a reviewer of the study stays listed (``member`` False: not retainable), and
    reviewers the ranking does not cover follow, with ``calibrated`` False when the report has no figures of them
    at all ("no calibration data"). Without a succeeded run, ``run`` is None and every reviewer is listed unranked.
    Each row without a rank says why (``unranked``: the report's ``panel_ranking.unranked``).
    """
    run = metric_run_latest_succeeded(study=study)
    latest = metric_runs_for(study=study).first()
    newer = latest if run is not None and latest is not None and latest.pk != run.pk \
        and latest.status != MetricRun.Status.SUCCEEDED else None
    report = run.result if run is not None and run.result is not None else {}
    calibration = report.get("calibration", {})
    ranking = calibration.get("panel_ranking") or {}
    members = {m.user.get_username(): m for m in StudyMember.objects.filter(study=study).select_related("user")}
    reviewers = {name: m for name, m in members.items() if m.role == StudyMember.Role.REVIEWER}
    last = ranking.get("round")
    bootstrap = calibration.get("bootstrap", {})
    shares = bootstrap.get("top_k", {})
    ks = sorted(shares, key=int)
    pairwise = calibration.get("pairwise", {}).get(last, {}) if last else {}
    reported = calibration.get("reviewers", {})
    unranked = ranking.get("unranked") or {}

    def why_unranked(name: str, ranked: dict | None) -> str | None:
        """Why the report gives the reviewer no rank (``panel_ranking.unranked``; read off the report's ranking
        and reviewers when stored before it): ``no_gold``, ``not_in_round``, ``no_data`` (no codings the report
        read: none of a calibration round, or added since), ``no_run``; None when ranked."""
        if run is None:
            return "no_run"
        if ranked is not None and ranked.get("rank") is not None:
            return None
        if name in unranked:
            return str(unranked[name])
        if ranked is not None:
            return "no_gold"
        return "not_in_round" if name in reported else "no_data"

    def row(name: str, ranked: dict | None) -> dict:
        entry = reported.get(name, {})
        last_entry = (entry.get(last) or {}) if last else {}
        pair_values = [v.get("bucketed") for k, v in pairwise.items() if name in k.split("|")
                       and v.get("bucketed") is not None]
        member = reviewers.get(name)
        return {
            "reviewer": name, "rank": ranked["rank"] if ranked else None, "ranked": ranked is not None,
            "unranked": why_unranked(name, ranked),
            "calibrated": name in reported, "member": member is not None,
            "retained": member.retained if member is not None else None,
            "bucketed": ranked["bucketed"] if ranked else None, "delta_pp": entry.get("delta_pp"),
            "kappa_user": last_entry.get("kappa_user"), "kappa_response": last_entry.get("kappa_response"),
            "kappa_flags": last_entry.get("kappa_flags"), "bands": last_entry.get("kappa_bands") or {},
            "bias": last_entry.get("bias"), "n_items": last_entry.get("n_items"),
            "pairwise_mean": sum(pair_values) / len(pair_values) if pair_values else None,
            "top_k": {k: shares[k].get(name) for k in ks},
        }

    rows = [row(r["reviewer"], r) for r in ranking.get("ranking", [])]
    listed = {r["reviewer"] for r in rows}
    rows += [row(name, None) for name in sorted(reviewers) if name not in listed]
    return {
        "run": run, "newer_run": newer, "round": last, "rows": rows,
        "pairwise_mean": calibration.get("pairwise_mean", {}).get(last) if last else None,
        "panel_size": ranking.get("panel_size"), "suggested": ranking.get("suggested_panel", []), "ks": ks,
        "bootstrap": {"resamples": bootstrap.get("resamples"), "seed": bootstrap.get("seed"),
                      "n_turns": bootstrap.get("n_turns"),
                      # the turns with gold on an item its reviewers coded: the others add nothing to a resample
                      "n_clusters": (bootstrap.get("n_clusters_by_round") or {}).get(last)},
        "experts": sorted(name for name, m in members.items() if m.role == StudyMember.Role.EXPERT),
    }


def panel_top(*, ranking: dict, k: int) -> list[str]:
    """The top k of the report's ranking that can be retained: the study's reviewers the report ranks with fewer
    than k others scoring higher (ties at the boundary are all in: docs/metrics.md#panel-selection, as
    ``suggested_panel`` and the bootstrap's top-k shares count it)."""
    return [row["reviewer"] for row in ranking["rows"]
            if row["member"] and row["rank"] is not None and row["rank"] <= k]


def panel_state(*, retained: dict[str, bool | None]) -> str:
    """The study's reviewers and their retained state as one string: what a confirmation of a panel change was
    shown, so that ``panel_retain`` refuses it once either has changed."""
    marks = {True: "1", False: "0", None: "-"}
    return ",".join(f"{name}={marks[value]}" for name, value in sorted(retained.items()))


@dataclass(frozen=True)
class PanelChange:
    """What retaining exactly ``retain`` would do, told to the admin before it is done."""

    retain: list[str]
    becomes_retained: list[str]
    stops_retained: list[str]
    stays_retained: list[str]
    decided_out: list[str]  # undecided until now, not retained from now on
    k: int
    top: list[str]
    state: str  # ``_panel_state`` when the change was computed
    main_round: Round | None
    main_queues: list[tuple[str, int]]  # (coder, main-round assignments already made)

    @property
    def overridden(self) -> bool:
        return sorted(self.retain) != sorted(self.top)

    @property
    def unchanged(self) -> bool:
        return not (self.becomes_retained or self.stops_retained or self.decided_out)

    @property
    def retained_without_queue(self) -> list[str]:
        queued = {name for name, _ in self.main_queues}
        return [name for name in self.retain if name not in queued]

    @property
    def queued_not_retained(self) -> list[str]:
        return [name for name, _ in self.main_queues if name not in self.retain]

    @property
    def beyond_top(self) -> list[str]:
        return sorted(set(self.retain) - set(self.top))

    @property
    def top_left_out(self) -> list[str]:
        return sorted(set(self.top) - set(self.retain))


def panel_change(*, study: Study, ranking: dict, usernames: Sequence[str], k: int | None = None) -> PanelChange:
    """Who becomes retained, who stops being retained, the top k the selection is compared with (``k`` defaults
    to the size of the selection, as ``panel_retain`` does), and the main round's queues, which a new panel does
    not change (``main_round_assign`` refuses a main round that already has assignments)."""
    retain = set(usernames)
    was = {row["reviewer"]: row["retained"] for row in ranking["rows"] if row["member"]}
    k = k or len(retain)
    main = Round.objects.filter(study=study, kind=Round.Kind.MAIN).order_by("number").first()
    queues = list(QueueProgress.objects.filter(round=main).order_by("coder__username")
                  .values_list("coder__username", "total")) if main is not None else []
    return PanelChange(
        retain=sorted(retain),
        becomes_retained=sorted(name for name, before in was.items() if name in retain and before is not True),
        stops_retained=sorted(name for name, before in was.items() if name not in retain and before is True),
        stays_retained=sorted(name for name, before in was.items() if name in retain and before is True),
        decided_out=sorted(name for name, before in was.items() if name not in retain and before is None),
        k=k, top=panel_top(ranking=ranking, k=k), state=panel_state(retained=was), main_round=main,
        main_queues=queues,
    )


# --- an item's history (admins) -----------------------------------------------------------------------------------

# The fields of a judgment's value (annotation.services.judgment_value) in the order the history shows them.
HISTORY_FIELDS = {"score": "score", "instance_count": "count", "spans": "spans", "note": "note",
                  "agreed_by": "agreed"}


@dataclass
class HistoryChange:
    field: str
    before: str | None  # None: the change created the judgment
    after: str


@dataclass
class HistoryRow:
    revision: JudgmentRevision
    unit: str  # "turn", or the response's model slot: admins see model names
    judgment_of: str  # the coder's username, or "gold"
    changes: list[HistoryChange]  # only the fields that changed (on creation: those with a value)


def _shown(field_name: str, value: Any) -> str:
    if value is None or value == "" or value == []:
        return "—"
    if field_name == "spans":
        return "; ".join(f"[{start}, {end}) {slug}" for start, end, slug in value)
    if field_name == "agreed_by":
        return ", ".join(value)
    return str(value)


def item_history_rows(*, revisions: Iterable[JudgmentRevision]) -> list[HistoryRow]:
    """An item's recorded judgment changes (``annotation.selectors.item_history``) as an admin reads them: each
    change's unit and whose judgment it is, and old → new of every field that changed. No queries of its own."""
    rows = []
    for revision in revisions:
        judgment = revision.judgment
        before, after = revision.before or {}, revision.after
        changes = [
            HistoryChange(label, None if revision.before is None else _shown(name, before.get(name)),
                          _shown(name, after.get(name)))
            for name, label in HISTORY_FIELDS.items()
            if (name in after or name in before) and (
                before.get(name) != after.get(name) if revision.before is not None
                else after.get(name) not in (None, "", []))
        ]
        rows.append(HistoryRow(revision, judgment.response.model_slot if judgment.response else "turn",
                               "gold" if judgment.is_gold else judgment.coder.get_username(), changes))
    return rows
