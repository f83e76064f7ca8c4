"""A warning reads the same from a report as computed and as stored: PostgreSQL's jsonb keeps an object's keys
shorter first, then by their bytes, so a stored report's dicts come back in another order than the computation's.
The few-clusters warnings that name several keys (CARE's validation fields, LongCounsel-8's figures, the datasets)
name them in one order whatever order they come in; the stored warnings are the computed ones, and a recompute
from a stored report must say the same (tests/integration/test_scripted_pipeline.py compares the two)."""

from __future__ import annotations

from typing import Any

from care.core import section as care_section
from lc8.core import section as lc8_section
from metrics.core.report_warnings import report_warnings


def as_jsonb(value: Any) -> Any:
    """``value`` with every object's keys in jsonb's order (shorter first, then by bytes)."""
    if isinstance(value, dict):
        return {k: as_jsonb(value[k]) for k in sorted(value, key=lambda k: (len(k.encode()), k.encode()))}
    if isinstance(value, list):
        return [as_jsonb(v) for v in value]
    return value


def test_cares_validation_fields_are_named_in_the_sections_order():
    entry = {"n_histories": 2, "agreement_ci": [0.1, 0.9], "kappa_ci": [None, None]}
    validation = {field: {"a|b": entry} for field in ("crisis", "marker", "marker_direction", "strategy", "horizon")}
    said = care_section._few_histories(validation)
    assert said is not None and "a|b on crisis, marker, marker_direction, strategy, horizon (2 histories)" in said
    assert care_section._few_histories(as_jsonb(validation)) == said


def test_lc8s_figures_are_named_in_the_sections_order():
    coder = {"ci": {"current_mae": [1.0, 2.0], "change_mae": [1.0, 2.0], "direction_accuracy": [0.5, 0.9]},
             "ci_trajectories": {"current_mae": 3, "change_mae": 3, "direction_accuracy": 1}}
    section = {"coders": {"m-alpha": coder}}
    said = lc8_section._few_trajectories(section)
    assert said is not None
    assert "m-alpha on direction_accuracy (1 trajectory), current_mae, change_mae (3 trajectories)" in said
    assert lc8_section._few_trajectories(as_jsonb(section)) == said


def test_the_datasets_are_named_by_name():
    ari = {"GPT": {"ari": 0.5, "n_responses": 3}}
    by_dataset = {name: {"n_clusters": 2, "ari": ari, "ari_ci": {}, "by_kind": {}} for name in ("zeta", "ab", "mid")}
    report = {"indices": {"ci": {"n_clusters": 40, "resamples": 100, "resample": "conversation"}, "ari": ari,
                          "by_kind": {}, "by_dataset": by_dataset}}
    said = [w["message"] for w in report_warnings(report)]
    named = [m for m in said if "dataset" in m]
    assert named and named == [w["message"] for w in report_warnings(as_jsonb(report)) if "dataset" in w["message"]]
    text = " ".join(named)
    assert text.index("dataset ab") < text.index("dataset mid") < text.index("dataset zeta")


def test_the_reviewers_with_few_clusters_are_named_by_name():
    """A round's reviewers whose items with gold lie on few of its turns, named in one order."""
    entry = {"calibration-1": {"bucketed": 0.5, "n_items": 4, "n_clusters": 2}}
    calibration = {"rounds": ["calibration-1"], "reviewers": dict.fromkeys(("zeta", "ab", "mid"), entry),
                   "bootstrap": {"round": "calibration-1", "resamples": 100, "n_turns_by_round": {"calibration-1": 40},
                                 "n_clusters_by_round": {"calibration-1": 40}}}
    said = [w["message"] for w in report_warnings({"calibration": calibration})]
    assert said == [w["message"] for w in report_warnings(as_jsonb({"calibration": calibration}))]
    assert len(said) == 1 and "of ab (2 clusters), mid (2 clusters), zeta (2 clusters) rest on" in said[0]


def test_the_models_with_few_clusters_are_named_by_name():
    """The models whose responses lie in few of the study's conversations, and of a split's, named in one order."""
    ari = {name: {"ARI": 0.5, "n_responses": 3} for name in ("Zeta", "Ab", "Mid")}
    split = {"n_clusters": 20, "n_clusters_by_model": {"Zeta": 3, "Ab": 2, "Mid": 4}, "ari": ari, "ari_ci": {},
             "by_kind": {}}
    report = {"indices": {"ci": {"n_clusters": 40, "n_clusters_by_model": {"Zeta": 3, "Ab": 2, "Mid": 40},
                                 "resamples": 100, "resample": "conversation"}, "ari": ari, "by_kind": {},
                          "by_dataset": {"zz": split, "a": split}}}
    said = [w["message"] for w in report_warnings(report)]
    assert said == [w["message"] for w in report_warnings(as_jsonb(report))]
    assert len(said) == 3
    assert "of models Ab (2 conversations), Zeta (3 conversations) rest on" in said[0]
    # a split names only the models with enough clusters in the whole round: the others are named once, above
    assert said[1].startswith("The main round's intervals over dataset a of model Mid (4 conversations) rest on")
    assert said[2].startswith("The main round's intervals over dataset zz of model Mid (4 conversations) rest on")
