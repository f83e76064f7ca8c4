"""A calibration study small enough to work out by hand: every figure below is derived in the test.

Schema: UA (user, 0-2, {1,2} merged), RA (response, 0-2, {0,1} merged), FA (flag, 0/1).
Round 1: 2 turns (conversation a turn 1 = "t1", conversation b turn 1 = "t2") x models M1, M2 -> 10 items,
reviewers ann, bob (misses FA t2/M2), cat (= gold). Round 2: ann, bob (turn t1 only), dan (UA t2 only).
"""

from __future__ import annotations

import json
from fractions import Fraction as F

import numpy as np
import pytest

from metrics.core.bootstrap import resample_picks
from metrics.core.report import AttributeSpec, JudgmentTable, ReportParams, SpanTable, build_report
from metrics.core.report_warnings import report_warnings

from ._tables import judgment_table, span_table

UA = AttributeSpec("UA", "user", None, (0, 1, 2), "ordinal", {0: 0, 1: 1, 2: 1}, None, True, "turn")
RA = AttributeSpec(
    "RA", "response", "D", (0, 1, 2), "ordinal", {0: 0, 1: 0, 2: 2}, {0: 1.0, 1: 0.5, 2: 0.0}, False, "response"
)
FA = AttributeSpec("FA", "flag", "F", (0, 1), "nominal", {}, {0: 0.0, 1: 1.0}, False, "response")
SCHEMA = (UA, RA, FA)

# item keys: (conversation, model, attribute); model "" for the user-level attribute
ITEMS = [
    ("a", "", "UA"), ("b", "", "UA"),
    ("a", "M1", "RA"), ("a", "M2", "RA"), ("b", "M1", "RA"), ("b", "M2", "RA"),
    ("a", "M1", "FA"), ("a", "M2", "FA"), ("b", "M1", "FA"), ("b", "M2", "FA"),
]  # fmt: skip
GOLD = [2, 0, 0, 1, 2, 1, 1, 0, 0, 1]
ROUND1 = {
    "ann": [1, 0, 1, 1, 2, 2, 1, 0, 0, 0],
    "bob": [2, 1, 0, 0, 1, 2, 1, 1, 0, None],
    "cat": list(GOLD),
}
ROUND2 = {
    "ann": list(GOLD),
    "bob": [GOLD[i] if ITEMS[i][0] == "a" else None for i in range(10)],
    "dan": [None, 0, None, None, None, None, None, None, None, None],
}


def _rows(round_name: str, coder: str, gold: bool, scores: list[int | None]) -> list[tuple]:
    return [
        (round_name, coder, gold, "DS", conv, 1, model, attr, score)
        for (conv, model, attr), score in zip(ITEMS, scores, strict=True)
        if score is not None
    ]


def _judgments() -> JudgmentTable:
    rows = _rows("calibration-1", "expert-x", True, GOLD) + _rows("calibration-2", "expert-y", True, GOLD)
    for name, scores in ROUND1.items():
        rows += _rows("calibration-1", name, False, scores)
    for name, scores in ROUND2.items():
        rows += _rows("calibration-2", name, False, scores)
    return judgment_table(rows)


def _spans() -> SpanTable:
    return span_table(
        [
            ("calibration-1", "g", True, "DS", "a", 1, "M1", "RA", 0, 10, "p"),
            ("calibration-1", "ann", False, "DS", "a", 1, "M1", "RA", 5, 15, "p"),
            ("calibration-1", "ann", False, "DS", "a", 1, "M2", "RA", 0, 4, "q"),
        ]
    )


@pytest.fixture(scope="module")
def report() -> dict:
    return build_report(
        attributes=SCHEMA,
        judgments=_judgments(),
        spans=_spans(),
        subcategory_attribute={"p": "RA", "q": "RA"},
        params=ReportParams(bootstrap=200, seed=7),
    )


def approx(value: F | float | None) -> object:
    return None if value is None else pytest.approx(float(value), abs=1e-12)


