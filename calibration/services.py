"""Writes of the calibration protocol: calibration sets, opening and closing rounds (closing starts a metrics
run), the gold panel's consensus, workshop notes, panel retention and main-round assignment.

Every write is for study admins only (``PermissionDenied`` otherwise), names its actor (``by``) and records its
audit event in its own transaction; rules are checked here, on the server, whatever page or script calls them.
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction

from access.checks import require_study_admin
from annotation import services as annotation_services
from annotation.kinds import kind_of
from annotation.models import (
    Assignment,
    AttributeDefinition,
    Judgment,
    Round,
    RoundItem,
    Study,
    StudyMember,
    WorkshopNote,
)
from annotation.selectors import conversations_unplaceable
from audit.services import audit_record
from benchmark.models import ModelResponse, Turn
from calibration import selectors
from metrics.services import metric_run_request

if TYPE_CHECKING:
    import numpy as np


def _study_locked(study: Study, *, what: str = "its rounds no longer change") -> None:
    """Serialise the writes that check the study's rounds before changing them (which turns are still unused,
    whether another calibration round is open, whether the study is archived) until this transaction ends: of two
    admins acting at once, the second sees what the first did and is refused in words, never a duplicate. ``what``:
    what the refusal of an archived study says no longer changes."""
    annotation_services.study_locked_unarchived(study, what=what)


SAMPLE_SIZE = 10  # a calibration set's size when none is given (the study page offers fewer when fewer are left)


@transaction.atomic
def calibration_set_sample(*, round: Round, by: User, n: int = SAMPLE_SIZE, seed: int = 0) -> list[Turn]:
    """Draw n turns, stratified across (dataset, single/multi-turn) in proportion to their size (largest
    remainder; every stratum gets one when n allows), then fix them in a seeded order."""
    require_study_admin(by)
    if round.kind != Round.Kind.CALIBRATION:
        raise ValidationError("calibration sets belong to calibration rounds")
    _study_locked(round.study)  # two sets drawn at once would both take the same unused turns
    if n < 1:
        raise ValidationError("a calibration set needs at least one turn")
    candidates = selectors.calibration_candidates(study=round.study, round=round)
    if len(candidates) < n:
        raise ValidationError(f"only {len(candidates)} unused turns are available, {n} were asked for")
    strata: dict[tuple[str, str], list[Turn]] = defaultdict(list)
    for turn in candidates:
        strata[(turn.conversation.dataset.name, turn.conversation.kind)].append(turn)
    keys = sorted(strata)
    import numpy as np  # admin work, rare: web workers do not load numpy at start-up

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
    annotation_services.round_items_set(round=round, turns=turns, by=by)
    audit_record(by=by, action="calibration_set.sample", study=round.study, target=f"round:{round.name}", n=n,
                 seed=seed)
    return turns


_REF = re.compile(r"^(?P<dataset>[^/]+)/(?P<conversation>.+)#(?P<turn>[1-9][0-9]*)$")


@transaction.atomic
def calibration_set_from_refs(*, round: Round, by: User, refs: str) -> list[Turn]:
    """A hand-built set: one ``DATASET/CONVERSATION_ID#TURN`` per line, in the order given. A turn is taken as the
    sampler takes one (``calibration_candidates``): it has a response of a model the study codes, and no other round
    of the study holds it (a turn of the reserved gold pool is a hidden check item; one of an earlier set has been
    seen, and its feedback given). Every line in error is named; nothing is written then."""
    require_study_admin(by)
    if round.kind != Round.Kind.CALIBRATION:
        raise ValidationError("calibration sets belong to calibration rounds")
    _study_locked(round.study)
    held = dict(RoundItem.objects.filter(round__study=round.study).exclude(round=round).values_list("turn_id",
                                                                                                    "round_id"))
    rounds = {r.pk: r.name for r in Round.objects.filter(pk__in=set(held.values()))}
    coded = ModelResponse.objects.all()
    if round.study.model_slots:
        coded = coded.filter(model_slot__in=round.study.model_slots)
    errors, turns, lines = [], [], []
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
        elif turn.pk in held:
            errors.append(f"line {number}: {line} is already in round {rounds[held[turn.pk]]}; a turn is in one "
                          "round of a study")
        elif not coded.filter(turn=turn).exists():
            models = f" ({', '.join(round.study.model_slots)})" if round.study.model_slots else ""
            errors.append(f"line {number}: {line} has no response of a model the study codes{models}")
        elif turn in turns:
            errors.append(f"line {number}: {line} is listed twice")
        else:
            turns.append(turn)
            lines.append(number)
    errors += _unplaceable_lines(round.study, turns, lines)
    if not turns and not errors:
        errors.append("no turn given")
    if errors:
        raise ValidationError(errors)
    annotation_services.round_items_set(round=round, turns=turns, by=by)
    return turns


def _unplaceable_lines(study: Study, turns: list[Turn], lines: list[int]) -> list[str]:
    """The lines of a hand-built set whose turn's conversation the study's kind cannot place: a round's turn makes
    its conversation the study's (``annotation.selectors.conversations_unplaceable``)."""
    unplaceable = conversations_unplaceable(study=study, conversations={turn.conversation_id for turn in turns})
    return [f"line {number}: {unplaceable[turn.conversation_id]}"
            for turn, number in zip(turns, lines, strict=True) if turn.conversation_id in unplaceable]


