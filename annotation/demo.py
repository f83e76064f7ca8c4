"""The demo study: the real Appendix D examples, a calibration round over their coded turns, and one
account per role. Loading it twice changes nothing."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.utils import timezone

from annotation import roles, services
from annotation.models import Assignment, Judgment, Round, Schema, Span, Study, StudyMember
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
    from annotation.synthetic import WORD, draw_gold, perturb

    rng = np.random.default_rng(0)
    panel = []
    for name in DEMO_PANEL:
        user = services.user_ensure(username=name, role=roles.REVIEWER)
        services.study_member_add(study=study, user=user, role=StudyMember.Role.REVIEWER)
        panel.append(user)
    StudyMember.objects.filter(study=study, user__in=panel).update(retained=True)
    responses = {t.pk: list(t.responses.order_by("model_slot")) for t in turns}
    judgments: list[Judgment] = []
    span_plan: list[tuple[int, object, int, int]] = []
    for attribute in study.schema.attributes.prefetch_related("subcategories"):
        subs = list(attribute.subcategories.all())
        units = [(t, r) for t in turns for r in ([None] if attribute.unit == "turn" else responses[t.pk])]
        gold = draw_gold(attribute, len(units), rng)
        for round_, with_gold in ((calibration, True), (main, False)):
            scores = {u.pk: perturb(gold, DEMO_PANEL[u.username], attribute, rng) for u in panel}
            for i, (turn, response) in enumerate(units):
                rows = [(u, False, int(scores[u.pk][i])) for u in panel] + ([(admin, True, int(gold[i]))]
                                                                           if with_gold else [])
                for coder, is_gold, score in rows:
                    n_spans = 1 if subs and score > 0 and rng.random() < 0.4 else 0
                    judgments.append(Judgment(
                        round=round_, coder=coder, is_gold=is_gold, attribute=attribute, turn=turn,
                        response=response, conversation_id=turn.conversation_id, score=score,
                        instance_count=n_spans if attribute.has_instance_count else None))
                    if n_spans:
                        words = [(m.start(), m.end()) for m in WORD.finditer(response.text)]
                        first = int(rng.integers(0, len(words)))
                        last = min(len(words) - 1, first + int(rng.integers(0, 5)))
                        span_plan.append((len(judgments) - 1, subs[int(rng.integers(0, len(subs)))],
                                          words[first][0], words[last][1]))
    Judgment.objects.bulk_create(judgments)
    Span.objects.bulk_create(Span(judgment_id=judgments[i].pk, subcategory=sub, start=start, end=end)
                             for i, sub, start, end in span_plan)
    for user in panel:
        Assignment.objects.bulk_create(Assignment(round=main, coder=user, turn=turn, position=p,
                                                  completed_at=timezone.now())
                                       for p, turn in enumerate(turns, start=1))
    services.round_open(round=main, by=admin)
