"""Slow reference implementation: one Python loop per resample and per item, κ from scikit-learn each time.

It exists for two reasons only: it is the oracle the vectorised core is tested against (same draws, same
definitions, independent code working from the raw rows rather than the encoded arrays), and it is the
baseline the benchmark times. Nothing in the report calls it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Container, Iterator, Sequence

import numpy as np
from sklearn.metrics import cohen_kappa_score

from common.rounds import MAIN

from .bootstrap import resample_picks
from .tables import AttributeSpec, JudgmentTable

_FIELDS = ("round", "coder", "is_gold", "dataset", "conversation", "turn", "model", "attribute", "score")


def _rows(judgments: JudgmentTable) -> Iterator[tuple]:
    return zip(*(np.asarray(getattr(judgments, f)).tolist() for f in _FIELDS), strict=True)


def _unit(spec: AttributeSpec, dataset: str, conversation: str, turn: int, model: str | None) -> tuple:
    if spec.unit == "conversation":
        return (dataset, conversation, 0, "")
    return (dataset, conversation, turn, (model or "") if spec.unit == "response" else "")


def _quantiles(samples: list[float | None], level: float) -> tuple[float | None, float | None, int]:
    """The percentile interval over the resamples where the statistic is defined, and how many those are."""
    defined = [s for s in samples if s is not None]
    if not defined:
        return None, None, 0
    tail = (1 - level) / 2
    low, high = np.quantile(np.array(defined), [tail, 1 - tail])
    return float(low), float(high), len(defined)


def _calibration_scores(
    spec: dict[str, AttributeSpec], judgments: JudgmentTable, round_name: str, experts: Sequence[str] = ()
) -> tuple[dict[tuple, int], dict[str, dict[tuple, int]]]:
    """The round's gold score and every reviewer's score per item (unit + attribute), off-scale rows dropped;
    the experts' own rows are not reviewers' and are skipped."""
    gold: dict[tuple, int] = {}
    scores: dict[str, dict[tuple, int]] = {}
    for rnd, coder, is_gold, dataset, conversation, turn, model, attribute, score in _rows(judgments):
        a = spec.get(attribute)
        if rnd != round_name or a is None or score not in a.scale or (not is_gold and coder in experts):
            continue
        item = (*_unit(a, dataset, conversation, turn, model), attribute)
        if is_gold:
            gold[item] = score
        else:
            scores.setdefault(coder, {})[item] = score
    return gold, scores


def _quadratic_kappa(a: AttributeSpec, rs: list[int], gs: list[int]) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # undefined κ is NaN here and None in the result
        weights = None if a.level == "nominal" else "quadratic"  # a nominal scale: Cohen's unweighted κ
        return float(cohen_kappa_score(rs, gs, labels=list(a.scale), weights=weights, replace_undefined_by=np.nan))


def _reviewer_statistics(
    spec: dict[str, AttributeSpec],
    groups: list[str],
    items_of_turn: dict[tuple, list[tuple]],
    gold: dict[tuple, int],
    mine: dict[tuple, int],
    picked: list[tuple],
) -> dict[str, float | None]:
    """One reviewer's exact and bucketed agreement with gold and mean κ per group, on the picked turns."""
    exact = bucketed = valid = 0
    pairs: dict[str, tuple[list[int], list[int]]] = {}
    for turn in picked:
        for item in items_of_turn[turn]:
            if item not in gold or item not in mine:
                continue
            a = spec[item[-1]]
            r, g = mine[item], gold[item]
            valid += 1
            exact += r == g
            bucketed += a.bucket.get(r, r) == a.bucket.get(g, g)
            pairs.setdefault(a.code, ([], []))
            pairs[a.code][0].append(r)
            pairs[a.code][1].append(g)
    kappas: dict[str, list[float]] = {group: [] for group in groups}
    for code, (rs, gs) in pairs.items():
        k = _quadratic_kappa(spec[code], rs, gs)
        if math.isfinite(k):
            kappas[spec[code].group].append(k)
    return {
        "exact": exact / valid if valid else None,
        "bucketed": bucketed / valid if valid else None,
        **{f"kappa:{g}": (sum(v) / len(v) if v else None) for g, v in kappas.items()},
    }


def _top_k_share(
    samples: list[dict[str, dict[str, float | None]]], reviewers: list[str], reviewer: str, k: int
) -> float | None:
    """Share of resamples in which fewer than k reviewers have a strictly higher bucketed agreement."""
    inside = 0
    for sample in samples:
        mine = sample[reviewer]["bucketed"]
        if mine is None:
            continue
        theirs = (sample[other]["bucketed"] for other in reviewers)
        higher = sum(1 for b in theirs if b is not None and b > mine)
        inside += higher < k
    return inside / len(samples) if samples else None