def test_report_is_strict_json(report: dict) -> None:
    json.dumps(report, allow_nan=False)


def test_round1_exact_and_bucketed_agreement_per_reviewer(report: dict) -> None:
    r1 = {name: report["calibration"]["reviewers"][name]["calibration-1"] for name in ("ann", "bob", "cat")}
    # ann: exact hits UA t2, RA a/M2, RA b/M1, FA x3 = 6 of 10; bucketed adds UA t1 (1~2) and RA a/M1 (1~0)
    assert r1["ann"]["exact"] == approx(F(6, 10))
    assert r1["ann"]["bucketed"] == approx(F(8, 10))
    assert r1["ann"]["n_items"] == 10
    # bob has 9 valid items (no FA b/M2): exact UA t1, RA a/M1, FA a/M1, FA b/M1 = 4; bucketed + RA a/M2 = 5
    assert r1["bob"]["exact"] == approx(F(4, 9))
    assert r1["bob"]["bucketed"] == approx(F(5, 9))
    assert r1["bob"]["n_items"] == 9
    assert r1["cat"]["exact"] == 1.0 and r1["cat"]["bucketed"] == 1.0


def test_round1_by_group_is_bucketed(report: dict) -> None:
    ann = report["calibration"]["reviewers"]["ann"]["calibration-1"]["by_group"]
    bob = report["calibration"]["reviewers"]["bob"]["calibration-1"]["by_group"]
    assert ann == {"user": approx(F(2, 2)), "response": approx(F(3, 4)), "flag": approx(F(3, 4))}
    assert bob == {"user": approx(F(1, 2)), "response": approx(F(2, 4)), "flag": approx(F(2, 3))}


def _qwk(rater: list[int], gold: list[int], labels: int) -> F:
    """Quadratic weighted κ from its definition, in exact fractions: 1 - Σ w·O / Σ w·E."""
    n = len(rater)
    observed = sum(F((r - g) ** 2) for r, g in zip(rater, gold, strict=True))
    rows = [rater.count(i) for i in range(labels)]
    cols = [gold.count(j) for j in range(labels)]
    expected = sum(F((i - j) ** 2 * rows[i] * cols[j], n) for i in range(labels) for j in range(labels))
    return 1 - observed / expected


def test_round1_kappa_per_group_and_bands(report: dict) -> None:
    ann = report["calibration"]["reviewers"]["ann"]["calibration-1"]
    bob = report["calibration"]["reviewers"]["bob"]["calibration-1"]
    # worked out on paper: ann UA [1,0] vs [2,0]: ΣwO = 1, ΣwE = 6/2 -> 2/3
    assert _qwk([1, 0], [2, 0], 3) == F(2, 3)
    assert ann["kappa_user"] == approx(F(2, 3))
    assert ann["kappa_response"] == approx(_qwk([1, 1, 2, 2], [0, 1, 2, 1], 3)) == approx(F(1, 2))
    assert ann["kappa_flags"] == approx(_qwk([1, 0, 0, 0], [1, 0, 0, 1], 2)) == approx(F(1, 2))
    assert bob["kappa_user"] == approx(F(2, 3))
    assert bob["kappa_response"] == approx(_qwk([0, 0, 1, 2], [0, 1, 2, 1], 3)) == approx(F(2, 5))
    assert bob["kappa_flags"] == approx(_qwk([1, 1, 0], [1, 0, 0], 2)) == approx(F(2, 5))
    assert ann["kappa_bands"] == {"kappa_user": "Substantial", "kappa_response": "Moderate", "kappa_flags": "Moderate"}
    assert bob["kappa_bands"]["kappa_response"] == "Fair"
    assert bob["kappa_by_attribute"]["RA"] == {"kappa": approx(F(2, 5)), "band": "Fair"}


