"""Every bootstrap interval keeps how many of the run's B resamples it rests on (``n_resamples``): a resample where
its figure is undefined (κ 0/0, a model with no response drawn in a split) is left out of the interval, which was
said nowhere, and the warnings name an interval on fewer than MIN_RESAMPLES_SHARE of B
(docs/metrics.md#resamples-an-interval-rests-on)."""

from __future__ import annotations

from metrics.core.bootstrap import resample_picks
from metrics.core.report import AttributeSpec, ReportParams, report_complete, report_finish, report_prepare
from metrics.core.report_warnings import MIN_RESAMPLES_SHARE

from ._tables import judgment_table

RA = AttributeSpec(
    "RA", "response", "D", (0, 1, 2), "ordinal", {0: 0, 1: 0, 2: 2}, {0: 1.0, 1: 0.5, 2: 0.0}, False, "response"
)
B = 200
TURNS = 12  # clusters enough for no few-clusters warning


def _report(rows: list) -> dict:
    """The report as the server's run computes it: prepared, completed (warnings), then its bootstrap finished."""
    prepared = report_prepare(attributes=(RA,), judgments=judgment_table(rows), params=ReportParams(bootstrap=B))
    report_complete(prepared.report, study={}, software={}, unscored=0)
    boot = prepared.bootstrap
    return report_finish(prepared, [boot.chunk_samples(chunk) for chunk in range(boot.chunks)])


def test_a_kappa_undefined_in_many_resamples_says_on_how_many_its_interval_rests() -> None:
    """Gold gives 0 on 11 of the round's 12 turns and 2 on the last, and ann agrees throughout: a resample that does
    not draw the last turn has both sides at 0 throughout, κ 0/0, and leaves it out (about a third of them)."""
    rows = []
    for i in range(TURNS):
        score = 2 if i == TURNS - 1 else 0
        rows += [("calibration-1", "gold", True, "DS", f"c{i:02d}", 1, "M1", "RA", score),
                 ("calibration-1", "ann", False, "DS", f"c{i:02d}", 1, "M1", "RA", score)]
    report = _report(rows)
    picks = resample_picks(TURNS, B, 0)
    drew_last = int((picks == TURNS - 1).any(axis=1).sum())
    assert 0 < drew_last < MIN_RESAMPLES_SHARE * B
    ci = report["calibration"]["agreement_ci"]["calibration-1"]["ann"]
    assert ci["kappa_response"] == {"low": 1.0, "high": 1.0, "n_resamples": drew_last}
    assert ci["bucketed"]["n_resamples"] == B  # agreement is defined in every resample
    messages = [w["message"] for w in report["warnings"]]
    said = [m for m in messages if "n_resamples" in m]
    assert said == [
        f"Calibration round calibration-1: the agreement intervals of ann (kappa_response on {drew_last}) rest on "
        f"fewer than 90% of the run's {B} resamples: the figure is undefined in the others (κ 0/0 where both sides "
        "give one value throughout a resample, or no item of its own drawn), which are left out, so each is an "
        "interval over the resamples where the figure happens to be defined (its n_resamples) and reads narrower "
        "and surer than the data allow."]


def test_a_models_interval_in_a_split_says_on_how_many_resamples_it_rests() -> None:
    """Dataset A's 12 conversations have M1's responses, one of them M2's too: a resample without that conversation
    has no M2 response in A, its figure undefined there and left out; B's conversations, M1's alone, are all drawn in
    every resample of the study's 24 conversations."""
    rows = []
    for dataset in ("A", "B"):
        for i in range(TURNS):
            rows.append(("main", "ann", False, dataset, f"c{i:02d}", 1, "M1", "RA", i % 3))
            if dataset == "A" and i == 0:
                rows.append(("main", "ann", False, dataset, f"c{i:02d}", 1, "M2", "RA", 1))
    report = _report(rows)
    indices = report["indices"]
    picks = resample_picks(2 * TURNS, B, 0)  # the study's conversations, A's first
    drew = int((picks == 0).any(axis=1).sum())
    assert indices["ari_ci"]["M2"]["D"]["n_resamples"] == drew
    assert indices["by_dataset"]["A"]["ari_ci"]["M2"]["D"]["n_resamples"] == drew
    assert indices["ari_ci"]["M1"]["D"]["n_resamples"] == B
    # a model's interval leaves resamples out only when they draw none of its clusters: with few of them, which the
    # warnings name already by their clusters, and not again by its resamples
    messages = [w["message"] for w in report["warnings"]]
    assert any(m.startswith("The main round's intervals of model M2 (1 conversation) rest on fewer than 10")
               for m in messages)
    assert not [m for m in messages if "n_resamples" in m]


