"""LongCounsel-8 metrics on hand-worked trajectories (docs/lc8-metrics.md#definitions): trajectory types at every
boundary, current and change MAE, direction accuracy (|change| >= 5, a predicted change of 0 counts wrong), MAE by type,
trend agreement, per seed then the mean, label fidelity (a method's items included, with the sessions each figure
covers), the method ranking with its change-MAE-versus-direction reversals, and input errors. Each expected value is
worked out in the comment beside it; the rules are the defaults (5 sessions, large change 5, screening >= 10,
severe > 15).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from lc8.core.tracking import (
    TYPES,
    CoderLabels,
    Lc8Rules,
    Lc8Study,
    lc8_report,
    trajectory_draws,
    trajectory_type,
    trajectory_types,
)

NAN = math.nan
FIGURES = ("item_exact", "item_mae", "total_bias", "pearson", "spearman", "screening_agreement", "severe_tail_mae")
COUNTS = ("n_sessions", "n_item_sessions", "n_severe_sessions")  # the sessions the fidelity figures cover


def study(
    reference: list[list[float]], coders: dict[str, dict], *, reference_items=None, rules=None, methods=None
) -> Lc8Study:
    """A study from lists: coders maps a name to {seed: totals rows} (and optionally "items": {seed: items});
    `methods` the ranked coders (None: all)."""
    labels = {}
    for name, spec in coders.items():
        items = spec.pop("items", None)
        labels[name] = CoderLabels(
            totals={seed: np.array(rows, dtype=float) for seed, rows in spec.items()},
            items=None if items is None else {seed: np.array(v, dtype=float) for seed, v in items.items()},
        )
    return Lc8Study(
        trajectories=tuple(f"t{i}" for i in range(len(reference))),
        reference=np.array(reference, dtype=float),
        reference_items=None if reference_items is None else np.array(reference_items, dtype=float),
        coders=labels,
        rules=rules or Lc8Rules(),
        methods=methods,
    )


# --- trajectory types ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("series", "expected"),
    [
        ([10, 8, 7, 6, 5], "improving"),  # y5 - y1 = -5 exactly
        ([10, 9, 8, 7, 6], "stable"),  # -4, max - min = 4
        ([10, 12, 14, 15, 15], "worsening"),  # +5 exactly
        ([10, 11, 12, 13, 14], "stable"),  # +4, max - min = 4
        ([10, 15, 12, 11, 10], "fluctuating"),  # net 0, max - min = 5 exactly
        ([10, 14, 12, 11, 10], "stable"),  # net 0, max - min = 4
        ([10, 4, 8, 7, 6], "fluctuating"),  # net -4 (not improving), max - min = 6
        ([10, 20, 10, 10, 5], "improving"),  # net -5 decides before the spread of 15 (ordered rule)
        ([5, 0, 10, 0, 10], "worsening"),  # net +5 decides before the spread of 10
        ([10.0, 10.0, 10.0, 10.0, 5.5], "stable"),  # net -4.5 (floats are not rounded), spread 4.5
        ([10.0, 10.0, 10.0, 10.0, 4.999], "improving"),  # net -5.001 <= -5
        ([10.0, 10.0, 10.0, 15.0, 10.001], "fluctuating"),  # net +0.001, spread 5
    ],
)
def test_trajectory_type_at_each_boundary(series, expected):
    assert trajectory_type(series) == expected


def test_a_missing_session_gives_no_type():
    assert trajectory_type([10, NAN, 8, 7, 5]) is None
    assert trajectory_type([NAN] * 5) is None


def test_trajectory_types_is_the_rule_row_by_row():
    rows = np.array([[10, 8, 7, 6, 5], [10, 12, 14, 15, 15], [10, 15, 12, 11, 10], [10, 9, 8, 7, 6], [1, 2, NAN, 3, 4]])
    assert list(trajectory_types(rows, Lc8Rules())) == ["improving", "worsening", "fluctuating", "stable", None]


def test_trajectory_type_follows_the_rules_threshold_and_length():
    # with large_change 3: net -3 is improving; with 3 sessions the last is y3
    assert trajectory_type([6, 5, 3], Lc8Rules(sessions=3, large_change=3)) == "improving"
    with pytest.raises(ValueError, match=r"shape \(n, 5\)"):
        trajectory_type([1, 2, 3, 4])


# --- current MAE, change MAE, direction, by type, trend agreement ---------------------------------------------------


def test_current_change_direction_type_and_trend_on_a_hand_example():
    # A: ref [10, 15, 11, 11, 6]: changes +5, -4, 0, -5; net -4, spread 9 -> fluctuating
    #    pred [12, 14, 14, 10, 6]: changes +2, 0, -4, -4; net -6 -> improving (disagrees)
    #    |errors| 2, 1, 3, 1, 0 = 7 over 5; change errors |2-5| 3, |0+4| 4, |-4-0| 4, |-4+5| 1 = 12 over 4
    #    large: +5 (pred +2, right), -4 not large, -5 (pred -4, right) -> 2 of 2
    # B: ref [8, 8, 8, 8, 8] stable; pred [8, NaN, 9, 9, 9]: |errors| 0, 1, 1, 1 = 3 over 4;
    #    transitions 2 and 3 lack the prediction; 4 and 5: |0 - 0| = 0 over 2; no type (incomplete)
    s = study([[10, 15, 11, 11, 6], [8, 8, 8, 8, 8]], {"m": {None: [[12, 14, 14, 10, 6], [8, NAN, 9, 9, 9]]}})
    report = lc8_report(s, resamples=0)
    m = report["coders"]["m"]
    assert m["current_mae"] == pytest.approx(10 / 9)  # (7 + 3) / (5 + 4)
    assert m["change_mae"] == pytest.approx(2.0)  # (12 + 0) / (4 + 2)
    assert m["direction_accuracy"] == 1.0
    assert m["n_large_changes"] == 2
    assert m["n_trajectories"] == 2
    # the trajectories each interval rests on: both have a scored session and a scored change, A alone a large one
    assert m["ci_trajectories"] == {"current_mae": 2, "change_mae": 2, "direction_accuracy": 1}
    assert m["trend_agreement"] == 0.0  # only A is typed on both sides, and it disagrees
    assert m["mae_by_type"] == {"improving": None, "worsening": None, "fluctuating": 1.4, "stable": 0.75}
    assert report["reference_types"] == {"improving": 0, "worsening": 0, "fluctuating": 1, "stable": 1}
    assert m["n_seeds"] == 1
    assert m["per_seed"] == {
        "none": {
            "current_mae": pytest.approx(10 / 9),
            "change_mae": 2.0,
            "direction_accuracy": 1.0,
            "trend_agreement": 0.0,
        }
    }
    assert m["ci"] == {"current_mae": [None, None], "change_mae": [None, None], "direction_accuracy": [None, None]}


def test_a_change_of_exactly_five_is_large_four_is_not_and_a_zero_prediction_is_wrong():
    # ref [10, 15, 10, 14, 10]: changes +5, -5, +4, -4 -> two large transitions (the +-4 are not)
    # "flat-up": pred changes 0, -1, +3, -2 -> +5 vs 0 wrong (a tie), -5 vs -1 right -> 1/2
    # "flat-down": pred changes +1, 0, +9, -10 -> +5 vs +1 right, -5 vs 0 wrong (a tie) -> 1/2
    # "misses-small": pred changes +6, -6, -4, +4: both large right; the wrong signs on +-4 do not count -> 2/2
    ref = [[10, 15, 10, 14, 10]]
    s = study(
        ref,
        {
            "flat-up": {0: [[10, 10, 9, 12, 10]]},
            "flat-down": {0: [[10, 11, 11, 20, 10]]},
            "misses-small": {0: [[10, 16, 10, 6, 10]]},
        },
    )
    coders = lc8_report(s, resamples=0)["coders"]
    assert coders["flat-up"]["direction_accuracy"] == 0.5
    assert coders["flat-down"]["direction_accuracy"] == 0.5
    assert coders["misses-small"]["direction_accuracy"] == 1.0
    assert {c["n_large_changes"] for c in coders.values()} == {2}


def test_no_large_change_leaves_direction_accuracy_undefined():
    # changes +4, -4, +4, -4: none is large
    s = study([[10, 14, 10, 14, 10]], {"m": {None: [[10, 11, 12, 13, 14]]}})
    m = lc8_report(s, resamples=0)["coders"]["m"]
    assert m["direction_accuracy"] is None
    assert m["n_large_changes"] == 0
    assert m["ci"]["direction_accuracy"] == [None, None]


def test_mae_by_type_and_trend_agreement_over_four_reference_types():
    # improving [10, 8, 7, 6, 5], pred +1 everywhere: MAE 1, pred type improving (agrees)
    # worsening [10, 12, 14, 15, 15], pred [10, 10, 10, 10, 10]: |errors| 0, 2, 4, 5, 5 -> 16/5 = 3.2, stable (no)
    # fluctuating [10, 15, 12, 11, 10], pred the same: MAE 0, agrees
    # stable [10, 9, 8, 7, 6], pred [NaN, 9, 8, 7, 6]: MAE 0 over 4, untyped (not counted in trend agreement)
    ref = [[10, 8, 7, 6, 5], [10, 12, 14, 15, 15], [10, 15, 12, 11, 10], [10, 9, 8, 7, 6]]
    pred = [[11, 9, 8, 7, 6], [10, 10, 10, 10, 10], [10, 15, 12, 11, 10], [NAN, 9, 8, 7, 6]]
    m = lc8_report(study(ref, {"m": {None: pred}}), resamples=0)["coders"]["m"]
    assert m["mae_by_type"] == {"improving": 1.0, "worsening": 3.2, "fluctuating": 0.0, "stable": 0.0}
    assert m["trend_agreement"] == pytest.approx(2 / 3)
    assert m["current_mae"] == pytest.approx((5 + 16 + 0 + 0) / 19)


def test_a_trajectory_with_an_incomplete_reference_has_no_type_but_still_counts_for_mae():
    # ref [10, NaN, 10, 10, 10]: untyped; pred 12 everywhere: |errors| 2 x 4 sessions
    m = lc8_report(study([[10, NAN, 10, 10, 10]], {"m": {None: [[12] * 5]}}), resamples=0)["coders"]["m"]
    assert m["current_mae"] == 2.0
    assert m["mae_by_type"] == dict.fromkeys(TYPES)
    assert m["trend_agreement"] is None
    assert m["change_mae"] == 0.0  # only transitions 4 and 5 have all four values: |0 - 0|


def test_metrics_are_per_seed_then_the_mean_over_seeds():
    # ref [10] * 5. seed 0: pred 11 everywhere -> MAE 1, change 0, stable (agrees), bias +1
    # seed 1: pred [13, 13, 13, 13, NaN] -> MAE 3 over 4 sessions, change 0 over 3, untyped, bias +3
    # mean: MAE (1 + 3) / 2 = 2 (pooling would give 17/9); trend agreement only seed 0 defines: 1.0
    s = study([[10] * 5], {"m": {0: [[11] * 5], 1: [[13, 13, 13, 13, NAN]]}})
    report = lc8_report(s, resamples=0)
    m = report["coders"]["m"]
    assert m["current_mae"] == 2.0
    assert m["change_mae"] == 0.0
    assert m["trend_agreement"] == 1.0
    assert m["n_seeds"] == 2
    assert m["per_seed"]["0"]["current_mae"] == 1.0
    assert m["per_seed"]["1"]["current_mae"] == 3.0
    assert m["per_seed"]["1"]["trend_agreement"] is None
    assert list(m["per_seed"]) == ["0", "1"]
    assert report["fidelity"]["m"]["total_bias"] == 2.0  # (1 + 3) / 2


def test_seed_keys_are_sorted_with_the_unseeded_first():
    s = study([[10] * 5], {"m": {2: [[10] * 5], None: [[10] * 5], 0: [[10] * 5]}})
    assert list(lc8_report(s, resamples=0)["coders"]["m"]["per_seed"]) == ["none", "0", "2"]


def test_a_coder_with_no_usable_values_has_undefined_metrics():
    s = study([[10, 12, 14, 16, 18]], {"silent": {None: [[NAN] * 5]}}, reference_items=[[[1] * 8] * 5])
    report = lc8_report(s, resamples=20)
    m = report["coders"]["silent"]
    assert (m["current_mae"], m["change_mae"], m["direction_accuracy"], m["trend_agreement"]) == (None,) * 4
    assert (m["n_trajectories"], m["n_large_changes"]) == (0, 0)
    assert m["ci"]["current_mae"] == [None, None]
    assert {report["fidelity"]["silent"][k] for k in FIGURES} == {None}
    assert {report["fidelity"]["silent"][k] for k in COUNTS} == {0}
    assert report["ranking"] == {"by_current_mae": [], "by_change_mae": [], "by_direction_accuracy": [],
                                 "reversals": []}


def test_predictions_are_used_exactly_as_floats():
    # pred 10.25 vs 10 on every session: MAE 0.25, nothing rounded
    m = lc8_report(study([[10] * 5], {"m": {0: [[10.25] * 5]}}), resamples=0)["coders"]["m"]
    assert m["current_mae"] == 0.25


# --- fidelity -------------------------------------------------------------------------------------------------------


def test_fidelity_bias_screening_and_severe_tail_on_a_hand_example():
    # pairs (pred, ref): (10,10) (10,9) (14,15) (17,16) (4,4) (18,20) (12,12) (9,8) (9,10); row 2 session 2 missing
    # pred - ref: 0 +1 -1 +1 0 -2 0 +1 -1 -> bias -1/9
    # screening (>= 10): pred + + + + - + + - -; ref + - + + - + + - + -> 7/9 agree ((10,9) and (9,10) disagree:
    #   exactly 10 screens positive on either side)
    # severe tail (ref > 15): ref 15 excluded, 16 (err 1) and 20 (err 2) included -> 1.5
    ref = [[10, 9, 15, 16, 4], [20, 0, 12, 8, 10]]
    pred = [[10, 10, 14, 17, 4], [18, NAN, 12, 9, 9]]
    f = lc8_report(study(ref, {"m": {None: pred}}), resamples=0)["fidelity"]["m"]
    assert f["total_bias"] == pytest.approx(-1 / 9)
    assert f["screening_agreement"] == pytest.approx(7 / 9)
    assert f["severe_tail_mae"] == 1.5
    assert f["item_exact"] is None  # no items on either side
    assert f["item_mae"] is None


def test_severe_tail_is_undefined_without_a_reference_above_fifteen():
    f = lc8_report(study([[15, 15, 15, 1, 2]], {"m": {None: [[20, 20, 20, 1, 2]]}}), resamples=0)["fidelity"]["m"]
    assert f["severe_tail_mae"] is None


@pytest.mark.parametrize(
    ("ref", "pred", "pearson", "spearman"),
    [
        # x = ref (1, 2, 3), y = pred (1, 3, 2): means 2, 2; sxy = 1, sxx = syy = 2 -> 0.5; ranks equal the values
        ([1, 2, 3, NAN, NAN], [1, 3, 2, 7, 7], 0.5, 0.5),
        ([1, 2, 3, 4, 5], [2, 4, 6, 8, 10], 1.0, 1.0),
        ([1, 2, 3, 4, 5], [5, 4, 3, 2, 1], -1.0, -1.0),
        # a tie in the predictions: ranks (1.5, 1.5, 3.5, 3.5) vs (1, 2, 3, 4): sxy 4, sxx 4, syy 5 -> 4 / sqrt(20);
        # Pearson on the values: x (1, 1, 2, 2) centred +-0.5, y centred (-1.5, -0.5, 0.5, 1.5): 2 / sqrt(1 * 5)
        ([1, 2, 3, 4, NAN], [1, 1, 2, 2, 0], 2 / math.sqrt(5), 4 / math.sqrt(20)),
        ([1, 2, 3, 4, 5], [7, 7, 7, 7, 7], None, None),  # constant predictions
        ([1, NAN, NAN, NAN, NAN], [1, 2, 3, 4, 5], None, None),  # one pair
    ],
)
def test_pearson_and_spearman_of_totals(ref, pred, pearson, spearman):
    f = lc8_report(study([ref], {"m": {None: [pred]}}), resamples=0)["fidelity"]["m"]
    assert f["pearson"] == (None if pearson is None else pytest.approx(pearson))
    assert f["spearman"] == (None if spearman is None else pytest.approx(spearman))


def test_item_exact_match_and_item_mae_over_items_both_have():
    # two items per session for brevity; pairs (pred, ref) where both exist:
    # s1 (1,1) (3,2); s2 (0,0) (1,0); s3 (3,3) (3,3); s4 none (each side misses the other's item); s5 (2,2)
    # -> 7 pairs, 5 exact, |errors| 1 + 1 = 2 -> exact 5/7, MAE 2/7
    ref_items = [[[1, 2], [0, 0], [3, 3], [NAN, 1], [2, 2]]]
    pred_items = [[[1, 3], [0, 1], [3, 3], [2, NAN], [NAN, 2]]]
    s = study(
        [[3, 0, 6, NAN, 4]],
        {"rater": {None: [[4, 1, 6, NAN, NAN]], "items": {None: pred_items}}, "method": {0: [[3, 0, 6, 1, 4]]}},
        reference_items=ref_items,
    )
    f = lc8_report(s, resamples=0)["fidelity"]
    assert f["rater"]["item_exact"] == pytest.approx(5 / 7)
    assert f["rater"]["item_mae"] == pytest.approx(2 / 7)
    assert f["rater"]["n_item_sessions"] == 4  # s1, s2, s3, s5
    assert f["rater"]["n_sessions"] == 3  # the rater's totals: s1, s2, s3
    assert f["method"]["item_exact"] is None  # no items from this coder
    assert f["method"]["item_mae"] is None
    assert (f["method"]["n_sessions"], f["method"]["n_item_sessions"]) == (4, 0)  # ref s4 missing


def test_a_method_is_measured_on_the_items_it_sent_seed_by_seed():
    # two items per session; reference items s1 (1,2) s2 (0,0) s3 (3,3) s4 (2,1) s5 (2,2) -> totals 3 0 6 3 4
    # seed 0 items on s1, s2 only: (1,1) (2,2) | (1,0) (0,0) -> 4 cells, 3 exact, |errors| 1 -> exact 3/4, MAE 1/4
    # seed 1 items on s4 (both) and s5 (first item only): (2,2) (2,1) | (3,2) -> 3 cells, 1 exact, |errors| 0+1+1
    #   -> exact 1/3, MAE 2/3
    # seed 2 sent no items: left out of the item means
    # item exact = (3/4 + 1/3) / 2 = 13/24; item MAE = (1/4 + 2/3) / 2 = 11/24; item sessions s1 s2 s4 s5 = 4
    # totals: seed 0 pred - ref 0 +1 0 0 0 -> bias 0.2; seed 1 +1 0 0 0 +1 -> 0.4; seed 2 0 -> mean 0.2
    ref_items = [[[1, 2], [0, 0], [3, 3], [2, 1], [2, 2]]]
    gap = [NAN, NAN]
    s = study(
        [[3, 0, 6, 3, 4]],
        {
            "m": {
                0: [[3, 1, 6, 3, 4]],
                1: [[4, 0, 6, 3, 5]],
                2: [[3, 0, 6, 3, 4]],
                "items": {0: [[[1, 2], [1, 0], gap, gap, gap]], 1: [[gap, gap, gap, [2, 2], [3, NAN]]]},
            },
            "no-items": {None: [[3, 0, 6, 3, 4]]},
        },
        reference_items=ref_items,
        methods=("m", "no-items"),
    )
    f = lc8_report(s, resamples=0)["fidelity"]
    assert f["m"]["item_exact"] == pytest.approx(13 / 24)
    assert f["m"]["item_mae"] == pytest.approx(11 / 24)
    assert f["m"]["total_bias"] == pytest.approx(0.2)
    assert (f["m"]["n_sessions"], f["m"]["n_item_sessions"], f["m"]["n_severe_sessions"]) == (5, 4, 0)
    assert f["m"]["severe_tail_mae"] is None  # no reference total above 15
    assert (f["no-items"]["item_exact"], f["no-items"]["item_mae"], f["no-items"]["n_item_sessions"]) == (None, None, 0)


def test_fidelity_counts_the_severe_sessions_any_seed_scored():
    # ref 16 and 20 are above 15 (15 is not); seed 0 scores s1 (16) and s2 (15), seed 1 scores s2 and s3 (20)
    # -> severe sessions s1 and s3: 2; sessions with both totals s1 s2 s3: 3
    # severe-tail MAE: seed 0 |17 - 16| = 1, seed 1 |18 - 20| = 2 -> mean 1.5
    s = study([[16, 15, 20, NAN, NAN]], {"m": {0: [[17, 15, NAN, 1, 1]], 1: [[NAN, 15, 18, 1, 1]]}})
    f = lc8_report(s, resamples=0)["fidelity"]["m"]
    assert (f["n_sessions"], f["n_item_sessions"], f["n_severe_sessions"]) == (3, 0, 2)
    assert f["severe_tail_mae"] == 1.5


# --- ranking --------------------------------------------------------------------------------------------------------


def test_a_lower_current_mae_with_a_worse_direction_is_no_reversal():
    # ref [10, 15, 10, 15, 10]: four large changes +5 -5 +5 -5
    # A [10, 14, 14, 14, 10]: current |errors| 0 1 4 1 0 -> 1.2; changes +4 0 0 -4, |change errors| 1 5 5 1 -> 3.0;
    #   directions right, wrong (0), wrong (0), right -> 2/4 = 0.5
    # B [13, 18, 13, 18, 13]: current 3.0; changes exactly the reference's -> change MAE 0.0; direction 1.0
    # C = ref: 0.0, 0.0 and 1.0
    # A beats B on current MAE only: by change MAE B and C (tie at 0.0, by name) before A, by direction too -> no
    # reversal (the ranking by current MAE plays no part in them)
    s = study(
        [[10, 15, 10, 15, 10]],
        {"B": {0: [[13, 18, 13, 18, 13]]}, "A": {0: [[10, 14, 14, 14, 10]]}, "C": {0: [[10, 15, 10, 15, 10]]}},
    )
    report = lc8_report(s, resamples=0)
    assert report["coders"]["A"]["current_mae"] == pytest.approx(1.2)
    assert report["coders"]["A"]["change_mae"] == 3.0
    assert report["ranking"] == {
        "by_current_mae": ["C", "A", "B"],
        "by_change_mae": ["B", "C", "A"],
        "by_direction_accuracy": ["B", "C", "A"],
        "reversals": [],
    }


# ref [10, 15, 10, 15, 10] (changes +5 -5 +5 -5, all large), three methods and a rater, one trajectory:
#        series                 current |errors|  -> MAE   changes        |change errors| -> MAE  right   -> direction
# A      [14, 19, 14, 14, 10]   4 4 4 1 0         13/5 2.6 +5 -5  0 -4    0 0 5 1         6/4 1.5  y y n y 3/4 0.75
# B      [13, 16, 13, 16, 13]   3 1 3 1 3         11/5 2.2 +3 -3 +3 -3    2 2 2 2         8/4 2.0  y y y y 4/4 1.0
# C      [10, 12, 12, 12, 10]   0 3 2 3 0          8/5 1.6 +2  0  0 -2    3 5 5 3        16/4 4.0  y n n y 2/4 0.5
# rater  [10, 15, 10, 10, 5]    0 0 0 5 5         10/5 2.0 +5 -5  0 -5    0 0 5 0         5/4 1.25 y y n y 3/4 0.75
# (a predicted change of 0 on a large change is wrong.) Among the methods: by change MAE A B C, by direction B A C:
# A before B by change MAE, B before A by direction -> the one reversal [A, B]; C is last on both. By current MAE
# (C B A) C would be before B and A with the worse direction: the pairs [C, B] and [C, A], which are no reversals.
REVERSAL_REFERENCE = [[10, 15, 10, 15, 10]]
REVERSAL_CODERS = {
    "A": [[14, 19, 14, 14, 10]],
    "B": [[13, 16, 13, 16, 13]],
    "C": [[10, 12, 12, 12, 10]],
    "rater": [[10, 15, 10, 10, 5]],
}


def _reversal_study(methods):
    coders = {name: {(None if name == "rater" else 0): rows} for name, rows in REVERSAL_CODERS.items()}
    return study(REVERSAL_REFERENCE, coders, methods=methods)


def test_the_reversal_is_change_mae_against_direction_accuracy_worked_by_hand():
    report = lc8_report(_reversal_study(("A", "B", "C")), resamples=0)
    figures = {n: (c["current_mae"], c["change_mae"], c["direction_accuracy"]) for n, c in report["coders"].items()}
    assert figures == {
        "A": (pytest.approx(2.6), 1.5, 0.75),
        "B": (pytest.approx(2.2), 2.0, 1.0),
        "C": (pytest.approx(1.6), 4.0, 0.5),
        "rater": (2.0, 1.25, 0.75),
    }
    assert report["ranking"] == {
        "by_current_mae": ["C", "B", "A"],
        "by_change_mae": ["A", "B", "C"],
        "by_direction_accuracy": ["B", "A", "C"],
        "reversals": [["A", "B"]],
    }


def test_only_the_methods_are_ranked():
    # the rater (change MAE 1.25 < B's 2.0, direction 0.75 < B's 1.0) would be reversed with B, were it a method;
    # with A it ties on direction (0.75): no reversal (a strict difference on both is needed)
    everyone = lc8_report(_reversal_study(None), resamples=0)["ranking"]
    assert everyone == {
        "by_current_mae": ["C", "rater", "B", "A"],
        "by_change_mae": ["rater", "A", "B", "C"],
        "by_direction_accuracy": ["B", "A", "rater", "C"],
        "reversals": [["rater", "B"], ["A", "B"]],
    }
    nobody = lc8_report(_reversal_study(()), resamples=0)["ranking"]
    assert nobody == {"by_current_mae": [], "by_change_mae": [], "by_direction_accuracy": [], "reversals": []}


# --- the report as a whole and bad input ----------------------------------------------------------------------------


def test_report_is_json_ready_with_exactly_the_spec_keys():
    s = study([[10, 15, 11, 11, 6], [8, 8, 8, 8, 8]], {"m": {0: [[12, 14, 14, 10, 6], [8, 9, 9, 9, 9]]}})
    report = lc8_report(s, resamples=50, seed=3)
    assert json.loads(json.dumps(report)) == report
    assert set(report) == {"coders", "reference_types", "fidelity", "ranking", "resamples", "seed"}
    assert (report["resamples"], report["seed"]) == (50, 3)
    assert set(report["coders"]["m"]) == {
        "current_mae",
        "change_mae",
        "direction_accuracy",
        "trend_agreement",
        "n_trajectories",
        "n_large_changes",
        "mae_by_type",
        "ci",
        "ci_trajectories",
        "ci_resamples",
        "n_seeds",
        "per_seed",
    }
    assert set(report["fidelity"]["m"]) == {
        "item_exact",
        "item_mae",
        "total_bias",
        "pearson",
        "spearman",
        "screening_agreement",
        "severe_tail_mae",
        "n_sessions",
        "n_item_sessions",
        "n_severe_sessions",
    }
    assert set(report["ranking"]) == {"by_current_mae", "by_change_mae", "by_direction_accuracy", "reversals"}
    low, high = report["coders"]["m"]["ci"]["current_mae"]
    assert low <= report["coders"]["m"]["current_mae"] <= high


def test_rules_from_the_schema_block():
    block = {"items": ["PHQ1"], "total": "PHQ_TOTAL", "sessions": 4, "large_change": 3, "screening_cutoff": 8}
    assert Lc8Rules.from_block(block) == Lc8Rules(sessions=4, large_change=3.0, screening_cutoff=8.0, severe_above=15)


@pytest.mark.parametrize(
    ("reference", "coders", "message"),
    [
        ([[1, 2, 3, 4]], {"m": {0: [[1, 2, 3, 4]]}}, r"reference: expected shape \(1, 5\)"),
        ([[1, 2, 3, 4, 5]], {"m": {0: [[1, 2, 3, 4]]}}, r"coder 'm' seed 0 totals: expected shape \(1, 5\)"),
        ([[1, 2, 3, 4, 5]], {"m": {None: [[1, 2, math.inf, 4, 5]]}}, r"coder 'm' seed none totals: infinite"),
        ([[1, 2, 3, 4, 5]], {"m": {}}, r"coder 'm': no seeds"),
    ],
)
def test_bad_input_is_refused_with_a_specific_error(reference, coders, message):
    with pytest.raises(ValueError, match=message):
        lc8_report(study(reference, coders), resamples=0)


def test_a_method_that_is_not_a_coder_is_refused():
    with pytest.raises(ValueError, match=r"methods: \['ghost'\] are not coders"):
        lc8_report(study([[1, 2, 3, 4, 5]], {"m": {0: [[1, 2, 3, 4, 5]]}}, methods=("m", "ghost")), resamples=0)


def test_items_of_the_wrong_shape_are_refused():
    s = study(
        [[1, 2, 3, 4, 5]],
        {"m": {0: [[1, 2, 3, 4, 5]], "items": {0: [[[1, 1]] * 5]}}},
        reference_items=[[[1, 1, 1]] * 5],
    )
    with pytest.raises(ValueError, match=r"coder 'm' seed 0 items: expected shape \(1, 5, 3\)"):
        lc8_report(s, resamples=0)


def test_negative_resamples_are_refused():
    with pytest.raises(ValueError, match="resamples"):
        lc8_report(study([[1, 2, 3, 4, 5]], {"m": {0: [[1, 2, 3, 4, 5]]}}), resamples=-1)


def test_duplicate_keys_and_items_without_totals_are_refused():
    one = np.array([[1.0, 2, 3, 4, 5]])
    with pytest.raises(ValueError, match="keys must be unique"):
        lc8_report(Lc8Study(("a", "a"), np.vstack([one, one]), None, {}), resamples=0)
    labels = CoderLabels(totals={0: one}, items={1: np.ones((1, 5, 8))})
    with pytest.raises(ValueError, match=r"coder 'm': items for seeds without totals: \['1'\]"):
        lc8_report(Lc8Study(("a",), one, None, {"m": labels}), resamples=0)


def test_a_study_without_coders_reports_the_reference_types_only():
    report = lc8_report(Lc8Study(("a",), np.array([[10.0, 8, 7, 6, 5]]), None, {}), resamples=10)
    assert report["coders"] == {} and report["fidelity"] == {}
    assert report["reference_types"] == {"improving": 1, "worsening": 0, "fluctuating": 0, "stable": 0}
    assert report["ranking"] == {"by_current_mae": [], "by_change_mae": [], "by_direction_accuracy": [],
                                 "reversals": []}


@pytest.mark.parametrize("n_trajectories", [3, 12])
def test_intervals_over_few_trajectories_are_counted_and_warned_of(n_trajectories: int):
    """n trajectories [10, 10, 10, 10, 10], but the first alone changes largely ([10, 15, ...]): the coder's
    direction accuracy has a term in one trajectory, so its interval rests on 1 cluster whatever n; with 3
    trajectories the MAEs' rest on 3. Before, nothing counted them nor warned."""
    from lc8.core.section import warning

    ref = [[10, 15, 15, 15, 15]] + [[10, 10, 10, 10, 10]] * (n_trajectories - 1)
    pred = [[10, 14, 15, 15, 15]] + [[10, 11, 10, 10, 10]] * (n_trajectories - 1)
    section = lc8_report(study(ref, {"m": {0: pred}}), resamples=50, seed=1)
    m = section["coders"]["m"]
    assert m["ci_trajectories"] == {"current_mae": n_trajectories, "change_mae": n_trajectories,
                                    "direction_accuracy": 1}
    assert m["ci"]["direction_accuracy"] == [1.0, 1.0]
    # over the resamples that draw the first trajectory alone (the figure undefined in the others), which it counts
    drew_first = int((trajectory_draws(n_trajectories, 50, 1) == 0).any(axis=1).sum())
    assert drew_first < 50
    assert m["ci_resamples"] == {"current_mae": 50, "change_mae": 50, "direction_accuracy": drew_first}
    from lc8.charts import coders_table  # the LongCounsel-8 page's table names it where it shows the interval

    assert coders_table({"lc8": section}, None).caption.endswith(
        f"Intervals on fewer than the run's 50 resamples (the figure undefined in the others, which are left out): "
        f"m direction_accuracy on {drew_first}.")
    figures = ("direction_accuracy (1 trajectory), current_mae, change_mae (3 trajectories)" if n_trajectories == 3
               else "direction_accuracy (1 trajectory)")  # the fewest first
    assert warning(section) == (
        f"The LongCounsel-8 intervals (coders' ci) rest on fewer than 10 trajectories for m on {figures}: each "
        "resample draws every trajectory, but only those carry the figure, so these intervals say next to nothing "
        "(with fewer than 10 clusters an interval covers well below its level).")
    assert warning(lc8_report(study(ref, {"m": {0: pred}}), resamples=0)) is None  # no interval, nothing to say
    del m["ci_trajectories"]  # a report stored before the count
    assert warning(section) is None