def test_round1_bias_only_over_multilevel_scales(report: dict) -> None:
    # ann: UA -1, 0; RA +1, 0, 0, +1 -> 1/6 (flags excluded even though ann misses one)
    assert report["calibration"]["reviewers"]["ann"]["calibration-1"]["bias"] == approx(F(1, 6))
    # bob: UA 0, +1; RA 0, -1, -1, +1 -> 0
    assert report["calibration"]["reviewers"]["bob"]["calibration-1"]["bias"] == approx(F(0))


def test_round1_pairwise_and_panel_mean(report: dict) -> None:
    pairs = report["calibration"]["pairwise"]["calibration-1"]
    assert list(pairs) == ["ann|bob", "ann|cat", "bob|cat"]
    # ann vs bob on their 9 shared items: exact only RA b/M2, FA a/M1, FA b/M1
    assert pairs["ann|bob"] == {"exact": approx(F(3, 9)), "bucketed": approx(F(6, 9))}
    assert pairs["ann|cat"] == {"exact": approx(F(6, 10)), "bucketed": approx(F(8, 10))}
    assert pairs["bob|cat"] == {"exact": approx(F(4, 9)), "bucketed": approx(F(5, 9))}
    mean = report["calibration"]["pairwise_mean"]["calibration-1"]
    assert mean["exact"] == approx((F(3, 9) + F(6, 10) + F(4, 9)) / 3)
    assert mean["bucketed"] == approx((F(6, 9) + F(8, 10) + F(5, 9)) / 3)


def test_gold_within_plurality_counts_ties_and_misses(report: dict) -> None:
    # only RA b/M2 misses: ann and bob say 2 (bucket 2), cat says 1 (bucket 0) = gold; FA b/M2 is a 1-1 tie
    assert report["calibration"]["gold_in_plurality"]["calibration-1"] == approx(F(9, 10))
    assert report["calibration"]["gold_in_plurality"]["calibration-2"] == approx(F(1))


def test_delta_needs_both_rounds(report: dict) -> None:
    reviewers = report["calibration"]["reviewers"]
    assert reviewers["ann"]["delta_pp"] == approx(100 * (F(1) - F(8, 10)))
    assert reviewers["bob"]["delta_pp"] == approx(100 * (F(1) - F(5, 9)))
    assert reviewers["cat"]["delta_pp"] is None  # not in round 2
    assert reviewers["dan"]["delta_pp"] is None  # not in round 1
    absent = reviewers["cat"]["calibration-2"]
    assert absent["n_items"] == 0 and absent["exact"] is None and absent["kappa_user"] is None
    assert set(absent["by_group"]) == {"user", "response", "flag"}


def test_kappa_undefined_when_both_sides_constant_at_one_value(report: dict) -> None:
    dan = report["calibration"]["reviewers"]["dan"]["calibration-2"]
    assert dan["n_items"] == 1 and dan["exact"] == 1.0 and dan["bucketed"] == 1.0
    assert dan["kappa_user"] is None  # one unit, both 0: no expected disagreement
    assert dan["kappa_response"] is None and dan["kappa_flags"] is None  # no unit at all
    assert dan["by_group"] == {"user": 1.0, "response": None, "flag": None}
    assert dan["bias"] == 0.0


def test_attribute_kappa_mean_leaves_undefined_out(report: dict) -> None:
    ua = report["calibration"]["kappa_by_attribute"]["calibration-1"]["UA"]
    assert ua["mean"] == approx((F(2, 3) + F(2, 3) + 1) / 3)
    assert ua["band"] == "Substantial" and ua["n_reviewers"] == 3
    ua2 = report["calibration"]["kappa_by_attribute"]["calibration-2"]["UA"]
    # bob (one unit, both 2) and dan (one unit, both 0) have undefined κ and are not averaged in
    assert ua2 == {"mean": 1.0, "band": "Almost perfect", "n_reviewers": 1}


