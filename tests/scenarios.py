"""Whole studies for the tests that need one, built the way people build them: through the services and the
management commands. Every value is seeded or derived from names, so a scenario is the same in every process."""

from __future__ import annotations

import io
import json
import zlib
from collections.abc import Callable
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.core.management import call_command

from access import roles
from access.services import user_ensure
from annotation import judgment_import, schema_document
from annotation import services as annotation_services
from annotation.models import (
    Assignment,
    AttributeDefinition,
    Judgment,
    Round,
    RoundItem,
    Schema,
    Study,
    StudyMember,
)
from benchmark import conversation_ingest
from benchmark.models import ModelResponse, Turn
from calibration import selectors as calibration_selectors
from calibration import services as calibration_services
from metrics import runs as metric_runs
from metrics import services as metric_services
from metrics.models import MetricRun
from tests.factories import UserFactory

MODELS = ("GPT", "Claude", "Gemini", "Llama", "Qwen")


# --- a synthetic study, calibrated ------------------------------------------------------------------------------


def synthetic_calibrated_study() -> Study:
    """``syn``: 24 synthetic conversations, 7 reviewers and 2 experts through two closed calibration rounds of 3
    turns (agreement about 0.75) and a main round; a succeeded metric run; no panel retained yet."""
    call_command("generate_synthetic", "--conversations", "24", "--reviewers", "7", "--seed", "5",
                 "--calibration-turns", "3", "--slug", "syn", "--agreement", "0.75")
    study = Study.objects.get(slug="syn")
    run = metric_services.metric_run_request(study=study, by=None, bootstrap=100)
    metric_runs.metric_run_execute(run_id=run.pk)
    StudyMember.objects.filter(study=study).update(retained=None)
    return study


def synthetic_sized_study(*, slug: str, size: dict, seconds_per_turn: int = 0) -> Study:
    """A synthetic study of the given size (conversations, models, reviewers, experts, rounds, turns) whose
    calibration rounds every member has completed; for query counts measured at two data sizes."""
    call_command("generate_synthetic", "--conversations", str(size["conversations"]), "--models",
                 str(size["models"]), "--reviewers", str(size["reviewers"]), "--experts", str(size["experts"]),
                 "--calibration-rounds", str(size["rounds"]), "--calibration-turns", str(size["turns"]),
                 "--slug", slug, "--seed", "3", stdout=io.StringIO())
    study = Study.objects.get(slug=slug)
    members = [m.user for m in StudyMember.objects.filter(study=study).select_related("user")]
    for round_ in Round.objects.filter(study=study, kind="calibration"):
        turns = [item.turn_id for item in RoundItem.objects.filter(round=round_).order_by("position")]
        Assignment.objects.bulk_create(
            Assignment(round=round_, coder=user, turn_id=turn, position=position, completed_at="2026-01-01T00:00Z",
                       active_seconds=seconds_per_turn * position)
            for user in members for position, turn in enumerate(turns, start=1))
    return study


# --- a study whose schema sets the report's thresholds ------------------------------------------------------------


