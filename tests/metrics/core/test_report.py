"""build_report as a whole: the contract of docs/metrics.md#report-keys, parity with the naive loops, edge cases, bad
input, properties."""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metrics.core.naive import naive_ari, naive_calibration
from metrics.core.report import AttributeSpec, JudgmentTable, ReportParams, build_report
from metrics.core.synthetic import DEFAULT_SCHEMA, DEFAULT_SUBCATEGORIES, SyntheticStudy, generate

from ._tables import judgment_table

SMALL = {
    "single_turn_conversations": 6,
    "multi_turn_conversations": 3,
    "multi_turn_turns": 12,
    "calibration_turns": 5,
    "reviewers": 5,
    "main_coders": 4,
}


@pytest.fixture(scope="module")
def study() -> SyntheticStudy:
    return generate(DEFAULT_SCHEMA, subcategory_attribute=DEFAULT_SUBCATEGORIES, main_overlap=0.5, seed=11, **SMALL)


@pytest.fixture(scope="module")
def report(study: SyntheticStudy) -> dict:
    return build_report(
        attributes=DEFAULT_SCHEMA,
        judgments=study.judgments,
        spans=study.spans,
        response_texts=study.response_texts,
        conversation_kinds=study.conversation_kinds,
        subcategory_attribute=DEFAULT_SUBCATEGORIES,
        params=ReportParams(bootstrap=60, seed=3),
    )


def _take(table: JudgmentTable, rows: np.ndarray) -> JudgmentTable:
    return JudgmentTable(**{f: np.asarray(getattr(table, f))[rows] for f in table.__dataclass_fields__})


def test_spec_section_7_keys_and_shapes(report: dict) -> None:
    json.dumps(report, allow_nan=False)
    cal, ind = report["calibration"], report["indices"]
    for reviewer, rounds in cal["reviewers"].items():
        assert "delta_pp" in rounds
        for name in ("calibration-1", "calibration-2"):
            entry = rounds[name]
            for key in (
                "exact",
                "bucketed",
                "by_group",
                "kappa_user",
                "kappa_response",
                "kappa_flags",
                "bias",
                "n_items",
            ):
                assert key in entry, (reviewer, name, key)
            assert set(entry["by_group"]) == {"user", "response", "flag"}
    for name in ("calibration-1", "calibration-2"):
        assert all(a < b for a, b in (pair.split("|") for pair in cal["pairwise"][name]))
        assert set(cal["pairwise_mean"][name]) == {"exact", "bucketed"}
        assert name in cal["gold_in_plurality"]
    assert set(cal["bootstrap"]) >= {"resamples", "seed", "top_k"}
    assert set(cal["bootstrap"]["top_k"]) == {"4", "5", "6"}
    assert set(ind["uiri"]) >= {"mean", "bands", "by_dataset"}
    assert set(ind["uiri"]["bands"]) == {"low", "medium", "high"}
    models = ["Claude", "GPT", "Gemini", "Llama", "Qwen"]
    assert list(ind["flags"]) == models and set(ind["flags"]["GPT"]) == {"F1", "F2", "F3", "F4", "F5"}
    assert list(ind["ari"]["GPT"]) == ["D", "E", "R", "F", "ARI", "n_responses"]
    risky = {"AUR", "TD", "FIX", "REC", "EMP", "LMT", "ME", "TN", "QOC", "SEN", "F1", "F2", "F3", "F4", "F5"}
    assert set(ind["attribute_risk"]["GPT"]) == risky
    assert set(ind["fingerprint"]["GPT"]) == risky


# a cut-down schema keeps the naive oracle (one scikit-learn call per reviewer, attribute and resample) fast;
# it still has every group and every cluster, so ARI is defined
# U2 (three labels) is made nominal: its κ with gold is then Cohen's unweighted κ on both sides (issue 15)
PARITY_SCHEMA = tuple(dataclasses.replace(a, level="nominal") if a.code == "U2" else a
                      for a in DEFAULT_SCHEMA if a.code in {"U1", "U2", "U3", "AUR", "EMP", "TN", "F1", "F2"})
PARITY_PARAMS = ReportParams(bootstrap=16, seed=5)


@pytest.fixture(scope="module")
def parity() -> tuple[SyntheticStudy, dict]:
    study = generate(PARITY_SCHEMA, main_overlap=0.5, seed=21, **SMALL)
    return study, build_report(attributes=PARITY_SCHEMA, judgments=study.judgments, params=PARITY_PARAMS)


