"""Exact query counts of annotation's list pages, API lists and judgment exports, each pinned at two data sizes:
the count does not grow with the number of studies, rounds, reviewers, assignments or judgments."""

from __future__ import annotations

import math

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from rest_framework.test import APIClient

from access import roles
from access.services import user_ensure
from annotation import long_format
from annotation import services as annotation_services
from annotation.models import Assignment, Judgment, Round, Study
from api import services as api_services
from tests.annotation.test_long_format import file_queries
from tests.factories import StudyFactory
from tests.scenarios import synthetic_sized_study

pytestmark = pytest.mark.django_db

SLUG = "syn"
REVIEWER = f"{SLUG}-r01"
SIZES = {
    # conversations, models, reviewers, experts, calibration rounds, turns per calibration round, extra studies
    "small": {"conversations": 3, "models": 2, "reviewers": 2, "experts": 1, "rounds": 1,
               "turns": 2, "studies": 0},
    "large": {"conversations": 6, "models": 3, "reviewers": 3, "experts": 2, "rounds": 2,
               "turns": 2, "studies": 2},
}


@pytest.fixture(scope="module", params=list(SIZES))
def built(request, shared_state):
    """A synthetic study whose calibration rounds were opened (every member has the set) and closed; the large
    size has more of everything, and the reviewer is a member of further studies with open rounds. Built once per
    size for the module (``shared_state``); the tests get primary keys."""
    size = SIZES[request.param]
    with shared_state():
        study = synthetic_sized_study(slug=SLUG, size=size)
        reviewer = get_user_model().objects.get(username=REVIEWER)
        main_turns = list(Assignment.objects.filter(round__study=study, round__kind="main")
                          .values_list("turn", flat=True))
        for number in range(size["studies"]):
            extra = StudyFactory(slug=f"extra-{number}", name=f"Extra {number}")
            annotation_services.study_member_add(study=extra, user=reviewer, role="reviewer", by=None)
            round_ = Round.objects.create(study=extra, kind="main", number=1, status="open")
            Assignment.objects.bulk_create(Assignment(round=round_, coder=reviewer, turn_id=turn, position=position)
                                           for position, turn in enumerate(main_turns[:3], start=1))
        yield {"size": request.param, "study": study.pk, "reviewer": reviewer.pk,
               "main": Round.objects.get(study=study, kind="main").pk}


@pytest.fixture
def data(db, built):
    return {"size": built["size"], "study": Study.objects.get(pk=built["study"]),
            "reviewer": get_user_model().objects.get(pk=built["reviewer"]),
            "main": Round.objects.get(pk=built["main"])}


@pytest.fixture
def researcher_user(db):
    return user_ensure(username="list-researcher", role=roles.RESEARCHER)


def token_client(user) -> APIClient:
    """A client sending a fresh read token of ``user``, used once already (so its last use is recorded and no
    measured request writes it)."""
    _, raw = api_services.api_token_create(user=user, name="lists", scopes=("read",), study=None, expires_at=None,
                                           by=None)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert client.get(reverse("api-studies")).status_code == 200
    return client


def body(response) -> bytes:
    assert response.status_code == 200
    return b"".join(response.streaming_content) if response.streaming else response.content


def judgment_count(study) -> int:
    return Judgment.objects.filter(round__study=study, score__isnull=False).count()


# --- pages ------------------------------------------------------------------------------------------------------


def test_home_and_queue_pages_need_a_fixed_number_of_queries_at_any_size(client, data, django_assert_num_queries):
    client.force_login(data["reviewer"])
    # user, roles three times, open rounds with progress (the queue counters), expert memberships, feedback rounds,
    # studies, their rounds (and the session)
    with django_assert_num_queries(10):
        home = client.get(reverse("home"))
    assert home.status_code == 200
    assert home.content.count(b"/feedback/") == SIZES[data["size"]]["rounds"]
    # user, the round with the queue's counters, a page of the reviewer's assignments with their turns (and the
    # session); tests/annotation/test_reviewer_pages_cost.py measures it at two queue lengths
    with django_assert_num_queries(4):
        queue = client.get(reverse("queue", args=[data["main"].pk]))
    assert queue.status_code == 200
    assert queue.content.count(b"/turns/") >= Assignment.objects.filter(round=data["main"],
                                                                         coder=data["reviewer"]).count()


