"""Exact query counts of the calibration protocol's pages, each pinned at two data sizes: the count does not grow
with the number of rounds, items, reviewers, experts, judgments, spans, notes or alerts."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from django.utils.html import escape

from access import roles
from access.services import user_ensure
from annotation.models import (
    Assignment,
    Judgment,
    ReviewerAlert,
    Round,
    Span,
    Study,
    StudyMember,
)
from calibration import services as calibration_services
from metrics import runs as metric_runs
from metrics import services as metric_services
from tests.scenarios import synthetic_sized_study

pytestmark = pytest.mark.django_db

SLUG = "syn"
REVIEWER = f"{SLUG}-r01"
SIZES = {
    # conversations, models, reviewers, experts, calibration rounds, turns per calibration round, notes, alerts
    "small": {"conversations": 3, "models": 2, "reviewers": 2, "experts": 1, "rounds": 1,
               "turns": 2, "notes": 1, "alerts": 1},
    "large": {"conversations": 6, "models": 3, "reviewers": 3, "experts": 2, "rounds": 2,
               "turns": 2, "notes": 6, "alerts": 3},
}


@pytest.fixture(scope="module", params=list(SIZES))
def built(request, shared_state):
    """A synthetic study whose calibration rounds were opened (every member coded the set) and closed, with
    workshop notes on calibration-1 and open check-item alerts; the large size has more of everything. Built once
    per size for the module (``shared_state``); the tests get primary keys."""
    size = SIZES[request.param]
    with shared_state():
        admin = user_ensure(username="calibration-admin", role=roles.ADMIN)
        study = synthetic_sized_study(slug=SLUG, size=size, seconds_per_turn=60)
        first = Round.objects.get(study=study, kind="calibration", number=1)
        golds = Judgment.objects.filter(round=first, is_gold=True).select_related("attribute", "turn", "response")
        for gold in golds.order_by("id")[: size["notes"]]:
            calibration_services.workshop_note_save(round=first, by=admin, attribute=gold.attribute, turn=gold.turn,
                                                    response=gold.response,
                                                    text=f"Decision on {gold.attribute.code}.")
        reviewers = [m.user for m in StudyMember.objects.filter(study=study, role="reviewer").select_related("user")]
        ReviewerAlert.objects.bulk_create(ReviewerAlert(study=study, reviewer=user, agreement=0.5, threshold=0.7,
                                                        n_items=20) for user in reviewers[: size["alerts"]])
        assert Span.objects.filter(judgment__round=first).exists()
        # the reviewers' own notes on their items (the workshop lists them)
        Assignment.objects.filter(round=first).update(comment="Unsure of the anchor.", flags=["unsure"])
        yield {"size": request.param, "study": study.pk, "first": first.pk, "admin": admin.pk,
               "reviewer": get_user_model().objects.get(username=REVIEWER).pk}


@pytest.fixture
def data(db, built):
    return {"size": built["size"], "study": Study.objects.get(pk=built["study"]),
            "first": Round.objects.get(pk=built["first"]),
            "reviewer": get_user_model().objects.get(pk=built["reviewer"])}


@pytest.fixture
def admin(db, built):
    return get_user_model().objects.get(pk=built["admin"])


def test_study_dashboard_needs_13_queries_at_any_size(client, admin, data, django_assert_num_queries):
    client.force_login(admin)
    with django_assert_num_queries(13):  # … one of them lists the accounts the People form offers
        response = client.get(reverse("study-dashboard", args=[SLUG]))
    assert response.status_code == 200
    page = response.content.decode()
    for number in range(1, SIZES[data["size"]]["rounds"] + 1):
        assert f"calibration-{number}" in page
    assert page.count("/resolve") == SIZES[data["size"]]["alerts"]


def test_consensus_page_needs_12_queries_at_any_size(client, admin, data, django_assert_num_queries):
    client.force_login(admin)
    with django_assert_num_queries(12):
        response = client.get(reverse("consensus", args=[data["first"].pk]) + "?show=all")
    assert response.status_code == 200
    experts = StudyMember.objects.filter(study=data["study"], role="expert").values_list("user__username", flat=True)
    assert all(name.encode() in response.content for name in experts)
    # each attribute by its name beside its code
    for item, _ in response.context["rows"]:
        assert f'">{item.attribute.code} · {escape(item.attribute.name)}'.encode() in response.content


def test_workshop_page_needs_14_queries_at_any_size(client, admin, data, django_assert_num_queries):
    client.force_login(admin)
    # … one of them letters the responses (model names are hidden by default), one gets the reviewers' notes, one
    # counts the gold items of sessions or conversations the workshop does not list
    with django_assert_num_queries(14):
        response = client.get(reverse("workshop", args=[data["first"].pk]))
    assert response.status_code == 200
    assert b"items with gold match" in response.content
    assert b'class="seg hl hl-' in response.content  # the reviewers' spans are overlaid
    assert b'class="reviewer-notes"' in response.content
    item = response.context["page"][0]
    assert f'<strong title="{escape(item.attribute.definition)}">{item.attribute.code} · {escape(item.attribute.name)}'\
        '</strong>'.encode() in response.content
    assert f'>{item.attribute.code} · {escape(item.attribute.name)}</option>'.encode() in response.content


def test_workshop_page_with_model_names_needs_13_queries_at_any_size(client, admin, data, django_assert_num_queries):
    client.force_login(admin)
    with django_assert_num_queries(13):
        response = client.get(reverse("workshop", args=[data["first"].pk]) + "?models=1&reveal=1&page=2")
    assert response.status_code == 200


def test_consensus_page_for_an_expert_needs_a_fixed_number_of_queries(client, data, django_assert_num_queries):
    Study.objects.filter(pk=data["study"].pk).update(experts_see_consensus=True)
    expert = StudyMember.objects.filter(study=data["study"], role="expert").select_related("user").first().user
    client.force_login(expert)
    with django_assert_num_queries(13):  # … one of them finds that the expert belongs to the study
        response = client.get(reverse("consensus", args=[data["first"].pk]))
    assert response.status_code == 200 and b"Read-only" in response.content


def test_memo_needs_a_fixed_number_of_queries_at_any_size(client, admin, data, django_assert_num_queries):
    client.force_login(admin)
    with django_assert_num_queries(6):
        html = client.get(reverse("memo", args=[data["first"].pk, "html"]))
    assert html.content.decode().count("Decision on ") == SIZES[data["size"]]["notes"]
    with django_assert_num_queries(5):
        markdown = client.get(reverse("memo", args=[data["first"].pk, "md"]))
    assert markdown.content.decode().count("Decision on ") == SIZES[data["size"]]["notes"]


def test_feedback_page_needs_10_queries_at_any_size(client, data, django_assert_num_queries):
    client.force_login(data["reviewer"])
    with django_assert_num_queries(10):  # … two of them name each response as the reviewer saw it and link to it,
        # one reads the shown differences' spans (the reviewer's own and the expert panel's)
        response = client.get(reverse("feedback", args=[data["first"].pk]))
    assert response.status_code == 200
    assert b"Agreement with gold over" in response.content
    # each difference names its conversation, as the reviewer's queue does
    for difference in response.context["page"]:
        conversation = difference["turn"].conversation
        assert (f"<td>{conversation.dataset.name}/{escape(conversation.external_id)} turn {difference['turn'].index}"
                .encode() in response.content)


def test_panel_page_needs_7_queries_at_any_size(client, admin, data, django_assert_num_queries):
    run = metric_services.metric_run_request(study=data["study"], by=None, bootstrap=20)
    metric_runs.metric_run_execute(run_id=run.pk)
    client.force_login(admin)
    client.get(reverse("panel", args=[SLUG]))  # a session older than SESSION_RENEW_SECONDS is renewed first
    # user, roles, study, latest succeeded run, newest run, members (and the session)
    with django_assert_num_queries(7):
        response = client.get(reverse("panel", args=[SLUG]))
    assert response.status_code == 200
    assert response.content.decode().count('name="retain"') == SIZES[data["size"]]["reviewers"]