def _calibration_coders(round: Round) -> list[User]:
    """Who codes a calibration round: every reviewer and expert, or only the experts for a reserved gold pool
    (its turns become hidden check items, so no reviewer may see them)."""
    members = StudyMember.objects.filter(study=round.study).select_related("user").order_by("user__username")
    if round.gold_pool:
        members = members.filter(role=StudyMember.Role.EXPERT)
    return [m.user for m in members]


@transaction.atomic
def calibration_round_create(*, study: Study, by: User, number: int, gold_pool: bool = False) -> Round:
    """A new draft calibration round; ``gold_pool`` makes it a reserved gold pool (experts only)."""
    require_study_admin(by)
    _study_locked(study)
    round_ = annotation_services.round_ensure(study=study, kind=Round.Kind.CALIBRATION, number=number, by=by)
    if gold_pool != round_.gold_pool:
        # Compare-and-set: a round opened meanwhile keeps who codes it.
        if not Round.objects.filter(pk=round_.pk, status=Round.Status.DRAFT).update(gold_pool=gold_pool):
            raise ValidationError(f"{round_.name} is no longer a draft: who codes it is fixed")
        round_.gold_pool = gold_pool
        audit_record(by=by, action="round.gold_pool", study=study, target=f"round:{round_.name}", gold_pool=gold_pool)
    return round_


@transaction.atomic
def calibration_round_open(*, round: Round, by: User, allow_parallel: bool = False) -> Round:
    """Open a calibration round: every reviewer and expert of the study gets the same items, in the set's order.
    One calibration round is open at a time unless the admin confirms otherwise (``allow_parallel``)."""
    require_study_admin(by)
    _study_locked(round.study)  # two rounds opened at once: the second sees the first open
    items = list(round.items.select_related("turn").order_by("position"))
    if not items:
        raise ValidationError(f"{round.name} has no calibration set yet")
    coders = _calibration_coders(round)
    if not coders:
        raise ValidationError("the study has no experts to code its reserved gold pool" if round.gold_pool
                              else "the study has no reviewers or experts")
    others = Round.objects.filter(study=round.study, kind=Round.Kind.CALIBRATION, status=Round.Status.OPEN,
                                  gold_pool=False)
    if not allow_parallel and not round.gold_pool and (other := others.exclude(pk=round.pk).first()) is not None:
        raise ValidationError(f"{other.name} is still open; close it first, or confirm opening both")
    annotation_services.round_open(round=round, by=by)
    for coder in coders:
        annotation_services.assignments_ensure(round=round, coder=coder, turns=[item.turn for item in items], by=by)
    return round


@transaction.atomic
def round_open(*, round: Round, by: User, allow_parallel: bool = False) -> Round:
    """Open any round from the study page: a calibration round gives every member its set; the main round opens
    the queues ``main_round_assign`` built for the retained panel."""
    if round.kind == Round.Kind.CALIBRATION:
        return calibration_round_open(round=round, by=by, allow_parallel=allow_parallel)
    require_study_admin(by)
    _study_locked(round.study)
    if not Assignment.objects.filter(round=round).exists():
        raise ValidationError(f"{round.name} has no assignments yet: assign it to the retained panel first")
    return annotation_services.round_open(round=round, by=by)


