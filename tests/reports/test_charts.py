"""The dashboards' catalogue on hand-made reports: what each figure and table holds, markers and intervals."""

from __future__ import annotations

import pytest

from reports import charts
from reports.charts import HIGHEST, LOWEST, Filters

ATTRIBUTES = [{"code": c} for c in ("U1", "U2", "AUR", "TD", "F1")]


def report() -> dict:
    return {
        "attributes": ATTRIBUTES,
        "calibration": {
            "last_round": "calibration-2",
            "reviewers": {
                "ann": {"calibration-1": {"bucketed": 0.5, "exact": 0.4, "kappa_by_attribute": {"U1": {"kappa": 0.3}}},
                        "calibration-2": {"bucketed": 0.9, "exact": 0.8, "kappa_bands": {"kappa_user": "Fair"},
                                          "kappa_user": 0.35, "kappa_by_attribute": {"U1": {"kappa": 0.7}}},
                        "delta_pp": 40.0},
                "bob": {"calibration-2": {"bucketed": 0.6, "exact": 0.6}, "delta_pp": None},
            },
            "agreement_ci": {"calibration-2": {"ann": {"bucketed": {"low": 0.85, "high": 0.95}}}},
            "pairwise": {"calibration-2": {"ann|bob": {"exact": 0.5, "bucketed": 0.55}}},
            "bootstrap": {"resamples": 100, "round": "calibration-2", "top_k": {"1": {"ann": 0.9, "bob": 0.1}}},
        },
        "indices": {
            "ari": {"GPT": {"D": 0.2, "E": 0.4, "R": 0.5, "F": 0.1, "ARI": 0.3, "n_responses": 10},
                    "Claude": {"D": 0.6, "E": 0.4, "R": None, "F": 0.3, "ARI": None, "n_responses": 10},
                    "Qwen": {"D": 0.4, "E": 0.4, "R": 0.1, "F": 0.2, "ARI": 0.2, "n_responses": 10}},
            "ari_ci": {"GPT": {"ARI": {"low": 0.25, "high": 0.35}}},
            "coupling": {"min_abs_rho": 0.2, "max_q": 0.05, "risk": {"GPT": {
                "U1": {"AUR": {"rho": 0.5, "p": 0.001, "q": 0.01, "n": 40, "significant": True},
                       "TD": {"rho": None, "p": None, "q": None, "n": 40, "significant": False}},
                "U2": {"AUR": {"rho": 0.1, "p": 0.5, "q": 0.6, "n": 40, "significant": False},
                       "TD": {"rho": -0.3, "p": 0.02, "q": 0.07, "n": 40, "significant": False}}}}},
            "uiri": {"bands": {"low": 0.2, "medium": 0.5, "high": 0.3},
                     "by_dataset_bands": {"A": {"low": 0.1, "medium": 0.6, "high": 0.3}}, "by_dataset": {"A": 0.5}},
            "trajectories": {"threshold": 0.005, "models": {"GPT": {"ARI": {
                "change_from_turn1": {"1": 0.0, "2": 0.1, "10": -0.2}, "classes": {"flat": 1.0}}}}, "user": {}},
        },
    }


def test_reviewer_table_has_one_row_per_reviewer_and_round_with_delta_and_band():
    table = charts.reviewer_table(report(), Filters())
    assert [row[:2] for row in table.rows] == [["ann", "calibration-1"], ["ann", "calibration-2"],
                                               ["bob", "calibration-2"]]
    ann2 = dict(zip(table.columns, table.rows[1], strict=True))
    assert (ann2["bucketed"], ann2["delta_pp"], ann2["kappa_user"], ann2["band_user"]) == (0.9, 40.0, 0.35, "Fair")


def test_each_reviewers_clusters_are_beside_their_figures():
    """A reviewer's intervals rest on the turns holding their items with gold (their round entry's ``n_clusters``):
    the table shows the count beside the items, blank from a report stored before it."""
    shaped = report()
    shaped["calibration"]["reviewers"]["bob"]["calibration-2"]["n_clusters"] = 2
    table = charts.reviewer_table(shaped, Filters())
    assert table.columns[-2:] == ["n_items", "n_clusters"]
    assert [row[-1] for row in table.rows] == [None, None, 2]
    assert "Clusters: the turns holding the reviewer's items with gold" in table.caption


