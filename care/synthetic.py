"""Larger synthetic CARE studies (``generate_care_synthetic``): the Django side of ``care.core.synthetic``.

The pure generator draws histories (chat, crisis and callback sessions), a reference coding and coders who copy it
with some accuracy; this module turns them into a clearly labelled study on ``care-v1``: histories in the ``sessions``
form of the conversations JSON Lines (placeholder text marked [SYNTHETIC]), an LLM judge registered as a method,
human reviewers, and every coder's labels in the long format — all written through the same importers, rules and
validation as real data, so a generated study exercises the real ingestion paths.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from access import roles
from access.services import user_ensure
from annotation import automated_coders, checklists, judgment_import, services
from annotation.kinds import conversation_check
from annotation.long_format import DEFAULT_ROLE, METHOD_ROLE
from annotation.models import Schema, Study, StudyMember
from benchmark import conversation_ingest
from care.core.metrics import CareCoding, CareHistory, ChecklistItem
from care.core.synthetic import synthetic_care_study

SCHEMA = "care-v1"
DATASET = "CARE-synthetic"


@dataclass
class CareSyntheticSpec:
    histories: int
    seed: int = 0
    models: int = 2
    humans: int = 2
    judge_accuracy: float = 0.8
    human_accuracy: float = 0.88
    control_share: float = 0.1
    method_labels: str = Study.MethodLabels.BLINDED
    slug: str | None = None


@dataclass
class CareSyntheticResult:
    study: Study
    histories: int
    sessions: int
    turns: int
    judgments: int


def _records(slug: str, histories: tuple[CareHistory, ...]) -> list[dict]:
    return [{
        "dataset": DATASET, "conversation_id": f"{slug}-{history.conversation}", "kind": "multi",
        "topic": "Self-harm / Suicidal Ideation", "complexity": None,
        "title": f"[SYNTHETIC] generated history {history.conversation} (placeholder text, not a real person)",
        "sessions": [{
            "index": session.index, "kind": session.kind, "crisis_type": session.crisis_type,
            "turns": [{"index": t, "client": f"[SYNTHETIC] user message {t} ({session.kind} session {session.index})",
                       "responses": [{"model": history.model, "model_version": "synthetic",
                                      "text": f"[SYNTHETIC] {history.model} reply to message {t}."}]}
                      for t in session.turns],
        } for session in history.sessions],
    } for history in histories]


def _label_rows(*, slug: str, coder: str, role: str, coding: CareCoding,
                histories: tuple[CareHistory, ...]) -> Iterator[dict]:
    """One coder's labels as long-format rows (with session_index; nominal codes by their value labels)."""
    session_of = {(h.conversation, t): s.index for h in histories for s in h.sessions for t in s.turns}
    model_of = {h.conversation: h.model for h in histories}
    base = {"study": slug, "round": "main", "reviewer": coder, "is_gold": False, "role": role, "dataset": DATASET,
            "instance_count": None, "spans": []}

    def row(conversation: str, attribute: str, score: object, *, turn: int | None, session: int,
            model: str | None = None) -> dict:
        return base | {"conversation_id": f"{slug}-{conversation}", "turn_index": turn, "session_index": session,
                       "model": model, "attribute": attribute, "score": score}

    for (conversation, turn), user in sorted(coding.user.items()):
        session = session_of[(conversation, turn)]
        for attribute, value in (("crisis", user.crisis), ("marker", user.marker), ("request", user.request),
                                 ("ambiguous", int(user.ambiguous)), ("sudden", int(user.sudden)),
                                 ("hold", int(user.hold)), ("reactance", int(user.reactance))):
            if value is not None:
                yield row(conversation, attribute, value, turn=turn, session=session)
    for (conversation, turn), code in sorted(coding.assistant.items()):
        session, model = session_of[(conversation, turn)], model_of[conversation]
        for attribute, value in (("strategy", code.strategy), ("horizon", code.horizon),
                                 ("safety_critical", int(code.safety_critical))):
            if value is not None:
                yield row(conversation, attribute, value, turn=turn, session=session, model=model)
    for (conversation, session), items in sorted(coding.checklists.items()):
        for item, present in sorted(items.items()):
            yield row(conversation, item, int(present), turn=None, session=session)


def care_synthetic_generate(spec: CareSyntheticSpec) -> CareSyntheticResult:
    slug = spec.slug or f"care-synthetic-{spec.seed}"
    services.study_slug_check(slug=slug)  # before any account is made under its name
    if Study.objects.filter(slug=slug).exists():
        raise ValueError(f"study {slug!r} exists already; choose another --slug or --seed")
    schema = Schema.objects.get(slug=SCHEMA)
    items = [ChecklistItem(a.code, a.item_type, frozenset(a.crisis_types))
             for a in checklists.checklist_items(schema=schema)]
    models = [f"Model-{chr(ord('A') + i)}" if i < 26 else f"Model-{i + 1}" for i in range(spec.models)]
    judge, humans = f"{slug}-judge", [f"{slug}-h{i}" for i in range(1, spec.humans + 1)]
    generated = synthetic_care_study(
        spec.histories, seed=spec.seed, models=models, control_share=spec.control_share, items=items,
        coders=[(judge, spec.judge_accuracy), *((h, spec.human_accuracy) for h in humans)],
    )

    admin = user_ensure(username=f"{slug}-admin", role=roles.ADMIN)
    study = services.study_create(
        slug=slug, name=f"[SYNTHETIC] CARE, seed {spec.seed}, {spec.histories} histories", schema=schema,
        model_slots=models, by=admin, is_synthetic=True, method_labels=spec.method_labels,
        description="Generated by generate_care_synthetic: not real histories, not a real judge, not real coders.",
    )
    conversation_ingest.conversations_import(rows=list(enumerate(_records(slug, generated.histories), start=1)),
                                             study=study, is_synthetic=True, by=admin,
                                             problems=conversation_check(study))
    for name in humans:
        services.study_member_add(study=study, user=user_ensure(username=name, role=roles.REVIEWER),
                                  role=StudyMember.Role.REVIEWER, by=admin)
    automated_coders.method_register(study=study, name=judge, version=f"synthetic-seed-{spec.seed}",
                                     prompt_id="synthetic", by=admin)
    rows = [r for name, coding in generated.coders.items()
            for r in _label_rows(slug=slug, coder=name, role=METHOD_ROLE if name == judge else DEFAULT_ROLE,
                                 coding=coding, histories=generated.histories)]
    summary = judgment_import.judgments_import(rows=enumerate(rows, start=1), study_slug=slug, by=admin)
    study.refresh_from_db()
    return CareSyntheticResult(
        study=study, histories=len(generated.histories),
        sessions=sum(len(h.sessions) for h in generated.histories),
        turns=sum(len(s.turns) for h in generated.histories for s in h.sessions),
        judgments=summary.judgments_created,
    )
