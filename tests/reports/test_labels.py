"""The dashboards' display names (reports/labels.py): human headers that keep their report keys, a value and its
interval or band in one column, a study's codes with their names. Plain Python, no database."""

from __future__ import annotations

import pytest

from reports import charts, labels
from reports.labels import Cell, Header


def test_a_value_and_its_interval_are_one_column_whose_header_names_all_three_keys():
    headers, rows = labels.shown_table(["model", "D", "D_ci_low", "D_ci_high", "n_responses"],
                                       [["GPT", 0.45, 0.41, 0.48, 12]], {(0, 1): "▲"}, {"D": "Directiveness"})
    assert headers == [Header("Model", ("model",)), Header("Directiveness (D)", ("D", "D_ci_low", "D_ci_high")),
                       Header("Responses", ("n_responses",))]
    assert headers[1].title == "Report keys D, D_ci_low, D_ci_high"
    assert rows == [[Cell("GPT"), Cell(0.45, "▲", (0.41, 0.48)), Cell(12)]]


def test_low_and_high_suffixes_make_an_interval_too():
    headers, rows = labels.shown_table(["coder", "current_mae", "current_mae_low", "current_mae_high"],
                                       [["m", 1.0, None, None]], {})
    assert [h.keys for h in headers] == [("coder",), ("current_mae", "current_mae_low", "current_mae_high")]
    assert rows[0][1] == Cell(1.0, "", (None, None))


def test_each_kappa_carries_its_own_band():
    table = charts.reviewer_table({"calibration": {"reviewers": {"r1": {"delta_pp": 5.0, "calibration-1": {
        "exact": 0.5, "bucketed": 0.6, "kappa_user": 0.7, "kappa_response": 0.1, "kappa_flags": None, "bias": 0.0,
        "n_items": 9, "kappa_bands": {"kappa_user": "Substantial", "kappa_response": "Slight"}}}}}},
        charts.Filters())
    headers, rows = labels.shown_table(table.columns, table.rows, table.marks)
    assert [h.label for h in headers] == ["Reviewer", "Round", "Exact agreement", "Bucketed agreement",
                                          "Δ bucketed (pp)", "κ, user-level", "κ, response-level", "κ, flags",
                                          "Bias vs gold", "Items", "Clusters behind the intervals"]
    assert all("_" not in h.label for h in headers)
    assert [(c.value, c.band) for c in rows[0][5:8]] == [(0.7, "Substantial"), (0.1, "Slight"), (None, "")]
    assert {k for h in headers for k in h.keys} == set(table.columns), "every CSV column is on the page"


def test_a_code_column_names_the_code_and_an_unknown_key_reads_as_words():
    headers, rows = labels.shown_table(["field", "n_action", "session_2"], [["crisis", 3, 1.0],
                                                                            ["marker_direction", 1, 2.0],
                                                                            ["other", 0, None]],
                                       {}, {"crisis": "Crisis disclosed"})
    assert [h.label for h in headers] == ["Field", "Action turns", "Session 2"]
    assert [row[0].name for row in rows] == ["Crisis disclosed", labels.VALUE_NAMES["marker_direction"], None]
    assert labels.column_label("n_whatever") == "N whatever"


def test_the_legend_spells_out_the_schemas_clusters_on_the_main_pages_only():
    main = labels.legend("main", {"D": "Directiveness"}, {"U1": "Typicality"})
    assert main.codes == [("D", "Directiveness")] and main.attributes == [("U1", "Typicality")]
    assert "ARI" in dict(main.terms) and "UIRI" in dict(main.terms)
    care = labels.legend("care", {"D": "Directiveness"}, {}, {"SI": "Suicidal thoughts"})
    assert main.values == [] and care.values == [("SI", "Suicidal thoughts")]
    assert care.codes == [] and {"AR", "PR", "LR", "ProdR", "UnprodR", "OmitR"} <= set(dict(care.terms))


def test_a_short_header_keeps_the_columns_name_as_its_full_name_and_tooltip():
    headers, _ = labels.shown_table(["coder", "change_mae", "change_mae_low", "change_mae_high",
                                     "change_mae_ci_trajectories"], [["m", 1.0, 0.5, 1.5, 8]], {})
    assert headers[2] == Header("Traj. behind", ("change_mae_ci_trajectories",),
                                full="Trajectories behind the change MAE interval")  # registered by lc8
    assert headers[2].title == ("Trajectories behind the change MAE interval "
                                "(report key change_mae_ci_trajectories)")
    assert headers[1] == Header("Change MAE", ("change_mae", "change_mae_low", "change_mae_high"))
    assert headers[1].title == "Report keys change_mae, change_mae_low, change_mae_high"


def test_a_short_header_of_an_unnamed_column_or_named_otherwise_is_refused_and_nothing_registered():
    before = (dict(labels.COLUMNS), dict(labels.SHORT_COLUMNS))
    with pytest.raises(ValueError, match="without a name: no_such_key"):
        labels.register_columns({}, {"no_such_key": "No."})
    with pytest.raises(ValueError, match="named otherwise already: change_mae_ci_trajectories"):
        labels.register_columns({"a_new_key": "A new key"}, {"change_mae_ci_trajectories": "Other"})
    assert before == (labels.COLUMNS, labels.SHORT_COLUMNS)