def test_bootstrap_selection_stability_follows_the_drawn_turns(report: dict) -> None:
    boot = report["calibration"]["bootstrap"]
    assert boot["resamples"] == 200 and boot["seed"] == 7 and boot["round"] == "calibration-2"
    assert boot["n_turns"] == 2
    # every defined agreement in round 2 is 1, so a reviewer is in every top-k whenever defined:
    # bob needs turn a (position 0) drawn at least once, dan needs turn b (position 1)
    picks = resample_picks(2, 200, 7)  # the report's draws: seed 7, chunked streams
    for k in ("4", "5", "6"):
        assert boot["top_k"][k]["ann"] == 1.0
        assert boot["top_k"][k]["bob"] == pytest.approx(np.mean((picks == 0).any(axis=1)))
        assert boot["top_k"][k]["dan"] == pytest.approx(np.mean((picks == 1).any(axis=1)))
    assert 0.0 < boot["top_k"]["4"]["bob"] < 1.0


def test_span_f1_next_to_score_agreement(report: dict) -> None:
    ann = report["calibration"]["reviewers"]["ann"]["calibration-1"]["span_f1"]
    # p: gold [0,10) vs ann [5,15): 2*5 / (10 + 10); q: ann [0,4) and no gold: 0
    assert ann["by_subcategory"] == {"p": approx(F(1, 2)), "q": 0.0}
    assert ann["overall"] == approx(F(2 * 5, 14 + 10))
    bob = report["calibration"]["reviewers"]["bob"]["calibration-1"]["span_f1"]
    assert bob["by_subcategory"] == {"p": 0.0, "q": None}  # nothing highlighted by either side on q


def test_alpha_is_computed_across_reviewers_only(report: dict) -> None:
    import krippendorff

    alpha = report["calibration"]["alpha"]["calibration-1"]
    data = np.array([ROUND1[n] for n in ("ann", "bob", "cat")], dtype=float)
    ra = data[:, 2:6]
    assert alpha["RA"]["alpha"] == pytest.approx(
        krippendorff.alpha(reliability_data=ra, level_of_measurement="ordinal", value_domain=[0, 1, 2]), abs=1e-12
    )
    assert alpha["RA"]["level"] == "ordinal" and alpha["RA"]["n_units"] == 4
    fa = np.array([[np.nan if v is None else v for v in ROUND1[n][6:]] for n in ("ann", "bob", "cat")])
    assert alpha["FA"]["alpha"] == pytest.approx(
        krippendorff.alpha(reliability_data=fa, level_of_measurement="nominal", value_domain=[0, 1]), abs=1e-12
    )


def test_panel_ranking_uses_last_round(report: dict) -> None:
    ranking = report["calibration"]["panel_ranking"]
    assert ranking["round"] == "calibration-2"
    assert [(r["reviewer"], r["rank"]) for r in ranking["ranking"]] == [("ann", 1), ("bob", 1), ("dan", 1)]


def test_a_bootstrap_of_two_clusters_is_named_in_the_warnings(report: dict) -> None:
    """Both rounds' bootstraps draw their 2 turns (a/1 and b/1): 3 distinct resamples, whose intervals (and round
    2's top-k shares) the report printed as usual, unsaid; round 1, not the last, was never named."""
    assert report["calibration"]["bootstrap"]["n_turns_by_round"] == {"calibration-1": 2, "calibration-2": 2}
    clusters = ("its bootstrap resamples only 2 clusters (the turns of its items, a conversation-level item one of "
                "its own), which give 3 distinct resamples: ")
    why = ("next to nothing (with fewer than 10 clusters an interval covers well below its level; a round needs more "
           "items for them to be read).")
    assert report_warnings(report) == [
        {"section": "main", "message": f"Calibration round calibration-1: {clusters}its agreement intervals say {why}"},
        {"section": "main", "message": f"Calibration round calibration-2: {clusters}its agreement intervals and the "
                                       f"top-k shares of selection stability say {why}"},
    ]


