"""The calibration protocol as services (writes) and selectors (reads): calibration sets, the round lifecycle,
the gold panel's consensus, the workshop, feedback to reviewers, panel selection and main-round assignment.

Every write names its actor (``by``) and leaves an AuditEvent; rules are checked here, on the server, whatever
page or script calls them.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from annotation import roles
from annotation.models import (
    Assignment,
    AttributeDefinition,
    AuditEvent,
    Judgment,
    ReviewerAlert,
    Round,
    RoundItem,
    Span,
    Study,
    StudyMember,
    WorkshopNote,
)
from annotation.services import round_items_set
from benchmark.models import ModelResponse, Turn

User = get_user_model()


def is_study_admin(user: AbstractBaseUser) -> bool:
    return bool(user.is_authenticated and (user.is_superuser or user.groups.filter(name=roles.ADMIN).exists()))


def _require_admin(by: AbstractBaseUser) -> None:
    if not is_study_admin(by):
        raise ValidationError("only a study admin can do this")


def _audit(by, action: str, study: Study, target: str, **data) -> None:
    AuditEvent.objects.create(actor=by, action=action, study=study, target=target, data=data)


# --- calibration sets ----------------------------------------------------------------------------------------


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


@transaction.atomic
def calibration_set_sample(*, round: Round, by: AbstractBaseUser, n: int = 10, seed: int = 0) -> list[Turn]:
    """Draw n turns, stratified across (dataset, single/multi-turn) in proportion to their size (largest
    remainder; every stratum gets one when n allows), then fix them in a seeded order."""
    _require_admin(by)
    if round.kind != Round.Kind.CALIBRATION:
        raise ValidationError("calibration sets belong to calibration rounds")
    if n < 1:
        raise ValidationError("a calibration set needs at least one turn")
    candidates = calibration_candidates(study=round.study)
    if len(candidates) < n:
        raise ValidationError(f"only {len(candidates)} unused turns are available, {n} were asked for")
    strata: dict[tuple[str, str], list[Turn]] = defaultdict(list)
    for turn in candidates:
        strata[(turn.conversation.dataset.name, turn.conversation.kind)].append(turn)
    keys = sorted(strata)
    sizes = np.array([len(strata[k]) for k in keys], dtype=float)
    quota = n * sizes / sizes.sum()
    take = np.floor(quota).astype(int)
    if n >= len(keys):
        take = np.maximum(take, 1)
    while take.sum() > n:
        take[np.argmax(take - quota)] -= 1
    for index in np.argsort(-(quota - take), kind="stable"):
        if take.sum() >= n:
            break
        if take[index] < sizes[index]:
            take[index] += 1
    rng = np.random.default_rng(seed)
    chosen: list[Turn] = []
    for key, k in zip(keys, take, strict=True):
        members = strata[key]
        chosen += [members[i] for i in sorted(rng.choice(len(members), size=int(k), replace=False))]
    order = rng.permutation(len(chosen))
    turns = [chosen[i] for i in order]
    round_items_set(round=round, turns=turns, by=by)
    _audit(by, "calibration_set.sample", round.study, f"round:{round.name}", n=n, seed=seed)
    return turns


_REF = re.compile(r"^(?P<dataset>[^/]+)/(?P<conversation>.+)#(?P<turn>[1-9][0-9]*)$")


@transaction.atomic
def calibration_set_from_refs(*, round: Round, by: AbstractBaseUser, refs: str) -> list[Turn]:
    """A hand-built set: one ``DATASET/CONVERSATION_ID#TURN`` per line, in the order given."""
    _require_admin(by)
    errors, turns = [], []
    for number, line in enumerate(refs.splitlines(), start=1):
        line = line.strip()
        if not line:
            continue
        match = _REF.match(line)
        if not match:
            errors.append(f"line {number}: {line!r} is not DATASET/CONVERSATION_ID#TURN")
            continue
        turn = Turn.objects.filter(conversation__dataset__name=match["dataset"],
                                   conversation__external_id=match["conversation"],
                                   index=int(match["turn"])).first()
        if turn is None:
            errors.append(f"line {number}: no turn {match['turn']} of {match['dataset']}/{match['conversation']}")
        elif turn in turns:
            errors.append(f"line {number}: {line} is listed twice")
        else:
            turns.append(turn)
    if not turns and not errors:
        errors.append("no turn given")
    if errors:
        raise ValidationError(errors)
    round_items_set(round=round, turns=turns, by=by)
    return turns


# --- round lifecycle -----------------------------------------------------------------------------------------