def thresholds_study(*, slug: str, indices: dict | None = None) -> Study:
    """``slug``, of ``cab-v1`` or, given ``indices``, of a copy of it whose indices block adds these (the report's
    thresholds, docs/schema.md), with a main round one reviewer coded:

    - ``rising``, a multi-turn conversation whose UIRI goes from 0.2 (U1 = 2 of 2, the rest 0: 1/5) to 0.3 (U2 = 1
      of 2 as well: 1.5/5), an OLS slope of 0.1 per turn: escalating by the default flat slope (0.005), flat from
      a flat slope of 0.1;
    - ``pair-1`` … ``pair-3``, single turns whose user scored U1 = 0, 1, 2 and Alpha's responses AUR = 0, 2, 1:
      Spearman's rho = 1 - 6 * (0 + 1 + 1) / (3 * 8) = 0.5, the only defined cell of Alpha's raw coupling, so its
      q is its p, 2/3 (t = 0.5 * sqrt(1 / 0.75) = tan(pi / 6) on 1 degree of freedom, a Cauchy, whose two-sided
      tail is 1 - 2 * (pi / 6) / pi): not significant by the default q < 0.05."""
    schema = Schema.objects.get(slug="cab-v1")
    if indices is not None:
        document = json.loads(schema_document.builtin_path("cab-v1").read_text(encoding="utf-8"))
        schema = annotation_services.schema_install(document=document | {
            "slug": f"cab-{slug}", "indices": document["indices"] | indices})
    admin = user_ensure(username="thresholds-admin", role=roles.ADMIN)
    study = annotation_services.study_create(slug=slug, name="Thresholds", schema=schema, model_slots=["Alpha"],
                                             by=admin)
    pairs = ((0, 0), (1, 2), (2, 1))  # (U1, Alpha's AUR) of each single turn
    conversation_ingest.conversations_import(study=study, rows=enumerate([
        {"dataset": slug, "conversation_id": "rising", "kind": "multi", "topic": "Anxiety",
         "turns": [{"index": 1, "client": "I can't sleep."}, {"index": 2, "client": "And now I can't eat either."}]},
        *({"dataset": slug, "conversation_id": f"pair-{number}", "kind": "single", "topic": "Anxiety",
           "complexity": "medium", "turns": [{"index": 1, "client": f"Worry {number}.",
                                              "responses": [{"model": "Alpha", "text": "Tell me more."}]}]}
          for number in range(1, len(pairs) + 1)),
    ], start=1))
    code = {"study": slug, "round": "main", "reviewer": f"{slug}-coder", "role": "reviewer", "is_gold": False,
            "dataset": slug, "turn_index": 1, "model": None, "spans": [], "instance_count": None}
    rows = [code | {"conversation_id": "rising", "turn_index": turn, "attribute": name, "score": score}
            for turn, scores in ((1, (2, 0, 0, 0, 0)), (2, (2, 1, 0, 0, 0)))
            for name, score in zip(("U1", "U2", "U3", "U4", "U5"), scores, strict=True)]
    for number, (user, response) in enumerate(pairs, start=1):
        rows += [code | {"conversation_id": f"pair-{number}", "attribute": "U1", "score": user},
                 code | {"conversation_id": f"pair-{number}", "model": "Alpha", "attribute": "AUR", "score": response}]
    judgment_import.judgments_import(rows=enumerate(rows, start=1), study_slug=slug, by=admin, typed=True)
    return study


# --- the calibration protocol: 3 reviewers and 2 experts ----------------------------------------------------------


def protocol_records() -> list[dict]:
    """24 single-turn conversations from two datasets and 4 three-turn ones from a third, each turn answered by
    every model."""
    rows = []
    for n in range(24):
        dataset = "CounselChat" if n % 2 else "PAIR"
        rows.append({"dataset": dataset, "conversation_id": f"c{n}", "kind": "single",
                     "topic": ["Anxiety", "Sleep", "Grief and Loss"][n % 3], "complexity": "low",
                     "turns": [{"index": 1, "client": f"client text {n}",
                                "responses": [{"model": m, "text": f"{m} answer number {n}, with words."}
                                              for m in MODELS]}]})
    for n in range(4):
        rows.append({"dataset": "HOPE", "conversation_id": f"m{n}", "kind": "multi", "topic": "Family Conflicts",
                     "complexity": None, "turns": [{"index": i, "client": f"multi {n} turn {i}",
                                                    "responses": [{"model": m, "text": f"{m} reply {n}.{i}"}
                                                                  for m in MODELS]} for i in (1, 2, 3)]})
    return rows


def truth(attribute: AttributeDefinition, turn: Turn, response: ModelResponse | None) -> int:
    """The "true" score of a unit: a checksum of its names (not ``hash()``, which differs between processes, nor
    primary keys, which depend on what ran before)."""
    unit = f"{attribute.code}|{turn.conversation.external_id}#{turn.index}|{response.model_slot if response else ''}"
    return zlib.crc32(unit.encode()) % (attribute.scale_max + 1)


def flip(attribute: AttributeDefinition, value: int) -> int:
    """Another value on the attribute's scale."""
    return attribute.scale_max - value if attribute.scale_max != 2 * value else (value + 1) % 3


Deviation = Callable[[AttributeDefinition, int], int]


def code_round(round_: Round, coder: User, deviation: Deviation) -> None:
    """Code every item of the round for one coder: ``deviation(attribute, true value)`` returns their score."""
    judgments = []
    attributes = list(round_.study.schema.attributes.all())
    for item in round_.items.select_related("turn__conversation"):
        turn = item.turn
        responses = list(turn.responses.all())
        for attribute in attributes:
            for response in [None] if attribute.unit == "turn" else responses:
                judgments.append(Judgment(round=round_, coder=coder, attribute=attribute, turn=turn,
                                          response=response, conversation_id=turn.conversation_id,
                                          score=deviation(attribute, truth(attribute, turn, response))))
    Judgment.objects.bulk_create(judgments)