def test_every_rounds_cluster_count_is_its_own() -> None:
    """Round 1 on 3 turns of one conversation, round 2 on 12 turns of twelve conversations plus a second attribute
    on six of them (items, not clusters): 3 and 12 clusters, so round 1 alone is warned of, though it is not the
    last round, whose count (12) is the one selection stability reads."""
    rows = []
    for coder, gold in (("expert-x", True), ("ann", False), ("bob", False)):
        rows += [("calibration-1", coder, gold, "DS", "c", turn, "", "UA", 1) for turn in (1, 2, 3)]
        rows += [("calibration-2", coder, gold, "DS", f"d{n}", 1, "", "UA", 2) for n in range(12)]
        rows += [("calibration-2", coder, gold, "DS", f"d{n}", 1, "M1", "RA", 0) for n in range(6)]
    report = build_report(attributes=SCHEMA, judgments=judgment_table(rows), spans=None,
                          subcategory_attribute=None, params=ReportParams(bootstrap=20, seed=1))
    bootstrap = report["calibration"]["bootstrap"]
    assert bootstrap["n_turns_by_round"] == {"calibration-1": 3, "calibration-2": 12}
    assert bootstrap["round"] == "calibration-2" and bootstrap["n_turns"] == 12
    said = [w["message"] for w in report_warnings(report)]
    assert [m.split(":")[0] for m in said] == ["Calibration round calibration-1"]
    # 3 clusters: C(5, 3) = 10 distinct resamples
    assert "only 3 clusters" in said[0] and "10 distinct resamples: its agreement intervals say next" in said[0]


@pytest.mark.parametrize(("counts", "named"), [
    ({"calibration-1": 4, "calibration-2": 30}, ["calibration-1"]),
    ({"calibration-1": 30, "calibration-2": 9}, ["calibration-2"]),
    ({"calibration-1": 1, "calibration-2": 0, "calibration-3": 2}, ["calibration-1", "calibration-3"]),
    ({"calibration-1": 10, "calibration-2": 10}, []),
])
def test_each_round_below_ten_clusters_is_named(counts: dict[str, int], named: list[str]) -> None:
    names = list(counts)
    reviewer = {name: {"bucketed": 0.5, "n_items": 3} for name in names}
    report = {"calibration": {"rounds": names, "reviewers": {"r1": reviewer},
                              "bootstrap": {"round": names[-1], "n_turns": counts[names[-1]],
                                            "n_turns_by_round": counts}}}
    said = [w["message"] for w in report_warnings(report)]
    assert [m.split(":")[0] for m in said] == [f"Calibration round {name}" for name in named]
    # a round without gold is said so once, never as a round of few clusters
    reviewer[names[0]] = {"bucketed": None, "n_items": 0}
    said = [w["message"] for w in report_warnings(report)]
    assert sum(names[0] in m for m in said) == 1 and "none of the items" in said[0]


def test_a_report_stored_before_every_rounds_count_warns_of_the_last_round_alone() -> None:
    reviewer = {name: {"bucketed": 0.5, "n_items": 3} for name in ("calibration-1", "calibration-2")}
    report = {"calibration": {"rounds": ["calibration-1", "calibration-2"], "reviewers": {"r1": reviewer},
                              "bootstrap": {"round": "calibration-2", "n_turns": 5}}}
    assert [w["message"][:58] for w in report_warnings(report)] == [
        "Calibration round calibration-2: its bootstrap resamples o"]


@pytest.mark.parametrize(("n_turns", "warned"), [(0, False), (1, True), (9, True), (10, False), (40, False)])
def test_the_bootstrap_warning_starts_below_ten_clusters(n_turns: int, warned: bool) -> None:
    reviewer = {"calibration-1": {"bucketed": 0.5, "n_items": 3}}
    report = {"calibration": {"rounds": ["calibration-1"], "reviewers": {"r1": reviewer},
                              "bootstrap": {"round": "calibration-1", "n_turns": n_turns}}}
    assert bool(report_warnings(report)) is warned
    # a round whose figures are all empty for want of gold is said so, once
    reviewer["calibration-1"] = {"bucketed": None, "n_items": 0}
    assert [w["message"][:60] for w in report_warnings(report)] == [
        "Calibration round calibration-1: none of the items its revie"]