@transaction.atomic
def calibration_round_open(*, round: Round, by: AbstractBaseUser) -> Round:
    """Open a calibration round: every reviewer and expert of the study gets the same items, in the set's order."""
    from annotation.services import assignments_ensure, round_open

    _require_admin(by)
    items = list(round.items.select_related("turn").order_by("position"))
    if not items:
        raise ValidationError(f"{round.name} has no calibration set yet")
    coders = [m.user for m in StudyMember.objects.filter(study=round.study).select_related("user")]
    if not coders:
        raise ValidationError("the study has no reviewers or experts")
    round_open(round=round, by=by)
    for coder in coders:
        assignments_ensure(round=round, coder=coder, turns=[item.turn for item in items])
    return round


@transaction.atomic
def round_reopen(*, round: Round, by: AbstractBaseUser, reason: str) -> Round:
    """Reopen a closed round: an explicit admin action, with its reason recorded."""
    _require_admin(by)
    if round.status != Round.Status.CLOSED:
        raise ValidationError(f"{round.name} is {round.status}, not closed")
    if not reason.strip():
        raise ValidationError("say why the round is reopened; the reason is recorded")
    Round.objects.filter(pk=round.pk).update(status=Round.Status.OPEN, closed_at=None)
    round.refresh_from_db()
    _audit(by, "round.reopen", round.study, f"round:{round.name}", reason=reason.strip())
    return round


# --- gold panel ------------------------------------------------------------------------------------------------


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
    responses = defaultdict(list)
    for response in ModelResponse.objects.filter(turn__in=turns).order_by("model_slot"):
        if not round.study.model_slots or response.model_slot in round.study.model_slots:
            responses[response.turn_id].append(response)
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
            units = [None] if attribute.unit == "turn" else responses[turn.pk]
            for response in units:
                key = (turn.pk, response.pk if response else None, attribute.pk)
                items.append(ConsensusItem(turn, response, attribute,
                                           {name: scores[key].get(name) for name in names}, gold.get(key)))
    return items


@transaction.atomic
def gold_record(
    *, round: Round, by: AbstractBaseUser, attribute: AttributeDefinition, turn: Turn,
    response: ModelResponse | None, score: int, agreed_by: Sequence[AbstractBaseUser] = (), note: str = "",
) -> Judgment:
    """Record the gold panel's consensus value for one item (who agreed, an optional note)."""
    from annotation.services import judgment_validate, score_error

    _require_admin(by)
    if round.status == Round.Status.DRAFT:
        raise ValidationError(f"{round.name} is still a draft")
    if not round.items.filter(turn=turn).exists():
        raise ValidationError("that turn is not in this round's set")
    errors = judgment_validate(attribute=attribute, score=score, turn=turn, response=response)
    if score is None:
        errors["score"] = "a gold value needs a score"
    elif "score" in errors:
        errors["score"] = score_error(attribute, score)
    if errors:
        raise ValidationError(errors)
    judgment = Judgment.objects.filter(round=round, is_gold=True, attribute=attribute, turn=turn,
                                       response=response).first()
    if judgment is None:
        judgment = Judgment.objects.create(round=round, coder=by, is_gold=True, attribute=attribute, turn=turn,
                                           response=response, conversation_id=turn.conversation_id, score=score,
                                           note=note)
    else:
        judgment.score, judgment.note, judgment.coder = score, note, by
        judgment.version += 1
        judgment.save()
    judgment.agreed_by.set(agreed_by)
    _audit(by, "gold.record", round.study, f"round:{round.name}", attribute=attribute.code, turn=turn.pk,
           response=response.pk if response else None, score=score)
    return judgment


@transaction.atomic
def gold_accept_unanimous(*, round: Round, by: AbstractBaseUser) -> int:
    """Record as gold every item on which all experts coded the same value; returns how many."""
    _require_admin(by)
    experts = {m.user.get_username(): m.user for m in
               StudyMember.objects.filter(study=round.study, role=StudyMember.Role.EXPERT).select_related("user")}
    count = 0
    for item in consensus_items(round=round):
        if item.gold is None and item.unanimous:
            gold_record(round=round, by=by, attribute=item.attribute, turn=item.turn, response=item.response,
                        score=next(iter(item.expert_scores.values())), agreed_by=list(experts.values()),
                        note="unanimous")
            count += 1
    return count


# --- workshop ----------------------------------------------------------------------------------------------------


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
        scores[(j.turn_id, j.response_id, j.attribute_id)][aliases[j.coder_id]] = j.score
    notes = {(n.turn_id, n.response_id, n.attribute_id): n for n in WorkshopNote.objects.filter(round=round)}
    items = []
    for key, g in gold.items():
        if attribute and g.attribute.code != attribute:
            continue
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
    span_items = {(i.turn.pk, i.response.pk, i.attribute.pk): i for i in items if i.response is not None}
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