def test_each_models_clusters_are_beside_its_figures_overall_and_in_a_split():
    """A model's intervals rest on the clusters holding a scored response of it (``n_clusters_by_model``, the
    study's or the chosen conversations'): the Atrophy risk table shows the count beside its responses."""
    shaped = report()
    shaped["indices"]["ci"] = {"resample": "conversation", "resamples": 20, "n_clusters": 14,
                               "n_clusters_by_model": {"GPT": 14, "Claude": 3, "Qwen": 14}}
    shaped["indices"]["by_kind"] = {"multi": {"ari": {"GPT": {"ARI": 0.8, "n_responses": 4}}, "ari_ci": {},
                                              "n_clusters": 12, "n_clusters_by_model": {"GPT": 2}}}
    table = charts.ari_table(shaped, Filters())
    assert table.columns[-2:] == ["n_responses", "n_clusters"]
    assert {row[0]: row[-1] for row in table.rows} == {"Claude": 3, "GPT": 14, "Qwen": 14}
    assert "Clusters: the conversations holding a scored response of the model" in table.caption
    assert [row[-1] for row in charts.ari_table(shaped, Filters(kind="multi")).rows] == [2]


def test_agreement_chart_follows_the_round_filter_and_carries_intervals():
    last = charts.agreement_chart(report(), Filters())
    assert last.spec["categories"] == ["ann", "bob"] and last.spec["series"]["bucketed"] == [0.9, 0.6]
    assert last.spec["intervals"]["bucketed"] == [(0.85, 0.95), None]
    first = charts.agreement_chart(report(), Filters(round="calibration-1"))
    assert first.spec["categories"] == ["ann"] and first.rows == [["ann", "calibration-1", 0.5, None, None]]


def test_kappa_heatmap_leaves_undefined_cells_empty():
    chart = charts.kappa_heatmap(report(), Filters(round="calibration-2"))
    assert chart.spec["columns"] == ["U1", "U2", "AUR", "TD", "F1"]
    assert chart.spec["values"][0] == [0.7, None, None, None, None]


def test_pairwise_heatmap_is_symmetric_with_a_unit_diagonal():
    values = charts.pairwise_heatmap(report(), Filters()).spec["values"]
    assert values == [[1.0, 0.55], [0.55, 1.0]]


def test_stability_interval_is_the_wilson_interval_of_the_share():
    chart = charts.stability_chart(report(), Filters())
    low, high = chart.spec["intervals"]["top 1"][0]
    # Wilson 95 % for 90 of 100: (0.8256, 0.9448), by hand.
    assert (round(low, 4), round(high, 4)) == (0.8256, 0.9448)


def test_ari_table_marks_the_highest_and_lowest_model_of_each_column_without_colour():
    table = charts.ari_table(report(), Filters())
    models = [row[0] for row in table.rows]
    d = table.columns.index("D")
    assert table.marks[(models.index("Claude"), d)] == HIGHEST and table.marks[(models.index("GPT"), d)] == LOWEST
    e = table.columns.index("E")
    assert not any(column == e for _, column in table.marks)  # all equal: nothing to mark
    ari = table.columns.index("ARI")
    assert table.marks[(models.index("GPT"), ari)] == HIGHEST and (models.index("Claude"), ari) not in table.marks
    assert table.rows[models.index("GPT")][ari + 1:ari + 3] == [0.25, 0.35]
    assert [cell for cell in table.marked_rows()[models.index("GPT")] if cell[1]] == [
        (0.2, LOWEST), (0.5, HIGHEST), (0.1, LOWEST), (0.3, HIGHEST)]


def test_model_filter_keeps_one_model():
    assert [row[0] for row in charts.ari_table(report(), Filters(model="Qwen")).rows] == ["Qwen"]


def test_coupling_outlines_only_significant_cells_and_marks_undefined_ones():
    chart = charts.coupling_heatmap(report(), Filters())
    assert chart.spec["rows"] == ["U1", "U2"] and chart.spec["columns"] == ["AUR", "TD"]
    assert chart.spec["outlined"] == [(0, 0)]
    assert chart.spec["values"] == [[0.5, None], [0.1, -0.3]]
    assert len(chart.rows) == 4 and chart.rows[0][-1] is True


