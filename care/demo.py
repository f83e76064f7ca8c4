"""The CARE demo study (``load_demo --care``): one hand-written, clearly synthetic history of five sessions — two
chats, a suicidal-ideation crisis, a chat, and a callback to the crisis — on schema ``care-v1``, with the labels of
an illustrative LLM judge (a method coder, also hand-written) for the crisis, the session after it and the callback.
No real person, no real model output, no real judge. Loading it twice changes nothing.

The files are project data: ``care/demo_data/care_demo.jsonl`` (conversations JSON Lines, the ``sessions``
form) and ``care/demo_data/care_demo_judge.jsonl`` (long format, role ``method``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth.models import User
from django.db import transaction

from annotation import automated_coders, judgment_import, long_format, services
from annotation.kinds import conversation_check
from annotation.models import Judgment, Round, Schema, Study, StudyMember
from annotation.rules import CHECKLIST_SESSION_KINDS
from benchmark import conversation_ingest
from benchmark.models import Session, Turn
from common.errors import jsonl_rows

DEMO_DATA = Path(__file__).resolve().parent / "demo_data"
CARE_DEMO_FILE = DEMO_DATA / "care_demo.jsonl"
CARE_DEMO_JUDGE_FILE = DEMO_DATA / "care_demo_judge.jsonl"
CARE_DEMO_STUDY = "care-demo"
CARE_DEMO_JUDGE = "demo-care-judge"
CARE_DEMO_SLOT = "Assistant"
DESCRIPTION = (
    "SYNTHETIC: one hand-written history (five sessions: two chats, a suicidal-ideation crisis, a chat, a callback) "
    "on care-v1, with hand-written labels of an illustrative LLM judge (demo-care-judge, a method coder). Not a real "
    "person, not a real model's output, not a real judge. Human coders are blinded to the judge's labels."
)


@dataclass
class CareDemoResult:
    study: Study
    sessions: int
    judge_labels: int


@transaction.atomic
def care_demo_load(*, admin: User, reviewer: User, expert: User) -> CareDemoResult:
    study = Study.objects.filter(slug=CARE_DEMO_STUDY).first()
    if study is None:
        study = services.study_create(slug=CARE_DEMO_STUDY, name="Demo: CARE history (synthetic)",
                                      schema=Schema.objects.get(slug="care-v1"), model_slots=[CARE_DEMO_SLOT],
                                      by=admin, is_synthetic=True, description=DESCRIPTION)
    with CARE_DEMO_FILE.open(encoding="utf-8") as stream:
        rows = list(jsonl_rows(stream))
    conversation_ingest.conversations_import(rows=rows, study=study, is_synthetic=True, by=admin,
                                             problems=conversation_check(study))
    services.study_member_add(study=study, user=reviewer, role=StudyMember.Role.REVIEWER, by=admin)
    services.study_member_add(study=study, user=expert, role=StudyMember.Role.EXPERT, by=admin)
    main = services.round_ensure(study=study, kind=Round.Kind.MAIN, by=admin)
    if main.status == Round.Status.DRAFT:  # the first load only: afterwards the round is the admin's
        _main_round_opened(study=study, main=main, coders=[reviewer, expert], admin=admin)
    judge = automated_coders.method_register(study=study, name=CARE_DEMO_JUDGE, version="synthetic-demo-1",
                                             prompt_id="care-judge-demo", by=admin)
    labels = Judgment.objects.filter(round__study=study, coder_id=judge.user_id)
    if not labels.exists():  # the first load only (an import that changes nothing would still be an audit event)
        with CARE_DEMO_JUDGE_FILE.open(encoding="utf-8") as stream:
            judgment_import.judgments_import(rows=long_format.read_rows(stream, fmt="jsonl"), study_slug=study.slug,
                                             by=admin)
    return CareDemoResult(study=study, sessions=Session.objects.filter(conversation__study=study).count(),
                          judge_labels=labels.count())


def _main_round_opened(*, study: Study, main: Round, coders: list[User], admin: User) -> None:
    """Fix the main round's items, open it (the judge's labels go into it too) and give the human coders those
    items: the turns a CARE study codes, those of the first crisis session and after, in order
    (docs/care-data.md#the-codings-of-care-v1). The items are set while the round is a draft, as every round's are
    (``round_items_set``): the round's item count, and what else reads its items, follows them."""
    first = (Session.objects.filter(conversation__study=study, kind__in=CHECKLIST_SESSION_KINDS)
             .order_by("index").values_list("index", flat=True).first())
    turns = list(Turn.objects.filter(conversation__study=study, session__index__gte=first or 1)
                 .order_by("conversation_id", "index"))
    services.round_items_set(round=main, turns=turns, by=admin)
    services.round_open(round=main, by=admin)
    for coder in coders:
        services.assignments_ensure(round=main, coder=coder, turns=turns, by=admin)
