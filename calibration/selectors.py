"""Reads of the calibration protocol: candidate turns, the gold panel's consensus table, the workshop's
disagreement items, the memo, time on task, a reviewer's feedback and the panel ranking (from the latest metrics
report)."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db.models import Count, Q, Sum

from annotation import rules
from annotation.models import (
    Assignment,
    AttributeDefinition,
    Judgment,
    Round,
    RoundItem,
    Span,
    Study,
    StudyMember,
    WorkshopNote,
)
from annotation.selectors import responses_as_seen, study_responses
from benchmark.models import ModelResponse, Turn
from common.rounds import round_name
from metrics.core.agreement import agreement_rate
from metrics.selectors import metric_run_latest_succeeded


def calibration_candidates(*, study: Study) -> list[Turn]:
    """Turns with responses of the study's models that no other round of the study uses."""
    used = RoundItem.objects.filter(round__study=study).values("turn_id")
    responses = ModelResponse.objects.all()
    if study.model_slots:
        responses = responses.filter(model_slot__in=study.model_slots)
    return list(
        Turn.objects.filter(pk__in=responses.values("turn_id"))
        .exclude(pk__in=used)
        .select_related("conversation__dataset")
        .order_by("pk")
    )


@dataclass
class ConsensusItem:
    turn: Turn
    response: ModelResponse | None
    attribute: AttributeDefinition
    expert_scores: dict[str, int | None]
    gold: Judgment | None

    @property
    def unanimous(self) -> bool:
        values = list(self.expert_scores.values())
        return bool(values) and None not in values and len(set(values)) == 1

    @property
    def key(self) -> str:
        return f"{self.turn.pk}-{self.response.pk if self.response else 0}-{self.attribute.code}"


def consensus_items(*, round: Round) -> list[ConsensusItem]:
    """Every (unit, attribute) of the round's set with each expert's score and the recorded gold, if any."""
    experts = list(
        StudyMember.objects.filter(study=round.study, role=StudyMember.Role.EXPERT)
        .select_related("user").order_by("user__username")
    )
    names = [m.user.get_username() for m in experts]
    turns = [item.turn for item in round.items.select_related("turn__conversation__dataset").order_by("position")]
    responses = study_responses(study=round.study, turn_ids=[t.pk for t in turns])
    attributes = list(round.study.schema.attributes.exclude(unit="conversation").order_by("position"))
    scores: dict[tuple, dict[str, int | None]] = defaultdict(dict)
    gold: dict[tuple, Judgment] = {}
    for judgment in Judgment.objects.filter(round=round, turn__in=turns).filter(
        is_gold=False, coder__in=[m.user for m in experts]
    ).select_related("coder"):
        scores[(judgment.turn_id, judgment.response_id, judgment.attribute_id)][judgment.coder.get_username()] = (
            judgment.score
        )
    for judgment in Judgment.objects.filter(round=round, is_gold=True).prefetch_related("agreed_by"):
        gold[(judgment.turn_id, judgment.response_id, judgment.attribute_id)] = judgment
    items = []
    for turn in turns:
        for attribute in attributes:
            for response in rules.units_of(attribute, responses[turn.pk]):
                key = (turn.pk, response.pk if response else None, attribute.pk)
                items.append(ConsensusItem(turn, response, attribute,
                                           {name: scores[key].get(name) for name in names}, gold.get(key)))
    return items


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
        text = self.response.text
        marks = [(s.start, s.end, who, s.subcategory) for who, spans in self.spans.items() for s in spans]
        cuts = sorted({0, len(text)} | {m[0] for m in marks} | {m[1] for m in marks})
        pieces = []
        for start, end in zip(cuts, cuts[1:], strict=False):
            covering = [(who, sub) for s, e, who, sub in marks if s <= start and e >= end]
            pieces.append({
                "text": text[start:end],
                "slug": covering[0][1].slug if covering else "",
                "count": len(covering),
                "title": "; ".join(f"{who}: {sub.name}" for who, sub in covering),
            })
        return pieces