def naive_calibration(
    attributes: Sequence[AttributeSpec],
    judgments: JudgmentTable,
    round_name: str,
    *,
    resamples: int,
    seed: int,
    top_k: Sequence[int] = (4, 5, 6),
    ci_level: float = 0.95,
    experts: Sequence[str] = (),
) -> dict:
    """Per reviewer: point agreement/κ, then the same recomputed on every turn resample, loop by loop."""
    spec = {a.code: a for a in attributes}
    gold, scores = _calibration_scores(spec, judgments, round_name, experts)
    all_items = set(gold) | {i for s in scores.values() for i in s}
    turns = sorted({item[:3] for item in all_items})
    items_of_turn: dict[tuple, list[tuple]] = {t: [] for t in turns}
    for item in sorted(all_items):
        items_of_turn[item[:3]].append(item)
    reviewers = sorted(scores)
    groups = sorted({a.group for a in attributes})

    def statistics(picked: list[tuple]) -> dict[str, dict[str, float | None]]:
        return {r: _reviewer_statistics(spec, groups, items_of_turn, gold, scores[r], picked) for r in reviewers}

    point = statistics(turns)
    picks: np.ndarray | list = (
        resample_picks(len(turns), resamples, seed) if turns else []
    )
    samples = [statistics([turns[i] for i in row]) for row in picks]
    shares = {k: {reviewer: _top_k_share(samples, reviewers, reviewer, k) if point[reviewer]["bucketed"] is not None
                  else None for reviewer in reviewers} for k in top_k}
    metrics = ["exact", "bucketed", *(f"kappa:{g}" for g in groups)]
    intervals = {
        reviewer: {m: _quantiles([s[reviewer][m] for s in samples], ci_level) for m in metrics}
        for reviewer in reviewers
    }
    # the turns each reviewer's figures can move on: those holding an item both the reviewer and gold scored
    clusters = {reviewer: sum(1 for turn in turns if any(item in gold and item in scores[reviewer]
                                                         for item in items_of_turn[turn])) for reviewer in reviewers}
    return {"point": point, "shares": shares, "intervals": intervals, "turns": turns, "clusters": clusters}


def _risk_clusters(attributes: Sequence[AttributeSpec]) -> list[str]:
    """The clusters of risk-scored response attributes, in schema order."""
    clusters: list[str] = []
    for a in attributes:
        if a.unit == "response" and a.risk is not None and a.cluster and a.cluster not in clusters:
            clusters.append(a.cluster)
    return clusters


def _response_risks(
    spec: dict[str, AttributeSpec], clusters: list[str], judgments: JudgmentTable, panel: Sequence[str] | None
) -> dict[tuple, dict[str, dict[str, list[float]]]]:
    """response -> coder -> cluster -> risks, from the main round's non-gold response judgments of the panel."""
    risks: dict[tuple, dict[str, dict[str, list[float]]]] = {}
    for rnd, coder, is_gold, dataset, conversation, turn, model, attribute, score in _rows(judgments):
        a = spec.get(attribute)
        if rnd != MAIN or is_gold or a is None or a.unit != "response" or score not in a.scale:
            continue
        if panel is not None and coder not in panel:
            continue
        per_coder = risks.setdefault((dataset, conversation, turn, model or ""), {}).setdefault(coder, {})
        if a.risk is not None and a.cluster in clusters:
            per_coder.setdefault(a.cluster, []).append(float(a.risk[score]))
    return risks


def _response_value(
    coders: dict[str, dict[str, list[float]]], clusters: list[str], names: list[str]
) -> dict[str, float | None]:
    """One response's mean over coders of each coder's cluster means, and of their ARI (coders with every cluster)."""
    per_name: dict[str, list[float]] = {n: [] for n in names}
    for per_cluster in coders.values():
        means = {c: sum(v) / len(v) for c, v in per_cluster.items() if v}
        for c in clusters:
            if c in means:
                per_name[c].append(means[c])
        if clusters and all(c in means for c in clusters):
            per_name["ARI"].append(sum(means[c] for c in clusters) / len(clusters))
    return {n: (sum(v) / len(v) if v else None) for n, v in per_name.items()}


def _model_means(
    value: dict[tuple, dict[str, float | None]],
    responses_of: dict[tuple, list[tuple]],
    models: list[str],
    names: list[str],
    picked: list[tuple],
) -> dict[str, dict[str, float | None]]:
    """Per model, the mean of each defined response value over the picked conversations' responses."""
    sums = {m: dict.fromkeys(names, 0.0) for m in models}
    counts = {m: dict.fromkeys(names, 0) for m in models}
    for conversation in picked:
        for response in responses_of[conversation]:
            for n in names:
                v = value[response][n]
                if v is not None:
                    sums[response[3]][n] += v
                    counts[response[3]][n] += 1
    return {m: {n: (sums[m][n] / counts[m][n] if counts[m][n] else None) for n in names} for m in models}


def naive_ari(
    attributes: Sequence[AttributeSpec],
    judgments: JudgmentTable,
    *,
    panel: Sequence[str] | None,
    resamples: int,
    seed: int,
    ci_level: float = 0.95,
    only: Container[tuple[str, str]] | None = None,
) -> dict:
    """Per model cluster means and ARI, point and conversation-bootstrap intervals, response by response.

    ``only`` (a set of (dataset, conversation)) gives the figures of a split (a dataset's conversations, a
    kind's): the study's conversations are resampled as ever, and each resample keeps the picks in the split.
    """
    spec = {a.code: a for a in attributes}
    clusters = _risk_clusters(attributes)
    risks = _response_risks(spec, clusters, judgments, panel)
    names = [*clusters, "ARI"]
    value = {response: _response_value(coders, clusters, names) for response, coders in risks.items()}
    conversations = sorted({r[:2] for r in value})
    responses_of: dict[tuple, list[tuple]] = {c: [] for c in conversations}
    for response in sorted(value):
        responses_of[response[:2]].append(response)
    inside = [c for c in conversations if only is None or c in only]
    models = sorted({r[3] for c in inside for r in responses_of[c]})

    def means(picked: list[tuple]) -> dict[str, dict[str, float | None]]:
        return _model_means(value, responses_of, models, names, [c for c in picked if only is None or c in only])

    point = means(conversations)
    picks = resample_picks(len(conversations), resamples, seed)
    samples = [means([conversations[i] for i in row]) for row in picks]
    intervals = {m: {n: _quantiles([s[m][n] for s in samples], ci_level) for n in names} for m in models}
    # the conversations (of the split) each model's figures can move on: those holding a scored response of it
    holding = {m: sum(1 for c in inside if any(r[3] == m for r in responses_of[c])) for m in models}
    return {"point": point, "intervals": intervals, "clusters": holding}
