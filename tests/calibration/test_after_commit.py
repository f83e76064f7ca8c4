"""A calibration page's request whose work is committed says so, however the database is afterwards: the database
ends the request's connection right after the commit (tests/annotation/test_after_commit.py), and the answer is
never the 503 that says "Nothing was changed" (common.outage)."""

from __future__ import annotations

import pytest
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse

from annotation.models import Judgment, Round, WorkshopNote
from tests import scenarios
from tests.annotation.test_after_commit import _ended_after_the_commit_of

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)  # the connection is ended for real


@pytest.fixture
def closed_round(admin_user, settings) -> tuple[Client, Round, Judgment]:
    """A closed calibration round, one of its gold judgments, and an admin's browser."""
    settings.DEBUG = False  # the pages' own 500 and 503
    round_ = scenarios.synthetic_calibrated_study().rounds.get(kind="calibration", number=1)
    page = Client(raise_request_exception=False)
    page.force_login(admin_user)
    return page, round_, Judgment.objects.filter(round=round_, is_gold=True, attribute__code="AUR").first()


def test_a_workshop_note_saved_as_the_database_drops_says_it_was_saved(closed_round):
    """Before, the answer's words named the turn by reading its conversation after the commit: 503."""
    page, round_, gold = closed_round
    said = f"Note saved on AUR · {gold.turn}."
    with _ended_after_the_commit_of('INSERT INTO "annotation_workshopnote"') as seen:
        answer = page.post(reverse("workshop-note", args=[round_.pk]), {
            "attribute": "AUR", "turn": gold.turn_id, "response": gold.response_id, "text": "Anchor 1 = hedged."},
            headers={"HX-Request": "true"})
    assert seen, "the note was committed"
    assert answer.status_code == 200, (answer.status_code, answer.content[-300:])
    assert said in answer.content.decode()
    assert WorkshopNote.objects.get(round=round_).text == "Anchor 1 = hedged."


def test_gold_recorded_as_the_database_drops_says_it_was_recorded(closed_round):
    page, round_, gold = closed_round
    score = 1 if gold.score != 1 else 0
    with _ended_after_the_commit_of('UPDATE "annotation_judgment"') as seen:
        answer = page.post(reverse("gold-record", args=[round_.pk]), {
            "attribute": "AUR", "turn": gold.turn_id, "response": gold.response_id, "score": str(score),
            "version": str(gold.version), "reason": "the anchor was misread"})
    assert seen, "the gold was committed"
    assert answer.status_code == 302, (answer.status_code, answer.content[-300:])
    assert [m.message for m in get_messages(answer.wsgi_request)] == [
        f"Gold AUR = {score} recorded for {gold.turn} · {gold.response.model_slot}."]
    assert Judgment.objects.get(pk=gold.pk).score == score
