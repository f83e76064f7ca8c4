"""The report's ``warnings``: a section that came out empty although the study has judgments or session labels for
it, with what was left out and why (the section's own counts: ``input`` of the main report, ``input`` of a study
kind's section, which its core section reads: ``metrics.core.kind_sections``), and a part of a section left empty
(a calibration round without gold, a model slot without a scored response: ``parameters.models``), and a
calibration round's, a reviewer's in a round, the main round's, a model's or a dataset's or conversation kind's
bootstrap figures when they rest on too few clusters to mean anything (a kind's section says so of its own
intervals through its ``warning``, by the same MIN_BOOTSTRAP_CLUSTERS).
A report never drops what reviewers coded, nor a model the study compares, without saying so: ``metrics_report``
prints these on stderr, and the dashboards show them on the overview and on the section's page. Plain data in,
plain data out (no database, no science stack)."""

from __future__ import annotations

from collections.abc import Mapping
from math import comb
from typing import Any

from .kind_sections import core_section

MAIN = "main"
# The report's own keys; any other key holding an object is a study kind's section (``report_complete``).
CORE_KEYS = frozenset({"version", "parameters", "attributes", "input", "calibration", "indices", "study", "warnings",
                       "software", "run"})

# why a row was left out, in words (the keys of each section's ``dropped`` counts)
_MAIN_REASONS = {
    "unscored": "without a score (spans highlighted before a score, or a score cleared)",
    "unknown_attribute": "of an attribute the main report does not compute over (not in the schema, or a session "
                         "unit another section reads)",
    "off_scale": "with a score off its attribute's scale",
    "duplicate": "replaced by a later judgment of the same unit",
}
# Fewer resampled clusters than this and the calibration bootstrap's intervals and top-k shares are too coarse to
# read (docs/metrics.md#bootstrap-selection-stability): a 95% interval covers under 90% even of a plain mean.
MIN_BOOTSTRAP_CLUSTERS = 10


# An interval over fewer than this share of the run's B resamples (the statistic undefined in the others: κ or α
# 0/0, no item of its own drawn) is one of the resamples where it happens to be defined, which the warnings say
# (docs/metrics.md#resamples-an-interval-rests-on): a tenth of B or more left out.
MIN_RESAMPLES_SHARE = 0.9


def plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def reasons_said(dropped: Mapping[str, Any], words: Mapping[str, str], what: str) -> list[str]:
    """The rows left out, by reason, in words (``words``: reason key → phrase), the reasons with none left out."""
    return [f"{plural(int(dropped[key]), what)} {phrase}" for key, phrase in words.items()
            if int(dropped.get(key) or 0) > 0]


def kind_sections(report: Mapping[str, Any]) -> list[str]:
    """The study kind's sections a report holds, by name: the keys beyond the report's own that name a kind with a
    core section (any other key, a part the core may add one day, is no kind's: it never silences a warning)."""
    return sorted(key for key, value in report.items()
                  if key not in CORE_KEYS and isinstance(value, Mapping) and core_section(key) is not None)


def _main(report: Mapping[str, Any]) -> str | None:
    counts = report.get("input") or {}
    read = int(counts.get("judgments") or 0)
    # a study whose judgments are all its kind's section's (session items) has an empty main report
    if read == 0 or int(counts.get("used") or 0) > 0 or kind_sections(report):
        return None
    reasons = reasons_said(counts.get("dropped") or {}, _MAIN_REASONS, "judgment")
    return (f"The main report is empty although the study has {plural(read, 'judgment')}: none could be "
            f"used ({'; '.join(reasons) or 'no reason counted'}).")


def _rounds_without_gold(report: Mapping[str, Any]) -> list[str]:
    """The calibration rounds its reviewers coded, none of whose items they coded has a gold value (gold not
    recorded yet, or recorded on other items): every reviewer figure of the round is null, which reads as a study
    with nothing to say unless it is said why."""
    calibration = report.get("calibration") or {}
    reviewers = calibration.get("reviewers") or {}
    found = []
    for name in calibration.get("rounds") or []:
        entries = [rounds[name] for rounds in reviewers.values() if isinstance(rounds, Mapping) and
                   isinstance(rounds.get(name), Mapping) and "n_items" in rounds[name]]
        if entries and all(int(entry["n_items"] or 0) == 0 for entry in entries):
            found.append(name)
    return found


