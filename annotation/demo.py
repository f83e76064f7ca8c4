"""The demo study: the real Appendix D examples, one account per role, and a calibration round coded up to the
point where the admin takes over. Loading it twice changes nothing.

What the demo leaves, and what it leaves to the admin (README, "Walk-through on the demo study"):
- calibration-1 is open on two of the four coded turns (a single-turn and a multi-turn conversation); the other
  two are left for the main round;
- an illustrative reviewer panel (``DEMO_PANEL``) and the demo expert have coded and completed it, with seeded,
  generated codings (not real clinical judgments); ``demo-reviewer`` has it to code;
- no gold, no metrics run, nobody retained, no main round: the admin records the gold consensus, closes the round
  (which starts the metrics run), holds the workshop, retains the panel, and assigns, opens and closes the main
  round, all from the study page.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.utils import timezone

from access import roles
from access.services import user_ensure
from annotation import services
from annotation.kinds import StudyKind
from annotation.models import Assignment, Round, Schema, Study, StudyMember
from annotation.synthetic import Codings, TurnUnits, codings_generate
from benchmark import conversation_ingest
from benchmark import demo as benchmark_demo
from benchmark.models import ModelResponse, Turn

DEMO_STUDY = "demo"
DEMO_PASSWORD = "cab-demo"  # noqa: S105  # nosec B105  # printed demo login, refused in production below
DEMO_USERS = {
    roles.REVIEWER: "demo-reviewer",
    roles.EXPERT: "demo-expert",
    roles.ADMIN: "demo-admin",
    roles.RESEARCHER: "demo-researcher",
}
MODEL_SLOTS = ["GPT", "Claude", "Gemini", "Llama", "Qwen"]
# An illustrative reviewer panel (username: how often it copies the hidden truth), so that gold, the workshop,
# the report and the panel page have codings to show. Seeded and generated, not real clinical judgments; the
# accounts have no password.
DEMO_PANEL = {"demo-panel-1": 0.9, "demo-panel-2": 0.8, "demo-panel-3": 0.65}
DEMO_EXPERT_ACCURACY = 0.95  # the demo expert's generated codings, from which the admin records gold
# calibration-1's set, as (dataset, conversation id, turn): one single-turn and one multi-turn conversation. The
# other two Appendix D conversations are what the admin's main-round assignment hands out.
CALIBRATION_SET = [("CounselChat", "appendix-d-1", 1), ("CARE-Bench", "appendix-d-3", 2)]
DESCRIPTION = (
    "The paper's Appendix D conversations, five models' responses each. calibration-1 (two turns) was coded by an "
    "illustrative panel (demo-panel-1…3) and demo-expert with seeded, generated codings, not real clinical "
    "judgments. Gold, closing, panel selection and the main round (the other two conversations) are left to the "
    "admin: see the README, 'Walk-through on the demo study'."
)


@dataclass
class DemoResult:
    study: Study
    conversations: int
    responses: int
    logins: dict[str, str]


@transaction.atomic
def demo_load(*, kinds: Sequence[StudyKind] = ()) -> DemoResult:
    """The demo study, and the demo study of each of ``kinds`` (their ``demo`` hook) for the same accounts."""
    if getattr(settings, "PRODUCTION", False):
        raise ImproperlyConfigured("the demo (with its printed passwords) is not loaded in production")
    records = benchmark_demo.demo_records()
    conversation_ingest.conversations_import(rows=enumerate(records, start=1))
    users = {role: user_ensure(username=name, role=role, password=DEMO_PASSWORD)
             for role, name in DEMO_USERS.items()}
    admin = users[roles.ADMIN]
    study = Study.objects.filter(slug=DEMO_STUDY).first()
    if study is None:
        study = services.study_create(
            slug=DEMO_STUDY,
            name="Demo: Appendix D examples",
            schema=Schema.objects.get(slug="cab-v1"),
            model_slots=MODEL_SLOTS,
            by=admin,
            description=DESCRIPTION,
        )
    services.study_member_add(study=study, user=users[roles.REVIEWER], role=StudyMember.Role.REVIEWER, by=admin)
    services.study_member_add(study=study, user=users[roles.EXPERT], role=StudyMember.Role.EXPERT, by=admin)
    calibration = services.round_ensure(study=study, kind=Round.Kind.CALIBRATION, number=1, by=admin)
    if calibration.status == Round.Status.DRAFT:
        _calibration_coded(study=study, calibration=calibration, reviewer=users[roles.REVIEWER],
                           expert=users[roles.EXPERT], admin=admin)
    for kind in kinds:
        if kind.demo is not None:
            kind.demo.load(admin=admin, reviewer=users[roles.REVIEWER], expert=users[roles.EXPERT])
    external_ids = [record["conversation_id"] for record in records]
    return DemoResult(
        study=study,
        conversations=len(records),
        responses=ModelResponse.objects.filter(turn__conversation__external_id__in=external_ids).count(),
        logins={role: user.get_username() for role, user in users.items()},
    )


def _calibration_coded(*, study: Study, calibration: Round, reviewer: User, expert: User, admin: User) -> None:
    """Build and open calibration-1, give it to every member, and let the illustrative panel and the demo expert
    code and complete it (seeded). Only on the first load: afterwards the round is the admin's."""
    panel = []
    for name in DEMO_PANEL:
        user = user_ensure(username=name, role=roles.REVIEWER)
        services.study_member_add(study=study, user=user, role=StudyMember.Role.REVIEWER, by=admin)
        panel.append(user)
    turns = [Turn.objects.select_related("conversation").get(
        conversation__dataset__name=dataset, conversation__external_id=external_id, index=index)
        for dataset, external_id, index in CALIBRATION_SET]
    services.round_items_set(round=calibration, turns=turns, by=admin)
    services.round_open(round=calibration, by=admin)
    for coder in (reviewer, expert, *panel):
        services.assignments_ensure(round=calibration, coder=coder, turns=turns, by=admin)

    accuracy = {user.pk: DEMO_PANEL[user.get_username()] for user in panel} | {expert.pk: DEMO_EXPERT_ACCURACY}
    units = [TurnUnits(t.pk, t.conversation_id, [(r.pk, r.text) for r in t.responses.order_by("model_slot")])
             for t in turns]
    codings = Codings()
    codings_generate(codings, round=calibration, turns=units,
                     attributes=list(study.schema.attributes.prefetch_related("subcategories")),
                     coders_of=lambda _turn: list(accuracy), accuracy=accuracy, gold_coder=None, span_rate=0.4,
                     rng=np.random.default_rng(0), max_extra_words=4)
    codings.save()
    Assignment.objects.filter(round=calibration, coder_id__in=list(accuracy)).update(completed_at=timezone.now())