@transaction.atomic
def round_close(*, round: Round, by: User) -> Round:
    """Close an open round (every judgment in it is locked) and start a metrics run after commit, so the stored
    report always matches the closed round."""
    require_study_admin(by)
    closed = annotation_services.round_close(round=round, by=by)
    metric_run_request(study=closed.study, by=by, trigger="round-closed")
    return closed


REOPEN_RULE: dict[str, str] = {
    Round.Kind.CALIBRATION: "Reviewers saw their feedback against gold when the round closed: every item already "
                            "assigned stays locked as it was compared; only members who have no items yet get the "
                            "set and can code it.",
    Round.Kind.MAIN: "Coders can change their main-round judgments again until the round closes; a turn they "
                     "completed that got a new response while the round was closed goes back to their queue.",
}


@transaction.atomic
def round_reopen(*, round: Round, by: User, reason: str) -> annotation_services.RoundReopen:
    """Reopen a closed round. A calibration round's feedback compared every assigned item with gold, so those
    assignments are locked (``Assignment.feedback_locked``) and stay as they were; members who joined since get
    the set, and only their items are editable (``REOPEN_RULE`` is what the admin is told before confirming). A
    main round's completed turns that got a response while it was closed go back to their coders' queues
    (``annotation.services.round_reopen``)."""
    require_study_admin(by)
    # Before the study's row, as an ingestion takes them: its trigger holds the completions lock until it commits,
    # and its foreign keys to the study (a conversation it claims) share the study's row then (a deadlock).
    annotation_services.completions_locked(round.study_id)
    _study_locked(round.study)  # never reopened in a study archived meanwhile
    # Locked as the round opens again, before the reopening sends turns back: what feedback compared stays
    # completed as it was.
    result = annotation_services.round_reopen(round=round, by=by, reason=reason,
                                              feedback_lock=round.kind == Round.Kind.CALIBRATION)
    reopened = result.round
    if reopened.kind == Round.Kind.CALIBRATION:
        turns = [item.turn for item in reopened.items.select_related("turn").order_by("position")]
        for coder in _calibration_coders(reopened):
            annotation_services.assignments_ensure(round=reopened, coder=coder, turns=turns, by=by)
        audit_record(by=by, action="round.feedback_lock", study=reopened.study, target=f"round:{reopened.name}",
                     locked=result.feedback_locked)
    return result


@transaction.atomic
def gold_record(
    *, round: Round, by: User, attribute: AttributeDefinition, turn: Turn,
    response: ModelResponse | None, score: int, agreed_by: Sequence[User] = (), note: str = "",
    expected_version: int | None = None, reason: str = "",
) -> Judgment:
    """Record the gold panel's consensus value for one item (who agreed, an optional note).

    A closed round's gold is locked: changing it needs a recorded ``reason`` and starts a new metrics run, so the
    stored report, the workshop and everyone's feedback follow the corrected value. An archived study's gold no
    longer changes, as its rounds do not."""
    require_study_admin(by)
    _study_locked(round.study, what="its gold no longer changes")  # never changed in a study archived meanwhile
    if round.status == Round.Status.DRAFT:
        raise ValidationError(f"{round.name} is still a draft")
    if not round.items.filter(turn=turn).exists():
        raise ValidationError("that turn is not in this round's set")
    closed = Round.objects.filter(pk=round.pk, status=Round.Status.CLOSED).exists()
    if closed and not reason.strip():
        raise ValidationError(f"{round.name} is closed: its gold is locked; give the reason for the change, it is "
                              "recorded and a new metrics run starts")
    gold = annotation_services.gold_save(round=round, by=by, attribute=attribute, turn=turn, response=response,
                                         score=score, note=note, agreed_by=agreed_by,
                                         expected_version=expected_version)
    if closed:
        audit_record(by=by, action="gold.change_after_close", study=round.study, target=f"round:{round.name}",
                     attribute=attribute.code, turn=turn.pk, response=response.pk if response else None,
                     score=score, reason=reason.strip())
        metric_run_request(study=round.study, by=by, trigger="gold-changed")
    return gold