@transaction.atomic
def workshop_note_save(*, round: Round, by: AbstractBaseUser, attribute: AttributeDefinition, turn: Turn,
                       response: ModelResponse | None, text: str) -> WorkshopNote | None:
    _require_admin(by)
    if round.status != Round.Status.CLOSED:
        raise ValidationError("the workshop opens when the round is closed")
    lookup = {"round": round, "attribute": attribute, "turn": turn, "response": response}
    if not text.strip():
        WorkshopNote.objects.filter(**lookup).delete()
        return None
    note, _ = WorkshopNote.objects.update_or_create(**lookup, defaults={"text": text.strip(), "written_by": by})
    return note


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
    from django.db.models import Count, Q, Sum

    rows = (
        Assignment.objects.filter(round__study=study)
        .values("coder__username", "round__kind", "round__number")
        .annotate(seconds=Sum("active_seconds"), turns=Count("id"),
                  done=Count("id", filter=Q(completed_at__isnull=False)))
        .order_by("round__kind", "round__number", "coder__username")
    )
    return [
        row | {"round": f"calibration-{row['round__number']}" if row["round__kind"] == "calibration" else "main",
               "minutes": round((row["seconds"] or 0) / 60, 1),
               "per_turn": round((row["seconds"] or 0) / row["done"] / 60, 1) if row["done"] else None}
        for row in rows
    ]


# --- feedback to reviewers -------------------------------------------------------------------------------------


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
    from metrics.core.agreement import agreement_rate

    if not pairs:
        return None, None
    mine = np.array([m for m, _, _ in pairs])
    gold = np.array([g for _, g, _ in pairs])
    mine_bucket = np.array([b[str(m)] for m, _, b in pairs])
    gold_bucket = np.array([b[str(g)] for _, g, b in pairs])
    return agreement_rate(mine, gold), agreement_rate(mine_bucket, gold_bucket)