def test_uiri_bands_lead_with_all_datasets_and_filter_to_one():
    chart = charts.uiri_chart(report(), Filters())
    assert chart.spec["categories"] == ["all datasets", "A"]
    assert chart.spec["series"]["High"] == [0.3, 0.3]
    assert charts.uiri_chart(report(), Filters(dataset="A")).spec["categories"] == ["A"]


def test_trajectory_points_are_in_turn_order():
    chart = charts.trajectory_chart(report(), Filters())
    assert chart.spec["series"]["GPT"] == [(1, 0.0), (2, 0.1), (10, -0.2)]


@pytest.mark.parametrize("page", list(charts.PAGES.values()), ids=lambda p: p.slug)
def test_every_block_builds_on_an_empty_report(page):
    for block in charts.page_blocks(page, {}, Filters()):
        assert block.rows == [] and block.name


@pytest.mark.parametrize("page", list(charts.PAGES.values()), ids=lambda p: p.slug)
def test_every_chart_of_an_empty_report_draws(page):
    """An empty figure's download (no model yet, or a filter that leaves nothing) is a picture, not a 500: an empty
    heatmap had no cell for matplotlib's image."""
    from reports import figures

    for block in charts.page_blocks(page, {}, Filters()):
        if isinstance(block, charts.Chart):
            assert b"<svg" in figures.render(block, "svg"), block.name


def test_choices_list_what_the_report_has():
    found = charts.choices(report())
    assert (found.rounds, found.models, found.datasets, found.signals) == (
        ["calibration-1", "calibration-2"], ["Claude", "GPT", "Qwen"], ["A"], ["ARI"])


def test_rendered_svg_keeps_text_and_marks_significance():
    from reports import figures

    svg = figures.render(charts.coupling_heatmap(report(), Filters()), "svg").decode()
    assert "0.50*" in svg and "n/a" in svg and "Spearman" in svg
    png = figures.render(charts.ari_chart(report(), Filters()), "png")
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_share_at_a_bound_draws_with_its_interval():
    from reports import figures

    shares = report()
    shares["calibration"]["bootstrap"]["top_k"]["1"] = {"ann": 1.0, "bob": 0.0}
    chart = charts.stability_chart(shares, Filters())
    low, high = chart.spec["intervals"]["top 1"][1]
    assert low == 0.0 < high
    assert figures.render(chart, "svg").startswith(b"<?xml")


def test_uiri_lines_one_per_conversation_with_its_class_and_the_dataset_filter():
    shaped = report()
    shaped["indices"]["trajectories"]["uiri_conversations"] = {
        "A": {"c1": {"uiri": {"1": 0.2, "2": 0.6, "10": 0.9}, "slope": 0.07, "class": "escalating"}},
        "B": {"c2": {"uiri": {"1": 0.5, "2": 0.5}, "slope": 0.0, "class": "flat"}},
    }
    chart = charts.uiri_lines_chart(shaped, Filters())
    assert [(line["name"], line["class"]) for line in chart.spec["lines"]] == [("A / c1", "escalating"),
                                                                              ("B / c2", "flat")]
    assert chart.spec["lines"][0]["points"] == [(1, 0.2), (2, 0.6), (10, 0.9)]
    assert "2 conversations: 1 escalating, 1 flat, 0 de-escalating" in chart.caption
    only_b = charts.uiri_lines_chart(shaped, Filters(dataset="B"))
    assert [row[:2] for row in only_b.rows] == [["B", "c2"], ["B", "c2"]]
    from reports import figures

    assert b"escalating" in figures.render(chart, "svg")


