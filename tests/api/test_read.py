"""Read endpoints: studies, rounds and progress, assignments, judgments — each scoped to what the role may see,
with pinned query counts."""

from __future__ import annotations

import pytest

from benchmark.models import ModelResponse, Turn
from tests.factories import AssignmentFactory, JudgmentFactory, RoundFactory, SpanFactory, StudyMemberFactory, attribute

pytestmark = pytest.mark.django_db

JUDGMENTS = "/api/v1/studies/cab-demo/judgments/"


@pytest.fixture
def coded(study, demo_conversations, reviewer, other_reviewer, expert):
    """A calibration round (open) with judgments by two reviewers and a gold judgment, and a main round."""
    calibration = RoundFactory(study=study, kind="calibration", number=1, status="open")
    main = RoundFactory(study=study, kind="main", number=1, status="draft")
    gpt = ModelResponse.objects.get(turn__conversation__external_id="appendix-d-1", model_slot="GPT")
    claude = ModelResponse.objects.get(turn__conversation__external_id="appendix-d-1", model_slot="Claude")
    mine = JudgmentFactory(round=calibration, coder=reviewer, response=gpt, score=2)
    SpanFactory(judgment=mine, start=0, end=5)
    JudgmentFactory(round=calibration, coder=reviewer, response=claude, score=0)
    JudgmentFactory(round=calibration, coder=reviewer, response=None, turn=gpt.turn, attribute=attribute("U1"),
                    score=1)
    JudgmentFactory(round=calibration, coder=other_reviewer, response=gpt, score=1)
    JudgmentFactory(round=calibration, coder=expert, response=gpt, score=2, is_gold=True)
    JudgmentFactory(round=main, coder=other_reviewer, response=claude, score=1)
    for position, turn in enumerate(Turn.objects.order_by("pk")[:3], start=1):
        AssignmentFactory(round=calibration, coder=reviewer, turn=turn, position=position,
                          is_check_item=position == 3, completed_at="2026-01-01T00:00:00Z" if position == 1 else None)
        AssignmentFactory(round=calibration, coder=other_reviewer, turn=turn, position=position)
    return {"calibration": calibration, "main": main, "mine": mine}


def test_studies_list_is_scoped_to_membership(reviewer, outsider, researcher, as_token, study, other_study):
    assert [s["slug"] for s in as_token(reviewer).get("/api/v1/studies/").json()] == ["cab-demo"]
    assert as_token(outsider).get("/api/v1/studies/").json() == []
    assert [s["slug"] for s in as_token(researcher).get("/api/v1/studies/").json()] == ["cab-demo", "other-study"]
    assert as_token(outsider).get("/api/v1/studies/cab-demo/").status_code == 404


def test_blinded_study_hides_model_names_from_reviewers_but_not_from_researchers(
    reviewer, researcher, as_token, study, coded
):
    assert as_token(reviewer).get("/api/v1/studies/cab-demo/").json()["model_slots"] is None
    assert as_token(researcher).get("/api/v1/studies/cab-demo/").json()["model_slots"][0] == "GPT"
    mine = as_token(reviewer).get(JUDGMENTS).json()["results"]
    assert {j["model"] for j in mine} == {None}
    assert as_token(reviewer).get(JUDGMENTS, {"model": "GPT"}).status_code == 400
    study.show_model_names = True
    study.save()
    assert {j["model"] for j in as_token(reviewer).get(JUDGMENTS).json()["results"]} == {"GPT", "Claude", None}


def test_a_reviewer_sees_only_their_own_judgments_never_gold_or_others(reviewer, as_token, coded):
    response = as_token(reviewer).get(JUDGMENTS)
    results = response.json()["results"]
    assert {j["reviewer"] for j in results} == {"reviewer"}
    assert len(results) == 3
    assert not any(j["is_gold"] for j in results)
    assert as_token(reviewer).get(JUDGMENTS, {"reviewer": "other-reviewer"}).json()["results"] == []


def test_researchers_see_every_judgment_in_the_long_format(researcher, as_token, coded):
    results = as_token(researcher).get(JUDGMENTS).json()["results"]
    assert len(results) == 6
    mine = next(j for j in results if j["id"] == coded["mine"].pk)
    assert {k: mine[k] for k in ("study", "round", "reviewer", "is_gold", "dataset", "conversation_id", "turn_index",
                                 "model", "attribute", "score", "instance_count")} == {
        "study": "cab-demo", "round": "calibration-1", "reviewer": "reviewer", "is_gold": False,
        "dataset": "CounselChat", "conversation_id": "appendix-d-1", "turn_index": 1, "model": "GPT",
        "attribute": "AUR", "score": 2, "instance_count": None}
    assert mine["spans"] == [{"start": 0, "end": 5, "subcategory": coded["mine"].spans.get().subcategory.slug}]


