"""Each dataset's UIRI mean and band shares come with the turns they are over (``indices.uiri.by_dataset_n_turns``),
as the study's come with ``n_turns``: the User input page's table showed a blank count beside every dataset's mean."""

from __future__ import annotations

from metrics.core.report import AttributeSpec, ReportParams, build_report

from ._tables import judgment_table

U = [AttributeSpec(code, "user", None, (0, 1, 2), "ordinal", {0: 0, 1: 1, 2: 2}, None, True, "turn")
     for code in ("U1", "U2", "U3", "U4", "U5")]


def test_each_datasets_uiri_counts_its_turns_and_the_counts_add_up() -> None:
    """Dataset A: three turns with all five scored; B: two, and a third with U5 missing (no UIRI: not counted)."""
    rows = [("main", "ann", False, dataset, f"{dataset}{n}", 1, "", a.code, n % 3)
            for dataset, turns in (("A", 3), ("B", 3)) for n in range(turns) for a in U
            if not (dataset == "B" and n == 2 and a.code == "U5")]
    uiri = build_report(attributes=U, judgments=judgment_table(rows), params=ReportParams(bootstrap=0))["indices"][
        "uiri"]
    assert uiri["by_dataset_n_turns"] == {"A": 3, "B": 2}
    assert sum(uiri["by_dataset_n_turns"].values()) == uiri["n_turns"] == 5
