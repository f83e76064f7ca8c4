"""The demo study: the real Appendix D examples, a calibration round over their coded turns, and one
account per role. Loading it twice changes nothing."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.utils import timezone

from access import roles
from access.services import user_ensure
from annotation import services
from annotation.models import Assignment, Judgment, Round, Schema, Study, StudyMember
from annotation.synthetic import Codings, TurnUnits, codings_generate
from benchmark import demo as benchmark_demo
from benchmark import services as benchmark_services
from benchmark.models import ModelResponse, Turn

DEMO_STUDY = "demo"
DEMO_PASSWORD = "cab-demo"  # noqa: S105 - printed demo login, refused in production below
DEMO_USERS = {
    roles.REVIEWER: "demo-reviewer",
    roles.EXPERT: "demo-expert",
    roles.ADMIN: "demo-admin",
    roles.RESEARCHER: "demo-researcher",
}
MODEL_SLOTS = ["GPT", "Claude", "Gemini", "Llama", "Qwen"]
# A small illustrative panel, so the demo's reports, workshop and panel pages have something to show. Their
# codings are generated (seeded), not real clinical judgments; the accounts have no password.
DEMO_PANEL = {"demo-panel-1": 0.9, "demo-panel-2": 0.8, "demo-panel-3": 0.65}


@dataclass
class DemoResult:
    study: Study
    conversations: int
    responses: int
    logins: dict[str, str]


@transaction.atomic
def demo_load() -> DemoResult:
    if getattr(settings, "PRODUCTION", False):
        raise ImproperlyConfigured("the demo (with its printed passwords) is not loaded in production")
    records = benchmark_demo.demo_records()
    benchmark_services.conversations_import(rows=enumerate(records, start=1))
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
            description="The paper's Appendix D conversations, five models' responses each.",
        )
    services.study_member_add(study=study, user=users[roles.REVIEWER], role=StudyMember.Role.REVIEWER, by=admin)
    services.study_member_add(study=study, user=users[roles.EXPERT], role=StudyMember.Role.EXPERT, by=admin)

    external_ids = [record["conversation_id"] for record in records]
    coded_turns = list(
        Turn.objects.filter(conversation__external_id__in=external_ids, responses__isnull=False)
        .distinct()
        .select_related("conversation")
        .order_by("conversation__external_id", "index")
    )
    calibration = services.round_ensure(study=study, kind=Round.Kind.CALIBRATION, number=1, by=admin)
    if calibration.status == Round.Status.DRAFT:
        services.round_items_set(round=calibration, turns=coded_turns, by=admin)
        services.round_open(round=calibration, by=admin)
    for coder in (users[roles.REVIEWER], users[roles.EXPERT]):
        services.assignments_ensure(round=calibration, coder=coder, turns=coded_turns, by=admin)
    main = services.round_ensure(study=study, kind=Round.Kind.MAIN, by=admin)
    if not Judgment.objects.filter(round__study=study).exists():
        _illustrative_codings(study=study, calibration=calibration, main=main, turns=coded_turns, admin=admin)
    return DemoResult(
        study=study,
        conversations=len(records),
        responses=ModelResponse.objects.filter(turn__in=coded_turns).count(),
        logins={role: user.get_username() for role, user in users.items()},
    )


def _illustrative_codings(*, study: Study, calibration: Round, main: Round, turns: list[Turn], admin) -> None:
    """Seeded codings by the demo panel in both rounds, and a gold value for every calibration item."""
    rng = np.random.default_rng(0)
    panel = []
    for name in DEMO_PANEL:
        user = user_ensure(username=name, role=roles.REVIEWER)
        services.study_member_add(study=study, user=user, role=StudyMember.Role.REVIEWER, by=admin)
        panel.append(user)
    StudyMember.objects.filter(study=study, user__in=panel).update(retained=True)
    units = [TurnUnits(t.pk, t.conversation_id, [(r.pk, r.text) for r in t.responses.order_by("model_slot")])
             for t in turns]
    attributes = list(study.schema.attributes.prefetch_related("subcategories"))
    accuracy = {u.pk: DEMO_PANEL[u.get_username()] for u in panel}
    codings = Codings()
    for round_, gold_coder in ((calibration, admin.pk), (main, None)):
        codings_generate(codings, round=round_, turns=units, attributes=attributes,
                         coders_of=lambda _turn: list(accuracy), accuracy=accuracy, gold_coder=gold_coder,
                         span_rate=0.4, rng=rng, max_extra_words=4)
    codings.save()
    for user in panel:
        Assignment.objects.bulk_create(Assignment(round=main, coder=user, turn=turn, position=p,
                                                  completed_at=timezone.now())
                                       for p, turn in enumerate(turns, start=1))
    services.round_open(round=main, by=admin)
