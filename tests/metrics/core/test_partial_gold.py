"""A calibration round whose gold was recorded on part of the items its reviewers coded (a consensus screen left
half done, then the round closed): the reviewers' figures rest on the items with gold alone, so the report counts
the round's coded items and those with gold (``calibration.gold_coverage``) and its warnings say how many were left
out, where a round with enough turns with gold said nothing (docs/metrics.md#items-and-reviewers)."""

from __future__ import annotations

from metrics.core.report import AttributeSpec, ReportParams, build_report
from metrics.core.report_warnings import report_warnings

from ._tables import judgment_table

A = AttributeSpec("A", "user", None, (0, 1, 2), "ordinal", {0: 0, 1: 1, 2: 2}, None, False, "turn")
B = AttributeSpec("B", "user", None, (0, 1, 2), "ordinal", {0: 0, 1: 1, 2: 2}, None, False, "turn")
TURNS = range(1, 13)  # 12 turns with gold: enough clusters, so no few-clusters warning hides the point


def _report(gold_on: tuple[str, ...]) -> dict:
    rows = [("calibration-1", coder, False, "DS", f"c{turn}", 1, "", attribute, (turn + i) % 3)
            for turn in TURNS for attribute in ("A", "B") for i, coder in enumerate(("ann", "bob"))]
    rows += [("calibration-1", "expert", True, "DS", f"c{turn}", 1, "", attribute, turn % 3)
             for turn in TURNS for attribute in gold_on]
    return build_report(attributes=(A, B), judgments=judgment_table(rows), params=ReportParams(bootstrap=0))


def test_a_round_with_gold_on_part_of_its_coded_items_counts_them_and_says_so() -> None:
    report = _report(gold_on=("A",))
    assert report["calibration"]["gold_coverage"] == {"calibration-1": {"items": 24, "with_gold": 12}}
    assert report["calibration"]["reviewers"]["ann"]["calibration-1"]["n_items"] == 12
    assert [w["message"] for w in report_warnings(report)] == [
        "Calibration round calibration-1: only 12 of the 24 items its reviewers coded have a gold value (gold "
        "recorded on part of the round): its reviewers' agreement with gold, κ, bias, ranks and selection stability "
        "rest on those alone, and the other 12 are left out of them (record their gold on the round's consensus "
        "screen, then run the report again)."]


def test_a_round_with_gold_on_every_coded_item_says_nothing() -> None:
    report = _report(gold_on=("A", "B"))
    assert report["calibration"]["gold_coverage"] == {"calibration-1": {"items": 24, "with_gold": 24}}
    assert report_warnings(report) == []
