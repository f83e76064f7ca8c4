"""A study's expert members are passed to the report: never reviewers (not in the reviewers' figures, pairs,
bootstrap or panel ranking, nor in the panel-selection page's rows), and reported in their own section."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from annotation.models import Study, StudyMember
from calibration.selectors import panel_ranking
from metrics import runs, selectors, services

pytestmark = pytest.mark.django_db

SLUG = "syn"
EXPERTS = {f"{SLUG}-e1", f"{SLUG}-e2"}
REVIEWERS = {f"{SLUG}-r{i:02d}" for i in range(1, 5)}


@pytest.fixture
def study() -> Study:
    # experts copy gold more often than reviewers: counted as reviewers, they would top the ranking
    call_command("generate_synthetic", "--conversations", "12", "--reviewers", "4", "--seed", "3",
                 "--calibration-turns", "3", "--slug", SLUG, "--agreement", "0.6")
    study = Study.objects.get(slug=SLUG)
    assert set(StudyMember.objects.filter(study=study, role="expert").values_list("user__username", flat=True)) \
        == EXPERTS
    return study


def test_report_inputs_name_the_studys_experts(study):
    assert selectors.report_inputs(study=study).experts == tuple(sorted(EXPERTS))


def test_no_expert_is_a_reviewer_of_the_report(study):
    report = runs.report_build(study=study, bootstrap=40)
    assert report["parameters"]["experts"] == sorted(EXPERTS)
    cal = report["calibration"]
    assert set(cal["reviewers"]) == REVIEWERS
    for name in cal["rounds"]:
        coders = {coder for pair in cal["pairwise"][name] for coder in pair.split("|")}
        assert coders == REVIEWERS
        assert set(cal["agreement_ci"][name]) == REVIEWERS
    for shares in cal["bootstrap"]["top_k"].values():
        assert set(shares) == REVIEWERS
    assert {row["reviewer"] for row in cal["panel_ranking"]["ranking"]} == REVIEWERS
    assert not EXPERTS & set(cal["panel_ranking"]["suggested_panel"])


def test_the_report_has_the_expert_section_for_every_calibration_round(study):
    cal = runs.report_build(study=study, bootstrap=40)["calibration"]
    assert set(cal["experts"]) == set(cal["rounds"]) == {"calibration-1", "calibration-2"}
    for section in cal["experts"].values():
        assert set(section["experts"]) == EXPERTS
        for entry in section["experts"].values():
            assert entry["n_items"] > 0 and 0 <= entry["bucketed"] <= 1
        assert set(section["pairwise"]) == {f"{SLUG}-e1|{SLUG}-e2"}
        assert 0 <= section["pairwise_mean"]["bucketed"] <= 1
        assert section["alpha"]["AUR"]["level"] == "ordinal" and section["alpha"]["F1"]["level"] == "nominal"
        assert any(value["alpha"] is not None for value in section["alpha"].values())


def test_panel_selection_shows_the_reports_reviewers_and_figures(study, admin_user):
    run = services.metric_run_request(study=study, by=admin_user, bootstrap=40)
    assert runs.metric_run_execute(run_id=run.pk) is True
    ranking = panel_ranking(study=study)
    assert ranking is not None
    run.refresh_from_db()
    cal = run.result["calibration"]
    last = cal["last_round"]
    assert [row["reviewer"] for row in ranking["rows"]] == [r["reviewer"] for r in cal["panel_ranking"]["ranking"]]
    assert ranking["pairwise_mean"] == cal["pairwise_mean"][last]
    for row in ranking["rows"]:
        name = row["reviewer"]
        assert row["bucketed"] == cal["reviewers"][name][last]["bucketed"]
        assert row["top_k"] == {k: shares[name] for k, shares in sorted(cal["bootstrap"]["top_k"].items())}
        pairs = [v["bucketed"] for k, v in cal["pairwise"][last].items() if name in k.split("|")]
        assert len(pairs) == len(REVIEWERS) - 1, "a reviewer's pairs are with the other reviewers only"
        assert row["pairwise_mean"] == pytest.approx(sum(pairs) / len(pairs))