@pytest.mark.parametrize(("n_clusters", "warned"), [(0, False), (1, True), (4, True), (9, True), (10, False)])
def test_the_main_rounds_intervals_are_warned_of_below_ten_clusters(n_clusters: int, warned: bool) -> None:
    """The main round's intervals resample conversations (``indices.ci.n_clusters``): the demo's four give 35
    distinct resamples, which the report printed as intervals like any other."""
    report = {"indices": {"ari": {"Model A": {"ARI": 0.25, "n_responses": 12}},
                          "ci": {"resample": "conversation", "resamples": 1000, "n_clusters": n_clusters}}}
    said = [w["message"] for w in report_warnings(report)]
    assert bool(said) is warned
    if n_clusters == 4:
        assert said == ["The main round's intervals resample only 4 conversations, which give 35 distinct resamples: "
                        "the intervals of the per-model figures (ari_ci, overall and by dataset and conversation "
                        "kind) say next to nothing (with fewer than 10 clusters an interval covers well below its "
                        "level)."]
    report["indices"]["ci"]["resamples"] = 0  # no interval computed: nothing to warn of
    assert report_warnings(report) == []



@pytest.mark.parametrize(("gold_turns", "warned"), [(3, True), (9, True), (10, False), (20, False)])
def test_a_round_with_gold_on_few_of_its_turns_counts_the_turns_with_gold(gold_turns: int, warned: bool) -> None:
    """Twenty single-turn conversations coded by ann and bob, gold on the first ``gold_turns`` of them: a turn
    without gold is drawn but adds nothing to a resample (no valid item), so with gold on 3 the intervals rest on 3
    clusters. Before, the warnings read the round's 20 turns and said nothing."""
    rows = [("calibration-1", coder, False, "DS", f"c{n}", 1, "", "UA", n % 3)
            for coder in ("ann", "bob") for n in range(20)]
    rows += [("calibration-1", "expert-x", True, "DS", f"c{n}", 1, "", "UA", 1) for n in range(gold_turns)]
    # a turn with gold that no reviewer coded carries nothing either
    rows += [("calibration-1", "expert-x", True, "DS", "gold-only", 1, "", "UA", 1)]
    report = build_report(attributes=SCHEMA, judgments=judgment_table(rows), spans=None,
                          subcategory_attribute=None, params=ReportParams(bootstrap=20, seed=1))
    bootstrap = report["calibration"]["bootstrap"]
    assert bootstrap["n_turns_by_round"] == {"calibration-1": 21}
    assert bootstrap["n_clusters_by_round"] == {"calibration-1": gold_turns}
    said = [w["message"] for w in report_warnings(report)]
    # gold on part of the items the reviewers coded (calibration.gold_coverage): their figures rest on those alone
    assert said[:1] == [f"Calibration round calibration-1: only {gold_turns} of the 20 items its reviewers coded "
                        "have a gold value (gold recorded on part of the round): its reviewers' agreement with gold, "
                        "κ, bias, ranks and selection stability rest on those alone, and the other "
                        f"{20 - gold_turns} are left out of them (record their gold on the round's consensus "
                        "screen, then run the report again)."] if gold_turns < 20 else not said[:1]
    said = said[1:] if gold_turns < 20 else said
    assert said == ([f"Calibration round calibration-1: only {gold_turns} of the 21 clusters its bootstrap resamples "
                     "(the turns of its items, a conversation-level item one of its own) hold an item with a gold "
                     "value its reviewers coded, and the others add nothing to a resample: its agreement intervals "
                     "and the top-k shares of selection stability say next to nothing (with fewer than 10 clusters "
                     "an interval covers well below its level; a round needs more items with gold for them to be "
                     "read)."] if warned else [])
    # a report stored before the clusters with data were counted reads the round's turns, as it did
    del bootstrap["n_clusters_by_round"]
    del report["calibration"]["gold_coverage"]  # and before the items with gold were counted
    assert report_warnings(report) == []