def test_uiri_lines_caption_counts_the_conversations_without_a_class():
    """A multi-turn conversation with one coded turn has no slope, hence no class (``class`` null): it is drawn and
    counted in the caption's total, but no class counted it, so "3 conversations: 1 escalating, 1 flat, 0
    de-escalating" left one out without a word. The caption counts it apart."""
    shaped = report()
    shaped["indices"]["trajectories"]["uiri_conversations"] = {
        "A": {"c1": {"uiri": {"1": 0.2, "2": 0.6}, "slope": 0.4, "class": "escalating"},
              "c3": {"uiri": {"2": 0.4}, "slope": None, "class": None}},
        "B": {"c2": {"uiri": {"1": 0.5, "2": 0.5}, "slope": 0.0, "class": "flat"}},
    }
    chart = charts.uiri_lines_chart(shaped, Filters())
    assert len(chart.spec["lines"]) == 3
    assert chart.caption.startswith("3 conversations: 1 escalating, 1 flat, 0 de-escalating, 1 unclassified (one "
                                    "coded turn: no slope). ")
    assert "unclassified" not in charts.uiri_lines_chart(shaped, Filters(dataset="B")).caption


def test_user_scores_per_attribute_and_dataset():
    shaped = report()
    shaped["indices"]["uiri"]["attributes"] = {
        "all": {"U1": {"mean": 1.2, "n_turns": 9}, "U2": {"mean": 0.4, "n_turns": 9}},
        "by_dataset": {"A": {"U1": {"mean": 1.0, "n_turns": 4}}},
    }
    chart = charts.user_scores_chart(shaped, Filters())
    assert chart.spec["categories"] == ["U1", "U2"]
    assert chart.spec["series"] == {"all datasets": [1.2, 0.4], "A": [1.0, None]}
    assert charts.user_scores_chart(shaped, Filters(dataset="A")).rows == [["A", "U1", 1.0, 4], ["A", "U2", None, None]]


def test_the_kind_filter_reads_the_single_or_multi_turn_tables_with_their_intervals():
    shaped = report()
    shaped["indices"]["by_kind"] = {"multi": {"ari": {"GPT": {"D": 0.9, "ARI": 0.8, "n_responses": 4}},
                                              "ari_ci": {"GPT": {"D": {"low": 0.7, "high": 0.95}}},
                                              "flags": {"GPT": {"F1": 0.5}}, "fingerprint": {}}}
    table = charts.ari_table(shaped, Filters(kind="multi"))
    assert [row[0] for row in table.rows] == ["GPT"] and table.rows[0][1:4] == [0.9, 0.7, 0.95]
    assert "multi-turn" in table.title and table.caption.endswith("each restricted to them.")
    # with the clusters the chosen conversations' intervals rest on, when the report counts them
    shaped["indices"]["ci"] = {"resample": "conversation", "n_clusters": 14}
    shaped["indices"]["by_kind"]["multi"]["n_clusters"] = 1
    assert charts.ari_table(shaped, Filters(kind="multi")).caption.endswith(
        "each restricted to them (1 conversation of the study's 14).")
    assert charts.ari_table(shaped, Filters()).caption.endswith(" Intervals resample 14 conversations.")
    assert charts.flags_chart(shaped, Filters(kind="multi")).spec["series"] == {"GPT": [0.5]}
    assert [row[0] for row in charts.ari_table(shaped, Filters()).rows] == ["Claude", "GPT", "Qwen"]


def test_a_run_without_resamples_says_it_has_no_interval_not_what_its_intervals_rest_on():
    """A report of B = 0 (``indices.ci.resamples``; ``build_report`` and the core's recompute take it) has no
    interval: the Atrophy risk table's caption named the clusters its intervals resampled and its title a 95 %
    interval, the chart's caption whiskers, all of resamples that were never drawn."""
    shaped = report()
    shaped["indices"]["ci"] = {"resample": "conversation", "resamples": 0, "n_clusters": 14}
    shaped["indices"]["by_kind"] = {"multi": {"ari": {"GPT": {"ARI": 0.8, "n_responses": 4}}, "ari_ci": {},
                                              "n_clusters": 3}}
    for filters in (Filters(), Filters(kind="multi")):
        table = charts.ari_table(shaped, filters)
        assert "interval" not in table.title and "Intervals resample" not in table.caption
        assert "Intervals over the chosen conversations" not in table.caption
        assert table.caption.endswith(" No intervals: this run drew no bootstrap resamples (B = 0); start a run with "
                                      "resamples for them.")
    assert charts.ari_chart(shaped, Filters()).caption.endswith("no whiskers: this run drew no bootstrap resamples "
                                                                "(B = 0).")
    # with resamples, as before; the whiskers say what was resampled (turns, when the run resamples turns)
    shaped["indices"]["ci"] = {"resample": "turn", "resamples": 20, "n_clusters": 14}
    assert charts.ari_table(shaped, Filters()).title.endswith("mean risk in [0, 1], 95 % bootstrap interval")
    assert charts.ari_table(shaped, Filters()).caption.endswith(" Intervals resample 14 turns.")
    assert charts.ari_chart(shaped, Filters()).caption.endswith("whiskers: 95 % bootstrap interval over turns.")