@transaction.atomic
def gold_accept_unanimous(*, round: Round, by: User) -> int:
    """Record as gold every item on which the gold panel coded the same value (``ConsensusItem.unanimous``: every
    expert, and each expert taken off since who scored it), agreed by those whose scores it counted; returns how
    many. Only while the round is open: a closed round's gold changes one recorded reason at a time; never in an
    archived study."""
    require_study_admin(by)
    _study_locked(round.study, what="its gold no longer changes")
    if round.status != Round.Status.OPEN:
        raise ValidationError(f"{round.name} is {round.status}: unanimous items are accepted while it is open")
    panel = selectors.gold_panel_users(study=round.study)
    count = 0
    for item in selectors.consensus_items(round=round):
        if item.gold is None and item.unanimous:
            score = next(iter(item.counted.values()))
            assert score is not None  # unanimous: every counted expert scored, and the same
            # expected_version=0: "no gold yet", as read above; gold another admin recorded meanwhile is refused.
            gold_record(round=round, by=by, attribute=item.attribute, turn=item.turn, response=item.response,
                        score=score, agreed_by=[panel[name] for name in item.counted], note="unanimous",
                        expected_version=0)
            count += 1
    return count


@transaction.atomic
def workshop_note_save(*, round: Round, by: User, attribute: AttributeDefinition, turn: Turn,
                       response: ModelResponse | None, text: str, shown: str | None = None) -> WorkshopNote | None:
    """Save (or, with empty text, remove) the workshop's decision note on one item. ``shown``: the note's text as
    the admin's page showed it ("" for none); when another admin changed it since, nothing is written
    (``ChangedMeanwhile``), so two admins editing one note never silently replace each other's words."""
    require_study_admin(by)
    if round.status != Round.Status.CLOSED:
        raise ValidationError("the workshop opens when the round is closed")
    _study_locked(round.study, what="its workshop notes no longer change")
    lookup: dict[str, Any] = {"round": round, "attribute": attribute, "turn": turn, "response": response}
    target = f"round:{round.name}"
    where = {"attribute": attribute.code, "turn": turn.pk, "response": response.pk if response else None}
    if shown is not None:
        # One note write per round at a time, so that the comparison and the write are one (a first note has no
        # row to lock yet).
        Round.objects.select_for_update().filter(pk=round.pk).values_list("pk", flat=True).first()
        current = WorkshopNote.objects.filter(**lookup).values_list("text", flat=True).first() or ""
        if current != shown.strip():
            raise annotation_services.ChangedMeanwhile(f"the note on {attribute.code}")
    if not text.strip():
        if WorkshopNote.objects.filter(**lookup).delete()[0]:
            audit_record(by=by, action="workshop_note.delete", study=round.study, target=target, **where)
        return None
    note, _ = WorkshopNote.objects.update_or_create(**lookup, defaults={"text": text.strip(), "written_by": by})
    audit_record(by=by, action="workshop_note.save", study=round.study, target=target, **where)
    return note


@transaction.atomic
def panel_retain(*, study: Study, by: User, usernames: Sequence[str], reason: str = "",
                 k: int | None = None, expected_state: str | None = None) -> list[str]:
    """Retain exactly these reviewers for the main round: every other reviewer of the study is not retained from
    now on. Anything other than the top k of the report's ranking (``selectors.panel_top``) needs a recorded
    reason. ``expected_state``: the ``selectors.panel_state`` the admin was shown; refused once it has changed."""
    require_study_admin(by)
    _study_locked(study, what="its panel no longer changes")  # the reviewers' figures of its reports depend on it
    members = {m.user.get_username(): m for m in StudyMember.objects.filter(study=study, role=StudyMember.Role.REVIEWER)
               .select_related("user").select_for_update(of=("self",))}
    if expected_state is not None and expected_state != selectors.panel_state(
            retained={name: member.retained for name, member in members.items()}):
        raise annotation_services.ChangedMeanwhile("the study's reviewers or their retained state")
    unknown = sorted(set(usernames) - set(members))
    if unknown:
        raise ValidationError(f"not reviewers of this study: {', '.join(unknown)}")
    if not usernames:
        raise ValidationError("retain at least one reviewer")
    k = k or len(set(usernames))
    top = selectors.panel_top(ranking=selectors.panel_ranking(study=study), k=k)
    overridden = sorted(set(usernames)) != sorted(top)
    if overridden and not reason.strip():
        raise ValidationError(
            f"the selection differs from the top {k} of the ranking ({', '.join(top) or 'none'}); "
            "give the reason, it is recorded")
    before = {name: member.retained for name, member in members.items()}
    for name, member in members.items():
        member.retained = name in usernames
        member.save(update_fields=["retained"])
    audit_record(by=by, action="panel.retain", study=study, target=f"study:{study.slug}",
                 retained=sorted(usernames), top=top, overridden=overridden, reason=reason.strip(),
                 added=sorted(n for n in usernames if before[n] is not True),
                 removed=sorted(n for n, was in before.items() if was is True and n not in usernames))
    return sorted(usernames)