def reviewer_feedback(*, round: Round, user: AbstractBaseUser) -> Feedback:
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
    differences = [
        {"attribute": j.attribute, "turn": j.turn, "response": j.response, "mine": j.score, "gold": g,
         "my_anchor": j.attribute.anchors.get(str(j.score), ""), "gold_anchor": j.attribute.anchors.get(str(g), "")}
        for j, g in pairs if j.score != g
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


# --- panel selection ---------------------------------------------------------------------------------------------


def panel_ranking(*, study: Study) -> dict | None:
    """The latest succeeded metrics report's ranking and per-reviewer figures, restricted to the study's reviewers
    (experts code calibration items too, but are never in the panel)."""
    from metrics.selectors import metric_run_latest_succeeded

    run = metric_run_latest_succeeded(study=study)
    if run is None:
        return None
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


@transaction.atomic
def panel_retain(*, study: Study, by: AbstractBaseUser, usernames: Sequence[str], reason: str = "",
                 k: int | None = None) -> list[str]:
    """Retain exactly these reviewers for the main round. Anything other than the top k of the ranking needs a
    recorded reason."""
    _require_admin(by)
    members = {m.user.get_username(): m for m in
               StudyMember.objects.filter(study=study, role=StudyMember.Role.REVIEWER).select_related("user")}
    unknown = sorted(set(usernames) - set(members))
    if unknown:
        raise ValidationError(f"not reviewers of this study: {', '.join(unknown)}")
    if not usernames:
        raise ValidationError("retain at least one reviewer")
    ranking = panel_ranking(study=study)
    top = [row["reviewer"] for row in ranking["rows"]][: k or len(usernames)] if ranking else []
    overridden = sorted(set(usernames)) != sorted(top)
    if overridden and not reason.strip():
        raise ValidationError(
            f"the selection differs from the top {k or len(usernames)} of the ranking ({', '.join(top) or 'none'}); "
            "give the reason, it is recorded")
    for name, member in members.items():
        member.retained = name in usernames
        member.save(update_fields=["retained"])
    _audit(by, "panel.retain", study, f"study:{study.slug}", retained=sorted(usernames), top=top,
           overridden=overridden, reason=reason.strip())
    return sorted(usernames)


# --- main round ----------------------------------------------------------------------------------------------------


@transaction.atomic
def main_round_assign(*, study: Study, by: AbstractBaseUser, overlap: float = 0.1, check_items: int = 0,
                      seed: int = 0) -> dict[str, int]:
    """Give the retained panel the study's non-calibration turns, in topic order, a conversation at a time (so
    a multi-turn conversation stays with one reviewer), balancing turns; a share ``overlap`` of conversations is
    double-coded; ``check_items`` hidden gold items (calibration turns with gold) go into every queue."""
    from annotation.services import round_ensure

    _require_admin(by)
    if not 0 <= overlap <= 1:
        raise ValidationError("overlap must be between 0 and 1")
    panel = [m.user for m in StudyMember.objects.filter(study=study, role=StudyMember.Role.REVIEWER, retained=True)
             .select_related("user").order_by("user__username")]
    if not panel:
        raise ValidationError("select the retained panel first")
    main = round_ensure(study=study, kind=Round.Kind.MAIN, by=by)
    if main.status == Round.Status.CLOSED:
        raise ValidationError("the main round is closed")
    if Assignment.objects.filter(round=main).exists():
        raise ValidationError("the main round already has assignments")
    rng = np.random.default_rng(seed)
    turns = calibration_candidates(study=study)
    by_conversation: dict[int, list[Turn]] = defaultdict(list)
    for turn in turns:
        by_conversation[turn.conversation_id].append(turn)
    conversations = sorted(by_conversation.values(),
                           key=lambda ts: (ts[0].conversation.topic, ts[0].conversation.dataset.name,
                                           ts[0].conversation.external_id))
    load = dict.fromkeys(range(len(panel)), 0)
    queues: dict[int, list[tuple[Turn, bool]]] = defaultdict(list)
    double = set(rng.choice(len(conversations), size=round(overlap * len(conversations)), replace=False).tolist()) \
        if conversations and len(panel) > 1 else set()
    for index, conversation_turns in enumerate(conversations):
        ordered = sorted(conversation_turns, key=lambda t: t.index)
        coders = sorted(load, key=lambda c: (load[c], c))[: 2 if index in double else 1]
        for coder in coders:
            queues[coder] += [(t, False) for t in ordered]
            load[coder] += len(ordered)
    gold_turns = list(Turn.objects.filter(
        pk__in=Judgment.objects.filter(round__study=study, is_gold=True).values("turn_id")).order_by("pk"))
    for coder in queues:
        if check_items and gold_turns:
            picks = rng.choice(len(gold_turns), size=min(check_items, len(gold_turns)), replace=False)
            for pick in picks:
                queues[coder].insert(int(rng.integers(0, len(queues[coder]) + 1)), (gold_turns[pick], True))
    rows = []
    for coder, queue in queues.items():
        seen = set()
        for position, (turn, is_check) in enumerate(queue, start=1):
            if turn.pk in seen:
                continue
            seen.add(turn.pk)
            rows.append(Assignment(round=main, coder=panel[coder], turn=turn, position=position,
                                   is_check_item=is_check))
    Assignment.objects.bulk_create(rows, batch_size=5000)
    RoundItem.objects.bulk_create([RoundItem(round=main, turn=t, position=i) for i, t in enumerate(turns, start=1)],
                                  batch_size=5000, ignore_conflicts=True)
    summary = {"reviewers": len(queues), "assignments": len(rows),
               "double_coded_conversations": len(double), "check_items": sum(1 for r in rows if r.is_check_item)}
    _audit(by, "main_round.assign", study, "round:main", overlap=overlap, seed=seed, **summary)
    return summary


def check_agreement(*, study: Study, user: AbstractBaseUser) -> tuple[float | None, int]:
    """Bucketed agreement of a reviewer's main-round codings of hidden check items with their gold."""
    check_turns = Assignment.objects.filter(round__study=study, round__kind=Round.Kind.MAIN, coder=user,
                                            is_check_item=True).values("turn_id")
    gold = {(j.turn_id, j.response_id, j.attribute_id): j.score for j in
            Judgment.objects.filter(round__study=study, is_gold=True, turn_id__in=check_turns, score__isnull=False)}
    pairs = [(j.score, gold[(j.turn_id, j.response_id, j.attribute_id)], j.attribute.bucket) for j in
             Judgment.objects.filter(round__study=study, round__kind=Round.Kind.MAIN, coder=user, is_gold=False,
                                     turn_id__in=check_turns, score__isnull=False).select_related("attribute")
             if (j.turn_id, j.response_id, j.attribute_id) in gold]
    _, bucketed = _agreement(pairs)
    return bucketed, len(pairs)


def check_alert_update(*, study: Study, user: AbstractBaseUser) -> ReviewerAlert | None:
    """Raise an alert for the admin when the reviewer's check-item agreement is below the study's threshold."""
    agreement, n = check_agreement(study=study, user=user)
    if agreement is None or n < study.check_min_items or agreement >= study.check_threshold:
        return None
    if ReviewerAlert.objects.filter(study=study, reviewer=user, resolved_at__isnull=True).exists():
        return None
    alert = ReviewerAlert.objects.create(study=study, reviewer=user, agreement=agreement,
                                         threshold=study.check_threshold, n_items=n)
    _audit(None, "check.alert", study, f"user:{user.get_username()}", agreement=agreement, n=n)
    return alert


def alert_resolve(*, alert: ReviewerAlert, by: AbstractBaseUser) -> None:
    _require_admin(by)
    alert.resolved_at = timezone.now()
    alert.save(update_fields=["resolved_at"])