def test_the_dataset_filter_reads_the_datasets_part_of_the_risk_coupling_and_span_sections():
    shaped = report()
    indices = shaped["indices"]
    cell = {"rho": 0.5, "p": 0.01, "q": 0.02, "significant": True, "n": 9}
    indices["by_dataset"] = {"B": {
        "ari": {"Qwen": {"ARI": 0.3, "n_responses": 2}}, "ari_ci": {"Qwen": {"ARI": {"low": 0.1, "high": 0.4}}},
        "flags": {}, "fingerprint": {},
        "by_kind": {"multi": {"ari": {"Qwen": {"ARI": 0.6, "n_responses": 1}}, "ari_ci": {}},
                    "single": {"ari": {}, "ari_ci": {}}}}}
    indices["coupling"] = {"raw": {}, "risk": {"GPT": {"U1": {"EMP": {**cell, "rho": -0.9}}}}, "min_abs_rho": 0.2,
                           "max_q": 0.05, "by_kind": {},
                           "by_dataset": {"B": {"raw": {}, "risk": {"Qwen": {"U1": {"EMP": cell}}}, "by_kind": {}}}}
    indices["spans"] = {"evidence": {"GPT": {"explores": {"spans_per_response": 0.4}}}, "ratios": {},
                        "subcategories": ["explores"],
                        "by_dataset": {"B": {"evidence": {"Qwen": {"explores": {"spans_per_response": 0.2}}},
                                             "ratios": {}, "by_kind": {}}}}
    table = charts.ari_table(shaped, Filters(dataset="B"))
    assert [row[0] for row in table.rows] == ["Qwen"] and table.rows[0][13:16] == [0.3, 0.1, 0.4]
    assert "(B)" in table.title
    both = charts.ari_table(shaped, Filters(dataset="B", kind="multi"))
    assert both.rows[0][13:] == [0.6, None, None, 1, None] and "(B, multi-turn conversations)" in both.title
    assert charts.ari_table(shaped, Filters(dataset="B", kind="single")).rows == []
    assert charts.ari_table(shaped, Filters(dataset="A")).rows == []  # no responses in A: nothing, not the whole
    heatmap = charts.coupling_heatmap(shaped, Filters(dataset="B"))
    assert heatmap.rows == [["Qwen", "risk", "U1", "EMP", 0.5, 0.01, 0.02, 9, True]] and "; B)" in heatmap.title
    assert charts.spans_chart(shaped, Filters(dataset="B")).spec["series"] == {"Qwen": [0.2]}
    assert charts.span_example_links(shaped, Filters(dataset="B")) == [("Qwen", ["explores"])]
    assert "B" in charts.choices(shaped).datasets


def test_a_run_from_before_the_splits_says_it_shows_all_conversations():
    shaped = report()  # the shape of a report from before the splits: no by_dataset or by_kind anywhere
    for slug in ("risk", "coupling", "spans"):
        filters, notes = charts.split_missing(charts.PAGES[slug], shaped, Filters(dataset="B", kind="multi"))
        assert filters == Filters() and len(notes) == 2 and "before" in notes[0], slug
    shaped["indices"]["by_dataset"] = {}
    assert charts.split_missing(charts.PAGES["risk"], shaped, Filters(dataset="B")) == (Filters(dataset="B"), [])
    # pages without the split keep their filters (trajectories always had its dataset split)
    assert charts.split_missing(charts.PAGES["trajectories"], shaped, Filters(dataset="B"))[0] == Filters(dataset="B")


