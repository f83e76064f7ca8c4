"""The LongCounsel-8 demo study (``load_demo --lc8``): eight fictional clients' five counseling sessions each on
schema ``lc8-v1``, written from templates so that what a client says follows a PHQ-8 state chosen by hand —
improving, worsening, fluctuating and stable trajectories — with that state as the reference coder's labels, and
two illustrative methods' float PHQ-8 total predictions for three seeds each (drawn like the synthetic
generator's: a lagging method and a biased tracker). No real client, no real counselor, no real model or method.
The demo reviewer and expert get the sessions to rate in the main round. Loading it twice changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.contrib.auth.models import User
from django.db import transaction

from annotation import automated_coders, services
from annotation.kinds import conversation_check
from annotation.models import Round, SessionLabel, Study, StudyMember
from benchmark import conversation_ingest
from benchmark.models import Session, Turn
from lc8 import assign as lc8_assign
from lc8.kind import DEMO_STUDY
from lc8.synthetic import (
    PROFILES,
    SLOT,
    lc8_attributes,
    lc8_schema_ensure,
    predict,
    reference_labels_write,
    session_labels_write,
)

LC8_DEMO_STUDY = DEMO_STUDY
LC8_DEMO_DATASET = "LC8-demo (synthetic)"
LC8_DEMO_REFERENCE = "demo-lc8-reference"
LC8_DEMO_METHODS = (("demo-lc8-lagging", PROFILES[0]), ("demo-lc8-tracker", PROFILES[1]))
LC8_DEMO_SEEDS = (0, 1, 2)
DESCRIPTION = (
    "SYNTHETIC: eight fictional clients, five counseling sessions each, written from templates so that what the "
    "client says follows a hand-chosen PHQ-8 state (improving, worsening, fluctuating and stable trajectories). "
    "The reference labels are that state (demo-lc8-reference); demo-lc8-lagging and demo-lc8-tracker are "
    "illustrative methods with drawn float predictions for seeds 0-2. Not real people, not real methods."
)

# Each trajectory's reference PHQ-8 item scores per session (8 items, 0-3), chosen by hand; the total is their sum.
# The trajectory-type rule on the totals (docs/lc8-metrics.md#definitions) gives the type in the comment.
TRAJECTORIES: tuple[tuple[tuple[int, ...], ...], ...] = (
    # improving: 18, 15, 12, 9, 6
    ((3, 3, 2, 3, 2, 2, 2, 1), (2, 3, 2, 2, 2, 2, 1, 1), (2, 2, 2, 2, 1, 1, 1, 1), (1, 2, 1, 1, 1, 1, 1, 1),
     (1, 1, 1, 1, 0, 1, 1, 0)),
    # improving: 14, 13, 11, 9, 7
    ((2, 2, 2, 2, 2, 2, 1, 1), (2, 2, 2, 2, 2, 1, 1, 1), (2, 2, 1, 2, 1, 1, 1, 1), (1, 2, 1, 1, 1, 1, 1, 1),
     (1, 1, 1, 1, 1, 1, 1, 0)),
    # worsening: 5, 8, 11, 13, 16
    ((1, 1, 1, 1, 0, 1, 0, 0), (1, 1, 2, 1, 1, 1, 1, 0), (2, 2, 2, 1, 1, 1, 1, 1), (2, 2, 2, 2, 1, 2, 1, 1),
     (2, 3, 2, 2, 2, 2, 2, 1)),
    # worsening: 9, 9, 12, 14, 16
    ((1, 2, 1, 1, 1, 1, 1, 1), (1, 1, 2, 1, 1, 1, 1, 1), (2, 2, 2, 1, 1, 2, 1, 1), (2, 2, 2, 2, 2, 2, 1, 1),
     (2, 2, 2, 2, 2, 2, 2, 2)),
    # fluctuating: 10, 16, 9, 15, 11
    ((1, 2, 1, 2, 1, 1, 1, 1), (2, 3, 2, 2, 2, 2, 2, 1), (1, 2, 1, 1, 1, 1, 1, 1), (2, 3, 2, 2, 2, 2, 1, 1),
     (1, 2, 2, 2, 1, 1, 1, 1)),
    # fluctuating: 5, 11, 6, 4, 7
    ((1, 1, 1, 1, 0, 1, 0, 0), (2, 2, 1, 2, 1, 1, 1, 1), (1, 1, 1, 1, 1, 1, 0, 0), (0, 1, 1, 1, 0, 1, 0, 0),
     (1, 1, 1, 1, 1, 1, 1, 0)),
    # stable: 8, 9, 8, 7, 9
    ((1, 1, 1, 1, 1, 1, 1, 1), (1, 2, 1, 1, 1, 1, 1, 1), (1, 1, 1, 1, 1, 1, 1, 1), (1, 1, 1, 1, 1, 1, 1, 0),
     (1, 1, 2, 1, 1, 1, 1, 1)),
    # stable: 13, 12, 14, 13, 12
    ((2, 2, 2, 2, 1, 2, 1, 1), (2, 2, 2, 1, 1, 2, 1, 1), (2, 2, 2, 2, 2, 2, 1, 1), (2, 2, 2, 2, 1, 2, 1, 1),
     (2, 2, 2, 1, 1, 2, 1, 1)),
)
CLIENTS = ("Alex", "Blake", "Casey", "Devon", "Emery", "Finley", "Harper", "Jordan")

# What the fictional client says about each PHQ-8 item (in the schema's item order) at scores 0-3.
ITEM_LINES = (
    ("I actually enjoyed cooking with friends this week.", "Some days I still can't be bothered with my hobbies.",
     "Most days nothing seems fun anymore, even things I used to love.",
     "I don't enjoy anything. I stopped doing everything I used to like."),
    ("My mood has been pretty steady, honestly.", "I had a couple of low days, but they passed.",
     "I feel down more days than not.", "I feel hopeless nearly every day."),
    ("I'm sleeping through the night now.", "A few nights I lay awake for a while.",
     "I wake up at 4 most nights and can't get back to sleep.", "I barely sleep at all, or I sleep the whole day."),
    ("I've had decent energy.", "I got tired faster than usual on a few days.",
     "I'm exhausted most days, even after resting.", "I have no energy at all; showering feels like a marathon."),
    ("I'm eating normally.", "I skipped a few meals without noticing.",
     "My appetite is off most days; I either forget to eat or overeat.",
     "I can hardly eat anything, every single day."),
    ("I feel okay about myself.", "Now and then I think I let people down.",
     "I keep thinking I'm a failure, most days.", "I feel worthless all the time, like everyone would be better off."
                                                 " I'm not going to hurt myself, I just feel useless."),
    ("I could focus at work.", "I lost my train of thought a few times.",
     "I read the same page over and over; I can't concentrate most days.",
     "I can't follow a TV show or a conversation anymore."),
    ("People haven't noticed anything different about me.", "I was a bit restless one or two days.",
     "My partner says I move and talk slowly lately.",
     "I'm either frozen on the couch or pacing all day, every day."),
)
OPENERS = {
    "first": "Hi. This is my first session. I'm {name}, and a friend said talking might help.",
    "better": "I think this week was a bit better than the last time we spoke.",
    "worse": "Honestly, things got worse since our last session.",
    "same": "Not much has changed since last time, I guess.",
}
REPLIES = (
    ("That sounds like a real change. What do you think helped?", "I'm glad to hear that. Let's notice what's "
     "working.", "It's good to hear that part has settled."),
    ("It sounds like it comes and goes. What's different on the harder days?", "Thank you for noticing that. "
     "Small dips are worth paying attention to.", "That happens. What did you do on those days?"),
    ("That sounds really hard to live with most days.", "You've been carrying a lot. How has that affected your "
     "week?", "I hear how much that is weighing on you."),
    ("That sounds exhausting and painful, nearly all the time.", "Thank you for telling me. I want to make sure "
     "you're safe and supported — can we talk about what support you have?", "That is a lot to bear every day."),
)
OPENING_REPLY = "Thank you for coming in. (This is a fictional, synthetic demo session.) Where would you like to start?"
CLOSERS = ("Maybe I can try the plan we discussed this week.", "Thanks. I'll think about what we talked about.")
CLOSING_REPLY = "Let's check in on that next session. Take care until then."


@dataclass
class Lc8DemoResult:
    study: Study
    trajectories: int
    sessions: int
    reference_labels: int
    predictions: int
    assignments: int


def _session_turns(name: str, trajectory: int, session: int) -> list[tuple[str, str]]:
    """6-10 (client, counselor) turns of one session: an opener that says how the week compared with the last
    session, what the client says about the items, most salient first, and a closing."""
    items = TRAJECTORIES[trajectory][session]
    total = sum(items)
    if session == 0:
        opener = OPENERS["first"].format(name=name)
    else:
        before = sum(TRAJECTORIES[trajectory][session - 1])
        opener = OPENERS["better" if total <= before - 2 else "worse" if total >= before + 2 else "same"]
    n_items = 4 + (trajectory + session) % 5  # 4..8 item turns: 6..10 turns in all
    order = sorted(range(len(items)), key=lambda k: (-items[k], (k + trajectory + session) % len(items)))[:n_items]
    turns = [(f"[SYNTHETIC demo] {opener}", OPENING_REPLY)]
    for position, k in enumerate(order):
        score = items[k]
        turns.append((ITEM_LINES[k][score], REPLIES[score][(position + session) % len(REPLIES[score])]))
    turns.append((CLOSERS[(trajectory + session) % len(CLOSERS)], CLOSING_REPLY))
    return turns


def lc8_demo_records() -> list[dict]:
    """The trajectories as conversations JSON Lines records (the ``sessions`` form, kind ``longitudinal``)."""
    records = []
    for t, name in enumerate(CLIENTS):
        index, sessions = 0, []
        for s in range(len(TRAJECTORIES[t])):
            turns = []
            for client, reply in _session_turns(name, t, s):
                index += 1
                turns.append({"index": index, "client": client,
                              "responses": [{"model": SLOT, "model_version": "synthetic-demo-1", "text": reply}]})
            sessions.append({"index": s + 1, "kind": Session.Kind.COUNSELING, "crisis_type": None, "turns": turns})
        records.append({
            "dataset": LC8_DEMO_DATASET, "conversation_id": f"lc8-demo-{t + 1}", "kind": "longitudinal",
            "topic": "Depression", "complexity": None,
            "title": f"[SYNTHETIC] {name}: five counseling sessions (fictional client)", "sessions": sessions,
        })
    return records


def lc8_demo_items() -> np.ndarray:
    """The reference items, trajectories × sessions × items."""
    return np.array(TRAJECTORIES, dtype=np.int64)


def lc8_demo_predictions() -> dict[tuple[str, int], np.ndarray]:
    """The illustrative methods' predictions per (method, seed): floats to two decimals, trajectories × sessions,
    never rounded to whole numbers or clipped to the scale."""
    totals = lc8_demo_items().sum(axis=-1)
    return {(name, seed): np.round(predict(totals, profile, np.random.default_rng([number, seed])), 2)
            for number, (name, profile) in enumerate(LC8_DEMO_METHODS) for seed in LC8_DEMO_SEEDS}


@transaction.atomic
def lc8_demo_load(*, admin: User, reviewer: User, expert: User) -> Lc8DemoResult:
    schema = lc8_schema_ensure()
    study = Study.objects.filter(slug=LC8_DEMO_STUDY).first()
    if study is None:
        study = services.study_create(slug=LC8_DEMO_STUDY, name="Demo: LongCounsel-8 trajectories (synthetic demo)",
                                      schema=schema, model_slots=[SLOT], by=admin, is_synthetic=True,
                                      description=DESCRIPTION)
    records = lc8_demo_records()
    conversation_ingest.conversations_import(rows=list(enumerate(records, start=1)), study=study, is_synthetic=True,
                                             by=admin, problems=conversation_check(study))
    services.study_member_add(study=study, user=reviewer, role=StudyMember.Role.REVIEWER, by=admin)
    services.study_member_add(study=study, user=expert, role=StudyMember.Role.EXPERT, by=admin)
    item_attributes, total = lc8_attributes(study.schema)
    by_key = {(c, i): pk for pk, c, i in Session.objects.filter(conversation__study=study).values_list(
        "pk", "conversation__external_id", "index")}
    session_ids = np.array([[by_key[(r["conversation_id"], s["index"])] for s in r["sessions"]] for r in records],
                           dtype=np.int64)

    reference = automated_coders.reference_register(study=study, name=LC8_DEMO_REFERENCE, by=admin)
    if not SessionLabel.objects.filter(coder=reference).exists():  # the first load only
        reference_labels_write(study=study, coder=reference, session_ids=session_ids, items=lc8_demo_items(),
                               item_attributes=item_attributes, total=total)
    for (name, seed), values in lc8_demo_predictions().items():
        member = automated_coders.method_register(study=study, name=name, version="synthetic-demo-1",
                                                  prompt_id=dict(LC8_DEMO_METHODS)[name].name, by=admin)
        if not SessionLabel.objects.filter(coder=member, seed=seed).exists():
            session_labels_write(study=study, coder=member, seed=seed, session_ids=session_ids, attribute=total,
                                 values=values)

    main = services.round_ensure(study=study, kind=Round.Kind.MAIN, by=admin)
    if main.status == Round.Status.DRAFT:  # the first load only: afterwards the round is the admin's
        # The round's items are the turns of the sessions it assigns, trajectory by trajectory, as the main round's
        # assignment makes them for every kind (``calibration.services.main_round_assign``: the API's ``n_items``
        # counts turns); set while the round is a draft, as every round's are (``round_items_set``).
        order = session_ids.reshape(-1).tolist()
        sessions = list(Session.objects.filter(pk__in=order))
        turns_of: dict[int, list[Turn]] = {pk: [] for pk in order}
        for turn in Turn.objects.filter(session_id__in=order).order_by("index"):
            turns_of[int(turn.session_id or 0)].append(turn)  # each of those sessions
        services.round_items_set(round=main, turns=[turn for pk in order for turn in turns_of[pk]], by=admin)
        services.round_open(round=main, by=admin)
        for coder in (reviewer, expert):
            lc8_assign.session_assignments_create(round=main, coder=coder, sessions=sessions, seed=0, by=admin)
    labels = SessionLabel.objects.filter(study=study)
    return Lc8DemoResult(
        study=study, trajectories=len(records), sessions=int(session_ids.size),
        reference_labels=labels.filter(coder=reference).count(),
        predictions=labels.filter(coder__role=StudyMember.Role.METHOD).count(),
        assignments=main.assignments.count(),
    )