@pytest.mark.parametrize(("params", "expected"), [
    ({"round": "main"}, 1),
    ({"round": "calibration-1"}, 5),
    ({"round": "calibration-2"}, 0),
    ({"reviewer": "other-reviewer"}, 2),
    ({"model": "Claude"}, 2),
    ({"attribute": "U1"}, 1),
    ({"round": "calibration-1", "model": "GPT", "reviewer": "expert"}, 1),
])
def test_judgments_filter_by_round_reviewer_model_and_attribute(researcher, as_token, coded, params, expected):
    response = as_token(researcher).get(JUDGMENTS, params)
    assert response.status_code == 200
    assert len(response.json()["results"]) == expected


def test_a_malformed_round_filter_is_a_400(researcher, as_token, coded):
    response = as_token(researcher).get(JUDGMENTS, {"round": "calibration-x"})
    assert response.status_code == 400
    assert "round" in response.json()["fields"]


def test_judgments_are_cursor_paginated_without_gaps_or_repeats(researcher, as_token, coded):
    api = as_token(researcher)
    seen, url, pages = [], JUDGMENTS + "?page_size=2", 0
    while url:
        page = api.get(url).json()
        seen += [j["id"] for j in page["results"]]
        url, pages = page["next"], pages + 1
    assert pages == 3
    assert seen == sorted(seen) and len(set(seen)) == 6


def test_a_forged_cursor_is_a_404_not_a_500(researcher, as_token, coded):
    import base64

    forged = base64.b64encode(b"p=not-a-number").decode()
    assert as_token(researcher).get(JUDGMENTS, {"cursor": forged}).status_code == 404
    assert as_token(researcher).get(JUDGMENTS, {"cursor": "garbage"}).status_code == 404


def test_judgment_list_query_count_does_not_grow_with_the_page(researcher, as_token, coded,
                                                               django_assert_max_num_queries):
    api = as_token(researcher)
    # token + its last use + role checks (3, constant) + study + judgments + spans (with their subcategories)
    with django_assert_max_num_queries(8):
        small = api.get(JUDGMENTS, {"page_size": 1})
    with django_assert_max_num_queries(8):
        full = api.get(JUDGMENTS)
    assert len(small.json()["results"]) == 1 and len(full.json()["results"]) == 6


def test_a_study_scoped_ingestion_token_cannot_read_judgments(admin_user, as_token, study, coded):
    response = as_token(admin_user, scopes=["ingest"], study=study).get(JUDGMENTS)
    assert response.status_code == 403


def test_rounds_report_progress_per_reviewer_and_reviewers_see_their_own(
    reviewer, researcher, as_token, coded, django_assert_max_num_queries
):
    api = as_token(researcher)
    with django_assert_max_num_queries(8):
        staff = api.get("/api/v1/studies/cab-demo/rounds/").json()
    calibration = next(r for r in staff if r["name"] == "calibration-1")
    assert calibration["assigned"] == 6 and calibration["completed"] == 1
    assert calibration["progress"] == [{"reviewer": "other-reviewer", "assigned": 3, "completed": 0},
                                       {"reviewer": "reviewer", "assigned": 3, "completed": 1}]
    own = as_token(reviewer).get("/api/v1/studies/cab-demo/rounds/").json()
    assert next(r for r in own if r["name"] == "calibration-1")["progress"] == [
        {"reviewer": "reviewer", "assigned": 3, "completed": 1}]


def test_assignments_are_scoped_and_check_items_stay_hidden_from_reviewers(
    reviewer, researcher, as_token, coded, django_assert_max_num_queries
):
    url = "/api/v1/studies/cab-demo/rounds/calibration-1/assignments/"
    api = as_token(researcher)
    # token + its last use + role checks (3, constant) + study + assignments (one query with their turns)
    with django_assert_max_num_queries(8):
        staff = api.get(url).json()["results"]
    assert len(staff) == 6 and sum(a["is_check_item"] for a in staff) == 1
    own = as_token(reviewer).get(url).json()["results"]
    assert [a["reviewer"] for a in own] == ["reviewer"] * 3
    assert {a["is_check_item"] for a in own} == {None}
    assert as_token(researcher).get(url, {"reviewer": "reviewer"}).json()["results"][0]["position"] == 1


def test_an_expert_member_sees_the_study_but_only_their_own_judgments(expert, as_token, study, coded):
    StudyMemberFactory(study=study, user=expert, role="expert")
    results = as_token(expert).get(JUDGMENTS).json()["results"]
    assert results == []  # the expert's only coding is the gold consensus, which is not shown through this list