def test_the_pages_say_which_intervals_rest_on_fewer_than_all_resamples() -> None:
    """Where an interval is shown (the Atrophy risk table and figure, the reviewers' agreement figure), its caption
    names each one on fewer than B resamples with its count: before, an interval over 143 of 200 read as any other.
    A run whose intervals rest on all B says nothing more."""
    from reports import charts

    rows = []
    for dataset in ("A", "B"):
        for i in range(TURNS):
            rows.append(("main", "ann", False, dataset, f"c{i:02d}", 1, "M1", "RA", i % 3))
            if dataset == "A" and i == 0:
                rows.append(("main", "ann", False, dataset, f"c{i:02d}", 1, "M2", "RA", 1))
    for i in range(TURNS):  # bob coded one turn of the round with gold on every turn: his interval needs it drawn
        rows += [("calibration-1", "gold", True, "DS", f"k{i:02d}", 1, "M1", "RA", i % 3),
                 ("calibration-1", "ann", False, "DS", f"k{i:02d}", 1, "M1", "RA", i % 3)]
    rows.append(("calibration-1", "bob", False, "DS", "k00", 1, "M1", "RA", 0))
    report = _report(rows)
    drew_m2 = int((resample_picks(2 * TURNS, B, 0) == 0).any(axis=1).sum())
    said = f"Intervals on fewer than the run's {B} resamples (the figure undefined in the others, which are left out)"
    for filters in (charts.Filters(), charts.Filters(dataset="A")):
        for block in (charts.ari_table(report, filters), charts.ari_chart(report, filters)):
            assert block.caption.endswith(f"{said}: M2 D on {drew_m2}; M2 ARI on {drew_m2}."), (filters, block.name)
    assert said not in charts.ari_table(report, charts.Filters(dataset="B")).caption  # M1 alone, on every resample
    drew_bob = report["calibration"]["agreement_ci"]["calibration-1"]["bob"]["bucketed"]["n_resamples"]
    assert drew_bob == int((resample_picks(TURNS, B, 0) == 0).any(axis=1).sum()) < B
    assert charts.agreement_chart(report, charts.Filters(round="calibration-1")).caption.endswith(
        f"{said}: bob on {drew_bob}.")


def test_a_caption_names_no_interval_that_is_not_shown() -> None:
    """A reviewer of the round none of whose items has gold has no interval (no resample defines one: n_resamples 0,
    low and high null) and no whisker: the agreement figure's caption named them all the same, "carol on 0", as an
    interval on fewer than B resamples, where the warnings (``few_resamples``) leave such a null interval out."""
    from reports import charts

    rows = []
    for i in range(TURNS):
        rows += [("calibration-1", "gold", True, "DS", f"k{i:02d}", 1, "M1", "RA", i % 3),
                 ("calibration-1", "ann", False, "DS", f"k{i:02d}", 1, "M1", "RA", i % 3)]
    rows.append(("calibration-1", "carol", False, "DS", "k-no-gold", 1, "M1", "RA", 0))
    report = _report(rows)
    carol = report["calibration"]["agreement_ci"]["calibration-1"]["carol"]["bucketed"]
    assert carol == {"low": None, "high": None, "n_resamples": 0}
    chart = charts.agreement_chart(report, charts.Filters(round="calibration-1"))
    assert "carol" in chart.spec["categories"] and chart.spec["intervals"]["bucketed"][
        chart.spec["categories"].index("carol")] == (None, None)
    assert chart.caption == "Bars: bucketed agreement; whiskers: 95 % bootstrap interval over the round's turns."