def _few_of_forty(bob_turns: int) -> dict:
    """Forty single-turn conversations with gold on UA and RA/M1 of each: ann codes all of them, bob the first
    ``bob_turns`` (both items of a turn: one cluster) and a turn without gold (nothing to agree with: no cluster)."""
    rows = [("calibration-1", "ann", False, "DS", f"c{n}", 1, "", "UA", n % 3) for n in range(40)]
    rows += [("calibration-1", "bob", False, "DS", f"c{n}", 1, model, attribute, (n + 1) % 3)
             for n in range(bob_turns) for model, attribute in (("", "UA"), ("M1", "RA"))]
    rows += [("calibration-1", "bob", False, "DS", "no-gold", 1, "", "UA", 1)]
    rows += [("calibration-1", "expert-x", True, "DS", f"c{n}", 1, model, attribute, 1)
             for n in range(40) for model, attribute in (("", "UA"), ("M1", "RA"))]
    return build_report(attributes=SCHEMA, judgments=judgment_table(rows), spans=None, subcategory_attribute=None,
                        params=ReportParams(bootstrap=20, seed=1))


def _beside_gold_coverage(report: dict) -> list[str]:
    """The warnings but the one of bob's item without gold (``calibration.gold_coverage``: it is left out of his
    figures, and said so, in ``_few_of_forty``'s every variant)."""
    said = [w["message"] for w in report_warnings(report)]
    assert said[0].startswith("Calibration round calibration-1: only ") and "have a gold value" in said[0]
    return said[1:]


@pytest.mark.parametrize(("bob_turns", "warned"), [(2, True), (9, True), (10, False)])
def test_a_reviewer_whose_gold_items_lie_on_few_turns_of_a_larger_round_is_named(bob_turns: int, warned: bool) -> None:
    """The round resamples 40 turns with gold, but bob's agreement is over his own items alone, so his interval
    rests on the turns that hold one (2 of the 40 here): before, the warnings read the round's 40 and said nothing
    of an interval over 2 clusters (3 distinct resamples)."""
    report = _few_of_forty(bob_turns)
    calibration = report["calibration"]
    assert calibration["bootstrap"]["n_clusters_by_round"] == {"calibration-1": 40}
    counts = {name: entry["calibration-1"]["n_clusters"] for name, entry in calibration["reviewers"].items()}
    assert counts == {"ann": 40, "bob": bob_turns}
    said = _beside_gold_coverage(report)
    assert said == ([f"Calibration round calibration-1: the agreement intervals and top-k shares of selection "
                     f"stability of bob ({bob_turns} clusters) rest on fewer than 10 of the round's 40 clusters (the "
                     "turns that hold an item with a gold value the reviewer coded, a conversation-level item one of "
                     "its own; the others add nothing to the reviewer's figures in a resample): they say next to "
                     "nothing (with fewer than 10 clusters an interval covers well below its level; such a reviewer "
                     "needs gold on more of the turns they coded for them to be read)."] if warned else [])
    assert calibration["agreement_ci"]["calibration-1"]["bob"]["exact"]["low"] is not None  # an interval is shown
    bootstrap = calibration["bootstrap"]
    bootstrap["resamples"] = 0  # a run without resamples has no interval to warn of
    assert _beside_gold_coverage(report) == []
    bootstrap["resamples"] = 20
    for entry in calibration["reviewers"].values():  # a report stored before the counts says nothing of it
        del entry["calibration-1"]["n_clusters"]
    for intervals in calibration["agreement_ci"]["calibration-1"].values():
        for interval in intervals.values():
            del interval["n_resamples"]
    assert _beside_gold_coverage(report) == []


def test_a_reviewer_is_not_named_beside_the_rounds_own_warning() -> None:
    """A round under 10 clusters in all is warned of as a whole, which speaks of every reviewer's intervals."""
    report = _few_of_forty(2)
    report["calibration"]["bootstrap"]["n_clusters_by_round"]["calibration-1"] = 9
    said = _beside_gold_coverage(report)
    assert len(said) == 1 and "bob" not in said[0]
