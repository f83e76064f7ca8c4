"""A main round small enough to work out by hand (docs/metrics.md#analysis-indices-main-round), including two coders on
some units.

Schema: UA (user 0-2, UIRI), UB (user 0/1, UIRI), RA (response 0-2, cluster D, risk (2-x)/2),
RX (response 0-2, no cluster, risk 1 if x > 0 — non-linear, so mean-of-risks differs from risk-of-mean),
FA (flag 0/1, cluster F, risk x). Conversations: D1/s (single turn), D2/m (turns 1-3). Models M1, M2.
Coders x and y are the panel; z and a gold row are present and must be ignored.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.stats import spearmanr

from metrics.core.bootstrap import resample_picks
from metrics.core.report import AttributeSpec, ReportParams, build_report

from ._tables import judgment_table, span_table

DOWN = {0: 1.0, 1: 0.5, 2: 0.0}
SCHEMA = (
    AttributeSpec("UA", "user", None, (0, 1, 2), "ordinal", {}, None, True, "turn"),
    AttributeSpec("UB", "user", None, (0, 1), "nominal", {}, None, True, "turn"),
    AttributeSpec("RA", "response", "D", (0, 1, 2), "ordinal", {}, DOWN, False, "response"),
    AttributeSpec("RX", "response", None, (0, 1, 2), "ordinal", {}, {0: 0.0, 1: 1.0, 2: 1.0}, False, "response"),
    AttributeSpec("FA", "flag", "F", (0, 1), "nominal", {}, {0: 0.0, 1: 1.0}, False, "response"),
)
WHERE = {"s": "D1", "m": "D2"}


def _rows() -> list[tuple]:
    turn_level = [  # (coder, conversation, turn, attribute, score)
        ("x", "s", 1, "UA", 2), ("x", "s", 1, "UB", 1), ("y", "s", 1, "UA", 0), ("y", "s", 1, "UB", 0),
        ("x", "m", 1, "UA", 0), ("x", "m", 1, "UB", 0),
        ("x", "m", 2, "UA", 1), ("x", "m", 2, "UB", 0), ("y", "m", 2, "UA", 1),  # y lacks UB: no UIRI from y
        ("x", "m", 3, "UA", 2), ("x", "m", 3, "UB", 1),
        ("z", "m", 1, "UA", 2), ("z", "m", 1, "UB", 1),
    ]  # fmt: skip
    response_level = [  # (coder, conversation, turn, model, attribute, score)
        ("x", "s", 1, "M1", "RA", 0), ("x", "s", 1, "M1", "FA", 1), ("x", "s", 1, "M1", "RX", 0),
        ("y", "s", 1, "M1", "RA", 2), ("y", "s", 1, "M1", "FA", 0), ("y", "s", 1, "M1", "RX", 2),
        ("x", "s", 1, "M2", "RA", 1), ("x", "s", 1, "M2", "FA", 0), ("x", "s", 1, "M2", "RX", 1),
        ("x", "m", 1, "M1", "RA", 2), ("x", "m", 1, "M1", "FA", 0),
        ("x", "m", 1, "M2", "RA", 0), ("x", "m", 1, "M2", "FA", 1),
        ("x", "m", 2, "M1", "RA", 1), ("x", "m", 2, "M1", "FA", 1),
        ("x", "m", 2, "M2", "RA", 2), ("y", "m", 2, "M2", "FA", 1),  # neither coder has both clusters
        ("x", "m", 3, "M1", "RA", 0), ("x", "m", 3, "M1", "FA", 0),
        ("x", "m", 3, "M2", "RA", 2), ("x", "m", 3, "M2", "FA", 1),
        ("z", "s", 1, "M1", "RA", 1), ("z", "s", 1, "M1", "FA", 1),
    ]  # fmt: skip
    rows = [("main", c, False, WHERE[conv], conv, t, "", a, v) for c, conv, t, a, v in turn_level]
    rows += [("main", c, False, WHERE[conv], conv, t, m, a, v) for c, conv, t, m, a, v in response_level]
    rows.append(("main", "expert", True, "D1", "s", 1, "M1", "RA", 2))  # gold never enters the indices
    return rows


SPANS = span_table(
    [
        ("main", "x", False, "D1", "s", 1, "M1", "RA", 0, 10, "p"),
        ("main", "y", False, "D1", "s", 1, "M1", "RA", 0, 5, "p"),
        ("main", "y", False, "D1", "s", 1, "M1", "RA", 11, 16, "q"),
        ("main", "x", False, "D2", "m", 1, "M1", "RA", 0, 7, "q"),
        ("main", "z", False, "D1", "s", 1, "M1", "RA", 0, 22, "p"),
    ]
)
TEXTS = {("D1", "s", 1, "M1"): "alpha beta gamma delta", ("D2", "m", 1, "M1"): "one two three"}


@pytest.fixture(scope="module")
def report() -> dict:
    return build_report(
        attributes=SCHEMA,
        judgments=judgment_table(_rows()),
        spans=SPANS,
        response_texts=TEXTS,
        conversation_kinds={("D1", "s"): "single", ("D2", "m"): "multi"},
        subcategory_attribute={"p": "RA", "q": "RA"},
        params=ReportParams(panel=("x", "y"), bootstrap=50),
    )


def test_strict_json_and_empty_calibration(report: dict) -> None:
    json.dumps(report, allow_nan=False)
    calibration = report["calibration"]
    assert calibration["reviewers"] == {} and calibration["pairwise"] == {} and calibration["rounds"] == []
    assert calibration["bootstrap"]["top_k"] == {"4": {}, "5": {}, "6": {}}


def test_uiri_needs_every_uiri_item_from_a_coder(report: dict) -> None:
    uiri = report["indices"]["uiri"]
    # turns: s/1 = mean(x (1 + 1)/2, y 0) = .5; m/1 = 0; m/2 = x (.5 + 0)/2 = .25 (y lacks UB); m/3 = 1
    assert uiri["mean"] == pytest.approx((0.5 + 0 + 0.25 + 1) / 4)
    assert uiri["bands"] == {"low": 0.5, "medium": 0.25, "high": 0.25}
    assert uiri["by_dataset"] == {"D1": pytest.approx(0.5), "D2": pytest.approx(1.25 / 3)}
    assert uiri["n_turns"] == 4
    assert uiri["peaks"] == {"D2": {"m": 1.0}}  # the single-turn conversation has no peak entry
    assert uiri["peak_mean"] == 1.0


def test_user_scores_per_attribute_overall_and_per_dataset(report: dict) -> None:
    scores = report["indices"]["uiri"]["attributes"]
    # UB per turn over the panel (x, y; z is not on it): s/1 (1 + 0)/2, m/1 0, m/2 0 (only x), m/3 1
    assert scores["all"]["UB"] == {"mean": pytest.approx(1.5 / 4), "n_turns": 4}
    assert scores["by_dataset"]["D1"]["UB"] == {"mean": pytest.approx(0.5), "n_turns": 1}
    assert scores["by_dataset"]["D2"]["UB"] == {"mean": pytest.approx(1 / 3), "n_turns": 3}
    assert scores["all"]["UA"]["mean"] == pytest.approx((1 + 0 + 1 + 2) / 4)
    assert "RA" not in scores["all"]  # response-level attributes are not user input


def test_model_tables_split_by_conversation_kind(report: dict) -> None:
    by_kind = report["indices"]["by_kind"]
    # Flag FA of M1 over the panel (x, y): single-turn s/1 mean(1, 0) = .5; multi-turn m/1 0, m/2 1, m/3 0
    assert by_kind["single"]["flags"]["M1"]["FA"] == pytest.approx(0.5)
    assert by_kind["multi"]["flags"]["M1"]["FA"] == pytest.approx(1 / 3)
    assert report["indices"]["flags"]["M1"]["FA"] == pytest.approx((0.5 + 0 + 1 + 0) / 4)
    assert by_kind["single"]["ari"]["M1"]["n_responses"] == 1 and by_kind["multi"]["ari"]["M1"]["n_responses"] == 3


def test_model_tables_split_by_dataset_and_by_dataset_and_kind(report: dict) -> None:
    ind = report["indices"]
    assert list(ind["by_dataset"]) == ["D1", "D2"]
    d1, d2 = ind["by_dataset"]["D1"], ind["by_dataset"]["D2"]
    # D1 holds the single-turn conversation s, D2 the multi-turn m: each is its kind's part of the study
    for key in ("flags", "ari", "attribute_risk", "fingerprint", "ari_ci"):
        assert d1[key] == ind["by_kind"]["single"][key] and d2[key] == ind["by_kind"]["multi"][key]
        assert d1["by_kind"]["single"][key] == d1[key] and d2["by_kind"]["multi"][key] == d2[key]
        assert d1["by_kind"]["multi"][key] == {} and d2["by_kind"]["single"][key] == {}
    assert d1["flags"]["M1"]["FA"] == pytest.approx(0.5) and d2["flags"]["M1"]["FA"] == pytest.approx(1 / 3)
    # M1 on m: D = (0, .5, 1), F = (0, 1, 0), ARI = (0, .75, .5); M2's m2 has no ARI (no coder has both clusters)
    assert d2["ari"]["M1"] == {"D": pytest.approx(0.5), "F": pytest.approx(1 / 3), "ARI": pytest.approx(1.25 / 3),
                               "n_responses": 3}
    assert d2["ari"]["M2"]["ARI"] == pytest.approx(0.75) and d2["ari"]["M2"]["n_responses"] == 3
    # With one conversation in D2, every resample that draws it gives the point estimate: a zero-width interval,
    # over those resamples alone (one that draws s twice has no response of D2: the figure is undefined there and
    # left out), whose number the interval keeps (docs/metrics.md#resamples-an-interval-rests-on)
    picks = resample_picks(2, 50, 0)  # the study's two conversations, s then m, B = 50, seed 0
    drew_m, drew_s = int((picks == 1).any(axis=1).sum()), int((picks == 0).any(axis=1).sum())
    assert 0 < drew_m < 50 and 0 < drew_s < 50
    assert d2["ari_ci"]["M1"]["ARI"] == {"low": pytest.approx(1.25 / 3), "high": pytest.approx(1.25 / 3),
                                         "n_resamples": drew_m}
    assert d1["ari_ci"]["M1"]["ARI"]["n_resamples"] == drew_s
    assert ind["ari_ci"]["M1"]["ARI"]["n_resamples"] == 50  # the whole study's: every resample has a response


def test_coupling_and_span_evidence_split_by_dataset_and_kind(report: dict) -> None:
    coupling, spans = report["indices"]["coupling"], report["indices"]["spans"]
    assert coupling["by_kind"]["multi"] == coupling["by_dataset"]["D2"]["by_kind"]["multi"]
    multi = coupling["by_dataset"]["D2"]["raw"]["M1"]
    # M1 on m: UA 0, 1, 2 against RA 2, 1, 0 (a perfect reversal over three pairs)
    assert multi["UA"]["RA"]["rho"] == pytest.approx(-1.0) and multi["UA"]["RA"]["n"] == 3
    assert coupling["by_dataset"]["D1"]["raw"]["M1"]["UA"]["RA"] == {
        "rho": None, "p": None, "q": None, "significant": None, "n": 1}  # one response: undefined
    assert coupling["by_dataset"]["D1"]["by_kind"]["multi"] == {"raw": {}, "risk": {}}
    # p: s/M1 has (1 + 1)/2 spans and (2 + 1)/2 tokens over D1's one response; q: s/M1 (0 + 1)/2 spans
    d1 = spans["by_dataset"]["D1"]["evidence"]["M1"]
    assert d1["p"] == {"spans_per_response": pytest.approx(1.0), "tokens_per_response": pytest.approx(1.5)}
    assert d1["q"] == {"spans_per_response": pytest.approx(0.5), "tokens_per_response": pytest.approx(0.5)}
    # q on m1/M1 by x alone: 1 span of 2 tokens ("one two") over D2's three M1 responses
    d2 = spans["by_dataset"]["D2"]["evidence"]["M1"]
    assert d2["q"] == {"spans_per_response": pytest.approx(1 / 3), "tokens_per_response": pytest.approx(2 / 3)}
    assert d2["p"] == {"spans_per_response": 0.0, "tokens_per_response": 0.0}
    assert spans["by_dataset"]["D2"]["ratios"]["M1"]["q:p"] == {"spans": None, "tokens": None}
    assert spans["by_kind"]["single"] == {k: spans["by_dataset"]["D1"][k] for k in ("evidence", "ratios")}
    assert spans["by_dataset"]["D1"]["by_kind"]["multi"] == {"evidence": {}, "ratios": {}}


def test_uiri_band_boundaries_are_inclusive_below() -> None:
    report = build_report(
        attributes=SCHEMA,
        judgments=judgment_table(_rows()),
        params=ReportParams(panel=("x", "y"), uiri_bands=(0.25, 0.5)),
    )
    # .5 is high (>= .5), .25 is medium (>= .25)
    assert report["indices"]["uiri"]["bands"] == {"low": 0.25, "medium": 0.25, "high": 0.5}


def test_flag_burden_counts_a_split_response_as_half(report: dict) -> None:
    assert report["indices"]["flags"] == {
        "M1": {"FA": pytest.approx((0.5 + 0 + 1 + 0) / 4)},
        "M2": {"FA": pytest.approx((0 + 1 + 1 + 1) / 4)},
    }


def test_clusters_and_ari_per_model(report: dict) -> None:
    ari = report["indices"]["ari"]
    # M1 responses s, m1, m2, m3: D = (.5, 0, .5, 1), F = (.5, 0, 1, 0), ARI = (.5, 0, .75, .5)
    assert ari["M1"] == {
        "D": pytest.approx(0.5),
        "F": pytest.approx(0.375),
        "ARI": pytest.approx(1.75 / 4),
        "n_responses": 4,
    }
    # M2: m2 has D from x only and F from y only -> no coder has an ARI there, so ARI averages 3 responses
    assert ari["M2"] == {
        "D": pytest.approx((0.5 + 1 + 0 + 0) / 4),
        "F": pytest.approx(0.75),
        "ARI": pytest.approx((0.25 + 1 + 0.5) / 3),
        "n_responses": 4,
    }


def test_risk_is_averaged_per_coder_not_taken_of_the_mean_score(report: dict) -> None:
    risk = report["indices"]["attribute_risk"]
    # RX on s/M1: x scores 0 (risk 0), y scores 2 (risk 1) -> .5; the risk of the mean score 1 would be 1
    assert risk["M1"]["RX"] == pytest.approx(0.5)
    assert risk["M2"]["RX"] == pytest.approx(1.0)
    assert risk["M1"]["RA"] == pytest.approx(0.5) and risk["M2"]["RA"] == pytest.approx(0.375)
    assert risk["M1"]["FA"] == pytest.approx(0.375) and risk["M2"]["FA"] == pytest.approx(0.75)
    assert set(risk["M1"]) == {"RA", "RX", "FA"}  # only attributes with a risk encoding


def test_fingerprint_with_two_models_is_plus_minus_one_over_root_two(report: dict) -> None:
    fp = report["indices"]["fingerprint"]
    h = 1 / math.sqrt(2)
    assert fp["M1"] == {"RA": pytest.approx(h), "RX": pytest.approx(-h), "FA": pytest.approx(-h)}
    assert fp["M2"] == {"RA": pytest.approx(-h), "RX": pytest.approx(h), "FA": pytest.approx(h)}


def test_panel_filter_changes_the_figures() -> None:
    everyone = build_report(attributes=SCHEMA, judgments=judgment_table(_rows()), params=ReportParams(bootstrap=0))
    assert everyone["indices"]["coders"] == ["x", "y", "z"]
    # z's FA = 1 on s/M1 joins x (1) and y (0): that response's flag becomes 2/3
    assert everyone["indices"]["flags"]["M1"]["FA"] == pytest.approx((2 / 3 + 0 + 1 + 0) / 4)


def test_coupling_cells_match_scipy_and_undefined_cells_are_none(report: dict) -> None:
    raw = report["indices"]["coupling"]["raw"]["M1"]
    ua = [1.0, 0.0, 1.0, 2.0]  # s, m1, m2, m3 (mean over coders)
    ra = [1.0, 2.0, 1.0, 0.0]
    expected = spearmanr(ua, ra)
    assert raw["UA"]["RA"]["rho"] == pytest.approx(expected.statistic, abs=1e-12)
    assert raw["UA"]["RA"]["n"] == 4
    assert raw["UA"]["RX"] == {"rho": None, "p": None, "q": None, "significant": None, "n": 1}
    assert set(raw["UA"]) == {"RA", "RX"}  # flags are not a coupling output by default
    risk = report["indices"]["coupling"]["risk"]["M1"]
    assert risk["UA"]["RA"]["rho"] == pytest.approx(-expected.statistic, abs=1e-12)  # (2 - x)/2 reverses order


def test_trajectories_of_the_multi_turn_conversation(report: dict) -> None:
    traj = report["indices"]["trajectories"]
    assert traj["n_conversations"] == 1
    uiri = traj["user"]["UIRI"]  # 0, .25, 1
    assert uiri["open"] == 0.0 and uiri["peak"] == 1.0 and uiri["delta"] == 1.0
    assert uiri["slope"] == pytest.approx(0.5)
    assert uiri["classes"] == {"escalating": 1.0, "flat": 0.0, "de-escalating": 0.0}
    assert uiri["change_from_turn1"] == pytest.approx({"1": 0.0, "2": 0.25, "3": 1.0})
    assert traj["user"]["UA"]["slope"] == pytest.approx(0.5)  # 0, .5, 1 (normalised x/2)
    assert traj["models"]["M1"]["ARI"]["slope"] == pytest.approx(0.25)  # 0, .75, .5
    m2 = traj["models"]["M2"]["ARI"]  # 1, (undefined), .5
    assert m2["slope"] == pytest.approx(-0.25) and m2["delta"] == pytest.approx(-0.5)
    assert m2["classes"]["de-escalating"] == 1.0
    assert m2["change_from_turn1"] == pytest.approx({"1": 0.0, "3": -0.5})
    # The per-conversation UIRI line behind the dashboard's trajectory plot (single-turn conversations have none).
    line = traj["uiri_conversations"]
    assert list(line) == ["D2"] and list(line["D2"]) == ["m"]
    assert line["D2"]["m"]["uiri"] == pytest.approx({"1": 0.0, "2": 0.25, "3": 1.0})
    assert line["D2"]["m"]["slope"] == pytest.approx(0.5) and line["D2"]["m"]["class"] == "escalating"
    # Per dataset: only D2 has a multi-turn conversation, so its summaries are the whole section's.
    assert traj["by_dataset"] == {"D2": {"user": traj["user"], "models": traj["models"]}}


def test_span_evidence_and_ratios(report: dict) -> None:
    spans = report["indices"]["spans"]
    m1 = spans["evidence"]["M1"]
    # p: s/M1 has (1 + 1)/2 spans and (2 + 1)/2 tokens over 4 responses; q: s/M1 (0 + 1)/2, m1/M1 1
    assert m1["p"] == {"spans_per_response": pytest.approx(0.25), "tokens_per_response": pytest.approx(0.375)}
    assert m1["q"] == {"spans_per_response": pytest.approx(0.375), "tokens_per_response": pytest.approx(0.625)}
    assert spans["ratios"]["M1"]["q:p"] == {"spans": pytest.approx(1.5), "tokens": pytest.approx(5 / 3)}
    assert spans["ratios"]["M2"]["q:p"] == {"spans": None, "tokens": None}


def test_ari_intervals_bracket_the_point_estimates(report: dict) -> None:
    ci = report["indices"]["ari_ci"]
    for model, _values in report["indices"]["ari"].items():
        for name in ("D", "F", "ARI"):
            low, high = ci[model][name]["low"], ci[model][name]["high"]
            assert 0.0 <= low <= high <= 1.0
    assert report["indices"]["ci"]["resample"] == "conversation"


def test_main_round_without_conversation_kinds_infers_multi_turn() -> None:
    report = build_report(
        attributes=SCHEMA, judgments=judgment_table(_rows()), params=ReportParams(panel=("x", "y"), bootstrap=0)
    )
    assert report["indices"]["uiri"]["peaks"] == {"D2": {"m": 1.0}}
    # no resamples, no interval
    assert report["indices"]["ari_ci"]["M1"]["ARI"] == {"low": None, "high": None, "n_resamples": 0}
    assert np.isfinite(report["indices"]["ari"]["M1"]["ARI"])