def test_panel_table_says_who_is_in_the_top_k_and_who_was_retained():
    shaped = report()
    shaped["calibration"]["panel_ranking"] = {"panel_size": 1, "ranking": [
        {"rank": 1, "reviewer": "ann", "bucketed": 0.9}, {"rank": 2, "reviewer": "bob", "bucketed": 0.6}]}
    assert [row[3:] for row in charts.panel_table(shaped, Filters()).rows] == [["yes", "not yet chosen"],
                                                                              ["", "not yet chosen"]]
    shaped["parameters"] = {"panel": ["bob"]}
    assert [row[3:] for row in charts.panel_table(shaped, Filters()).rows] == [["yes", "no"], ["", "yes"]]


def test_trajectory_summaries_follow_the_dataset_and_model_filters():
    shaped = report()
    overall = {"open": 0.5, "peak": 0.9, "mean": 0.6, "delta": 0.1, "sd": 0.2, "slope": 0.01,
               "n_conversations": 3, "n_classified": 3, "classes": {"flat": 1.0}, "change_from_turn1": {"2": 0.1}}
    in_b = {**overall, "open": 0.25, "n_conversations": 1, "change_from_turn1": {"2": -0.3}}
    shaped["indices"]["trajectories"]["models"] = {"GPT": {"ARI": overall}, "Qwen": {"ARI": overall}}
    shaped["indices"]["trajectories"]["by_dataset"] = {"B": {"user": {}, "models": {"GPT": {"ARI": in_b}}}}
    assert [row[:3] for row in charts.trajectory_table(shaped, Filters()).rows] == [["GPT", "ARI", 0.5],
                                                                                   ["Qwen", "ARI", 0.5]]
    table = charts.trajectory_table(shaped, Filters(dataset="B"))
    assert [row[:3] for row in table.rows] == [["GPT", "ARI", 0.25]] and "(B)" in table.title
    assert charts.trajectory_chart(shaped, Filters(dataset="B")).rows == [["GPT", "ARI", 2, -0.3]]
    assert [row[0] for row in charts.trajectory_classes_chart(shaped, Filters(model="Qwen")).rows] == ["Qwen"] * 3
    # A dataset without multi-turn conversations has no trajectory: nothing to draw, not the overall figures.
    assert charts.trajectory_table(shaped, Filters(dataset="A")).rows == []


def test_experts_table_shows_each_experts_agreement_with_the_consensus_in_the_chosen_round():
    shaped = report()
    shaped["calibration"]["experts"] = {
        "calibration-1": {"experts": {"eve": {"exact": 0.7, "bucketed": 0.8, "n_items": 12}}},
        "calibration-2": {"experts": {"eve": {"exact": 0.9, "bucketed": 0.95, "bias": -0.1, "n_items": 12},
                                      "dan": {"exact": 0.6, "bucketed": 0.7, "kappa_user": None, "n_items": 12}}}}
    table = charts.experts_table(shaped, Filters())
    assert [row[:4] for row in table.rows] == [["dan", "calibration-2", 0.6, 0.7], ["eve", "calibration-2", 0.9, 0.95]]
    assert table.rows[1][table.columns.index("bias")] == -0.1
    assert charts.experts_table(shaped, Filters(round="calibration-1")).rows == [
        ["eve", "calibration-1", 0.7, 0.8, None, None, None, None, 12]]