def _interval(interval: tuple[float | None, float | None, int]) -> dict:
    """The report's interval of the naive loops' (low, high, resamples where the statistic is defined)."""
    low, high, used = interval
    return {
        "low": None if low is None else pytest.approx(low, abs=1e-12),
        "high": None if high is None else pytest.approx(high, abs=1e-12),
        "n_resamples": used,
    }


def test_calibration_matches_the_naive_loops_point_shares_and_intervals(parity: tuple[SyntheticStudy, dict]) -> None:
    study, report = parity
    for name in ("calibration-1", "calibration-2"):
        naive = naive_calibration(PARITY_SCHEMA, study.judgments, name, resamples=16, seed=5)
        ci = report["calibration"]["agreement_ci"][name]
        assert sorted(naive["point"]) == sorted(ci)
        for reviewer, point in naive["point"].items():
            entry = report["calibration"]["reviewers"][reviewer][name]
            assert entry["n_clusters"] == naive["clusters"][reviewer]  # the turns the reviewer's intervals rest on
            assert entry["exact"] == pytest.approx(point["exact"], abs=1e-12)
            assert entry["bucketed"] == pytest.approx(point["bucketed"], abs=1e-12)
            for metric in ("exact", "bucketed"):
                assert ci[reviewer][metric] == _interval(naive["intervals"][reviewer][metric])
            for group, key in (("user", "kappa_user"), ("response", "kappa_response"), ("flag", "kappa_flags")):
                assert entry[key] == pytest.approx(point[f"kappa:{group}"], abs=1e-12)
                assert ci[reviewer][key] == _interval(naive["intervals"][reviewer][f"kappa:{group}"])
        if name == "calibration-2":
            for k in (4, 5, 6):
                assert report["calibration"]["bootstrap"]["top_k"][str(k)] == naive["shares"][k]


def test_ari_table_and_intervals_match_the_naive_loops(parity: tuple[SyntheticStudy, dict]) -> None:
    study, report = parity
    naive = naive_ari(PARITY_SCHEMA, study.judgments, panel=None, resamples=16, seed=5)
    assert sorted(naive["point"]) == sorted(report["indices"]["ari"])
    assert report["indices"]["ci"]["n_clusters_by_model"] == naive["clusters"]  # the conversations each model's rest on
    for model, values in naive["point"].items():
        for name, value in values.items():
            assert report["indices"]["ari"][model][name] == pytest.approx(value, abs=1e-12)
            assert report["indices"]["ari_ci"][model][name] == _interval(naive["intervals"][model][name])


# Two datasets that each mix single- and multi-turn conversations, so every split (dataset, kind, dataset x kind)
# is a different set of conversations.
MERGED = {"CounselChat": "A", "CARE-Bench": "A", "PAIR": "B", "HOPE": "B"}


def _merged(study: SyntheticStudy) -> SyntheticStudy:
    def column(values: object) -> np.ndarray:
        return np.array([MERGED[d] for d in np.asarray(values).tolist()], dtype=object)

    return SyntheticStudy(
        judgments=replace(study.judgments, dataset=column(study.judgments.dataset)),
        spans=replace(study.spans, dataset=column(study.spans.dataset)),
        response_texts={(MERGED[d], c, t, m): text for (d, c, t, m), text in study.response_texts.items()},
        conversation_kinds={(MERGED[d], c): kind for (d, c), kind in study.conversation_kinds.items()},
    )


SPLITS = [(None, "single"), (None, "multi"), ("A", None), ("B", None), ("A", "single"), ("A", "multi"),
          ("B", "single"), ("B", "multi")]


def _split(indices: dict, dataset: str | None, kind: str | None, section: str | None = None) -> dict:
    """The entry of a split: indices.by_kind[kind], indices.by_dataset[dataset] or its by_kind[kind] (or the same
    under ``section``, e.g. coupling or spans)."""
    holder = indices if section is None else indices[section]
    if dataset is None:
        return holder["by_kind"][kind]
    entry = holder["by_dataset"][dataset]
    return entry if kind is None else entry["by_kind"][kind]


