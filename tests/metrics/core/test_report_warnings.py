"""The report's warnings of a model slot missing from the per-model figures say what its responses were scored by
(metrics/core/report_warnings.py): the figures read the main round's reviewers (the retained panel's only), never an
automated coder, so "none coded yet, or none imported" was untrue of a slot only an automated coder scored."""

from __future__ import annotations

from metrics.core.report import AttributeSpec, ReportParams, build_report
from metrics.core.report_warnings import report_warnings

from ._tables import judgment_table

RA = AttributeSpec(
    "RA", "response", "D", (0, 1, 2), "ordinal", {0: 0, 1: 0, 2: 2}, {0: 1.0, 1: 0.5, 2: 0.0}, False, "response"
)
TAIL = ("it is missing from the main round's per-model figures (ARI, flags, attribute risk, fingerprint, their "
        "intervals and their splits by dataset and conversation kind) until")


def _report(panel: tuple[str, ...] | None) -> dict:
    """A main round of four model slots: M1 scored by the reviewer ann, M2 by the automated coder judge alone (on two
    turns), M3 by the reviewer bob and by judge, M4 by nobody."""
    rows = [("main", "ann", False, "DS", "c", 1, "M1", "RA", 2),
            ("main", "judge", False, "DS", "c", 1, "M2", "RA", 1),
            ("main", "judge", False, "DS", "c", 2, "M2", "RA", 0),
            ("main", "bob", False, "DS", "c", 1, "M3", "RA", 1),
            ("main", "judge", False, "DS", "c", 1, "M3", "RA", 1)]
    return build_report(attributes=(RA,), judgments=judgment_table(rows),
                        params=ReportParams(bootstrap=0, methods=("judge",), models=("M1", "M2", "M3", "M4"),
                                            panel=panel))


def test_a_slot_only_an_automated_coder_scored_is_said_to_be_so() -> None:
    report = _report(panel=None)
    assert list(report["indices"]["ari"]) == ["M1", "M3"]
    assert report["input"]["models_left_out"] == {"M2": {"methods": 2, "outside_panel": 0},
                                                  "M3": {"methods": 1, "outside_panel": 0}}
    assert [w["message"] for w in report_warnings(report)] == [
        f"Model M2 has no response scored by a reviewer: {TAIL} a reviewer of the main round scores one of its "
        "responses (automated coders gave its responses 2 judgments, and an automated coder's labels are not a "
        "reviewer's).",
        f"Model M4 has no scored response: {TAIL} a reviewer of the main round scores one of its responses (none "
        "coded yet, or none imported).",
    ]


def test_a_slot_only_coders_outside_the_retained_panel_scored_is_said_to_be_so() -> None:
    report = _report(panel=("ann",))
    assert list(report["indices"]["ari"]) == ["M1"]
    assert report["input"]["models_left_out"] == {"M2": {"methods": 2, "outside_panel": 0},
                                                  "M3": {"methods": 1, "outside_panel": 1}}
    assert [w["message"] for w in report_warnings(report)][1] == (
        f"Model M3 has no response scored by the retained panel: {TAIL} a member of the retained panel scores one of "
        "its responses (the per-model figures read the panel's judgments only, and coders outside it gave its "
        "responses 1 judgment; automated coders gave its responses 1 judgment, and an automated coder's labels are "
        "not a reviewer's).")


def test_the_main_rounds_intervals_count_the_clusters_they_resample() -> None:
    """``indices.ci.n_clusters`` is what ``ari_ci`` resamples: the main round's conversations (3 here, one of them
    coded on two turns), or its turns (4) when the run resamples turns; under 10 the warnings say so."""
    rows = [("main", "ann", False, "DS", c, t, "M1", "RA", 2) for c, t in (("a", 1), ("a", 2), ("b", 1), ("c", 1))]
    by_conversation, by_turn = (
        build_report(attributes=(RA,), judgments=judgment_table(rows),
                     params=ReportParams(bootstrap=20, ci_resample=resample))["indices"]
        for resample in ("conversation", "turn"))
    assert (by_conversation["ci"]["n_clusters"], by_turn["ci"]["n_clusters"]) == (3, 4)
    assert report_warnings({"indices": by_conversation})[0]["message"].startswith(
        "The main round's intervals resample only 3 conversations, which give 10 distinct resamples")
