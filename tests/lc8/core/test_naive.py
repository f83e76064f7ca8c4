"""LongCounsel-8: the vectorised report against the slow loop implementation on generated studies (every point
estimate, the fidelity counts and the method ranking with its reversals), the paired trajectory bootstrap (one draw
matrix for every coder and seed), determinism, the generator and a speed smoke."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from lc8.core.naive import naive_interval_resamples, naive_intervals, naive_points, naive_type
from lc8.core.synthetic import synthetic_lc8
from lc8.core.tracking import TYPES, CoderLabels, Lc8Study, lc8_report, trajectory_draws


def assert_close(fast, slow, path="report"):
    """Equal structure; numbers within 1e-9; None exactly where the other side has None."""
    if isinstance(slow, dict):
        assert set(fast) == set(slow), path
        for key in slow:
            assert_close(fast[key], slow[key], f"{path}.{key}")
    elif isinstance(slow, list):
        assert len(fast) == len(slow), path
        for i, (a, b) in enumerate(zip(fast, slow, strict=True)):
            assert_close(a, b, f"{path}[{i}]")
    elif slow is None or fast is None:
        assert fast is None and slow is None, (path, fast, slow)
    else:
        assert fast == pytest.approx(slow, abs=1e-9, rel=1e-9), path


@pytest.fixture(scope="module")
def generated() -> Lc8Study:
    """Several hundred trajectories, three methods x three seeds, two raters with items, ~7 % of sessions NaN
    (reference included), plus one seed of one method with items so a method's item fidelity is measured (and
    averaged over the seeds that sent items)."""
    base = synthetic_lc8(400, missing=0.07, rng_seed=11)
    tracker = base.coders["tracker-biased"]
    items = {1: np.clip(np.nan_to_num(base.reference_items, nan=1.0) + 0.5, 0, 3)}
    coders = {**base.coders, "tracker-biased": CoderLabels(totals=tracker.totals, items=items)}
    return Lc8Study(base.trajectories, base.reference, base.reference_items, coders, base.rules, base.methods)


def test_generated_study_has_what_the_comparison_needs(generated):
    ref = generated.reference
    assert 0.04 < np.isnan(ref).mean() < 0.1
    report = lc8_report(generated, resamples=0)
    assert min(report["reference_types"].values()) >= 30  # every type well represented
    assert {c["n_seeds"] for c in report["coders"].values()} == {1, 3}


def test_point_estimates_equal_the_slow_loops(generated):
    fast = lc8_report(generated, resamples=0)
    slow = naive_points(generated)
    without_ci = {name: {k: v for k, v in entry.items() if k not in ("ci", "ci_resamples")}
                  for name, entry in fast["coders"].items()}
    assert_close(without_ci, slow["coders"], "coders")
    assert fast["reference_types"] == slow["reference_types"]
    assert_close(fast["fidelity"], slow["fidelity"], "fidelity")
    assert fast["fidelity"]["tracker-biased"]["item_exact"] is not None
    assert fast["fidelity"]["tracker-biased"]["n_item_sessions"] > 0
    assert fast["fidelity"]["tracker-direct"]["n_item_sessions"] == 0  # no items: no item figures
    assert fast["fidelity"]["tracker-direct"]["item_exact"] is None
    assert fast["ranking"] == slow["ranking"]
    assert set(fast["ranking"]["by_change_mae"]) == set(generated.methods or ())  # the raters are not ranked
    assert fast["ranking"]["reversals"], "the generated methods show a reversal to compare"


def test_the_ranking_of_every_coder_equals_the_slow_loops(generated):
    # every coder ranked (methods None): more pairs, the raters' among them
    everyone = Lc8Study(generated.trajectories, generated.reference, generated.reference_items, generated.coders,
                        generated.rules)
    fast = lc8_report(everyone, resamples=0)["ranking"]
    assert fast == naive_points(everyone)["ranking"]
    assert len(fast["by_change_mae"]) == len(generated.coders)


def test_intervals_equal_a_loop_over_the_same_draws(generated):
    draws = trajectory_draws(len(generated.trajectories), 60, 9)
    fast = lc8_report(generated, resamples=60, seed=9)
    slow = naive_intervals(generated, draws)
    assert_close({name: entry["ci"] for name, entry in fast["coders"].items()}, slow, "ci")
    # each interval over the draws where its figure is defined, and their number beside it
    used = {name: entry["ci_resamples"] for name, entry in fast["coders"].items()}
    assert used == naive_interval_resamples(generated, draws)
    assert all(0 <= n <= 60 for counts in used.values() for n in counts.values())


def test_intervals_are_at_the_level_asked_for(generated):
    """The intervals are ``metrics.core.bootstrap.percentile_interval``'s at the report's level, as every other
    interval of the report: at 80 % each equals the loop's 10th and 90th percentiles and lies within the 95 % one.
    Before, they were the 2.5th and 97.5th percentiles whatever the level."""
    draws = trajectory_draws(len(generated.trajectories), 60, 9)
    at_80 = {name: entry["ci"] for name, entry in lc8_report(generated, resamples=60, seed=9, level=0.8)["coders"]
             .items()}
    assert_close(at_80, naive_intervals(generated, draws, level=0.8), "ci")
    at_95 = {name: entry["ci"] for name, entry in lc8_report(generated, resamples=60, seed=9)["coders"].items()}
    narrower = [(at_95[name][m][0] <= low <= high <= at_95[name][m][1], low > at_95[name][m][0])
                for name, figures in at_80.items() for m, (low, high) in figures.items() if low is not None]
    assert narrower and all(inside for inside, _ in narrower) and any(moved for _, moved in narrower)
    with pytest.raises(ValueError, match="level must lie strictly between 0 and 1"):
        lc8_report(generated, resamples=60, seed=9, level=1.0)


def test_naive_type_agrees_with_the_vectorised_rule(generated):
    report = lc8_report(generated, resamples=0)
    counts = dict.fromkeys(TYPES, 0)
    for row in generated.reference.tolist():
        kind = naive_type(row, 5)
        if kind is not None:
            counts[kind] += 1
    assert report["reference_types"] == counts


# --- the bootstrap is paired ------------------------------------------------------------------------------------


def _paired_study() -> Lc8Study:
    base = synthetic_lc8(300, methods={"x": (2.5, 0.0, 0.3)}, seeds=(0, 1), raters={}, rng_seed=5)
    x = base.coders["x"].totals
    coders = {
        "x": CoderLabels(totals=x),
        "twin": CoderLabels(totals={seed: v.copy() for seed, v in x.items()}),
        "shifted": CoderLabels(totals={seed: v + 3.0 for seed, v in x.items()}),
    }
    return Lc8Study(base.trajectories, base.reference, None, coders, base.rules)


def test_identical_coders_get_identical_intervals():
    coders = lc8_report(_paired_study(), resamples=300, seed=2)["coders"]
    assert coders["twin"]["ci"] == coders["x"]["ci"]
    assert coders["x"]["ci"]["current_mae"][0] < coders["x"]["ci"]["current_mae"][1]


def test_a_constant_shift_keeps_the_change_and_direction_intervals():
    # changes are differences of adjacent sessions: +3 on every session cancels, so with shared draws every
    # resample gives the same change MAE and direction accuracy; the level (current MAE) moves
    coders = lc8_report(_paired_study(), resamples=300, seed=2)["coders"]
    for metric in ("change_mae", "direction_accuracy"):
        assert coders["shifted"]["ci"][metric] == pytest.approx(coders["x"]["ci"][metric], abs=1e-12)
        assert coders["shifted"][metric] == pytest.approx(coders["x"][metric], abs=1e-12)
    assert coders["shifted"]["ci"]["current_mae"] != pytest.approx(coders["x"]["ci"]["current_mae"])


def test_unpaired_draws_would_not_give_equal_intervals():
    # the same coder under a different draw matrix gets another interval: equality above is due to sharing draws
    s = _paired_study()
    first = lc8_report(s, resamples=300, seed=2)["coders"]["x"]["ci"]
    other = lc8_report(s, resamples=300, seed=3)["coders"]["x"]["ci"]
    assert first["change_mae"] != other["change_mae"]


def test_the_report_is_deterministic_in_its_seed(generated):
    first = lc8_report(generated, resamples=120, seed=4)
    again = lc8_report(generated, resamples=120, seed=4)
    assert first == again


def test_draws_are_one_default_rng_stream():
    n = 37
    draws = trajectory_draws(n, 600, 8)
    rng = np.random.default_rng(8)
    expected = np.vstack([rng.integers(0, n, size=(rows, n)) for rows in (250, 250, 100)])
    assert np.array_equal(draws, expected)
    assert trajectory_draws(0, 5, 8).shape == (5, 0)


def test_seeds_are_averaged_inside_each_draw():
    # two seeds whose predictions differ: the interval of the coder is the interval of the per-draw mean of the
    # seeds, which the loop implementation computes directly
    base = synthetic_lc8(120, methods={"m": (3.0, 1.0, 0.0)}, seeds=(0, 1), raters={}, rng_seed=2)
    draws = trajectory_draws(120, 80, 1)
    fast = lc8_report(base, resamples=80, seed=1)["coders"]["m"]["ci"]
    assert_close(fast, naive_intervals(base, draws)["m"], "ci")
    one_seed = Lc8Study(base.trajectories, base.reference, None, {"m": CoderLabels({0: base.coders["m"].totals[0]})})
    assert lc8_report(one_seed, resamples=80, seed=1)["coders"]["m"]["ci"] != fast


# --- the generator and scale ------------------------------------------------------------------------------------


def test_generator_predictions_are_unrounded_unclipped_floats_and_raters_sum_their_items():
    s = synthetic_lc8(200, rng_seed=1)
    totals = s.coders["tracker-direct"].totals[0]
    assert np.any(totals != np.round(totals))
    assert np.nanmin(np.concatenate([t.ravel() for c in s.coders.values() for t in c.totals.values()])) < 0
    rater = s.coders["clinician-a"]
    items = rater.items[None]
    rated = ~np.isnan(items).any(axis=2)
    assert np.array_equal(rater.totals[None][rated], items.sum(axis=2)[rated])
    assert np.array_equal(s.reference, s.reference_items.sum(axis=2))
    assert set(np.unique(s.reference_items)) <= {0.0, 1.0, 2.0, 3.0}
    again = synthetic_lc8(200, rng_seed=1)
    assert np.array_equal(again.coders["tracker-direct"].totals[2], s.coders["tracker-direct"].totals[2])


def test_generator_refuses_a_lag_outside_its_range():
    with pytest.raises(ValueError, match="lag must be in"):
        synthetic_lc8(10, methods={"m": (1.0, 0.0, 1.0)})


def test_full_scale_report_is_fast_and_shows_the_reversal():
    s = synthetic_lc8()  # 7,749 trajectories x 5 sessions, 3 methods x 3 seeds, 2 raters
    assert s.reference.shape == (7749, 5)
    start = time.perf_counter()
    report = lc8_report(s, resamples=2000, seed=0)
    elapsed = time.perf_counter() - start
    assert elapsed < 30, elapsed  # generous: a few seconds on a laptop
    # lagged: lower change MAE than direct (its noise is smaller), far worse direction accuracy
    assert report["ranking"]["reversals"] == [["tracker-lagged", "tracker-direct"]]
    for entry in report["coders"].values():
        for low, high in entry["ci"].values():
            assert low is not None and high is not None and low <= high
            assert not math.isnan(low)