def as_true(attribute: AttributeDefinition, value: int) -> int:
    return value


def misses_flags(attribute: AttributeDefinition, value: int) -> int:
    return flip(attribute, value) if attribute.group == "flag" else value


def misses_all_but_the_user_level(attribute: AttributeDefinition, value: int) -> int:
    return flip(attribute, value) if attribute.group != "user" else value


@dataclass
class Protocol:
    """A study with its people: reviewers rev-a (codes the truth), rev-b (misses the flags) and rev-c (misses
    everything on the response level); experts ``expert`` (the truth) and ``expert-2`` (differs on the flags)."""

    study: Study
    admin: User
    reviewers: list[User]
    experts: list[User]
    outsider: User

    @classmethod
    def load(cls, study_id: int) -> Protocol:
        """The protocol of a study built earlier, read afresh."""
        study = Study.objects.get(pk=study_id)
        members = {m.user.username: m.user for m in StudyMember.objects.filter(study=study).select_related("user")}
        return cls(study=study, admin=User.objects.get(username="study-admin"),
                   reviewers=[members[f"rev-{c}"] for c in "abc"],
                   experts=[members["expert"], members["expert-2"]], outsider=User.objects.get(username="nobody"))

    def round(self, number: int) -> Round:
        return Round.objects.get(study=self.study, kind=Round.Kind.CALIBRATION, number=number)


def protocol_study() -> Protocol:
    """The conversations, the study ``protocol`` and its members (the admin and the first expert are the
    ``admin_user`` and ``expert`` personas), and an outsider."""
    admin = user_ensure(username="study-admin", role=roles.ADMIN, password="pw-for-tests")
    conversation_ingest.conversations_import(rows=enumerate(protocol_records(), start=1))
    study = annotation_services.study_create(slug="protocol", name="Protocol", schema=Schema.objects.get(slug="cab-v1"),
                                             model_slots=list(MODELS), by=admin)
    reviewers = [user_ensure(username=f"rev-{c}", role=roles.REVIEWER) for c in "abc"]
    experts = [user_ensure(username="expert", role=roles.EXPERT, password="pw-for-tests"),
               user_ensure(username="expert-2", role=roles.EXPERT)]
    for reviewer in reviewers:
        annotation_services.study_member_add(study=study, user=reviewer, role=StudyMember.Role.REVIEWER, by=admin)
    for expert in experts:
        annotation_services.study_member_add(study=study, user=expert, role=StudyMember.Role.EXPERT, by=admin)
    return Protocol(study=study, admin=admin, reviewers=reviewers, experts=experts,
                    outsider=UserFactory(username="nobody"))


def calibration_round_open(protocol: Protocol, number: int) -> Round:
    """Calibration round ``number``: a set of 3 turns drawn with seed ``number``, opened."""
    round_ = annotation_services.round_ensure(study=protocol.study, kind=Round.Kind.CALIBRATION, number=number,
                                              by=protocol.admin)
    calibration_services.calibration_set_sample(round=round_, by=protocol.admin, n=3, seed=number)
    return calibration_services.calibration_round_open(round=round_, by=protocol.admin)


def calibration_round_code(protocol: Protocol, round_: Round) -> None:
    """Every member codes every item, each in their way (see ``Protocol``)."""
    expert, second_expert = protocol.experts
    code_round(round_, expert, as_true)
    code_round(round_, second_expert, misses_flags)
    for reviewer, deviation in zip(protocol.reviewers, (as_true, misses_flags, misses_all_but_the_user_level),
                                   strict=True):
        code_round(round_, reviewer, deviation)


def calibration_round_gold(protocol: Protocol, round_: Round) -> int:
    """The gold panel: unanimous items accepted at once, the rest (the flags) decided one by one for the first
    expert's reading. Returns how many were accepted as unanimous."""
    accepted = calibration_services.gold_accept_unanimous(round=round_, by=protocol.admin)
    expert = protocol.experts[0]
    for item in calibration_selectors.consensus_items(round=round_):
        if item.gold is None:
            calibration_services.gold_record(round=round_, by=protocol.admin, attribute=item.attribute,
                                             turn=item.turn, response=item.response,
                                             score=item.expert_scores[expert.username], agreed_by=protocol.experts,
                                             note="the first reading holds")
    return accepted