def _drawn_inside(chart) -> tuple[bool, object]:
    """Whether everything the chart draws (titles, tick labels, legends, colour bars) lies on its canvas: files are
    saved without a second, measuring draw (``bbox_inches="tight"``), so nothing may rely on it."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from reports import figures

    figure = figures.draw(chart)
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    box = figure.get_tightbbox(canvas.get_renderer())  # inches
    slack = 0.02
    inside = (box.x0 >= -slack and box.y0 >= -slack and box.x1 <= figure.get_figwidth() + slack
              and box.y1 <= figure.get_figheight() + slack)
    return inside, box


def _long_named(shaped: dict) -> dict:
    """The report with long model names, so titles, tick labels and legends are as wide as real ones get."""
    names = {"GPT": "gpt-4o-2024-08-06 (OpenAI, temperature 0.7)", "Claude": "claude-3-5-sonnet-20241022 (Anthropic)",
             "Qwen": "Qwen2.5-72B-Instruct (served locally, 8-bit)"}
    import json

    text = json.dumps(shaped)
    for short, long in names.items():
        text = text.replace(f'"{short}"', json.dumps(long))
    return json.loads(text)


@pytest.mark.parametrize("page", list(charts.PAGES.values()), ids=lambda p: p.slug)
def test_every_chart_is_drawn_inside_its_canvas(page):
    for shaped in (report(), _long_named(report()), {}):
        for block in charts.page_blocks(page, shaped, Filters()):
            if isinstance(block, charts.Chart):
                inside, box = _drawn_inside(block)
                assert inside, f"{block.name} draws outside its canvas: {box}"


def test_a_long_title_is_wrapped_not_cut():
    chart = charts.Chart("long", "A title far longer than the figure is wide, as a filtered page's title can be: "
                         "it names the round, the model and the dataset", "bars",
                         {"categories": ["a"], "series": {"s": [0.5]}}, [], [])
    inside, box = _drawn_inside(chart)
    assert inside, box


def test_a_top_k_of_every_reviewer_or_more_is_said_to_say_nothing_and_the_panel_title_is_capped():
    three = {"calibration": {"last_round": "calibration-2", "bootstrap": {"resamples": 50, "top_k": {
        k: {"ann": 1.0, "bob": 1.0, "cyd": 1.0} for k in ("2", "3", "4")}},
        "panel_ranking": {"panel_size": 6, "ranking": [{"rank": i + 1, "reviewer": n, "bucketed": 0.9 - i / 10}
                                                         for i, n in enumerate(("ann", "bob", "cyd"))]}}}
    caption = charts.stability_chart(three, Filters()).caption
    assert "With 3 reviewers, every one is in any top 3 or more" in caption
    assert charts.panel_table(three, Filters()).title == "Panel ranking on calibration-2 (top 3 of 3: k = 6 capped)"
    seven = charts.panel_table({"calibration": {"panel_ranking": {"panel_size": 6, "ranking": [
        {"rank": i, "reviewer": str(i)} for i in range(1, 8)]}}}, Filters())
    assert seven.title.endswith("(top 6)")
    assert "every one is in" not in charts.stability_chart(report(), Filters()).caption


def test_the_mean_uiri_table_gives_each_dataset_its_turns_and_its_multi_turn_peak():
    """Each dataset's row carries the turns its mean is over (``by_dataset_n_turns``) and the mean of its multi-turn
    conversations' peaks (``peaks[DATASET]``), as the all-datasets row does; blank from a report without them."""
    shaped = report()
    uiri = shaped["indices"]["uiri"]
    uiri.update({"mean": 0.5, "n_turns": 9, "peak_mean": 0.7, "by_dataset": {"A": 0.5, "B": 0.4},
                 "by_dataset_n_turns": {"A": 7, "B": 2}, "peaks": {"A": {"c1": 0.4, "c2": 0.8}}})
    rows = charts.uiri_table(shaped, Filters()).rows
    assert rows == [["all datasets", 0.5, 9, 0.7], ["A", 0.5, 7, pytest.approx(0.6)], ["B", 0.4, 2, None]]
    del uiri["by_dataset_n_turns"]
    assert charts.uiri_table(shaped, Filters(dataset="A")).rows[1][:3] == ["A", 0.5, None]


def test_the_reviewers_table_and_the_panel_caption_take_the_rounds_in_number_order():
    """The round filter lists calibration-10 after calibration-2 (``choices``); the reviewers table (and its CSV)
    and the panel ranking's caption put it first, sorting the names as text."""
    shaped = report()
    calibration = shaped["calibration"]
    calibration["reviewers"] = {"ann": {"calibration-10": {"bucketed": 0.9}, "calibration-2": {"bucketed": 0.5},
                                        "delta_pp": 40.0}}
    calibration["pairwise_mean"] = {"calibration-10": {"bucketed": 0.8}, "calibration-2": {"bucketed": 0.6}}
    calibration["experts"] = {"calibration-3": {"pairwise_mean": {"bucketed": 0.7}}}
    order = ["calibration-2", "calibration-3", "calibration-10"]
    assert charts.choices(shaped).rounds == order
    assert [row[1] for row in charts.reviewer_table(shaped, Filters()).rows] == ["calibration-2", "calibration-10"]
    caption = charts.panel_table(shaped, Filters()).caption
    assert [caption.index(f"{name}:") for name in order] == sorted(caption.index(f"{name}:") for name in order)