def reviewer_aliases(*, study: Study, reveal: bool) -> dict[int, str]:
    members = StudyMember.objects.filter(study=study, role=StudyMember.Role.REVIEWER).select_related("user")
    return {m.user_id: (m.user.get_username() if reveal else (m.alias or f"R{m.pk}")) for m in members}


def workshop_items(*, round: Round, reveal: bool = False, attribute: str = "", dataset: str = "",
                   reviewer: str = "") -> list[WorkshopItem]:
    """Items with gold, sorted by how many reviewers disagree with it (bucketed), most first."""
    aliases = reviewer_aliases(study=round.study, reveal=reveal)
    gold = {(j.turn_id, j.response_id, j.attribute_id): j for j in
            Judgment.objects.filter(round=round, is_gold=True, score__isnull=False)
            .select_related("attribute", "turn__conversation__dataset", "response")}
    scores: dict[tuple, dict[str, int]] = defaultdict(dict)
    for j in Judgment.objects.filter(round=round, is_gold=False, coder_id__in=aliases, score__isnull=False).only(
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
        # Workshop gold is scored (filtered) and on a turn (gold_record takes one; the sort below needs one).
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
    span_items: dict[tuple, WorkshopItem] = {
        (i.turn.pk, i.response.pk, i.attribute.pk): i for i in items if i.response is not None
    }
    if span_items:
        for span in Span.objects.filter(judgment__round=round, judgment__response_id__in={k[1] for k in span_items}
                                        ).select_related("judgment", "subcategory").order_by("start"):
            j = span.judgment
            item = span_items.get((j.turn_id, j.response_id, j.attribute_id))
            if item is None:
                continue
            who = "Gold" if j.is_gold else aliases.get(j.coder_id)
            if who:
                item.spans.setdefault(who, []).append(span)
    return items


def calibration_memo_markdown(*, round: Round) -> str:
    """The workshop's decision notes as a calibration memo."""
    lines = [f"# Calibration memo — {round.study.name}, {round.name}", "",
             f"Closed {round.closed_at:%Y-%m-%d}." if round.closed_at else "", ""]
    notes = WorkshopNote.objects.filter(round=round).select_related(
        "attribute", "turn__conversation__dataset", "response", "written_by").order_by("attribute__position", "turn_id")
    current = None
    for note in notes:
        if note.attribute.code != current:
            current = note.attribute.code
            lines += [f"## {note.attribute.code} · {note.attribute.name}", ""]
        where = f"{note.turn.conversation.dataset.name}/{note.turn.conversation.external_id} turn {note.turn.index}"
        if note.response:
            where += f", {note.response.model_slot}"
        lines += [f"- **{where}**: {note.text} _({note.written_by.get_username()})_"]
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
    """(username, turns done, turns assigned) of every coder with turns still to do in the round."""
    rows = (
        Assignment.objects.filter(round=round)
        .values("coder__username")
        .annotate(total=Count("id"), done=Count("id", filter=Q(completed_at__isnull=False)))
        .order_by("coder__username")
    )
    return [(row["coder__username"], row["done"], row["total"]) for row in rows if row["done"] < row["total"]]


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
    mine = np.array([m for m, _, _ in pairs])
    gold = np.array([g for _, g, _ in pairs])
    mine_bucket = np.array([b[str(m)] for m, _, b in pairs])
    gold_bucket = np.array([b[str(g)] for _, g, b in pairs])
    return agreement_rate(mine, gold), agreement_rate(mine_bucket, gold_bucket)


def reviewer_feedback(*, round: Round, user: User) -> Feedback:
    """A reviewer's own agreement with gold in a closed round, where they differed, and their Δ."""
    if round.status != Round.Status.CLOSED:
        raise ValidationError("feedback is available once the round is closed")

    def pairs_of(r: Round):
        gold = {(j.turn_id, j.response_id, j.attribute_id): j.score
                for j in Judgment.objects.filter(round=r, is_gold=True, score__isnull=False)}
        mine = Judgment.objects.filter(round=r, coder=user, is_gold=False, score__isnull=False).select_related(
            "attribute", "turn__conversation__dataset", "response")
        return [(j, gold[(j.turn_id, j.response_id, j.attribute_id)]) for j in mine
                if (j.turn_id, j.response_id, j.attribute_id) in gold]

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
    turn_ids = {j.turn_id for j, _ in differing}
    # Name each response as this reviewer saw it, and link back to the item in their own queue.
    labels = {r.pk: label for turn_id, responses in study_responses(study=round.study, turn_ids=turn_ids).items()
              for r, label in responses_as_seen(study=round.study, coder_id=user.pk, turn_id=turn_id,
                                                responses=responses)}
    positions = dict(Assignment.objects.filter(round=round, coder=user, turn_id__in=turn_ids)
                     .values_list("turn_id", "position"))
    differences = [
        {"attribute": j.attribute, "turn": j.turn, "response": j.response, "mine": j.score, "gold": g,
         "my_anchor": j.attribute.anchors.get(str(j.score), ""), "gold_anchor": j.attribute.anchors.get(str(g), ""),
         "label": labels.get(j.response_id, "") if j.response_id else "", "position": positions.get(j.turn_id)}
        for j, g in differing
    ]
    differences.sort(key=lambda d: (d["attribute"].position, d["turn"].pk))
    previous = (Round.objects.filter(study=round.study, kind=Round.Kind.CALIBRATION, number__lt=round.number,
                                     status=Round.Status.CLOSED).order_by("-number").first()
                if round.kind == Round.Kind.CALIBRATION else None)
    delta = None
    if previous is not None:
        _, before = _agreement([(j.score, g, j.attribute.bucket) for j, g in pairs_of(previous)])
        if before is not None and bucketed is not None:
            delta = 100 * (bucketed - before)
    return Feedback(round, len(pairs), exact, bucketed, by_attribute, differences,
                    previous.name if previous else None, delta)


def panel_ranking(*, study: Study) -> dict | None:
    """The latest succeeded metrics report's ranking and per-reviewer figures, restricted to the study's reviewers.

    The report already leaves the study's experts out of its reviewers, pairs, bootstrap and ranking (they code
    calibration items too, but are never in the panel), so every figure here is the report's own; the filter
    only drops coders who are not reviewer members of the study."""
    run = metric_run_latest_succeeded(study=study)
    if run is None:
        return None
    assert run.result is not None  # a succeeded run has its result (a database constraint)
    calibration = run.result.get("calibration", {})
    ranking = calibration.get("panel_ranking") or {}
    reviewers = set(StudyMember.objects.filter(study=study, role=StudyMember.Role.REVIEWER)
                    .values_list("user__username", flat=True))
    retained = set(StudyMember.objects.filter(study=study, retained=True).values_list("user__username", flat=True))
    last = ranking.get("round")
    rows = []
    bootstrap = calibration.get("bootstrap", {}).get("top_k", {})
    pairwise = calibration.get("pairwise", {}).get(last, {}) if last else {}
    for position, row in enumerate(r for r in ranking.get("ranking", []) if r["reviewer"] in reviewers):
        name = row["reviewer"]
        entry = calibration.get("reviewers", {}).get(name, {})
        last_entry = entry.get(last, {}) if last else {}
        pair_values = [v.get("bucketed") for k, v in pairwise.items() if name in k.split("|")
                       and v.get("bucketed") is not None]
        rows.append({
            "position": position + 1, "reviewer": name, "bucketed": row["bucketed"], "delta_pp": entry.get("delta_pp"),
            "kappa_user": last_entry.get("kappa_user"), "kappa_response": last_entry.get("kappa_response"),
            "kappa_flags": last_entry.get("kappa_flags"), "bands": last_entry.get("kappa_bands", {}),
            "bias": last_entry.get("bias"), "n_items": last_entry.get("n_items"),
            "pairwise_mean": sum(pair_values) / len(pair_values) if pair_values else None,
            "top_k": {k: shares.get(name) for k, shares in sorted(bootstrap.items())},
            "retained": name in retained,
        })
    return {"run": run, "round": last, "rows": rows, "pairwise_mean": calibration.get("pairwise_mean", {}).get(last)}