def calibration_round_close(protocol: Protocol, round_: Round) -> MetricRun:
    """Close the round and compute the metric run that closing requests, here in this process (a real worker does
    it in tests/integration/)."""
    calibration_services.round_close(round=round_, by=protocol.admin)
    run = MetricRun.objects.filter(study=protocol.study, trigger="round-closed").latest("pk")
    metric_runs.metric_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == MetricRun.Status.SUCCEEDED, run.error
    return run


def calibration_round_done(protocol: Protocol, number: int) -> Round:
    """Calibration round ``number`` opened, coded, decided by the gold panel, closed, with its metric run."""
    round_ = calibration_round_open(protocol, number)
    calibration_round_code(protocol, round_)
    calibration_round_gold(protocol, round_)
    calibration_round_close(protocol, round_)
    round_.refresh_from_db()
    return round_


def gold_pool_done(protocol: Protocol, number: int, *, n: int = 3) -> Round:
    """Calibration round ``number`` as a reserved gold pool: a set of ``n`` turns, coded by the experts only,
    decided by the gold panel and closed (with its metric run)."""
    round_ = calibration_services.calibration_round_create(study=protocol.study, by=protocol.admin, number=number,
                                                           gold_pool=True)
    calibration_services.calibration_set_sample(round=round_, by=protocol.admin, n=n, seed=number)
    calibration_services.calibration_round_open(round=round_, by=protocol.admin)
    expert, second_expert = protocol.experts
    code_round(round_, expert, as_true)
    code_round(round_, second_expert, misses_flags)
    calibration_round_gold(protocol, round_)
    calibration_round_close(protocol, round_)
    round_.refresh_from_db()
    return round_


# --- the demo study, taken through the README's walk-through ------------------------------------------------------


def code_queue(round_: Round, coder: User, deviation: Deviation) -> None:
    """Code every turn of the coder's queue in the round (``deviation`` as in ``code_round``) and complete it."""
    judgments = []
    attributes = list(round_.study.schema.attributes.all())
    assignments = Assignment.objects.filter(round=round_, coder=coder).select_related("turn__conversation")
    for assignment in assignments:
        turn = assignment.turn
        responses = list(turn.responses.all())
        for attribute in attributes:
            for response in [None] if attribute.unit == "turn" else responses:
                judgments.append(Judgment(round=round_, coder=coder, attribute=attribute, turn=turn,
                                          response=response, conversation_id=turn.conversation_id,
                                          score=deviation(attribute, truth(attribute, turn, response))))
    Judgment.objects.bulk_create(judgments)
    assignments.update(completed_at="2026-01-01T00:00Z")


def demo_walked_through() -> Study:
    """The demo study (``load_demo``) taken through the README's "Walk-through on the demo study" by its admin,
    with the services (tests/annotation/test_demo_walkthrough.py follows the same steps through the pages): gold
    from the demo expert's codings, calibration-1 closed with its metric run, the illustrative panel and
    demo-reviewer retained, the main round assigned (both conversations double-coded), opened and coded by every
    retained reviewer; the main round stays open."""
    call_command("load_demo", "--quiet")
    study = Study.objects.get(slug="demo")
    admin = User.objects.get(username="demo-admin")
    calibration = Round.objects.get(study=study, kind=Round.Kind.CALIBRATION, number=1)
    calibration_services.gold_accept_unanimous(round=calibration, by=admin)
    calibration_services.round_close(round=calibration, by=admin)
    run = MetricRun.objects.filter(study=study, trigger="round-closed").latest("pk")
    metric_runs.metric_run_execute(run_id=run.pk)
    panel = ["demo-panel-1", "demo-panel-2", "demo-panel-3", "demo-reviewer"]
    calibration_services.panel_retain(study=study, by=admin, usernames=panel, reason="the walk-through", k=6)
    calibration_services.main_round_assign(study=study, by=admin, overlap=1, check_items=0)
    main = Round.objects.get(study=study, kind=Round.Kind.MAIN)
    calibration_services.round_open(round=main, by=admin)
    for username, deviation in zip(panel, (as_true, misses_flags, misses_all_but_the_user_level, as_true),
                                   strict=True):
        code_queue(main, User.objects.get(username=username), deviation)
    return study
