"""Reliability section of the report (docs/metrics.md#reliability-calibration-rounds): every calibration round, every
reviewer, against gold.

A round becomes a dense items x reviewers matrix of scale positions (one column per reviewer, -1 = not
scored) plus gold vectors; calibration sets are small (tens of turns), so dense is both simplest and fastest.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from .agreement import MISSING, agreement_rate, gold_in_plurality, mean_difference, pairwise_agreement
from .bootstrap import Bootstrap, Resampling, grouped_kappa, percentile_interval, top_k_shares
from .common import dense_ids, mean_or_none, nan_to_none, ordered_calibration_rounds
from .encode import GOLD, Encoded
from .kappa import confusion_counts, kappa_from_confusion, krippendorff_alpha, landis_koch_band
from .spans import covered, f1_from_counts, merge, overlap
from .tables import GROUPS, ReportParams


def kappa_key(group: str) -> str:
    """Report key of a group's mean κ; the report spells the flag group in the plural
    (docs/metrics.md#grouped-kappa)."""
    return "kappa_flags" if group == "flag" else f"kappa_{group}"


@dataclass(frozen=True)
class RoundMatrix:
    name: str
    code: int
    reviewers: list[str]
    reviewer_codes: np.ndarray
    item_unit: np.ndarray
    item_attribute: np.ndarray
    item_turn: np.ndarray  # position of the item's turn among the round's turns (resampling cluster)
    n_turns: int
    label: np.ndarray  # items x reviewers, MISSING where not scored
    bucket: np.ndarray
    raw: np.ndarray  # raw scores, NaN where not scored
    gold_label: np.ndarray
    gold_bucket: np.ndarray
    gold_raw: np.ndarray


def round_matrix(enc: Encoded, name: str, coder_codes: np.ndarray | None = None) -> RoundMatrix:
    """The round's items x coders matrix with gold; `coder_codes` (codes into enc.coders) limits the columns.

    Rows of coders outside `coder_codes` are dropped before the items are numbered, so the matrix (its items, its
    turns, hence every resample) is exactly the one of a table without those rows: leaving the experts out
    of the reviewers' figures means computing them as if the experts had not coded the round.
    """
    j = enc.judgments
    code = enc.rounds.index(name)
    in_round = j.round == code
    if coder_codes is not None:
        in_round &= (j.coder == GOLD) | np.isin(j.coder, coder_codes)
    rows = np.flatnonzero(in_round)
    item, first = dense_ids(j.unit[rows], j.attribute[rows])
    n_items = len(first)
    coders = j.coder[rows]
    reviewer_codes = np.unique(coders[coders != GOLD])
    column = np.searchsorted(reviewer_codes, coders)
    label = np.full((n_items, len(reviewer_codes)), MISSING, dtype=np.int64)
    bucket = label.copy()
    raw = np.full(label.shape, np.nan)
    gold_label = np.full(n_items, MISSING, dtype=np.int64)
    gold_bucket = gold_label.copy()
    gold_raw = np.full(n_items, np.nan)
    is_gold = coders == GOLD
    rev = ~is_gold
    label[item[rev], column[rev]] = j.label[rows][rev]
    bucket[item[rev], column[rev]] = j.bucket[rows][rev]
    raw[item[rev], column[rev]] = j.score[rows][rev]
    gold_label[item[is_gold]] = j.label[rows][is_gold]
    gold_bucket[item[is_gold]] = j.bucket[rows][is_gold]
    gold_raw[item[is_gold]] = j.score[rows][is_gold]
    item_unit = j.unit[rows][first]
    item_turn, turn_first = dense_ids(enc.keys.unit_turn[item_unit])
    return RoundMatrix(
        name=name,
        code=code,
        reviewers=[enc.coders[c] for c in reviewer_codes.tolist()],
        reviewer_codes=reviewer_codes,
        item_unit=item_unit,
        item_attribute=j.attribute[rows][first],
        item_turn=item_turn,
        n_turns=len(turn_first),
        label=label,
        bucket=bucket,
        raw=raw,
        gold_label=gold_label,
        gold_bucket=gold_bucket,
        gold_raw=gold_raw,
    )


def _groups(enc: Encoded) -> list[str]:
    """Groups reported in by_group: user, response and flag always, then any further group of the schema."""
    extra = [a.group for a in enc.schema.attributes if a.group not in GROUPS]
    return list(GROUPS) + sorted(set(extra))


def _nominal(enc: Encoded) -> np.ndarray:
    """Per attribute: a nominal scale (its κ with gold is Cohen's unweighted κ, not the quadratic weighted one)."""
    return np.array([a.level == "nominal" for a in enc.schema.attributes], dtype=bool)


def _group_index(enc: Encoded, groups: list[str]) -> np.ndarray:
    return np.array([groups.index(a.group) for a in enc.schema.attributes], dtype=np.int64)


def _reviewer_entries(
    enc: Encoded, m: RoundMatrix, groups: list[str]
) -> tuple[dict[str, dict[str, object]], np.ndarray]:
    """Per reviewer of one round: the entry of docs/metrics.md#report-keys; also the (reviewers x attributes) κ
    matrix."""
    schema = enc.schema
    n_attributes = len(schema.attributes)
    attribute_group = _group_index(enc, groups)
    multi_level = np.array([len(a.scale) > 2 for a in schema.attributes], dtype=bool)
    n_reviewers = len(m.reviewers)
    valid = (m.label != MISSING) & (m.gold_label != MISSING)[:, None]
    reviewer_index, item_index = np.nonzero(valid.T)
    confusion = confusion_counts(
        reviewer_index * n_attributes + m.item_attribute[item_index],
        m.label[item_index, reviewer_index],
        m.gold_label[item_index],
        n_reviewers * n_attributes,
        schema.n_labels,
    )
    kappa = kappa_from_confusion(confusion, np.tile(_nominal(enc), n_reviewers)).reshape(n_reviewers, n_attributes)
    grouped = grouped_kappa(kappa, attribute_group, len(groups))
    item_group = attribute_group[m.item_attribute]
    entries: dict[str, dict[str, object]] = {}
    for r, reviewer in enumerate(m.reviewers):
        ok = valid[:, r]
        reviewer_label = np.where(ok, m.label[:, r], MISSING)
        reviewer_bucket = np.where(ok, m.bucket[:, r], MISSING)
        by_group = {
            group: agreement_rate(np.where(item_group == g, reviewer_bucket, MISSING), m.gold_bucket)
            for g, group in enumerate(groups)
        }
        kappas = {kappa_key(group): nan_to_none(grouped[r, g]) for g, group in enumerate(groups)}
        bias_items = ok & multi_level[m.item_attribute]
        entries[reviewer] = {
            "exact": agreement_rate(reviewer_label, m.gold_label),
            "bucketed": agreement_rate(reviewer_bucket, m.gold_bucket),
            "by_group": by_group,
            **kappas,
            "bias": mean_difference(m.raw[bias_items, r], m.gold_raw[bias_items]),
            "n_items": int(ok.sum()),
            # the clusters (turns, a conversation-level item one of its own) holding those items: the reviewer's
            # intervals rest on these alone, however many the round's bootstrap draws (a turn without one of the
            # reviewer's items with gold adds nothing to the reviewer's figures in a resample)
            "n_clusters": int(len(np.unique(m.item_turn[ok]))),
            "kappa_bands": {key: landis_koch_band(value) for key, value in kappas.items()},
            "kappa_by_attribute": {
                a.code: {
                    "kappa": nan_to_none(kappa[r, i]),
                    "band": landis_koch_band(nan_to_none(kappa[r, i])),
                }
                for i, a in enumerate(schema.attributes)
            },
        }
    return entries, kappa


def _empty_entry(enc: Encoded, groups: list[str]) -> dict[str, object]:
    """A reviewer who did not code a round still gets the full shape, with nothing defined."""
    kappas = {kappa_key(group): None for group in groups}
    return {
        "exact": None,
        "bucketed": None,
        "by_group": dict.fromkeys(groups),
        **kappas,
        "bias": None,
        "n_items": 0,
        "n_clusters": 0,
        "kappa_bands": dict.fromkeys(kappas),
        "kappa_by_attribute": {a.code: {"kappa": None, "band": None} for a in enc.schema.attributes},
        "span_f1": None,
    }


def _alpha_by_attribute(enc: Encoded, m: RoundMatrix) -> dict[str, dict[str, object]]:
    out: dict[str, dict[str, object]] = {}
    for i, spec in enumerate(enc.schema.attributes):
        items = m.item_attribute == i
        data = m.raw[items].T  # coders x units
        pairable = int((np.isfinite(data).sum(axis=0) >= 2).sum()) if data.size else 0
        value = krippendorff_alpha(data, spec.level, spec.scale) if len(m.reviewers) >= 2 else None
        out[spec.code] = {"alpha": value, "level": spec.level, "n_units": pairable}
    return out


def _bootstrap_round(
    enc: Encoded, m: RoundMatrix, groups: list[str], params: ReportParams, boot: Bootstrap,
    then: Callable[[np.ndarray], None] | None = None,
) -> dict[str, dict[str, dict[str, float | int | None]]]:
    """CIs of each reviewer's agreement and grouped κ by resampling the round's turns.

    Returns the CI entries, filled in when the bootstrap has run; ``then`` receives the (B x reviewers)
    bucketed agreement (reused for selection stability). Per-turn counts are computed once; each statistic is
    then one (B x turns) @ (turns x cells) product. Every bootstrap of the report draws the same resamples for
    the same number of clusters (``bootstrap.chunk_picks``), so the last round's stability shares and its CIs
    come from the same resamples, and `naive` can replay them exactly.
    """
    n_reviewers, n_attributes, n_labels = len(m.reviewers), len(enc.schema.attributes), enc.schema.n_labels
    valid = (m.label != MISSING) & (m.gold_label != MISSING)[:, None]

    def per_turn(values: np.ndarray) -> np.ndarray:  # items x reviewers -> turns x reviewers
        out = np.zeros((m.n_turns, n_reviewers))
        np.add.at(out, m.item_turn, values.astype(float))
        return out

    n_valid = per_turn(valid)
    exact = Resampling("ratio", (per_turn(valid & (m.label == m.gold_label[:, None])), n_valid))
    bucketed = Resampling("ratio", (per_turn(valid & (m.bucket == m.gold_bucket[:, None])), n_valid))
    confusions = np.zeros((n_reviewers, m.n_turns, n_attributes * n_labels * n_labels))
    for r in range(n_reviewers):
        ok = valid[:, r]
        confusions[r] = confusion_counts(
            m.item_turn[ok] * n_attributes + m.item_attribute[ok],
            m.label[ok, r],
            m.gold_label[ok],
            m.n_turns * n_attributes,
            n_labels,
        ).reshape(m.n_turns, -1)
    attribute_group = _group_index(enc, groups)
    kappas = Resampling("grouped_kappa", (confusions, attribute_group, _nominal(enc).astype(np.int8)),
                        (n_attributes, n_labels, len(groups)))
    entries: dict[str, dict[str, dict[str, float | int | None]]] = {reviewer: {} for reviewer in m.reviewers}

    def interval(samples: np.ndarray) -> list[dict[str, float | int | None]]:
        low, high, used = percentile_interval(samples, params.ci_level)
        return [{"low": nan_to_none(lo), "high": nan_to_none(hi), "n_resamples": int(n)}
                for lo, hi, n in zip(low, high, used, strict=True)]

    def fill(exact: np.ndarray, bucketed: np.ndarray, grouped: np.ndarray) -> None:
        exact_ci, bucketed_ci = interval(exact), interval(bucketed)
        kappa_ci = {kappa_key(group): interval(grouped[:, :, g]) for g, group in enumerate(groups)}
        for r, reviewer in enumerate(m.reviewers):
            entries[reviewer].update(
                {"exact": exact_ci[r], "bucketed": bucketed_ci[r], **{key: cis[r] for key, cis in kappa_ci.items()}}
            )
        if then is not None:
            then(bucketed)

    boot.request(exact, bucketed, kappas, then=fill)
    return entries


def _span_f1(
    enc: Encoded, m: RoundMatrix, subcategory_attribute: Mapping[str, str] | None
) -> dict[str, dict[str, object]]:
    """Per reviewer: character-overlap F1 with gold per subcategory, over the items both scored.

    Restricting to jointly scored (unit, attribute) items puts span agreement on the same footing as the
    score agreement next to it: a reviewer is not penalised for a response they never coded.
    """
    spans = enc.spans
    if spans is None:
        return {}
    schema_codes = enc.schema.codes
    if subcategory_attribute is not None:
        pairs = [(s, schema_codes.index(a)) for s, a in subcategory_attribute.items() if a in schema_codes]
    else:
        observed = {
            (enc.subcategories[s], a) for s, a in zip(spans.subcategory.tolist(), spans.attribute.tolist(), strict=True)
        }
        pairs = sorted(observed)
    slugs = [s for s, _ in pairs]
    subcategories_of: dict[int, list[str]] = {}
    for slug, attribute in pairs:
        subcategories_of.setdefault(attribute, []).append(slug)

    in_round = np.flatnonzero(spans.round == m.code)
    intervals: dict[tuple[int, int, int, str], list[tuple[int, int]]] = {}
    for row in in_round.tolist():
        key = (
            int(spans.coder[row]),
            int(spans.unit[row]),
            int(spans.attribute[row]),
            enc.subcategories[int(spans.subcategory[row])],
        )
        intervals.setdefault(key, []).append((int(spans.start[row]), int(spans.end[row])))
    merged = {key: merge(value) for key, value in intervals.items()}

    out: dict[str, dict[str, object]] = {}
    for r, reviewer in enumerate(m.reviewers):
        coder = int(m.reviewer_codes[r])
        totals = {slug: [0, 0, 0] for slug in slugs}  # both, reviewer, gold characters
        scored = np.flatnonzero((m.label[:, r] != MISSING) & (m.gold_label != MISSING))
        for unit, attribute in zip(m.item_unit[scored].tolist(), m.item_attribute[scored].tolist(), strict=True):
            for slug in subcategories_of.get(attribute, ()):
                mine = merged.get((coder, unit, attribute, slug), [])
                gold = merged.get((GOLD, unit, attribute, slug), [])
                total = totals[slug]
                total[0] += overlap(mine, gold)
                total[1] += covered(mine)
                total[2] += covered(gold)
        overall = [sum(t[k] for t in totals.values()) for k in range(3)]
        out[reviewer] = {
            "by_subcategory": {slug: f1_from_counts(*totals[slug]) for slug in slugs},
            "overall": f1_from_counts(*overall),
        }
    return out


def calibration_section(
    enc: Encoded, params: ReportParams, subcategory_attribute: Mapping[str, str] | None = None,
    boot: Bootstrap | None = None,
) -> dict[str, object]:
    """The section; its CIs and selection stability are filled in when ``boot`` runs (run here when None)."""
    own = boot is None
    boot = boot or Bootstrap(seed=params.seed, resamples=params.bootstrap)
    every_round = ordered_calibration_rounds(enc.rounds)
    groups = _groups(enc)
    per_round: dict[str, dict[str, dict[str, object]]] = {}
    pairwise: dict[str, dict[str, dict[str, float | None]]] = {}
    pairwise_mean: dict[str, dict[str, float | None]] = {}
    plurality: dict[str, float | None] = {}
    kappa_by_attribute: dict[str, dict[str, dict[str, object]]] = {}
    alpha: dict[str, dict[str, dict[str, object]]] = {}
    agreement_ci: dict[str, dict[str, dict[str, dict[str, float | int | None]]]] = {}
    experts: dict[str, dict[str, object]] = {}
    # the clusters each round's bootstrap resamples: its intervals' (and, for the last round, the shares'); and those
    # of them that carry data (a turn with an item a reviewer coded and gold scored: any other adds nothing to a
    # resample, so a round with gold on 3 of its 20 turns has intervals over 3 clusters)
    n_turns: dict[str, int] = {}
    n_clusters: dict[str, int] = {}
    # per round, the items its reviewers coded and those of them with a gold value: every reviewer figure rests on
    # the latter, so gold recorded on part of a round leaves the rest out (said in the warnings)
    gold_coverage: dict[str, dict[str, int]] = {}
    expert_names, method_names = set(params.experts), set(params.methods)
    is_expert = np.array([coder in expert_names for coder in enc.coders], dtype=bool)
    is_method = np.array([coder in method_names for coder in enc.coders], dtype=bool)
    reviewer_codes, expert_codes = np.flatnonzero(~is_expert & ~is_method), np.flatnonzero(is_expert)
    # A round no reviewer coded (a reserved gold pool, coded by the experts only) has expert figures only.
    reviewed = set(np.unique(enc.judgments.round[np.isin(enc.judgments.coder, reviewer_codes)]).tolist())
    rounds = [name for name in every_round if enc.rounds.index(name) in reviewed]
    last = rounds[-1] if rounds else None
    top_k: dict[str, dict[str, float | None]] = {str(k): {} for k in params.top_k}

    for name in every_round:
        experts[name] = _expert_round(enc, round_matrix(enc, name, expert_codes), groups)
        if name not in rounds:
            continue
        m = round_matrix(enc, name, reviewer_codes)
        entries, kappa = _reviewer_entries(enc, m, groups)
        spans = _span_f1(enc, m, subcategory_attribute)
        for reviewer, entry in entries.items():
            entry["span_f1"] = spans.get(reviewer)
        per_round[name] = entries
        pairwise[name], pairwise_mean[name] = _pairwise(m)
        plurality[name] = gold_in_plurality(m.gold_bucket, m.bucket)
        kappa_by_attribute[name] = {
            a.code: _attribute_kappa_summary(kappa[:, i]) for i, a in enumerate(enc.schema.attributes)
        }
        alpha[name] = _alpha_by_attribute(enc, m)
        n_turns[name] = m.n_turns
        coded = (m.label != MISSING).any(axis=1)
        valid = coded & (m.gold_label != MISSING)
        n_clusters[name] = len(np.unique(m.item_turn[valid]))
        gold_coverage[name] = {"items": int(coded.sum()), "with_gold": int(valid.sum())}

        def stability(bucketed: np.ndarray, reviewers: list[str] = m.reviewers,
                      ranked: tuple[bool, ...] = tuple(entries[r]["n_items"] != 0 for r in m.reviewers)) -> None:
            # a reviewer without a valid item in the round has no rank, hence no share (null), not 0
            shares = top_k_shares(bucketed, params.top_k)
            for k in params.top_k:
                top_k[str(k)].update({reviewer: nan_to_none(shares[k][r]) if ranked[r] else None
                                      for r, reviewer in enumerate(reviewers)})

        agreement_ci[name] = _bootstrap_round(enc, m, groups, params, boot, stability if name == last else None)

    reviewers: dict[str, dict[str, object]] = {}
    for reviewer in sorted({r for entries in per_round.values() for r in entries}):
        row: dict[str, object] = {name: per_round[name].get(reviewer) or _empty_entry(enc, groups) for name in rounds}
        start = per_round[rounds[0]].get(reviewer, {}).get("bucketed")
        end = per_round[rounds[-1]].get(reviewer, {}).get("bucketed")
        # one round measures no change: Δ is undefined rather than a misleading 0
        defined = len(rounds) >= 2 and start is not None and end is not None
        row["delta_pp"] = 100.0 * (float(end) - float(start)) if defined else None  # type: ignore[arg-type]
        reviewers[reviewer] = row

    bootstrap = {
        "resamples": params.bootstrap,
        "seed": params.seed,
        "round": last,
        "n_turns": n_turns[last] if last else 0,
        "n_turns_by_round": n_turns,
        "n_clusters_by_round": n_clusters,
        "top_k": top_k,
    }
    if own:
        boot.run()
    return {
        "rounds": rounds,
        "expert_only_rounds": [name for name in every_round if name not in rounds],
        "first_round": rounds[0] if rounds else None,
        "last_round": last,
        "reviewers": reviewers,
        "pairwise": pairwise,
        "pairwise_mean": pairwise_mean,
        "gold_in_plurality": plurality,
        "gold_coverage": gold_coverage,
        "kappa_by_attribute": kappa_by_attribute,
        "alpha": alpha,
        "agreement_ci": agreement_ci,
        "ci": {"level": params.ci_level, "resample": "turn", "resamples": params.bootstrap, "seed": params.seed},
        "bootstrap": bootstrap,
        "panel_ranking": _panel_ranking(per_round.get(last, {}) if last else {}, last, params.panel_size,
                                        reviewers=sorted(reviewers)),
        "experts": experts,
    }


def _pairwise(m: RoundMatrix) -> tuple[dict[str, dict[str, float | None]], dict[str, float | None]]:
    """Every pair of the matrix's coders ("A|B", A < B) with exact and bucketed agreement, and the mean pair."""
    exact_pairs = pairwise_agreement(m.label, m.reviewers)
    bucketed_pairs = pairwise_agreement(m.bucket, m.reviewers)
    pairs = {pair: {"exact": exact_pairs[pair], "bucketed": bucketed_pairs[pair]} for pair in sorted(exact_pairs)}
    mean = {"exact": mean_or_none(exact_pairs.values()), "bucketed": mean_or_none(bucketed_pairs.values())}
    return pairs, mean


def _expert_round(enc: Encoded, m: RoundMatrix, groups: list[str]) -> dict[str, object]:
    """The gold panel's own codings of one round, by the reviewers' definitions: each expert against the
    consensus (gold), every pair of experts, and Krippendorff's α of the experts per attribute.

    Agreement with gold is null without gold; pairs and α need two experts (no pair: {} and a null mean).
    """
    entries, _ = _reviewer_entries(enc, m, groups)
    pairs, mean = _pairwise(m)
    return {
        "experts": entries,
        "pairwise": pairs,
        "pairwise_mean": mean,
        "alpha": _alpha_by_attribute(enc, m),
    }


def _attribute_kappa_summary(kappas: np.ndarray) -> dict[str, object]:
    """Panel view of one attribute: mean of the reviewers' defined κ and its Landis–Koch band."""
    mean = mean_or_none(nan_to_none(k) for k in kappas.tolist())
    return {"mean": mean, "band": landis_koch_band(mean), "n_reviewers": int(np.isfinite(kappas).sum())}


# Why a reviewer of the report has no rank (``panel_ranking.unranked``): the ranking is of the last calibration round
UNRANKED_NO_GOLD = "no_gold"  # coded the round, but none of the items they coded has a gold value
UNRANKED_NOT_IN_ROUND = "not_in_round"  # coded an earlier calibration round only


def _panel_ranking(entries: Mapping[str, Mapping[str, object]], round_name: str | None, size: int,
                   reviewers: Sequence[str] = ()) -> dict[str, object]:
    """Reviewers by last-round bucketed agreement; retained when fewer than `size` others score higher. Each of the
    report's ``reviewers`` without a rank is under ``unranked`` with why (docs/metrics.md#panel-selection): the
    page lists them unranked, and a reviewer listed without a reason reads as one the report forgot."""
    scored = {r: cast("float | None", e["bucketed"]) for r, e in entries.items()}
    defined = [v for v in scored.values() if v is not None]
    ranking: list[dict[str, Any]] = []
    for reviewer, value in sorted(scored.items(), key=lambda kv: (kv[1] is None, -(kv[1] or 0.0), kv[0])):
        higher = None if value is None else sum(1 for v in defined if v > value)
        ranking.append({"reviewer": reviewer, "bucketed": value, "rank": None if higher is None else higher + 1})
    suggested = [row["reviewer"] for row in ranking if row["rank"] is not None and row["rank"] <= size]
    unranked = {r: UNRANKED_NO_GOLD if r in scored else UNRANKED_NOT_IN_ROUND
                for r in sorted({*reviewers, *scored}) if scored.get(r) is None}
    return {"round": round_name, "panel_size": size, "ranking": ranking, "suggested_panel": suggested,
            "unranked": unranked}