def _without_gold_said(name: str) -> str:
    return (f"Calibration round {name}: none of the items its reviewers coded has a gold value yet, so its agreement "
            "with gold, ranks and selection stability are empty (record the round's gold on its consensus screen, "
            "then run the report again).")


def _gold_on_part(report: Mapping[str, Any], without_gold: list[str]) -> list[str]:
    """Each calibration round (in round order) some of whose items its reviewers coded have no gold value, though
    others have (``calibration.gold_coverage``): every reviewer figure of the round rests on the items with gold, so
    the rest are left out of them, which nothing else says when enough turns hold gold. A round without any is said
    so already; a report stored before the counts says nothing."""
    calibration = report.get("calibration") or {}
    coverage = calibration.get("gold_coverage")
    if not isinstance(coverage, Mapping):
        return []
    said = []
    for name in calibration.get("rounds") or []:
        counts = coverage.get(name)
        if name in without_gold or not isinstance(counts, Mapping):
            continue
        items, with_gold = int(counts.get("items") or 0), int(counts.get("with_gold") or 0)
        if 0 < with_gold < items:
            said.append(f"Calibration round {name}: only {with_gold:,} of the {plural(items, 'item')} its reviewers "
                        f"coded {'has' if with_gold == 1 else 'have'} a gold value (gold recorded on part of the "
                        "round): its reviewers' agreement with gold, κ, bias, ranks and selection stability rest on "
                        f"those alone, and the other {items - with_gold:,} {'is' if items - with_gold == 1 else 'are'}"
                        " left out of them (record their gold on the round's consensus screen, then run the report "
                        "again).")
    return said


def _few_bootstrap_clusters(report: Mapping[str, Any], without_gold: list[str]) -> list[str]:
    """Each calibration round whose bootstrap rests on fewer than MIN_BOOTSTRAP_CLUSTERS clusters (its turns, a
    conversation-level item one of its own, that hold an item a reviewer coded and gold scored:
    ``calibration.bootstrap.n_clusters_by_round``; a turn without one is drawn but adds nothing), in round order: n
    clusters give C(2n − 1, n) distinct resamples (3 for 2), and the intervals of so few undercover, so its agreement
    intervals (and, for the last round, the top-k shares of selection stability, which resample the same clusters)
    would be read as usual though they say next to nothing. A round whose figures are all empty for want of gold is
    said so already. A report stored before the clusters with data were counted has every round's turns
    (``n_turns_by_round``), and one stored before that the last round's alone (``calibration.bootstrap.n_turns``)."""
    bootstrap = (report.get("calibration") or {}).get("bootstrap") or {}
    last = bootstrap.get("round")
    turns = bootstrap.get("n_turns_by_round")
    if not isinstance(turns, Mapping):
        turns = {last: bootstrap.get("n_turns")} if last else {}
    counts = bootstrap.get("n_clusters_by_round")
    if not isinstance(counts, Mapping):
        counts = turns
    said = []
    for name, count in counts.items():
        n = int(count or 0)
        if name in without_gold or not 0 < n < MIN_BOOTSTRAP_CLUSTERS:
            continue
        figures = ("its agreement intervals and the top-k shares of selection stability say" if name == last
                   else "its agreement intervals say")
        why = (f"next to nothing (with fewer than {MIN_BOOTSTRAP_CLUSTERS} clusters an interval covers well below its "
               "level; a round needs more items")
        drawn = int(turns.get(name) or 0)
        if drawn > n:
            said.append(f"Calibration round {name}: only {n:,} of the {plural(drawn, 'cluster')} its bootstrap "
                        "resamples (the turns of its items, a conversation-level item one of its own) hold an item "
                        f"with a gold value its reviewers coded, and the others add nothing to a resample: {figures} "
                        f"{why} with gold for them to be read).")
            continue
        distinct = plural(comb(2 * n - 1, n), "distinct resample")
        said.append(f"Calibration round {name}: its bootstrap resamples only {plural(n, 'cluster')} (the turns of its "
                    f"items, a conversation-level item one of its own), which give {distinct}: {figures} {why} for "
                    "them to be read).")
    return said


def _named_counts(counts: list[tuple[str, int]], unit: str) -> str:
    """"ann (2 clusters), bob (5 clusters)": each name with its count, in the order given."""
    return ", ".join(f"{name} ({plural(n, unit)})" for name, n in counts)