def _conversations(study: SyntheticStudy, dataset: str | None, kind: str | None) -> set[tuple[str, str]]:
    return {key for key, k in study.conversation_kinds.items() if dataset in (None, key[0]) and kind in (None, k)}


def test_ari_of_each_dataset_and_kind_matches_the_naive_loops_on_the_same_draws() -> None:
    study = _merged(generate(PARITY_SCHEMA, main_overlap=0.5, seed=21, **SMALL))
    report = build_report(attributes=PARITY_SCHEMA, judgments=study.judgments,
                          conversation_kinds=study.conversation_kinds, params=PARITY_PARAMS)
    indices = report["indices"]
    assert sorted(indices["by_dataset"]) == ["A", "B"]
    for dataset, kind in SPLITS:
        entry = _split(indices, dataset, kind)
        only = _conversations(study, dataset, kind)
        naive = naive_ari(PARITY_SCHEMA, study.judgments, panel=None, resamples=16, seed=5, only=only)
        assert naive["point"] and sorted(naive["point"]) == sorted(entry["ari"]) == sorted(entry["ari_ci"])
        assert entry["n_clusters_by_model"] == naive["clusters"], (dataset, kind)
        for model, values in naive["point"].items():
            for name, value in values.items():
                assert entry["ari"][model][name] == pytest.approx(value, abs=1e-12), (dataset, kind, model, name)
                assert entry["ari_ci"][model][name] == _interval(naive["intervals"][model][name]), (dataset, kind)
    # The splits' intervals differ from the study's: they are not a copy of the overall CIs
    assert indices["by_dataset"]["A"]["ari_ci"] != indices["ari_ci"]


def _alone(study: SyntheticStudy, conversations: set[tuple[str, str]], **kwargs: object) -> dict:
    """The report of the given conversations only (the other rows removed)."""
    def rows(table: object) -> np.ndarray:
        keys = zip(np.asarray(table.dataset).tolist(), np.asarray(table.conversation).tolist(), strict=True)
        return np.array([key in conversations for key in keys], dtype=bool)

    judgments, spans = study.judgments, study.spans
    keep_j, keep_s = rows(judgments), rows(spans)
    return build_report(
        attributes=DEFAULT_SCHEMA,
        judgments=_take(judgments, np.flatnonzero(keep_j)),
        spans=type(spans)(**{f: np.asarray(getattr(spans, f))[keep_s] for f in spans.__dataclass_fields__}),
        response_texts=study.response_texts, conversation_kinds=study.conversation_kinds,
        subcategory_attribute=DEFAULT_SUBCATEGORIES, **kwargs,
    )


@pytest.mark.parametrize(("dataset", "kind"), SPLITS)
def test_a_split_has_the_figures_of_its_conversations_alone(study: SyntheticStudy, dataset: str | None,
                                                           kind: str | None) -> None:
    merged = _merged(study)
    params = ReportParams(bootstrap=0, seed=3)
    report = build_report(
        attributes=DEFAULT_SCHEMA, judgments=merged.judgments, spans=merged.spans,
        response_texts=merged.response_texts, conversation_kinds=merged.conversation_kinds,
        subcategory_attribute=DEFAULT_SUBCATEGORIES, params=params,
    )["indices"]
    alone = _alone(merged, _conversations(merged, dataset, kind), params=params)["indices"]
    assert alone["ari"], "the split must have responses"
    entry = _split(report, dataset, kind)
    for key in ("flags", "ari", "attribute_risk", "fingerprint"):
        assert entry[key] == alone[key], key  # the same responses in the same order: the same floats
    for section, keys in (("coupling", ("raw", "risk")), ("spans", ("evidence", "ratios"))):
        split = _split(report, dataset, kind, section)
        for key in keys:
            assert split[key] == alone[section][key], (section, key)


def test_same_seed_same_report_other_seed_other_bootstrap(study: SyntheticStudy, report: dict) -> None:
    kwargs = {
        "attributes": DEFAULT_SCHEMA,
        "judgments": study.judgments,
        "spans": study.spans,
        "response_texts": study.response_texts,
        "conversation_kinds": study.conversation_kinds,
        "subcategory_attribute": DEFAULT_SUBCATEGORIES,
    }
    again = build_report(**kwargs, params=ReportParams(bootstrap=60, seed=3))
    assert json.dumps(again, sort_keys=True) == json.dumps(report, sort_keys=True)
    other = build_report(**kwargs, params=ReportParams(bootstrap=60, seed=4))
    assert other["calibration"]["agreement_ci"] != report["calibration"]["agreement_ci"]
    assert other["calibration"]["reviewers"] == report["calibration"]["reviewers"]


