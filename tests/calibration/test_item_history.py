"""An item's history page (calibration.views.item_history): for study admins, every recorded change of the
judgments on one turn of a round (every coder's and gold), newest first, with who, when, through which path and
old → new; refused to everyone else; its query count pinned at two sizes; linked from the consensus page."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotation import services
from annotation.models import JudgmentRevision, Round
from annotation.services import SpanInput
from calibration import services as calibration_services
from calibration import views
from tests.factories import (
    ModelResponseFactory,
    RoundFactory,
    RoundItemFactory,
    StudyFactory,
    StudyMemberFactory,
    attribute,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def item(db, admin_user, reviewer, other_reviewer, expert):
    """A calibration round with one turn of two responses (GPT, Claude); the reviewer scores AUR on GPT twice (the
    second time with a span), the other reviewer scores U1 on the turn, the expert AUR on GPT, and the admin records
    gold for AUR on GPT, agreed by the expert."""
    study = StudyFactory(status="open")
    for user, role in ((reviewer, "reviewer"), (other_reviewer, "reviewer"), (expert, "expert")):
        StudyMemberFactory(study=study, user=user, role=role)
    round_ = RoundFactory(study=study)
    gpt = ModelResponseFactory(model_slot="GPT", text="Have you tried naming the worry?")
    claude = ModelResponseFactory(model_slot="Claude", turn=gpt.turn, text="That sounds hard.")
    RoundItemFactory(round=round_, turn=gpt.turn)
    aur = attribute("AUR")
    services.judgment_save(round=round_, by=reviewer, attribute=aur, response=gpt, score=1)
    services.judgment_save(round=round_, by=reviewer, attribute=aur, response=gpt, score=2, instance_count=1,
                           spans=[SpanInput(0, 4, "assumes")])
    services.judgment_save(round=round_, by=other_reviewer, attribute=aur, response=claude, score=0)
    services.judgment_save(round=round_, by=other_reviewer, attribute=attribute("U1"), turn=gpt.turn, score=2)
    services.judgment_save(round=round_, by=expert, attribute=aur, response=gpt, score=2)
    calibration_services.gold_record(round=round_, by=admin_user, attribute=aur, turn=gpt.turn, response=gpt,
                                     score=2, agreed_by=[expert], note="as the reviewer")
    return round_, gpt.turn


def url(round_, turn) -> str:
    return reverse("item-history", args=[round_.pk, turn.pk])


def shown_revisions(html: str) -> list[int]:
    return [int(pk) for pk in re.findall(r'id="revision-(\d+)"', html)]


def test_an_admin_sees_every_change_on_the_item_newest_first(client, admin_user, item):
    round_, turn = item
    client.force_login(admin_user)
    response = client.get(url(round_, turn))
    assert response.status_code == 200
    html = response.content.decode()
    expected = list(JudgmentRevision.objects.filter(judgment__round=round_, judgment__turn=turn)
                    .order_by("-at", "-id").values_list("pk", flat=True))
    assert len(expected) == 6 and shown_revisions(html) == expected
    rows = dict(zip(expected, re.split(r'<tr id="revision-\d+">', html)[1:], strict=True))
    gold, expert, u1, claude, changed, created = (rows[pk] for pk in expected)
    assert "AUR" in changed and "GPT" in changed and ">reviewer<" in changed and "turn page" in changed
    assert "<strong>score</strong>\n          1 → 2" in changed and "[0, 4) assumes" in changed
    assert "created" in created and "created" not in changed
    assert "Claude" in claude and "other-reviewer" in claude
    assert "GPT" in expert and ">expert<" in expert
    assert "U1" in u1 and "<td>turn</td>" in u1
    assert 'class="tag">gold<' in gold and "study-admin" in gold and "gold record" in gold
    assert "as the reviewer" in gold and "expert" in gold


@pytest.mark.parametrize("persona", ["reviewer", "other_reviewer", "expert", "researcher"])
def test_anyone_but_a_study_admin_is_refused(client, item, persona, request):
    round_, turn = item
    client.force_login(request.getfixturevalue(persona))
    response = client.get(url(round_, turn))
    assert response.status_code == 403
    assert b"AUR" not in response.content


def test_signed_out_visitors_are_sent_to_sign_in(client, item):
    response = client.get(url(*item))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_a_turn_that_is_not_an_item_of_the_round_is_not_found(client, admin_user, item):
    round_, turn = item
    client.force_login(admin_user)
    elsewhere = ModelResponseFactory().turn
    assert client.get(url(round_, elsewhere)).status_code == 404
    other_round = RoundFactory(study=round_.study, number=2)
    assert client.get(url(other_round, turn)).status_code == 404


def test_a_long_history_is_paged(client, admin_user, item, monkeypatch):
    round_, turn = item
    monkeypatch.setattr(views, "HISTORY_PAGE_SIZE", 2)
    client.force_login(admin_user)
    pages = [shown_revisions(client.get(url(round_, turn) + f"?page={n}").content.decode()) for n in (1, 2, 3)]
    assert [len(p) for p in pages] == [2, 2, 2]
    assert sum(pages, []) == list(JudgmentRevision.objects.filter(judgment__round=round_).order_by("-at", "-id")
                                  .values_list("pk", flat=True))


@pytest.mark.parametrize("more_saves", [0, 12])
def test_the_page_needs_7_queries_whatever_the_length_of_the_history(client, admin_user, item, more_saves, reviewer,
                                                                     other_reviewer, django_assert_num_queries):
    round_, turn = item
    gpt = turn.responses.get(model_slot="GPT")
    for n in range(more_saves):
        services.judgment_save(round=round_, by=reviewer if n % 2 else other_reviewer, attribute=attribute("TD"),
                               response=gpt, score=n % 3)
    client.force_login(admin_user)
    # account, roles, round, turn, count of changes, one page of changes with their names (and the session)
    with django_assert_num_queries(7):
        response = client.get(url(round_, turn))
    assert len(shown_revisions(response.content.decode())) == 6 + more_saves


def test_the_consensus_page_links_each_item_to_its_history_for_admins_only(client, admin_user, expert, item):
    round_, turn = item
    client.force_login(admin_user)
    assert url(round_, turn) in client.get(reverse("consensus", args=[round_.pk]) + "?show=all").content.decode()
    Round.objects.filter(pk=round_.pk).update(status="closed")
    round_.study.experts_see_consensus = True
    round_.study.save(update_fields=["experts_see_consensus"])
    client.force_login(expert)
    page = client.get(reverse("consensus", args=[round_.pk]) + "?show=all")
    assert page.status_code == 200 and url(round_, turn) not in page.content.decode()
