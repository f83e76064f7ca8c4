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


def _split_report(resample: str) -> dict:
    """Dataset big: 12 single-turn conversations; dataset small: s0 (one turn) and s1 (three turns, multi-turn): 14
    conversations in all, 16 turns."""
    rows = [("main", "ann", False, "big", f"c{n}", 1, "M1", "RA", n % 3) for n in range(12)]
    rows += [("main", "ann", False, "small", "s0", 1, "M1", "RA", 2)]
    rows += [("main", "ann", False, "small", "s1", t, "M1", "RA", t - 1) for t in (1, 2, 3)]
    return build_report(attributes=(RA,), judgments=judgment_table(rows),
                        params=ReportParams(bootstrap=20, ci_resample=resample))


def test_each_split_counts_its_clusters_and_one_with_few_is_named() -> None:
    """The intervals by dataset and conversation kind restrict the study's resamples to the split's responses, so
    dataset small's rest on its 2 conversations though the study has 14: before, the warnings read the study's 14
    alone and said nothing. Each split keeps its count beside its ari_ci; a dataset's kind part with all of the
    dataset's conversations (big's single-turn ones) is the dataset again, named once, and one without responses
    (big's multi-turn ones) has no interval."""
    indices = _split_report("conversation")["indices"]
    assert indices["ci"]["n_clusters"] == 14
    assert [indices["by_kind"][kind]["n_clusters"] for kind in ("single", "multi")] == [13, 1]
    assert {name: [entry["n_clusters"], entry["by_kind"]["single"]["n_clusters"],
                   entry["by_kind"]["multi"]["n_clusters"]] for name, entry in indices["by_dataset"].items()} == {
        "big": [12, 12, 0], "small": [2, 1, 1]}
    why = ("(each resample restricted to their responses): the intervals of their per-model figures (ari_ci, the "
           "Atrophy risk page filtered to them) say next to nothing (with fewer than 10 clusters an interval covers "
           "well below its level).")
    assert [w["message"] for w in report_warnings({"indices": indices})] == [
        f"The main round's intervals over multi-turn conversations rest on only 1 conversation of the study's 14 {why}",
        f"The main round's intervals over dataset small rest on only 2 conversations of the study's 14 {why}",
        "The main round's intervals over dataset small, single-turn conversations rest on only 1 conversation of the "
        f"study's 14 {why}",
        "The main round's intervals over dataset small, multi-turn conversations rest on only 1 conversation of the "
        f"study's 14 {why}",
    ]
    # resampling turns: small has 4 (s0's one, s1's three), its multi-turn part 3, the study 16
    by_turn = _split_report("turn")["indices"]
    assert [by_turn["ci"]["n_clusters"], by_turn["by_kind"]["multi"]["n_clusters"],
            by_turn["by_dataset"]["small"]["n_clusters"]] == [16, 3, 4]
    said = [w["message"].split(" rest on only ")[1].split(" (")[0] for w in report_warnings({"indices": by_turn})]
    assert said == ["3 turns of the study's 16", "4 turns of the study's 16", "1 turn of the study's 16",
                    "3 turns of the study's 16"]


def test_a_split_is_not_named_beside_the_main_rounds_own_warning_nor_without_its_count() -> None:
    """Below 10 clusters in all, the one warning speaks of every split's intervals too; a report stored before the
    splits kept their counts warns of the study's count alone."""
    indices = _split_report("conversation")["indices"]
    few = {**indices, "ci": {**indices["ci"], "n_clusters": 9}}
    assert [w["message"][:62] for w in report_warnings({"indices": few})] == [
        "The main round's intervals resample only 9 conversations, whic"]
    stored_before = {**indices, "by_kind": {kind: {k: v for k, v in entry.items() if k != "n_clusters"}
                                            for kind, entry in indices["by_kind"].items()},
                     "by_dataset": {name: {**{k: v for k, v in entry.items() if k != "n_clusters"},
                                           "by_kind": {kind: {k: v for k, v in part.items() if k != "n_clusters"}
                                                       for kind, part in entry["by_kind"].items()}}
                                    for name, entry in indices["by_dataset"].items()}}
    assert report_warnings({"indices": stored_before}) == []


def _models_report() -> dict:
    """Datasets A and B of 12 single-turn conversations each, every response scored by ann: M1 in all 24, M2 in
    three of A's (a0–a2), M3 in ten of A's and three of B's (a0–a9, b0–b2)."""
    conversations = [("A", f"a{n}") for n in range(12)] + [("B", f"b{n}") for n in range(12)]
    coded = {"M1": conversations, "M2": conversations[:3], "M3": conversations[:10] + conversations[12:15]}
    rows = [("main", "ann", False, dataset, conversation, 1, model, "RA", n % 3)
            for model, where in coded.items() for n, (dataset, conversation) in enumerate(where)]
    return build_report(attributes=(RA,), judgments=judgment_table(rows), params=ReportParams(bootstrap=20))


def test_a_model_coded_in_few_conversations_is_named_and_so_is_a_split_where_it_is():
    """Each model's intervals are means over its own responses, so they rest on the conversations that hold one
    (M2's on 3 of the study's 24): before, the warnings read the study's 24 and said nothing. In a split the same:
    M3 has 13 conversations in all but 3 in dataset B. A model with few in all is named once, not in every split."""
    indices = _models_report()["indices"]
    assert indices["ci"]["n_clusters"] == 24
    assert indices["ci"]["n_clusters_by_model"] == {"M1": 24, "M2": 3, "M3": 13}
    assert {name: entry["n_clusters_by_model"] for name, entry in indices["by_dataset"].items()} == {
        "A": {"M1": 12, "M2": 3, "M3": 10}, "B": {"M1": 12, "M3": 3}}
    assert indices["by_kind"]["single"]["n_clusters_by_model"] == {"M1": 24, "M2": 3, "M3": 13}
    assert indices["by_kind"]["multi"]["n_clusters_by_model"] == {}
    why = ("per-model intervals (ari_ci, the Atrophy risk page{}) say next to nothing (with fewer than 10 clusters an "
           "interval covers well below its level; a model needs responses scored in more conversations for its "
           "intervals to be read).")
    assert [w["message"] for w in report_warnings({"indices": indices})] == [
        "The main round's intervals of model M2 (3 conversations) rest on fewer than 10 of the study's 24 "
        "conversations (those holding a response of the model a reviewer scored; the others add nothing to the "
        "model's figures in a resample): its " + why.format(""),
        "The main round's intervals over dataset B of model M3 (3 conversations) rest on fewer than 10 of their 12 "
        "conversations (those holding a response of the model a reviewer scored): its "
        + why.format(" filtered to them"),
    ]
    # a model without a figure (no ARI cluster defined) has a null interval: nothing to warn of
    blank = {**indices, "ari": {**indices["ari"], "M2": dict.fromkeys(indices["ari"]["M2"])}}
    assert not any("the study's 24" in w["message"] for w in report_warnings({"indices": blank}))
    # a run without resamples has no interval to warn of; a report stored before the counts says nothing of them
    assert report_warnings({"indices": {**indices, "ci": {**indices["ci"], "resamples": 0}}}) == []
    assert report_warnings({"indices": _without(indices, "n_clusters_by_model")}) == []


def _without(value: object, key: str) -> object:
    """``value`` with ``key`` left out of every object in it (a report stored before the key)."""
    if isinstance(value, dict):
        return {k: _without(v, key) for k, v in value.items() if k != key}
    return value