def _conversations_in_topic_order(turns: list[Turn]) -> list[list[Turn]]:
    """The turns grouped by conversation, conversations ordered by (topic, dataset, external id)."""
    by_conversation: dict[int, list[Turn]] = defaultdict(list)
    for turn in turns:
        by_conversation[turn.conversation_id].append(turn)
    return sorted(by_conversation.values(), key=_topic_order)


def _topic_order(turns: list[Turn]) -> tuple[str, str, str]:
    conversation = turns[0].conversation
    return conversation.topic, conversation.dataset.name, conversation.external_id


Unit = list[Turn]  # a conversation's turns in order: queued, and hidden as a check item, as one block


def _queues_balanced(conversations: list[list[Turn]], *, panel_size: int,
                     double: set[int]) -> dict[int, list[tuple[Unit, bool]]]:
    """Each conversation, its turns in order, to the least-loaded coder (two of them for the double-coded
    positions); coder -> [(conversation's turns, is check item)]."""
    load = dict.fromkeys(range(panel_size), 0)
    queues: dict[int, list[tuple[Unit, bool]]] = defaultdict(list)
    for index, conversation_turns in enumerate(conversations):
        ordered = sorted(conversation_turns, key=lambda t: t.index)
        coders = sorted(load, key=lambda c: (load[c], c))[: 2 if index in double else 1]
        for coder in coders:
            queues[coder].append((ordered, False))
            load[coder] += len(ordered)
    return queues


def _check_units(study: Study, panel: Sequence[User]) -> dict[int, list[Unit]]:
    """Per coder (index into ``panel``), the gold conversations that coder has never been given: conversations
    every turn of which has gold (so a check item is a whole conversation, queued like any other), minus those
    any of whose turns was assigned to that coder in any round (their feedback showed its gold). The reserved gold
    pool (a calibration round only experts code) is where such conversations come from."""
    gold_turns = set(Judgment.objects.filter(round__study=study, is_gold=True, turn__isnull=False)
                     .values_list("turn_id", flat=True))
    turns = (Turn.objects.filter(conversation__turns__in=gold_turns).distinct().order_by("conversation_id", "index")
             .select_related("conversation__dataset"))
    by_conversation: dict[int, Unit] = defaultdict(list)
    for turn in turns:
        by_conversation[turn.conversation_id].append(turn)
    units = {c: ts for c, ts in by_conversation.items() if all(t.pk in gold_turns for t in ts)}
    seen: dict[int, set[int]] = defaultdict(set)
    for coder_id, conversation_id in Assignment.objects.filter(
            round__study=study, coder__in=panel).values_list("coder_id", "turn__conversation_id"):
        seen[coder_id].add(conversation_id)
    return {index: [ts for c, ts in sorted(units.items()) if c not in seen[coder.pk]]
            for index, coder in enumerate(panel)}


