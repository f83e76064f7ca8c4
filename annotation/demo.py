"""The demo study: the real Appendix D examples, a calibration round over their coded turns, and one
account per role. Loading it twice changes nothing."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction

from annotation import roles, services
from annotation.models import Round, Schema, Study, StudyMember
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
    users = {role: services.user_ensure(username=name, role=role, password=DEMO_PASSWORD)
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
    services.study_member_add(study=study, user=users[roles.REVIEWER], role=StudyMember.Role.REVIEWER)
    services.study_member_add(study=study, user=users[roles.EXPERT], role=StudyMember.Role.EXPERT)

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
        services.assignments_ensure(round=calibration, coder=coder, turns=coded_turns)
    services.round_ensure(study=study, kind=Round.Kind.MAIN, by=admin)
    return DemoResult(
        study=study,
        conversations=len(records),
        responses=ModelResponse.objects.filter(turn__in=coded_turns).count(),
        logins={role: user.get_username() for role, user in users.items()},
    )
