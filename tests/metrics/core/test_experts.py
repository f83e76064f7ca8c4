"""Experts are not reviewers: their own codings stay out of every reviewer figure, and the calibration section
reports them apart (agreement with the consensus, between experts, Krippendorff's α of the expert panel).

A study small enough to work out by hand. Schema: UA (user, 0-2, {1,2} merged), FA (flag, 0/1); one round of four
turns (conversations a-d), items UA per turn and FA on model M1 -> 8 items.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction as F

import numpy as np
import pytest

from metrics.core.naive import naive_calibration
from metrics.core.report import AttributeSpec, JudgmentTable, ReportParams, build_report
from metrics.core.synthetic import DEFAULT_SCHEMA, generate

from ._tables import judgment_table

UA = AttributeSpec("UA", "user", None, (0, 1, 2), "ordinal", {0: 0, 1: 1, 2: 1}, None, True, "turn")
FA = AttributeSpec("FA", "flag", "F", (0, 1), "nominal", {}, {0: 0.0, 1: 1.0}, False, "response")
SCHEMA = (UA, FA)
ROUND = "calibration-1"
TURNS = ("a", "b", "c", "d")

GOLD = {"UA": [2, 0, 1, 2], "FA": [1, 0, 0, 1]}
REVIEWERS = {
    "ann": {"UA": [2, 0, 1, 1], "FA": [1, 0, 1, 0]},  # exact 5/8, bucketed 6/8
    "bob": {"UA": [1, 1, 1, 2], "FA": [0, 0, 1, 1]},  # exact 4/8, bucketed 5/8
}
EXPERTS = {
    "ex1": {"UA": [2, 0, 1, 2], "FA": [1, 0, 0, 0]},  # exact 7/8, bucketed 7/8: would top the ranking
    "ex2": {"UA": [1, 0, 1, 2], "FA": [1, 0, 1, 1]},  # exact 6/8, bucketed 7/8
}


def _rows(coder: str, gold: bool, scores: dict[str, list[int]], round_name: str = ROUND) -> list[tuple]:
    rows = []
    for code, values in scores.items():
        model = "" if code == "UA" else "M1"
        rows += [(round_name, coder, gold, "DS", turn, 1, model, code, v)
                 for turn, v in zip(TURNS, values, strict=True)]
    return rows


def _table(coders: dict[str, dict[str, list[int]]], *, with_gold: bool = True) -> JudgmentTable:
    rows = _rows("ex1", True, GOLD) if with_gold else []  # the consensus, recorded in an expert's name
    for name, scores in coders.items():
        rows += _rows(name, False, scores)
    return judgment_table(rows)


def _report(table: JudgmentTable, experts: tuple[str, ...] = ("ex1", "ex2"), bootstrap: int = 50) -> dict:
    return build_report(attributes=SCHEMA, judgments=table, params=ReportParams(bootstrap=bootstrap, seed=3,
                                                                                experts=experts))


@pytest.fixture(scope="module")
def report() -> dict:
    return _report(_table(REVIEWERS | EXPERTS))


def approx(value: F | float) -> object:
    return pytest.approx(float(value), abs=1e-12)


def test_experts_are_echoed_in_the_parameters(report: dict) -> None:
    assert report["parameters"]["experts"] == ["ex1", "ex2"]


def test_no_expert_is_a_reviewer_in_any_reviewer_figure(report: dict) -> None:
    cal = report["calibration"]
    assert set(cal["reviewers"]) == {"ann", "bob"}
    assert set(cal["pairwise"][ROUND]) == {"ann|bob"}
    assert set(cal["agreement_ci"][ROUND]) == {"ann", "bob"}
    for shares in cal["bootstrap"]["top_k"].values():
        assert set(shares) == {"ann", "bob"}
    assert [row["reviewer"] for row in cal["panel_ranking"]["ranking"]] == ["ann", "bob"]
    assert cal["panel_ranking"]["suggested_panel"] == ["ann", "bob"]
    assert cal["kappa_by_attribute"][ROUND]["UA"]["n_reviewers"] <= 2


def test_without_the_experts_parameter_they_would_be_counted_and_ranked_first() -> None:
    """The exclusion matters on this data: counted as reviewers, the experts top the ranking."""
    cal = _report(_table(REVIEWERS | EXPERTS), experts=())["calibration"]
    assert set(cal["reviewers"]) == {"ann", "bob", "ex1", "ex2"}
    assert cal["panel_ranking"]["ranking"][0]["reviewer"] == "ex1"
    assert cal["experts"][ROUND]["experts"] == {}


def test_reviewer_figures_are_those_of_a_table_without_the_experts_rows(report: dict) -> None:
    """Pairs, plurality, α, κ, CIs and the bootstrap shares (same resamples) are all reviewers-only."""
    alone = _report(_table(REVIEWERS))["calibration"]
    mine = dict(report["calibration"])
    assert mine.pop("experts") != alone.pop("experts")
    assert mine == alone


def test_reviewer_agreement_with_gold_by_hand(report: dict) -> None:
    reviewers = report["calibration"]["reviewers"]
    assert reviewers["ann"][ROUND]["exact"] == approx(F(5, 8))
    assert reviewers["ann"][ROUND]["bucketed"] == approx(F(6, 8))
    assert reviewers["bob"][ROUND]["bucketed"] == approx(F(5, 8))
    # ann|bob: UA agree on c only (exact), all four bucketed but b; FA agree on c, d
    pair = report["calibration"]["pairwise"][ROUND]["ann|bob"]
    assert pair == {"exact": approx(F(3, 8)), "bucketed": approx(F(5, 8))}


def test_each_experts_agreement_with_the_consensus(report: dict) -> None:
    experts = report["calibration"]["experts"][ROUND]["experts"]
    assert set(experts) == {"ex1", "ex2"}
    # ex1: UA all four; FA misses d -> 7/8 either way
    assert experts["ex1"]["exact"] == approx(F(7, 8)) and experts["ex1"]["bucketed"] == approx(F(7, 8))
    # ex2: UA a is 1 against 2 (same bucket), FA misses c -> exact 6/8, bucketed 7/8
    assert experts["ex2"]["exact"] == approx(F(6, 8)) and experts["ex2"]["bucketed"] == approx(F(7, 8))
    assert experts["ex2"]["n_items"] == 8
    assert experts["ex2"]["by_group"] == {"user": approx(1), "response": None, "flag": approx(F(3, 4))}


def test_agreement_between_experts(report: dict) -> None:
    section = report["calibration"]["experts"][ROUND]
    # UA: a differs (1 vs 2, same bucket); FA: c and d differ
    assert section["pairwise"] == {"ex1|ex2": {"exact": approx(F(5, 8)), "bucketed": approx(F(6, 8))}}
    assert section["pairwise_mean"] == {"exact": approx(F(5, 8)), "bucketed": approx(F(6, 8))}


def test_krippendorff_alpha_of_the_expert_panel(report: dict) -> None:
    alpha = report["calibration"]["experts"][ROUND]["alpha"]
    # FA, nominal: units (1,1) (0,0) (0,1) (0,1) -> D_o = 4/8, D_e = 2*4*4/(8*7) = 4/7, alpha = 1 - 7/8
    assert alpha["FA"] == {"alpha": approx(F(1, 8)), "level": "nominal", "n_units": 4}
    # UA, ordinal: n0=2, n1=3, n2=3; disagreement only on a (2 vs 1): delta^2_12 = ((3+3)/2)^2 = 9;
    # alpha = 1 - (n-1) * 2*9 / (2 * (2*3*6.25 + 2*3*30.25 + 3*3*9)) = 1 - 7*18/600 = 0.79
    assert alpha["UA"] == {"alpha": approx(0.79), "level": "ordinal", "n_units": 4}


def test_one_expert_has_agreement_but_no_pair_and_no_alpha() -> None:
    section = _report(_table(REVIEWERS | {"ex1": EXPERTS["ex1"]}))["calibration"]["experts"][ROUND]
    assert section["experts"]["ex1"]["bucketed"] == approx(F(7, 8))
    assert section["pairwise"] == {}
    assert section["pairwise_mean"] == {"exact": None, "bucketed": None}
    assert {code: value["alpha"] for code, value in section["alpha"].items()} == {"UA": None, "FA": None}


def test_without_gold_the_experts_agreement_with_it_is_null_but_their_pairs_are_not() -> None:
    section = _report(_table(REVIEWERS | EXPERTS, with_gold=False))["calibration"]["experts"][ROUND]
    assert section["experts"]["ex1"]["exact"] is None and section["experts"]["ex1"]["bucketed"] is None
    assert section["experts"]["ex1"]["n_items"] == 0
    assert section["pairwise"]["ex1|ex2"]["exact"] == approx(F(5, 8))
    assert section["alpha"]["FA"]["alpha"] == approx(F(1, 8))


def test_every_calibration_round_has_an_expert_section_and_a_study_without_one_has_none() -> None:
    rows = _rows("ex1", True, GOLD) + _rows("ex1", True, GOLD, "calibration-2")
    rows += _rows("ann", False, REVIEWERS["ann"]) + _rows("ann", False, REVIEWERS["ann"], "calibration-2")
    rows += _rows("ex2", False, EXPERTS["ex2"], "calibration-2")
    cal = _report(judgment_table(rows))["calibration"]
    assert set(cal["experts"]) == {"calibration-1", "calibration-2"}
    assert cal["experts"]["calibration-1"]["experts"] == {}
    assert set(cal["experts"]["calibration-2"]["experts"]) == {"ex2"}
    assert set(cal["reviewers"]) == {"ann"}
    assert _report(judgment_table([]))["calibration"]["experts"] == {}


def test_a_string_for_experts_is_refused() -> None:
    with pytest.raises(ValueError, match="experts"):
        _report(_table(REVIEWERS), experts="ex1")  # type: ignore[arg-type]


def test_the_naive_oracle_leaves_the_same_experts_out() -> None:
    """On a synthetic study with two reviewers named experts, the core and the naive loops agree again."""
    schema = tuple(a for a in DEFAULT_SCHEMA if a.code in {"U1", "U2", "AUR", "F1"})
    study = generate(schema, single_turn_conversations=4, multi_turn_conversations=1, multi_turn_turns=3,
                     calibration_turns=4, reviewers=8, main_coders=3, seed=4)
    experts = ("reviewer01", "reviewer02")  # the two most accurate: counted, they would top every top-k
    params = ReportParams(bootstrap=12, seed=2, experts=experts)
    cal = build_report(attributes=schema, judgments=study.judgments, params=params)["calibration"]
    assert not set(experts) & set(cal["reviewers"])
    for name in cal["rounds"]:
        naive = naive_calibration(schema, study.judgments, name, resamples=12, seed=2, experts=experts)
        assert sorted(naive["point"]) == sorted(cal["agreement_ci"][name])
        for reviewer, point in naive["point"].items():
            assert cal["reviewers"][reviewer][name]["bucketed"] == pytest.approx(point["bucketed"], abs=1e-12)
        if name == cal["last_round"]:
            for k in (4, 5, 6):
                assert cal["bootstrap"]["top_k"][str(k)] == naive["shares"][k]
    counted = build_report(attributes=schema, judgments=study.judgments, params=replace(params, experts=()))
    assert set(experts) <= set(counted["calibration"]["reviewers"])


def test_expert_rows_that_are_gold_stay_gold() -> None:
    """Gold rows carry a coder name too (here ex1's): naming ex1 an expert never drops the consensus."""
    table = _table(REVIEWERS | EXPERTS)
    assert int(np.sum(np.asarray(table.is_gold))) == 8
    cal = _report(table)["calibration"]
    assert cal["gold_in_plurality"][ROUND] is not None
    assert cal["reviewers"]["ann"][ROUND]["n_items"] == 8


def test_a_round_only_the_experts_coded_has_expert_figures_and_leaves_the_reviewers_ranking_alone(report) -> None:
    pool = [row for name, scores in EXPERTS.items() for row in _rows(name, False, scores, "calibration-2")]
    pool += _rows("ex1", True, GOLD, "calibration-2")
    rows = _rows("ex1", True, GOLD)
    for name, scores in (REVIEWERS | EXPERTS).items():
        rows += _rows(name, False, scores)
    with_pool = _report(judgment_table(rows + pool))["calibration"]
    assert with_pool["rounds"] == [ROUND] and with_pool["expert_only_rounds"] == ["calibration-2"]
    assert with_pool["panel_ranking"] == report["calibration"]["panel_ranking"]
    assert with_pool["reviewers"] == report["calibration"]["reviewers"]
    assert with_pool["experts"]["calibration-2"]["experts"]["ex1"]["bucketed"] == approx(F(7, 8))