def _few_reviewer_clusters(report: Mapping[str, Any], without_gold: list[str]) -> list[str]:
    """Each calibration round whose bootstrap rests on enough clusters, but where some reviewer's items with gold lie
    on fewer than MIN_BOOTSTRAP_CLUSTERS of them (``calibration.reviewers[REVIEWER][ROUND].n_clusters``): a
    reviewer's agreement intervals (and, for the last round, their top-k shares) are figures of their own items, so
    they rest on the turns that hold one, 2 of a round of 40 when gold lies on 2 of the reviewer's turns, and
    undercover as a round of 2 turns would, though the round's count is well above the threshold. One message per
    round, in round order (``calibration.rounds``, a list: the same from a stored report), naming its reviewers by
    name. A round with too few clusters in all, or without gold, is said so already; a run without resamples has
    no interval; a report stored before the counts (the reviewers', or the round's) says nothing."""
    calibration = report.get("calibration") or {}
    bootstrap = calibration.get("bootstrap") or {}
    if bootstrap.get("resamples") is not None and not int(bootstrap["resamples"]):
        return []
    reviewers = calibration.get("reviewers") or {}
    counts = bootstrap.get("n_clusters_by_round")
    if not isinstance(counts, Mapping):  # a report from before the reviewers' counts (kept since the rounds')
        return []
    said = []
    for name in calibration.get("rounds") or []:
        total = int(counts.get(name) or 0)
        if name in without_gold or total < MIN_BOOTSTRAP_CLUSTERS:
            continue
        few = []
        for reviewer in sorted(reviewers):
            entry = reviewers[reviewer].get(name) if isinstance(reviewers[reviewer], Mapping) else None
            n = entry.get("n_clusters") if isinstance(entry, Mapping) else None
            if isinstance(n, int) and 0 < n < MIN_BOOTSTRAP_CLUSTERS:
                few.append((reviewer, n))
        if not few:
            continue
        figures = ("agreement intervals and top-k shares of selection stability" if name == bootstrap.get("round")
                   else "agreement intervals")
        said.append(f"Calibration round {name}: the {figures} of {_named_counts(few, 'cluster')} rest on fewer than "
                    f"{MIN_BOOTSTRAP_CLUSTERS} of the round's {plural(total, 'cluster')} (the turns that hold an item "
                    "with a gold value the reviewer coded, a conversation-level item one of its own; the others add "
                    "nothing to the reviewer's figures in a resample): they say next to nothing (with fewer than "
                    f"{MIN_BOOTSTRAP_CLUSTERS} clusters an interval covers well below its level; such a reviewer "
                    "needs gold on more of the turns they coded for them to be read).")
    return said


def _per_model_figures(tables: Mapping[str, Any]) -> bool:
    """Whether a part of the indices (the whole main round, or a split) has a per-model figure to give an interval of
    (known before the bootstrap runs, when the warnings are stored): a schema with no ARI clusters has none."""
    return any(value is not None for row in (tables.get("ari") or {}).values() if isinstance(row, Mapping)
               for key, value in row.items() if key != "n_responses")


_KIND_WORDS = {"single": "single-turn conversations", "multi": "multi-turn conversations"}


