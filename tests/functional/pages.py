"""The coding pages the browser tests of saving open, one per kind of unit: a turn of the demo study (cab-v1; a
user-level and a response-level attribute), the session checklist at the end of a CARE history's crisis session
(``load_demo --care``) and an LC8 session (``load_demo --lc8``): each a session-unit attribute."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.core.management import call_command

from annotation.models import Assignment, Judgment, Round
from lc8.demo import LC8_DEMO_STUDY

CARE_CHECKLIST_TURN = 8  # the last turn of the demo history's crisis session (session 3): its checklist is shown


@dataclass
class CodingPage:
    url: str
    round: Round
    reviewer: object
    assignment: Assignment
    attribute: str  # the code of an attribute the page codes on a unit of its own
    form: str  # the selector of that attribute's form (a response's: the first card's)
    scores: tuple[str, str]  # two values of its scale

    def judgment(self) -> Judgment | None:
        """The reviewer's judgment of the attribute in this round (the page's unit: the only one coded)."""
        return Judgment.objects.filter(round=self.round, coder=self.reviewer, attribute__code=self.attribute).first()


def coding_page(live_server, kind: str) -> CodingPage:
    """The demo reviewer's page of ``kind``: ``turn`` and ``response`` (the demo study), ``care`` or ``lc8``."""
    if kind in ("turn", "response"):
        call_command("load_demo", "--quiet")
        round_ = Round.objects.get(study__slug="demo", kind="calibration", number=1)
        assignment = Assignment.objects.get(round=round_, coder__username="demo-reviewer", position=1)
        code, form, scores = ("U1", "#t-U1", ("1", "2")) if kind == "turn" else (
            "AUR", ".response-card >> nth=0 >> form[data-code=AUR]", ("1", "2"))
    elif kind == "care":
        call_command("load_demo", "--quiet", "--care")
        round_ = Round.objects.get(study__slug="care-demo", kind="main")
        assignment = Assignment.objects.get(round=round_, coder__username="demo-reviewer",
                                            turn__index=CARE_CHECKLIST_TURN)
        code, form, scores = "ask_safety", "#s-ask_safety", ("1", "0")
    else:
        call_command("load_demo", "--quiet", "--lc8")
        round_ = Round.objects.get(study__slug=LC8_DEMO_STUDY, kind="main")
        assignment = Assignment.objects.get(round=round_, coder__username="demo-reviewer", position=1)
        code, form, scores = "PHQ1", "#s-PHQ1", ("2", "3")
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    url = f"{live_server.url}/rounds/{round_.pk}/turns/{assignment.position}/"
    return CodingPage(url=url, round=round_, reviewer=reviewer, assignment=assignment, attribute=code, form=form,
                      scores=scores)