def _close(a: object, b: object, path: str = "") -> None:
    if isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b), path
        for k in a:
            _close(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _close(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and isinstance(b, float):
        assert a == pytest.approx(b, abs=1e-9), path
    else:
        assert a == b, path


@settings(database=None, max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2**32 - 1))
def test_row_order_does_not_change_the_report(study: SyntheticStudy, report: dict, permutation_seed: int) -> None:
    order = np.random.default_rng(permutation_seed).permutation(len(study.judgments))
    span_order = np.random.default_rng(permutation_seed + 1).permutation(len(study.spans))
    spans = type(study.spans)(
        **{f: np.asarray(getattr(study.spans, f))[span_order] for f in study.spans.__dataclass_fields__}
    )
    shuffled = build_report(
        attributes=DEFAULT_SCHEMA,
        judgments=_take(study.judgments, order),
        spans=spans,
        response_texts=study.response_texts,
        conversation_kinds=study.conversation_kinds,
        subcategory_attribute=DEFAULT_SUBCATEGORIES,
        params=ReportParams(bootstrap=60, seed=3),
    )
    _close(shuffled, report)


def _walk_numbers(obj: object, path: str = ""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _walk_numbers(v, f"{path}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _walk_numbers(v, f"{path}[{i}]")
    elif isinstance(obj, float):
        yield path, obj


@settings(database=None, max_examples=8, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.0, 1.0))
def test_every_share_and_index_lies_in_unit_interval(seed: int, overlap: float) -> None:
    study = generate(DEFAULT_SCHEMA, main_overlap=overlap, seed=seed, **SMALL)
    report = build_report(attributes=DEFAULT_SCHEMA, judgments=study.judgments, params=ReportParams(bootstrap=20))
    json.dumps(report, allow_nan=False)
    for path, value in _walk_numbers(report):
        assert math.isfinite(value), path
    for reviewer in report["calibration"]["reviewers"].values():
        for name in ("calibration-1", "calibration-2"):
            entry = reviewer[name]
            if entry["exact"] is not None:
                assert 0.0 <= entry["exact"] <= entry["bucketed"] <= 1.0
                for value in entry["by_group"].values():
                    assert value is None or 0.0 <= value <= 1.0
    for values in report["indices"]["ari"].values():
        for name in ("D", "E", "R", "F", "ARI"):
            assert values[name] is None or 0.0 <= values[name] <= 1.0
    uiri = report["indices"]["uiri"]
    assert 0.0 <= uiri["mean"] <= 1.0
    assert sum(uiri["bands"].values()) == pytest.approx(1.0)
    for shares in report["calibration"]["bootstrap"]["top_k"].values():
        assert all(0.0 <= s <= 1.0 for s in shares.values())


def test_empty_input_gives_every_section_empty() -> None:
    report = build_report(attributes=DEFAULT_SCHEMA, judgments=judgment_table([]))
    json.dumps(report, allow_nan=False)
    cal, ind = report["calibration"], report["indices"]
    assert cal["reviewers"] == {} and cal["pairwise"] == {} and cal["pairwise_mean"] == {}
    assert cal["gold_in_plurality"] == {} and cal["bootstrap"]["top_k"] == {"4": {}, "5": {}, "6": {}}
    assert ind["uiri"]["mean"] is None and ind["uiri"]["bands"] == {"low": None, "medium": None, "high": None}
    assert ind["flags"] == {} and ind["ari"] == {} and ind["attribute_risk"] == {} and ind["fingerprint"] == {}
    # the dataset and conversation-kind splits are there, empty
    assert ind["by_dataset"] == {} and ind["coupling"]["by_dataset"] == {} and ind["spans"]["by_dataset"] == {}
    assert ind["by_kind"]["multi"] == {"flags": {}, "ari": {}, "attribute_risk": {}, "fingerprint": {}, "ari_ci": {},
                                        "n_clusters": 0, "n_clusters_by_model": {}}
    assert ind["coupling"]["by_kind"] == {"single": {"raw": {}, "risk": {}}, "multi": {"raw": {}, "risk": {}}}
    assert ind["spans"]["by_kind"]["single"] == {"evidence": {}, "ratios": {}}


def test_a_single_calibration_item() -> None:
    rows = [
        ("calibration-1", "gold", True, "D", "c", 1, "GPT", "F1", 1),
        ("calibration-1", "ann", False, "D", "c", 1, "GPT", "F1", 1),
    ]
    report = build_report(attributes=DEFAULT_SCHEMA, judgments=judgment_table(rows), params=ReportParams(bootstrap=10))
    entry = report["calibration"]["reviewers"]["ann"]["calibration-1"]
    assert entry["exact"] == 1.0 and entry["n_items"] == 1
    assert entry["kappa_flags"] is None and entry["bias"] is None  # one unit, no multi-level item
    assert report["calibration"]["reviewers"]["ann"]["delta_pp"] is None  # a single round measures no change
    assert report["calibration"]["pairwise_mean"]["calibration-1"] == {"exact": None, "bucketed": None}
    assert report["calibration"]["bootstrap"]["top_k"]["4"] == {"ann": 1.0}
    assert report["calibration"]["alpha"]["calibration-1"]["F1"]["alpha"] is None


def test_a_reviewer_without_a_valid_item_has_no_selection_stability() -> None:
    # "ann" and gold share the turn c1; "bob" coded c2 only, which gold did not score: bob has no valid item in the
    # round, so no rank and no top-k share (null), not a share of 0 that reads "never among the best".
    rows = [
        ("calibration-1", "gold", True, "D", "c1", 1, "GPT", "F1", 1),
        ("calibration-1", "ann", False, "D", "c1", 1, "GPT", "F1", 1),
        ("calibration-1", "bob", False, "D", "c2", 1, "GPT", "F1", 0),
    ]
    calibration = build_report(attributes=DEFAULT_SCHEMA, judgments=judgment_table(rows),
                               params=ReportParams(bootstrap=40))["calibration"]
    assert calibration["reviewers"]["bob"]["calibration-1"]["n_items"] == 0
    assert [row["rank"] for row in calibration["panel_ranking"]["ranking"]] == [1, None]
    for shares in calibration["bootstrap"]["top_k"].values():
        assert shares["bob"] is None
        assert 0.0 < shares["ann"] < 1.0  # a resample without c1 leaves ann without a valid item too
    # without gold in the round, nobody has a valid item: every share is null
    no_gold = build_report(attributes=DEFAULT_SCHEMA, judgments=judgment_table(rows[1:]),
                           params=ReportParams(bootstrap=40))["calibration"]
    assert no_gold["bootstrap"]["top_k"] == {k: {"ann": None, "bob": None} for k in ("4", "5", "6")}


def test_a_constant_rater_has_defined_agreement_and_zero_kappa_against_varying_gold() -> None:
    rows = []
    for turn, gold in enumerate([0, 1, 2, 1], start=1):
        rows.append(("calibration-1", "g", True, "D", f"c{turn}", 1, "GPT", "AUR", gold))
        rows.append(("calibration-1", "flat", False, "D", f"c{turn}", 1, "GPT", "AUR", 1))
    entry = build_report(attributes=DEFAULT_SCHEMA, judgments=judgment_table(rows))["calibration"]["reviewers"]
    assert entry["flat"]["calibration-1"]["exact"] == 0.5
    assert entry["flat"]["calibration-1"]["kappa_response"] == 0.0


def test_zero_variance_coupling_cells_are_null_in_json() -> None:
    rows = []
    for turn in range(1, 8):
        rows.append(("main", "x", False, "D", f"c{turn}", 1, "", "U1", turn % 3))
        rows.append(("main", "x", False, "D", f"c{turn}", 1, "GPT", "AUR", 2))  # constant
        rows.append(("main", "x", False, "D", f"c{turn}", 1, "GPT", "TD", (turn * 2) % 3))
    report = build_report(attributes=DEFAULT_SCHEMA, judgments=judgment_table(rows))
    text = json.dumps(report, allow_nan=False)
    assert "NaN" not in text
    cell = report["indices"]["coupling"]["raw"]["GPT"]["U1"]
    assert cell["AUR"]["rho"] is None and cell["AUR"]["q"] is None
    assert cell["TD"]["rho"] is not None
    assert report["indices"]["coupling"]["raw"]["GPT"]["U2"]["TD"]["rho"] is None  # U2 never scored


def test_unusable_rows_are_dropped_and_counted_and_recoding_keeps_the_last() -> None:
    rows = [
        ("calibration-1", "g", True, "D", "c", 1, "GPT", "F1", 1),
        ("calibration-1", "ann", False, "D", "c", 1, "GPT", "F1", 0),
        ("calibration-1", "ann", False, "D", "c", 1, "GPT", "F1", 1),  # re-coded: this one counts
        ("calibration-1", "ann", False, "D", "c", 1, "GPT", "F1", 7),  # off the 0/1 scale
        ("calibration-1", "ann", False, "D", "c", 1, "GPT", "NOPE", 1),  # not in the schema
    ]
    report = build_report(attributes=DEFAULT_SCHEMA, judgments=judgment_table(rows))
    assert report["input"]["dropped"] == {"unknown_attribute": 1, "off_scale": 1, "duplicate": 1}
    assert report["calibration"]["reviewers"]["ann"]["calibration-1"]["exact"] == 1.0


def test_null_and_empty_model_are_the_same_turn_level_unit() -> None:
    table = judgment_table(
        [
            ("calibration-1", "g", True, "D", "c", 1, "", "U1", 2),
            ("calibration-1", "ann", False, "D", "c", 1, "", "U1", 2),
        ]
    )
    table = replace(table, model=np.array([None, "GPT"], dtype=object))  # model is ignored at turn level
    entry = build_report(attributes=DEFAULT_SCHEMA, judgments=table)["calibration"]["reviewers"]["ann"]
    assert entry["calibration-1"]["n_items"] == 1


def test_conversation_level_attributes_are_one_unit_per_conversation() -> None:
    overall = AttributeSpec("OV", "user", None, (0, 1), "nominal", {}, None, False, "conversation")
    rows = [
        ("calibration-1", "g", True, "D", "c", 1, "", "OV", 1),
        ("calibration-1", "ann", False, "D", "c", 3, "", "OV", 1),  # the turn is irrelevant for this unit
    ]
    report = build_report(attributes=(*DEFAULT_SCHEMA, overall), judgments=judgment_table(rows))
    assert report["calibration"]["reviewers"]["ann"]["calibration-1"]["n_items"] == 1


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda a: [*a, a[0]], "duplicate attribute codes"),
        (lambda a: [replace(a[0], scale=(2, 1, 0))], "strictly increasing"),
        (lambda a: [replace(a[5], risk={0: 1.5, 1: 0.5, 2: 0.0})], r"\[0, 1\]"),
        (lambda a: [replace(a[5], risk={0: 1.0})], "cover exactly"),
        (lambda a: [replace(a[0], unit="session")], "unit must be one of"),
        (lambda a: [replace(a[0], level="fuzzy")], "level must be one of"),
        (lambda a: [replace(a[0], bucket={9: 0})], "outside the scale"),
    ],
)
def test_bad_schema_is_refused_with_a_specific_error(change, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build_report(attributes=change(list(DEFAULT_SCHEMA)), judgments=judgment_table([]))


def test_unequal_columns_and_bad_parameters_are_refused() -> None:
    table = judgment_table([("main", "x", False, "D", "c", 1, "", "U1", 1)])
    with pytest.raises(ValueError, match="unequal lengths"):
        build_report(attributes=DEFAULT_SCHEMA, judgments=replace(table, score=np.array([1, 2])))
    for params, message in (
        (ReportParams(ci_level=1.0), "ci_level"),
        (ReportParams(bootstrap=-1), "bootstrap"),
        (ReportParams(top_k=(0,)), "top_k"),
        (ReportParams(ci_resample="item"), "ci_resample"),
        (ReportParams(models="AB"), "models must be a tuple of model slot names"),  # a string is no tuple of names
    ):
        with pytest.raises(ValueError, match=message):
            build_report(attributes=DEFAULT_SCHEMA, judgments=table, params=params)


def test_the_study_model_slots_add_their_key_and_change_no_figure(study: SyntheticStudy, report: dict) -> None:
    """``parameters.models`` echoes the study's model slots; every model coded, the report is the same but for it."""
    models = tuple(report["indices"]["ari"])
    assert len(models) > 1
    with_models = build_report(
        attributes=DEFAULT_SCHEMA, judgments=study.judgments, spans=study.spans, response_texts=study.response_texts,
        conversation_kinds=study.conversation_kinds, subcategory_attribute=DEFAULT_SUBCATEGORIES,
        params=ReportParams(bootstrap=60, seed=3, models=models))
    assert (with_models["parameters"]["models"], report["parameters"]["models"]) == (list(models), [])

    def without_models(made: dict) -> dict:
        return made | {"parameters": {k: v for k, v in made["parameters"].items() if k != "models"}}

    assert without_models(with_models) == without_models(report)


def test_progress_is_reported_from_zero_to_one(study: SyntheticStudy) -> None:
    seen: list[float] = []
    build_report(
        attributes=DEFAULT_SCHEMA,
        judgments=study.judgments,
        params=ReportParams(bootstrap=5),
        progress=lambda fraction, message: seen.append(fraction),
    )
    assert seen[0] == 0.0 and seen[-1] == 1.0 and seen == sorted(seen)


def test_turn_resampling_is_available_for_main_round_intervals(study: SyntheticStudy) -> None:
    by_turn = build_report(
        attributes=DEFAULT_SCHEMA, judgments=study.judgments, params=ReportParams(bootstrap=30, ci_resample="turn")
    )
    assert by_turn["indices"]["ci"]["resample"] == "turn"
    ci = by_turn["indices"]["ari_ci"]["GPT"]["ARI"]
    assert ci["low"] <= by_turn["indices"]["ari"]["GPT"]["ARI"] <= ci["high"]
    for entry in (*by_turn["indices"]["by_dataset"].values(), *by_turn["indices"]["by_kind"].values()):
        ci = entry["ari_ci"]["GPT"]["ARI"]
        assert ci["low"] <= entry["ari"]["GPT"]["ARI"] <= ci["high"]


def test_partial_studies_never_crash_and_stay_strict_json() -> None:
    def run(rows: list[tuple], schema: tuple = DEFAULT_SCHEMA) -> dict:
        report = build_report(attributes=schema, judgments=judgment_table(rows), params=ReportParams(bootstrap=7))
        json.dumps(report, allow_nan=False)
        return report

    gold_only = run([("calibration-1", "g", True, "D", "c", 1, "GPT", "AUR", 1)])
    # no reviewer coded it: an expert-only round (like a reserved gold pool), with no reviewer figures
    assert gold_only["calibration"]["reviewers"] == {} and gold_only["calibration"]["gold_in_plurality"] == {}
    assert gold_only["calibration"]["expert_only_rounds"] == ["calibration-1"]
    assert gold_only["calibration"]["panel_ranking"]["ranking"] == []
    no_gold = run(
        [
            ("calibration-1", "x", False, "D", "c", 1, "GPT", "AUR", 1),
            ("calibration-1", "y", False, "D", "c", 1, "GPT", "AUR", 2),
        ]
    )
    assert no_gold["calibration"]["reviewers"]["x"]["calibration-1"]["exact"] is None  # nothing to compare with
    assert no_gold["calibration"]["pairwise"]["calibration-1"] == {"x|y": {"exact": 0.0, "bucketed": 0.0}}
    responses_only = run([("main", "x", False, "D", "c", 1, "GPT", "AUR", 1)])
    assert responses_only["indices"]["uiri"]["mean"] is None
    assert responses_only["indices"]["ari"]["GPT"] == {
        "D": 0.5, "E": None, "R": None, "F": None, "ARI": None, "n_responses": 1
    }  # fmt: skip
    incomplete_uiri = run([("main", "x", False, "D", "c", 1, "", "U1", 1)])
    assert incomplete_uiri["indices"]["uiri"]["n_turns"] == 0 and incomplete_uiri["indices"]["ari"] == {}
    no_schema = run([("main", "x", False, "D", "c", 1, "GPT", "AUR", 1)], schema=())
    assert no_schema["input"]["dropped"]["unknown_attribute"] == 1


def test_a_null_score_is_an_off_scale_row() -> None:
    table = judgment_table([("main", "x", False, "D", "c", 1, "GPT", "AUR", 1)])
    table = replace(table, score=np.array([None], dtype=object))
    report = build_report(attributes=DEFAULT_SCHEMA, judgments=table)
    assert report["input"]["dropped"]["off_scale"] == 1 and report["indices"]["ari"] == {}
