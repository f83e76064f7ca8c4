"""The calibration workshop of a round whose gold includes codes of sessions (a CARE history's checklists, imported
with the long format's ``session_index`` and no turn): the workshop compares turns, so it lists the round's turn
items and says how many of its gold items are of sessions or conversations, never a 500."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation import judgment_import
from annotation.models import Judgment, Round
from calibration import selectors as calibration_selectors
from care.demo import CARE_DEMO_STUDY
from tests.care.test_inputs import CARE_DEMO_JUDGE_FILE

pytestmark = pytest.mark.django_db


def test_the_workshop_lists_the_turn_items_and_counts_the_session_items_it_leaves_out(client, admin_user):
    call_command("load_demo", "--care", "--quiet")
    rows = []
    with CARE_DEMO_JUDGE_FILE.open(encoding="utf-8") as stream:
        for line in stream:
            row = json.loads(line) | {"round": "calibration-1"}
            rows += [row | {"is_gold": True, "reviewer": admin_user.username, "role": "expert"},
                     row | {"reviewer": "care-rev", "role": "reviewer"}]
    judgment_import.judgments_import(rows=enumerate(rows, start=1), study_slug=CARE_DEMO_STUDY, by=None)
    round_ = Round.objects.get(study__slug=CARE_DEMO_STUDY, kind="calibration", number=1)
    Round.objects.filter(pk=round_.pk).update(status=Round.Status.CLOSED)
    gold = Judgment.objects.filter(round=round_, is_gold=True, score__isnull=False)
    on_turns, elsewhere = gold.filter(turn__isnull=False).count(), gold.filter(turn__isnull=True).count()
    assert on_turns and elsewhere

    items = calibration_selectors.workshop_items(round=round_)
    assert len(items) == on_turns and all(item.turn is not None for item in items)
    assert calibration_selectors.workshop_items_elsewhere(round=round_) == elsewhere

    client.force_login(admin_user)
    page = client.get(reverse("workshop", args=[round_.pk]))
    assert page.status_code == 200
    text = page.content.decode()
    assert f"{elsewhere} gold items of sessions or conversations are not listed here" in text