def _splits(indices: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(the split in words, its entry) of each split the dashboards' filters show: each conversation kind, each
    dataset and each dataset's conversation kinds (``indices.by_kind``, ``indices.by_dataset``), leaving out a
    dataset's kind part with the same clusters as the dataset (all its conversations are of that kind: the same
    figures, warned of once)."""
    found = [(words, entry) for kind, words in _KIND_WORDS.items()
             if isinstance(entry := (indices.get("by_kind") or {}).get(kind), Mapping)]
    for dataset, entry in sorted((indices.get("by_dataset") or {}).items()):  # by name, as stored (jsonb) or not
        if not isinstance(entry, Mapping):
            continue
        found.append((f"dataset {dataset}", entry))
        found.extend((f"dataset {dataset}, {words}", part) for kind, words in _KIND_WORDS.items()
                     if isinstance(part := (entry.get("by_kind") or {}).get(kind), Mapping)
                     and part.get("n_clusters") != entry.get("n_clusters"))
    return found


def _few_main_clusters(report: Mapping[str, Any]) -> list[str]:
    """The main round's intervals (``indices.ari_ci`` and those of each dataset and conversation kind), when they
    resample fewer than MIN_BOOTSTRAP_CLUSTERS clusters (``indices.ci.n_clusters``: conversations, or turns when the
    run resamples turns), for the reason ``_few_bootstrap_clusters`` gives; else each split whose intervals rest on
    fewer (``n_clusters`` beside its ``ari_ci``: the clusters its responses fall in, of the study's resamples, which
    draw every cluster of the study but carry the split's data in its own alone), naming it. A run without
    resamples, or without a per-model figure (a schema with no ARI clusters), prints no interval, and a report (or a
    split) from before the count was kept says nothing."""
    indices = report.get("indices") or {}
    ci = indices.get("ci") or {}
    n = int(ci.get("n_clusters") or 0)
    if not _per_model_figures(indices) or not int(ci.get("resamples") or 0) or not n:
        return []
    unit = "turn" if ci.get("resample") == "turn" else "conversation"
    if n < MIN_BOOTSTRAP_CLUSTERS:
        distinct = plural(comb(2 * n - 1, n), "distinct resample")
        return [f"The main round's intervals resample only {plural(n, unit)}, which give {distinct}: the intervals "
                "of the per-model figures (ari_ci, overall and by dataset and conversation kind) say next to nothing "
                f"(with fewer than {MIN_BOOTSTRAP_CLUSTERS} clusters an interval covers well below its level)."]
    said = []
    for words, entry in _splits(indices):
        count = int(entry.get("n_clusters") or 0)
        if _per_model_figures(entry) and 0 < count < MIN_BOOTSTRAP_CLUSTERS:
            said.append(f"The main round's intervals over {words} rest on only {plural(count, unit)} of the study's "
                        f"{n:,} (each resample restricted to their responses): the intervals of their per-model "
                        "figures (ari_ci, the Atrophy risk page filtered to them) say next to nothing (with fewer than "
                        f"{MIN_BOOTSTRAP_CLUSTERS} clusters an interval covers well below its level).")
    return said


def _models(counts: list[tuple[str, int]], unit: str) -> str:
    return f"model{'' if len(counts) == 1 else 's'} {_named_counts(counts, unit)}"


def _few_model_clusters(report: Mapping[str, Any]) -> list[str]:
    """Each model whose responses lie in fewer than MIN_BOOTSTRAP_CLUSTERS of the clusters behind the main round's
    intervals (``indices.ci.n_clusters_by_model``): a model's figures are means over its own responses, so its
    intervals rest on the clusters that hold one (a model coded in 3 of the study's 40 conversations has intervals
    over 3) and undercover as the study's would with 3. The whole round's models in one message, then those of
    each dataset and conversation kind (their ``n_clusters_by_model``) in one message per split, naming only the
    models with enough clusters in the whole round (a model with few in all has few in every split: said once),
    each by name. Nothing when the whole round's intervals, or the split's, rest on too few clusters in all (said
    so by ``_few_main_clusters``), for a run without resamples or without a per-model figure, nor from a report
    stored before the count."""
    indices = report.get("indices") or {}
    ci = indices.get("ci") or {}
    n = int(ci.get("n_clusters") or 0)
    if not _per_model_figures(indices) or not int(ci.get("resamples") or 0) or n < MIN_BOOTSTRAP_CLUSTERS:
        return []
    unit = "turn" if ci.get("resample") == "turn" else "conversation"

    def few(part: Mapping[str, Any], counts: Any, enough: frozenset[str] = frozenset()) -> list[tuple[str, int]]:
        """The part's models under the threshold, by name, leaving out those named already and those without a
        figure to give an interval of (no ARI cluster defined for any of its responses: its interval is null)."""
        if not isinstance(counts, Mapping):
            return []
        ari = part.get("ari") or {}
        return [(model, int(counts[model])) for model in sorted(counts)
                if model not in enough and 0 < int(counts[model] or 0) < MIN_BOOTSTRAP_CLUSTERS
                and _per_model_figures({"ari": {model: ari.get(model)}})]

    def why(models: list[tuple[str, int]], page: str) -> str:
        whose = "its" if len(models) == 1 else "their"
        return (f"{whose} per-model intervals (ari_ci, the Atrophy risk page{page}) say next to nothing (with fewer "
                f"than {MIN_BOOTSTRAP_CLUSTERS} clusters an interval covers well below its level; a model needs "
                f"responses scored in more {unit}s for its intervals to be read).")

    said = []
    whole = few(indices, ci.get("n_clusters_by_model"))
    if whole:
        said.append(f"The main round's intervals of {_models(whole, unit)} rest on fewer than "
                    f"{MIN_BOOTSTRAP_CLUSTERS} of the study's {plural(n, unit)} (those holding a response of the "
                    f"model a reviewer scored; the others add nothing to the model's figures in a resample): "
                    f"{why(whole, '')}")
    named = frozenset(model for model, _ in whole)
    for words, entry in _splits(indices):
        count = int(entry.get("n_clusters") or 0)
        models = few(entry, entry.get("n_clusters_by_model"), named)
        if models and count >= MIN_BOOTSTRAP_CLUSTERS and _per_model_figures(entry):
            said.append(f"The main round's intervals over {words} of {_models(models, unit)} rest on fewer than "
                        f"{MIN_BOOTSTRAP_CLUSTERS} of their {plural(count, unit)} (those holding a response of the "
                        f"model a reviewer scored): {why(models, ' filtered to them')}")
    return said


def few_resamples(intervals: Mapping[str, Any], resamples: int) -> list[tuple[str, int]]:
    """(figure, resamples used) of each interval of ``intervals`` ({figure: {low, high, n_resamples}}) resting on
    fewer than MIN_RESAMPLES_SHARE of ``resamples`` (B), in the order given; an interval stored before its count,
    or with no resample defined at all (a null interval, which says so itself), is not named."""
    found = []
    for figure, interval in intervals.items():
        used = interval.get("n_resamples") if isinstance(interval, Mapping) else None
        if isinstance(used, int) and 0 < used < MIN_RESAMPLES_SHARE * resamples:
            found.append((figure, used))
    return found


def resamples_said(named: list[str], resamples: int, what: str) -> str:
    """The warning of intervals resting on fewer than MIN_RESAMPLES_SHARE of B (``named``: each with its counts), a
    study kind's section's too, in one wording."""
    return (f"{what} of {'; '.join(named)} rest on fewer than {MIN_RESAMPLES_SHARE:.0%} of the run's "
            f"{plural(resamples, 'resample')}: the figure is undefined in the others (κ 0/0 where both sides give one "
            "value throughout a resample, or no item of its own drawn), which are left out, so each is an interval "
            "over the resamples where the figure happens to be defined (its n_resamples) and reads narrower and "
            "surer than the data allow.")


def _few_calibration_resamples(report: Mapping[str, Any], without_gold: list[str]) -> list[str]:
    """Each calibration round (in round order) some of whose reviewers' agreement intervals
    (``calibration.agreement_ci[ROUND][REVIEWER][FIGURE].n_resamples``) rest on fewer than MIN_RESAMPLES_SHARE of B,
    one message per round naming each reviewer's figures with their counts. A round without gold is said so
    already, and one with too few clusters in all, or a reviewer with too few of their own, is said to say next to
    nothing."""
    calibration = report.get("calibration") or {}
    resamples = int((calibration.get("bootstrap") or {}).get("resamples") or 0)
    counts = (calibration.get("bootstrap") or {}).get("n_clusters_by_round") or {}
    cis = calibration.get("agreement_ci") or {}
    said = []
    for name in calibration.get("rounds") or []:
        if not resamples or name in without_gold or not isinstance(cis.get(name), Mapping):
            continue
        if isinstance(counts, Mapping) and 0 < int(counts.get(name) or 0) < MIN_BOOTSTRAP_CLUSTERS:
            continue
        reviewers = calibration.get("reviewers") or {}

        def few_clusters(reviewer: str, round_name: str = name,
                         reviewers: Mapping[str, Any] = reviewers) -> bool:  # named by ``_few_reviewer_clusters``
            entry = (reviewers.get(reviewer) or {}).get(round_name)
            n = entry.get("n_clusters") if isinstance(entry, Mapping) else None
            return isinstance(n, int) and 0 < n < MIN_BOOTSTRAP_CLUSTERS

        named = [f"{reviewer} ({', '.join(f'{figure} on {used:,}' for figure, used in few)})"
                 for reviewer, intervals in sorted(cis[name].items()) if isinstance(intervals, Mapping)
                 and not few_clusters(reviewer) and (few := few_resamples(intervals, resamples))]
        if named:
            said.append(resamples_said(named, resamples, f"Calibration round {name}: the agreement intervals"))
    return said


def _models_without_scores(report: Mapping[str, Any]) -> list[str]:
    """Each of the study's model slots (``parameters.models``) with no row in the per-model indices while another
    slot has one, and what its responses were scored by (``input.models_left_out``): the per-model figures read the main
    round's reviewers (the retained panel's only, once there is one), never an automated coder, so a slot scored by
    automated coders or reviewers outside the panel alone is missing as one nobody scored is (none coded yet, or none
    imported). A table of four models where the study has five reads as complete unless it is said. A report whose
    indices hold no model at all (no main round yet, or a study kind whose main report is empty by design) says
    nothing of each slot."""
    scored = (report.get("indices") or {}).get("ari") or {}
    left_out = (report.get("input") or {}).get("models_left_out") or {}
    models = (report.get("parameters") or {}).get("models") or []
    if not isinstance(scored, Mapping) or not scored:
        return []
    said = []
    for name in models:
        if name in scored:
            continue
        counts = left_out.get(name) or {}
        methods, outside = int(counts.get("methods") or 0), int(counts.get("outside_panel") or 0)
        by_methods = (f"automated coders gave its responses {plural(methods, 'judgment')}, and an automated "
                      "coder's labels are not a reviewer's")
        if outside:
            head, who = "no response scored by the retained panel", "a member of the retained panel"
            why = (f"the per-model figures read the panel's judgments only, and coders outside it gave its responses "
                   f"{plural(outside, 'judgment')}{'; ' + by_methods if methods else ''}")
        elif methods:
            head, who, why = "no response scored by a reviewer", "a reviewer of the main round", by_methods
        else:
            head, who, why = "no scored response", "a reviewer of the main round", "none coded yet, or none imported"
        said.append(f"Model {name} has {head}: it is missing from the main round's per-model figures (ARI, flags, "
                    "attribute risk, fingerprint, their intervals and their splits by dataset and conversation kind) "
                    f"until {who} scores one of its responses ({why}).")
    return said


def report_warnings(report: Mapping[str, Any]) -> list[dict[str, str]]:
    """``[{"section": "main" | a kind's section, "message": …}]``: each section of the report that is empty
    although the study has judgments or labels for it (a kind's section by its core section's ``warning``), each
    calibration round whose reviewer figures are all empty for want of gold (``_rounds_without_gold``), or rest on
    part of its coded items for want of gold on the rest (``_gold_on_part``), each
    calibration round whose bootstrap has too few clusters (``_few_bootstrap_clusters``), else its reviewers whose
    own items do (``_few_reviewer_clusters``), the main round's intervals when theirs has, else each dataset's and
    conversation kind's that has (``_few_main_clusters``), the models whose own responses do (``_few_model_clusters``),
    the reviewers' intervals resting on fewer than MIN_RESAMPLES_SHARE of B (``_few_calibration_resamples``; a
    per-model interval leaves a resample out only when it draws none of the model's clusters, under e^-10 of them
    with 10 or more, so those on few are named by ``_few_model_clusters``), and each model slot missing from the
    per-model indices (``_models_without_scores``), the main report first; [] when there is none."""
    found: list[dict[str, str]] = []
    main = _main(report)
    if main:
        found.append({"section": MAIN, "message": main})
    without_gold = _rounds_without_gold(report)
    found.extend({"section": MAIN, "message": _without_gold_said(name)} for name in without_gold)
    found.extend({"section": MAIN, "message": message} for message in _gold_on_part(report, without_gold))
    found.extend({"section": MAIN, "message": message} for message in _few_bootstrap_clusters(report, without_gold))
    found.extend({"section": MAIN, "message": message} for message in _few_reviewer_clusters(report, without_gold))
    found.extend({"section": MAIN, "message": message} for message in _few_main_clusters(report))
    found.extend({"section": MAIN, "message": message} for message in _few_model_clusters(report))
    found.extend({"section": MAIN, "message": message}
                 for message in _few_calibration_resamples(report, without_gold))
    found.extend({"section": MAIN, "message": message} for message in _models_without_scores(report))
    for name in kind_sections(report):
        section = core_section(name)
        message = section.warning(report[name]) if section is not None and section.warning is not None else None
        if message:
            found.append({"section": name, "message": message})
    return found


def section_warnings(report: Mapping[str, Any] | None, section: str | None = None) -> list[str]:
    """The stored warnings' messages of a report (of one section, or all of them): what the pages show."""
    stored = (report or {}).get("warnings") or []
    return [str(w.get("message", "")) for w in stored
            if isinstance(w, Mapping) and (section is None or w.get("section") == section)]