# --- API lists --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("who", ["reviewer", "researcher"])
def test_api_lists_need_a_fixed_number_of_queries_at_any_size(data, researcher_user, who,
                                                               django_assert_num_queries):
    api = token_client(data["reviewer"] if who == "reviewer" else researcher_user)
    # token, roles (scope and role checks), study, then the list's own queries
    with django_assert_num_queries(6):
        rounds = api.get(reverse("api-rounds", args=[SLUG]))
    assert len(rounds.json()) == 1 + SIZES[data["size"]]["rounds"]
    with django_assert_num_queries(7):  # and the study's rounds: the one in the path must be one of them
        assignments = api.get(reverse("api-assignments", args=[SLUG, "main"]))
    assert assignments.json()["results"]
    # the judgments: their coders' roles in the study (one query), the page, its spans
    with django_assert_num_queries(8):
        judgments = api.get(reverse("api-judgments", args=[SLUG]), {"page_size": "100"})
    assert len(judgments.json()["results"]) == 100


@pytest.mark.parametrize("who", ["reviewer", "researcher"])
def test_api_study_list_query_count_does_not_grow_with_the_number_of_studies(data, researcher_user, who,
                                                                             django_assert_num_queries):
    """N+1: every listed study asks for the caller's roles again (``_blinded_studies`` -> ``model_names_hidden``
    -> ``user_sees_all_studies``, one query per study). Pinned at what one study needs (token, roles, studies,
    their rounds, roles for blinding): the large size's three studies must need no more."""
    api = token_client(data["reviewer"] if who == "reviewer" else researcher_user)
    with django_assert_num_queries(5):
        response = api.get(reverse("api-studies"))
    assert len(response.json()) == 1 + SIZES[data["size"]]["studies"]


# --- judgment exports -------------------------------------------------------------------------------------------
# The database writes the judgments' lines (annotation.long_format_sql), so an export needs a fixed number of
# queries per round and slice (``file_queries``), never one per judgment, nor one per batch of JUDGMENT_ROWS_BATCH
# rows: a small batch here, which even the small data fills several times, would show one.

BATCH = 300


def test_judgment_exports_need_a_fixed_number_of_queries_whatever_the_rows(client, data, researcher_user,
                                                                            monkeypatch, django_assert_num_queries):
    monkeypatch.setattr(long_format, "JUDGMENT_ROWS_BATCH", BATCH)
    n = judgment_count(data["study"])
    batches = math.ceil(n / BATCH)
    assert batches == {"small": 3, "large": 6}[data["size"]]
    queries = file_queries(data["study"])
    api = token_client(researcher_user)
    client.force_login(researcher_user)
    for fmt in ("csv", "jsonl"):
        # token, roles twice (scope and role checks), study, the export's own (per round and coder)
        with django_assert_num_queries(4 + queries):
            text = body(api.get(reverse("api-export-judgments", args=[SLUG, fmt])))
        assert text.count(b"\n") - (fmt == "csv") == n
        # user, roles twice, study, the export's own (and the session)
        with django_assert_num_queries(5 + queries):
            assert body(client.get(reverse("export-judgments", args=[SLUG, fmt]))) == text


# --- items export (the coders' comments and flags, time on task) ----------------------------------------------


def test_items_exports_need_a_fixed_number_of_queries_at_any_size(client, data, researcher_user,
                                                                  django_assert_num_queries):
    assignments = Assignment.objects.filter(round__study=data["study"])
    n = assignments.count()
    for assignment in assignments.order_by("id")[:3]:
        Assignment.objects.filter(pk=assignment.pk).update(comment="@SUM(A1:A9) looks cut", flags=["truncated"])
    client.force_login(researcher_user)
    for fmt in ("csv", "jsonl"):
        # user, roles twice, study, the assignments' server-side cursor (and the session)
        with django_assert_num_queries(6):
            text = body(client.get(reverse("export-items", args=[SLUG, fmt])))
        assert text.count(b"\n") - (fmt == "csv") == n
        assert text.count(b"SUM(A1:A9) looks cut") == 3
        if fmt == "csv":
            assert text.count(b"'@SUM(A1:A9) looks cut") == 3