def _check_items_insert(queues: dict[int, list[tuple[Unit, bool]]], pools: dict[int, list[Unit]], *,
                        check_items: int, rng: np.random.Generator) -> int:
    """Hide up to ``check_items`` gold conversations the coder has not seen in every queue, each where it falls
    in the queue's topic order (as any other conversation would, never inside one); returns the fewest any coder
    got."""
    fewest = check_items
    for coder in queues:
        pool = pools.get(coder, [])
        picks: list[int] = rng.choice(len(pool), size=min(check_items, len(pool)), replace=False).tolist() \
            if pool else []
        fewest = min(fewest, len(picks))
        for pick in picks:
            queue = queues[coder]
            at = bisect.bisect_right([_topic_order(unit) for unit, _ in queue], _topic_order(pool[pick]))
            queue.insert(at, (pool[pick], True))
    return fewest


def _assignments(main: Round, panel: Sequence[User],
                 queues: dict[int, list[tuple[Unit, bool]]]) -> list[Assignment]:
    """One assignment per coder and turn, numbered by queue position."""
    rows = []
    for coder, queue in queues.items():
        turns = [(turn, is_check) for unit, is_check in queue for turn in unit]
        rows += [Assignment(round=main, coder=panel[coder], turn=turn, position=position, is_check_item=is_check)
                 for position, (turn, is_check) in enumerate(turns, start=1)]
    return rows


@transaction.atomic
def main_round_assign(*, study: Study, by: User, overlap: float = 0.1, check_items: int = 0,
                      seed: int = 0) -> dict[str, int]:
    """Give the retained panel the study's non-calibration turns, in topic order, a conversation at a time (so
    a multi-turn conversation stays with one reviewer), balancing turns; a share ``overlap`` of conversations is
    double-coded; up to ``check_items`` hidden gold conversations the reviewer has never been given (see
    ``_check_units``) go between the conversations of every queue."""
    require_study_admin(by)
    _study_locked(study)
    if not 0 <= overlap <= 1:
        raise ValidationError("overlap must be between 0 and 1")
    panel = [m.user for m in StudyMember.objects.filter(study=study, role=StudyMember.Role.REVIEWER, retained=True)
             .select_related("user").order_by("user__username")]
    if not panel:
        raise ValidationError("select the retained panel first")
    main = annotation_services.round_ensure(study=study, kind=Round.Kind.MAIN, by=by)
    main = Round.objects.select_for_update().get(pk=main.pk)  # one assignment run at a time
    if main.status == Round.Status.CLOSED:
        raise ValidationError("the main round is closed")
    if Assignment.objects.filter(round=main).exists():
        raise ValidationError("the main round already has assignments")
    import numpy as np  # admin work, rare: web workers do not load numpy at start-up

    rng = np.random.default_rng(seed)
    turns = selectors.calibration_candidates(study=study)
    # A session-rated kind: the units are what its ``assignment_units`` makes of the turns (sessions, keyed by their
    # first turns), balanced like turns, queued by its ``assignment_rows``.
    kind = kind_of(study)
    if kind.session_rated and check_items:
        raise ValidationError("check items are gold conversations of turns: a session-rated study has none")
    units = kind.assignment_units(turns) if kind.assignment_units is not None else turns
    conversations = _conversations_in_topic_order(units)
    double = set(rng.choice(len(conversations), size=round(overlap * len(conversations)), replace=False).tolist()) \
        if conversations and len(panel) > 1 else set()
    queues = _queues_balanced(conversations, panel_size=len(panel), double=double)
    fewest = _check_items_insert(queues, _check_units(study, panel), check_items=check_items, rng=rng) \
        if check_items else 0
    rows = (kind.assignment_rows(
        round=main, queues=[(panel[c], [t for unit, _ in queue for t in unit]) for c, queue in sorted(queues.items())],
        seed=seed) if kind.assignment_rows is not None else _assignments(main, panel, queues))
    Assignment.objects.bulk_create(rows, batch_size=5000)
    RoundItem.objects.bulk_create([RoundItem(round=main, turn=t, position=i) for i, t in enumerate(turns, start=1)],
                                  batch_size=5000, ignore_conflicts=True)
    summary = {"reviewers": len(queues), "assignments": len(rows),
               "double_coded_conversations": len(double), "check_items": sum(1 for r in rows if r.is_check_item),
               "check_conversations_fewest": fewest}
    audit_record(by=by, action="main_round.assign", study=study, target="round:main", overlap=overlap, seed=seed,
                 **summary)
    return summary
