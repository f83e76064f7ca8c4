"""Analysis indices of the main annotation (docs/metrics.md#analysis-indices-main-round): UIRI, flag burden, risks,
D/E/R/F clusters and ARI, fingerprints, coupling, trajectories and span evidence, plus bootstrap CIs for the per-model
ARI table.

Multi-coder rule (docs/metrics.md#several-coders-on-one-unit): a unit's value of any quantity is the mean of the
per-coder values of that quantity. So UIRI and cluster scores are computed per (coder, unit) first and only then
averaged over the coders of the unit; a model's figure is the mean over its responses where the quantity is defined.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import cast

import numpy as np

from common.rounds import MAIN

from .bootstrap import Bootstrap, Resampling, percentile_interval
from .clusters import ari_clusters
from .common import dense_ids, group_mean, group_sum_count, mean_or_none, nan_to_none, safe_divide
from .correlation import coupling_table
from .encode import GOLD, Encoded
from .spans import span_evidence, subcategory_pairs, whitespace_tokens
from .tables import ReportParams
from .trajectories import series_statistics, slope_class, summarise, summarise_by_group

ARI = "ARI"
BANDS = ("low", "medium", "high")


def uiri_band(values: np.ndarray, bands: tuple[float, float]) -> np.ndarray:
    """Band index per UIRI value: 0 low (< lower), 1 medium ([lower, upper)), 2 high (>= upper).

    Rounded to 9 decimals first: UIRI is a mean of fractions such as 3/10, which in floating point can land
    a hair below the band boundary it equals exactly.
    """
    rounded = np.round(np.asarray(values, dtype=float), 9)
    return (rounded >= bands[0]).astype(np.int64) + (rounded >= bands[1]).astype(np.int64)


def band_shares(values: np.ndarray, bands: tuple[float, float]) -> dict[str, float | None]:
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if len(values) == 0:
        return dict.fromkeys(BANDS)
    counts = np.bincount(uiri_band(values, bands), minlength=3)
    return {band: float(c) / len(values) for band, c in zip(BANDS, counts, strict=True)}


def fingerprint(mean_risk: np.ndarray) -> np.ndarray:
    """z-scores of a (models x attributes) mean-risk matrix, per attribute across models.

    Sample SD (n - 1) over the models where the attribute is defined; σ = 0 -> z = 0; fewer than two
    defined models -> NaN (the report's None).
    """
    mean_risk = np.asarray(mean_risk, dtype=float)
    z = np.full(mean_risk.shape, np.nan)
    for a in range(mean_risk.shape[1]):
        column = mean_risk[:, a]
        defined = np.isfinite(column)
        if defined.sum() < 2:
            continue
        mu = column[defined].mean()
        sigma = column[defined].std(ddof=1)
        z[defined, a] = 0.0 if sigma <= 1e-12 else (column[defined] - mu) / sigma
    return z


def cluster_scores(
    pair: np.ndarray, cluster: np.ndarray, risk: np.ndarray, n_pairs: int, n_clusters: int
) -> np.ndarray:
    """(pairs x clusters+1) per-(coder, response) cluster means of risk, last column ARI.

    A cluster is the mean of the risks of its attributes that the coder scored; ARI is the mean of the
    clusters and is defined only when every cluster is.
    """
    sums, counts = group_sum_count(pair * n_clusters + cluster, risk, n_pairs * n_clusters)
    clusters = safe_divide(sums, counts).reshape(n_pairs, n_clusters)
    all_defined = np.isfinite(clusters).all(axis=1) if n_clusters else np.zeros(n_pairs, dtype=bool)
    ari = np.where(all_defined, np.nan_to_num(clusters).mean(axis=1) if n_clusters else np.nan, np.nan)
    return np.column_stack([clusters, ari])


@dataclass(frozen=True)
class MainRound:
    """Per-unit values of the main round after averaging over coders (rows: unit ids; NaN = not coded)."""

    turn_uiri: np.ndarray  # per turn id
    turn_mean_raw: np.ndarray  # turns x attributes, mean raw score
    turn_mean_normalised: np.ndarray  # turns x attributes, mean score / max(scale)
    response_mean_raw: np.ndarray  # units x attributes
    response_mean_normalised: np.ndarray  # units x attributes
    response_mean_risk: np.ndarray  # units x attributes
    response_clusters: np.ndarray  # units x (clusters + ARI)
    response_coders: np.ndarray  # units: coders with any response-level score
    coded_responses: np.ndarray  # unit ids of coded responses, ascending
    clusters: list[str]


def _main_rows(enc: Encoded, params: ReportParams) -> np.ndarray | None:
    if MAIN not in enc.rounds:
        return None
    j = enc.judgments
    keep = (j.round == enc.rounds.index(MAIN)) & (j.coder != GOLD)
    methods = [enc.coders.index(c) for c in params.methods if c in enc.coders]
    if methods:  # an automated coder's labels are not a reviewer's (ReportParams.methods)
        keep &= ~np.isin(j.coder, methods)
    if params.panel is not None:
        panel = [enc.coders.index(c) for c in params.panel if c in enc.coders]
        keep &= np.isin(j.coder, panel)
    return np.flatnonzero(keep)


def models_left_out(enc: Encoded, params: ReportParams) -> dict[str, dict[str, int]]:
    """The main round's judgments of each model's responses that ``_main_rows`` leaves out, by why: ``methods`` (an
    automated coder's) and ``outside_panel`` (a reviewer's outside the retained panel); only the models with some.
    What a model without a row in the per-model figures was scored by (``input.models_left_out``), for the report's
    warnings."""
    if MAIN not in enc.rounds:
        return {}
    j, keys = enc.judgments, enc.keys
    model = keys.unit_model[j.unit]
    of_responses = (j.round == enc.rounds.index(MAIN)) & (j.coder != GOLD) & (
        np.array([name != "" for name in keys.models], dtype=bool)[model])
    by_method = of_responses & np.isin(j.coder, [enc.coders.index(c) for c in params.methods if c in enc.coders])
    outside = np.zeros_like(by_method)
    if params.panel is not None:
        outside = of_responses & ~by_method & ~np.isin(
            j.coder, [enc.coders.index(c) for c in params.panel if c in enc.coders])
    counts = {"methods": np.bincount(model[by_method], minlength=len(keys.models)),
              "outside_panel": np.bincount(model[outside], minlength=len(keys.models))}
    return {keys.models[m]: {why: int(n[m]) for why, n in counts.items()}
            for m in sorted(range(len(keys.models)), key=lambda m: keys.models[m])
            if counts["methods"][m] or counts["outside_panel"][m]}


def main_round(enc: Encoded, rows: np.ndarray) -> MainRound:
    j, schema, keys = enc.judgments, enc.schema, enc.keys
    n_attributes = len(schema.attributes)
    n_turns, n_units = len(keys.turn_index), len(keys.unit_turn)
    attribute, unit, coder = j.attribute[rows], j.unit[rows], j.coder[rows]
    column = j.score[rows] - schema.offset
    raw = j.score[rows].astype(float)
    normalised = schema.normalised[attribute, column]
    risk = schema.risk[attribute, column]
    kinds = np.array([a.unit for a in schema.attributes], dtype=object)
    at_turn = kinds[attribute] == "turn" if len(rows) else np.zeros(0, dtype=bool)
    at_response = kinds[attribute] == "response" if len(rows) else np.zeros(0, dtype=bool)
    turn = keys.unit_turn[unit]

    def per_cell(ids: np.ndarray, values: np.ndarray, n: int, mask: np.ndarray) -> np.ndarray:
        return group_mean(ids[mask] * n_attributes + attribute[mask], values[mask], n * n_attributes).reshape(
            n, n_attributes
        )

    uiri_attributes = schema.indices(lambda a: a.uiri and a.unit == "turn")
    turn_uiri = np.full(n_turns, np.nan)
    in_uiri = at_turn & np.isin(attribute, uiri_attributes)
    if uiri_attributes and in_uiri.any():
        pair, first = dense_ids(coder[in_uiri], turn[in_uiri])
        sums, counts = group_sum_count(pair, normalised[in_uiri], len(first))
        complete = counts == len(uiri_attributes)  # a coder contributes only with all UIRI items scored
        coder_uiri = sums / len(uiri_attributes)
        turn_uiri = group_mean(turn[in_uiri][first][complete], coder_uiri[complete], n_turns)

    clusters = ari_clusters(schema.attributes)
    cluster_of = np.array(
        [
            clusters.index(a.cluster) if a.cluster in clusters and a.risk is not None and a.unit == "response" else -1
            for a in schema.attributes
        ]
        or [-1],
        dtype=np.int64,
    )
    response_clusters = np.full((n_units, len(clusters) + 1), np.nan)
    response_coders = np.zeros(n_units)
    if at_response.any():
        pair, first = dense_ids(coder[at_response], unit[at_response])
        pair_unit = unit[at_response][first]
        response_coders = np.bincount(pair_unit, minlength=n_units).astype(float)
        in_cluster = cluster_of[attribute[at_response]] >= 0
        per_pair = cluster_scores(
            pair[in_cluster],
            cluster_of[attribute[at_response]][in_cluster],
            risk[at_response][in_cluster],
            len(first),
            len(clusters),
        )
        for c in range(len(clusters) + 1):
            response_clusters[:, c] = group_mean(pair_unit, per_pair[:, c], n_units)
    return MainRound(
        turn_uiri=turn_uiri,
        turn_mean_raw=per_cell(turn, raw, n_turns, at_turn),
        turn_mean_normalised=per_cell(turn, normalised, n_turns, at_turn),
        response_mean_raw=per_cell(unit, raw, n_units, at_response),
        response_mean_normalised=per_cell(unit, normalised, n_units, at_response),
        response_mean_risk=per_cell(unit, risk, n_units, at_response),
        response_clusters=response_clusters,
        response_coders=response_coders,
        coded_responses=np.flatnonzero(response_coders > 0),
        clusters=clusters,
    )


def _multi_turn_conversations(enc: Encoded, conversation_kinds: Mapping[tuple[str, str], str] | None) -> np.ndarray:
    """Boolean per conversation id. Without a kinds map, a conversation with several turns is multi-turn."""
    keys = enc.keys
    n_conversations = len(keys.conversation_name)
    real_turns = keys.turn_index > 0
    inferred = np.bincount(keys.turn_conversation[real_turns], minlength=n_conversations) > 1
    if conversation_kinds is None:
        return inferred
    multi = inferred.copy()
    for c in range(n_conversations):
        kind = conversation_kinds.get((keys.datasets[keys.conversation_dataset[c]], keys.conversation_name[c]))
        if kind is not None:
            multi[c] = kind == "multi"
    return multi


def _uiri_section(enc: Encoded, main: MainRound, params: ReportParams) -> dict[str, object]:
    keys = enc.keys
    defined = np.isfinite(main.turn_uiri)
    dataset_of_turn = keys.conversation_dataset[keys.turn_conversation]
    by_dataset = {}
    by_dataset_bands = {}
    by_dataset_n_turns = {}  # the turns each dataset's mean and band shares are over, as n_turns is the study's
    for d in np.unique(dataset_of_turn[defined]).tolist():
        values = main.turn_uiri[defined & (dataset_of_turn == d)]
        by_dataset[keys.datasets[d]] = float(values.mean())
        by_dataset_bands[keys.datasets[d]] = band_shares(values, params.uiri_bands)
        by_dataset_n_turns[keys.datasets[d]] = len(values)
    return {
        "mean": float(main.turn_uiri[defined].mean()) if defined.any() else None,
        "bands": band_shares(main.turn_uiri, params.uiri_bands),
        "by_dataset": by_dataset,
        "by_dataset_bands": by_dataset_bands,
        "by_dataset_n_turns": by_dataset_n_turns,
        "n_turns": int(defined.sum()),
        "thresholds": {"medium": params.uiri_bands[0], "high": params.uiri_bands[1]},
        "attributes": _user_scores(enc, main, dataset_of_turn),
    }


def _user_scores(enc: Encoded, main: MainRound, dataset_of_turn: np.ndarray) -> dict[str, object]:
    """Mean raw score of each turn-level attribute over the main-round turns coded on it (each turn's value the
    mean over its coders), overall and per dataset, with the number of turns."""
    schema, keys = enc.schema, enc.keys
    overall: dict[str, object] = {}
    by_dataset: dict[str, dict[str, object]] = {}
    for a in schema.indices(lambda attribute: attribute.unit == "turn"):
        values = main.turn_mean_raw[:, a]
        coded = np.isfinite(values)
        code = schema.codes[a]
        overall[code] = {"mean": nan_to_none(values[coded].mean()) if coded.any() else None,
                         "n_turns": int(coded.sum())}
        for d in np.unique(dataset_of_turn[coded]).tolist():
            inside = coded & (dataset_of_turn == d)
            by_dataset.setdefault(keys.datasets[d], {})[code] = {"mean": float(values[inside].mean()),
                                                                  "n_turns": int(inside.sum())}
    return {"all": overall, "by_dataset": dict(sorted(by_dataset.items()))}


def _model_tables(enc: Encoded, main: MainRound) -> dict[str, object]:
    """flags, ari, attribute_risk and fingerprint, keyed by model name (sorted)."""
    schema, keys = enc.schema, enc.keys
    coded = main.coded_responses
    model_of = keys.unit_model[coded]
    model_codes = np.unique(model_of)
    models = [keys.models[m] for m in model_codes.tolist()]
    position = np.searchsorted(model_codes, model_of)
    n_models = len(models)
    n_responses = np.bincount(position, minlength=n_models)

    def per_model(values: np.ndarray) -> np.ndarray:  # coded responses -> models
        return group_mean(position, values, n_models)

    risk_attributes = schema.indices(lambda a: a.risk is not None and a.unit == "response")
    flag_attributes = schema.indices(lambda a: a.group == "flag" and a.unit == "response")
    mean_risk = (
        np.column_stack([per_model(main.response_mean_risk[coded, a]) for a in risk_attributes])
        if (risk_attributes and n_models)
        else np.full((n_models, len(risk_attributes)), np.nan)
    )
    z = fingerprint(mean_risk)
    cluster_names = [*main.clusters, ARI]
    cluster_means = [per_model(main.response_clusters[coded, c]) for c in range(len(cluster_names))]
    codes = schema.codes
    flag_means = {codes[a]: per_model(main.response_mean_normalised[coded, a]) for a in flag_attributes}
    flags = {model: {code: nan_to_none(v[m]) for code, v in flag_means.items()} for m, model in enumerate(models)}
    return {
        "flags": flags,
        "ari": {
            model: {
                **{name: nan_to_none(cluster_means[c][m]) for c, name in enumerate(cluster_names)},
                "n_responses": int(n_responses[m]),
            }
            for m, model in enumerate(models)
        },
        "attribute_risk": {
            model: {codes[a]: nan_to_none(mean_risk[m, i]) for i, a in enumerate(risk_attributes)}
            for m, model in enumerate(models)
        },
        "fingerprint": {
            model: {codes[a]: nan_to_none(z[m, i]) for i, a in enumerate(risk_attributes)}
            for m, model in enumerate(models)
        },
    }


def _ari_intervals(
    enc: Encoded, main: MainRound, params: ReportParams, boot: Bootstrap, splits: Sequence[np.ndarray] = (),
) -> tuple[dict[str, object], list[dict[str, object]], dict[str, object], list[dict[str, object]]]:
    """Percentile CIs of every model's cluster means and ARI, resampling conversations (or turns); filled in when
    ``boot`` runs; and how many of those resampling units the coded responses fall in (``indices.ci.n_clusters``,
    which the report's warnings read), and each model's (``n_clusters_by_model``: a model's interval rests on the
    clusters its responses fall in, as a split's does, so a model coded in 3 of the study's 40 conversations has an
    interval over 3). Also the same CIs over each split (a subset of the coded responses: a dataset's, a
    conversation kind's), from the very same resamples: a resample of the study's clusters restricted to the
    split's responses, so a dataset's interval moves with the study's draws and costs one matrix product; and how
    many clusters each split's responses fall in, in all and by model (a resample draws the study's clusters, but
    only the split's carry its data: a dataset of 2 conversations has an interval over 2 clusters, whatever the
    study's).

    Per-cluster sums and counts of the coded responses are accumulated per resampling unit once; each
    resample is then a row of a (B x units) count matrix times those sums.
    """
    keys = enc.keys
    coded = main.coded_responses
    names = [*main.clusters, ARI]
    model_of = keys.unit_model[coded]
    model_codes = np.unique(model_of)
    position = np.searchsorted(model_codes, model_of)
    turn = keys.unit_turn[coded]
    cluster_key = keys.turn_conversation[turn] if params.ci_resample == "conversation" else turn
    cluster, first = dense_ids(cluster_key)
    n_clusters, n_models, n_values = len(first), len(model_codes), len(names)
    width = n_models * n_values

    def accumulate(blocks: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """(clusters x blocks·models·values) sums and counts; block b over the coded responses blocks[b] picks."""
        sums = np.zeros((n_clusters, len(blocks) * width))
        counts = np.zeros_like(sums)
        for b, rows in enumerate(blocks):
            part = slice(b * width, (b + 1) * width)
            for q in range(n_values):
                values = main.response_clusters[coded[rows], q]
                ok = np.isfinite(values)
                cell = cluster[rows][ok] * width + position[rows][ok] * n_values + q
                size = n_clusters * width
                sums[:, part] += np.bincount(cell, weights=values[ok], minlength=size).reshape(n_clusters, width)
                counts[:, part] += np.bincount(cell, minlength=size).reshape(n_clusters, width)
        return sums, counts

    def intervals_of(low: np.ndarray, high: np.ndarray, used: np.ndarray, models: np.ndarray) -> dict[str, object]:
        low, high = low.reshape(n_models, n_values), high.reshape(n_models, n_values)
        used = used.reshape(n_models, n_values)
        return {
            keys.models[model_codes[m]]: {
                name: {"low": nan_to_none(low[m, q]), "high": nan_to_none(high[m, q]), "n_resamples": int(used[m, q])}
                for q, name in enumerate(names)
            }
            for m in models.tolist()
        }

    def counted(rows: np.ndarray) -> dict[str, object]:
        """The clusters the responses ``rows`` picks fall in, in all and by model (by name)."""
        by_model = {keys.models[model_codes[m]]: len(np.unique(cluster[rows][position[rows] == m]))
                    for m in np.unique(position[rows]).tolist()}
        return {"n_clusters": len(np.unique(cluster[rows])), "n_clusters_by_model": dict(sorted(by_model.items()))}

    intervals: dict[str, object] = {}

    def fill(samples: np.ndarray) -> None:
        intervals.update(intervals_of(*percentile_interval(samples, params.ci_level), np.arange(n_models)))

    boot.request(Resampling("ratio", accumulate([np.arange(len(coded))])), then=fill)
    counts = counted(np.arange(len(coded)))
    if not splits:
        return intervals, [], counts, []
    # Rows (positions in ``coded``) of each split, and the models it has responses of.
    where = np.full(len(keys.unit_model), -1, dtype=np.int64)
    where[coded] = np.arange(len(coded))
    blocks = [where[split] for split in splits]
    split_models = [np.unique(position[rows]) for rows in blocks]
    split_intervals: list[dict[str, object]] = [{} for _ in splits]

    def fill_splits(samples: np.ndarray) -> None:
        low, high, used = percentile_interval(samples, params.ci_level)
        for b, models in enumerate(split_models):
            part = slice(b * width, (b + 1) * width)
            split_intervals[b].update(intervals_of(low[part], high[part], used[part], models))

    boot.request(Resampling("ratio", accumulate(blocks)), then=fill_splits)
    return intervals, split_intervals, counts, [counted(rows) for rows in blocks]


def _coupling(enc: Encoded, main: MainRound, params: ReportParams, coded: np.ndarray) -> dict[str, object]:
    """{raw, risk}: per model, the coupling table over the given coded responses."""
    schema, keys = enc.schema, enc.keys
    inputs = schema.indices(lambda a: a.group == params.coupling_input_group and a.unit == "turn")
    outputs = schema.indices(lambda a: a.group in params.coupling_output_groups and a.unit == "response")
    risky_outputs = [a for a in outputs if schema.attributes[a].risk is not None]
    codes = schema.codes
    raw: dict[str, object] = {}
    risk: dict[str, object] = {}
    thresholds = {"min_abs_rho": params.coupling_min_abs_rho, "max_q": params.coupling_max_q}
    for code in np.unique(keys.unit_model[coded]).tolist():
        units = coded[keys.unit_model[coded] == code]
        turns = keys.unit_turn[units]
        x = {codes[a]: main.turn_mean_raw[turns, a] for a in inputs}
        model = keys.models[code]
        raw[model] = coupling_table(x, {codes[a]: main.response_mean_raw[units, a] for a in outputs}, **thresholds)
        risk[model] = coupling_table(
            x, {codes[a]: main.response_mean_risk[units, a] for a in risky_outputs}, **thresholds
        )
    return {"raw": raw, "risk": risk}


def _trajectories(
    enc: Encoded, main: MainRound, params: ReportParams, multi: np.ndarray
) -> tuple[dict[str, object], dict[str, dict[str, float | None]]]:
    """Trajectory summaries per signal, and the per-conversation UIRI peak of multi-turn conversations."""
    schema, keys = enc.schema, enc.keys
    turn_in_multi = multi[keys.turn_conversation] & (keys.turn_index > 0)
    user_attributes = schema.indices(lambda a: a.unit == "turn" and max(a.scale) > 0)
    signal_names: list[tuple[str | None, str]] = [(None, "UIRI"), *((None, schema.codes[a]) for a in user_attributes)]
    point_signal, point_turn_id, point_value = [], [], []

    def add(signal: int, turn_ids: np.ndarray, values: np.ndarray) -> None:
        ok = np.isfinite(values) & turn_in_multi[turn_ids]
        point_signal.append(np.full(int(ok.sum()), signal, dtype=np.int64))
        point_turn_id.append(turn_ids[ok])
        point_value.append(values[ok])

    all_turns = np.arange(len(keys.turn_index))
    add(0, all_turns, main.turn_uiri)
    for s, a in enumerate(user_attributes, start=1):
        add(s, all_turns, main.turn_mean_normalised[:, a])
    coded = main.coded_responses
    risk_attributes = schema.indices(lambda a: a.risk is not None and a.unit == "response")
    for code in np.unique(keys.unit_model[coded]).tolist():
        units = coded[keys.unit_model[coded] == code]
        model = keys.models[code]
        for c, name in enumerate([*main.clusters, ARI]):
            signal_names.append((model, name))
            add(len(signal_names) - 1, keys.unit_turn[units], main.response_clusters[units, c])
        for a in risk_attributes:
            signal_names.append((model, schema.codes[a]))
            add(len(signal_names) - 1, keys.unit_turn[units], main.response_mean_risk[units, a])

    signal = np.concatenate(point_signal)
    turn_id = np.concatenate(point_turn_id)
    value = np.concatenate(point_value)
    conversation = keys.turn_conversation[turn_id]
    series, first = dense_ids(signal, conversation)
    stats = series_statistics(series, keys.turn_index[turn_id], value, len(first))
    summaries = summarise(
        stats, signal[first], len(signal_names), series, keys.turn_index[turn_id], params.slope_flat_threshold
    )
    user, models = _by_signal(signal_names, summaries)
    # The same summaries over each dataset's multi-turn conversations apart (the dashboards' dataset filter).
    series_dataset = keys.conversation_dataset[conversation[first]]
    per_dataset = summarise_by_group(
        stats, signal[first], len(signal_names), series_dataset, len(keys.datasets), series,
        keys.turn_index[turn_id], params.slope_flat_threshold,
    )
    by_dataset: dict[str, dict[str, object]] = {}
    for d in np.unique(series_dataset).tolist():
        d_user, d_models = _by_signal(signal_names, per_dataset[d])
        by_dataset[keys.datasets[d]] = {"user": d_user, "models": dict(sorted(d_models.items()))}

    peaks: dict[str, dict[str, float | None]] = {}
    uiri_lines: dict[str, dict[str, dict[str, object]]] = {}
    uiri_series = np.flatnonzero(signal[first] == 0)
    classes = slope_class(stats.slope, params.slope_flat_threshold)
    uiri_points = np.flatnonzero(signal == 0)
    uiri_points = uiri_points[np.argsort(series[uiri_points], kind="stable")]
    by_series = dict(zip(uiri_series.tolist(), np.split(uiri_points, np.flatnonzero(np.diff(series[uiri_points])) + 1)
                         if len(uiri_points) else [], strict=False))
    for s in uiri_series.tolist():
        c = int(conversation[first[s]])
        dataset, name = keys.datasets[keys.conversation_dataset[c]], keys.conversation_name[c]
        peaks.setdefault(dataset, {})[name] = nan_to_none(stats.peak[s])
        points = by_series[s]
        uiri_lines.setdefault(dataset, {})[name] = {
            "uiri": {str(int(t)): float(v) for t, v in sorted(zip(keys.turn_index[turn_id[points]].tolist(),
                                                                   value[points].tolist(), strict=True))},
            "slope": nan_to_none(stats.slope[s]),
            "class": classes[s] or None,
        }
    peaks = {d: dict(sorted(v.items())) for d, v in sorted(peaks.items())}
    section = {
        "threshold": params.slope_flat_threshold,
        "n_conversations": int(len(np.unique(conversation))),
        "user": user,
        "models": dict(sorted(models.items())),
        # Per multi-turn conversation, by dataset: its UIRI at each coded turn, OLS slope and trend class.
        "uiri_conversations": {d: dict(sorted(v.items())) for d, v in sorted(uiri_lines.items())},
        "by_dataset": dict(sorted(by_dataset.items())),
    }
    return section, peaks


def _by_signal(
    signal_names: list[tuple[str | None, str]], summaries: list[dict[str, object]]
) -> tuple[dict[str, object], dict[str, dict[str, object]]]:
    """Summaries keyed as the report has them: user-level signals by name, the others by model and name."""
    user: dict[str, object] = {}
    models: dict[str, dict[str, object]] = {}
    for (model, name), summary in zip(signal_names, summaries, strict=True):
        if model is None:
            user[name] = summary
        else:
            models.setdefault(model, {})[name] = summary
    return user, models


def _no_spans() -> dict[str, object]:
    return {"evidence": {}, "ratios": {}}


def _span_evidence(
    enc: Encoded,
    main: MainRound,
    rows_coders: np.ndarray,
    response_texts: Mapping[tuple[str, str, int, str], str] | None,
    subcategory_attribute: Mapping[str, str] | None,
) -> tuple[list[str], Callable[[np.ndarray], dict[str, object]]] | None:
    """The subcategories, and a function giving {evidence, ratios} over a subset of the coded responses (the
    spans' tokens are counted once for every subset); None without spans or main round."""
    spans, keys = enc.spans, enc.keys
    if spans is None or MAIN not in enc.rounds:
        return None
    keep = (spans.round == enc.rounds.index(MAIN)) & np.isin(spans.coder, rows_coders)
    keep &= np.array([a.unit == "response" for a in enc.schema.attributes])[spans.attribute]
    rows = np.flatnonzero(keep)
    slugs = list(subcategory_attribute) if subcategory_attribute is not None else []
    slugs += sorted({enc.subcategories[s] for s in np.unique(spans.subcategory[rows]).tolist()} - set(slugs))
    slug_index = np.array([slugs.index(s) if s in slugs else -1 for s in enc.subcategories] or [-1], dtype=np.int64)
    tokens = np.full(len(rows), np.nan)
    if response_texts is not None and len(rows):
        # each unit's text looked up once (not once per span), then its spans' tokens counted
        units, span_unit = np.unique(spans.unit[rows], return_inverse=True)
        turn = keys.unit_turn[units]
        conversation = keys.turn_conversation[turn]
        texts = [
            response_texts.get((keys.datasets[d], keys.conversation_name[c], t, keys.models[m]))
            for d, c, t, m in zip(keys.conversation_dataset[conversation].tolist(), conversation.tolist(),
                                  keys.turn_index[turn].tolist(), keys.unit_model[units].tolist(), strict=True)
        ]
        span_text = [texts[u] for u in span_unit.tolist()]
        tokens = np.array(
            [np.nan if text is None else whitespace_tokens(text, start, end)
             for text, start, end in zip(span_text, spans.start[rows].tolist(), spans.end[rows].tolist(), strict=True)],
            dtype=float,
        )
    pairs = subcategory_pairs(subcategory_attribute) if subcategory_attribute is not None else []
    span_response, span_subcategory = spans.unit[rows], slug_index[spans.subcategory[rows]]

    def evidence_of(coded: np.ndarray) -> dict[str, object]:
        response_coders = np.zeros_like(main.response_coders)
        response_coders[coded] = main.response_coders[coded]  # responses outside the subset count as uncoded
        model_codes = np.unique(keys.unit_model[coded])
        model_position = np.full(len(keys.models), -1, dtype=np.int64)
        model_position[model_codes] = np.arange(len(model_codes))
        response_model = np.where(response_coders > 0, model_position[keys.unit_model], 0)
        n_spans, n_tokens = span_evidence(
            span_response=span_response,
            span_subcategory=span_subcategory,
            span_tokens=tokens,
            response_coders=response_coders,
            response_model=response_model,
            n_models=len(model_codes),
            n_subcategories=len(slugs),
        )
        models = [keys.models[c] for c in model_codes.tolist()]
        evidence = {
            model: {
                slug: {
                    "spans_per_response": nan_to_none(n_spans[m, s]),
                    "tokens_per_response": nan_to_none(n_tokens[m, s]),
                }
                for s, slug in enumerate(slugs)
            }
            for m, model in enumerate(models)
        }
        ratios = {
            model: {
                f"{second}:{first}": {
                    "spans": nan_to_none(safe_divide(n_spans[m, slugs.index(second)],
                                                     n_spans[m, slugs.index(first)])),
                    "tokens": nan_to_none(safe_divide(n_tokens[m, slugs.index(second)],
                                                      n_tokens[m, slugs.index(first)])),
                }
                for _, first, second in pairs
            }
            for m, model in enumerate(models)
        }
        return {"evidence": evidence, "ratios": ratios}

    return slugs, evidence_of


KINDS = ("single", "multi")


@dataclass(frozen=True)
class Splits:
    """The coded responses of each dataset, each conversation kind, and each (dataset, kind): the subsets the
    report repeats its model tables, coupling and span evidence over (the dashboards' dataset and single/multi
    filters). ``subsets`` lists the distinct ones once; ``of`` maps (dataset or None, kind or None) to a
    position in it (a dataset of one kind is the same subset as that dataset's kind part: computed once)."""

    datasets: list[str]
    subsets: list[np.ndarray]
    of: dict[tuple[str | None, str | None], int]

    def nest(self, values: Sequence[dict[str, object]], extra: Sequence[dict[str, object]] = ()
             ) -> tuple[dict[str, object], dict[str, object]]:
        """(by_kind, by_dataset) of per-subset values (and per-subset extras merged into each entry), by_dataset's
        entries with their own by_kind."""
        def entry(dataset: str | None, kind: str | None) -> dict[str, object]:
            i = self.of[(dataset, kind)]
            return {**values[i], **(extra[i] if extra else {})}

        by_kind: dict[str, object] = {kind: entry(None, kind) for kind in KINDS}
        by_dataset: dict[str, object] = {d: {**entry(d, None), "by_kind": {kind: entry(d, kind) for kind in KINDS}}
                                         for d in self.datasets}
        return by_kind, by_dataset


def _splits(enc: Encoded, main: MainRound, multi: np.ndarray) -> Splits:
    keys = enc.keys
    coded = main.coded_responses
    conversation = keys.turn_conversation[keys.unit_turn[coded]]
    in_multi = multi[conversation]
    dataset = keys.conversation_dataset[conversation]
    subsets: list[np.ndarray] = []
    seen: dict[bytes, int] = {}
    of: dict[tuple[str | None, str | None], int] = {}

    def add(name: tuple[str | None, str | None], mask: np.ndarray) -> None:
        subset = coded[mask]
        key = subset.tobytes()
        if key not in seen:
            seen[key] = len(subsets)
            subsets.append(subset)
        of[name] = seen[key]

    kind_masks = {"single": ~in_multi, "multi": in_multi}
    for kind in KINDS:
        add((None, kind), kind_masks[kind])
    datasets = np.unique(dataset).tolist()
    for d in datasets:
        add((keys.datasets[d], None), dataset == d)
        for kind in KINDS:
            add((keys.datasets[d], kind), (dataset == d) & kind_masks[kind])
    return Splits([keys.datasets[d] for d in datasets], subsets, of)


def empty_indices(params: ReportParams) -> dict[str, object]:
    return {
        "coders": [],
        "n_turns": 0,
        "n_responses": 0,
        "uiri": {
            "mean": None,
            "bands": dict.fromkeys(BANDS),
            "by_dataset": {},
            "by_dataset_bands": {},
            "by_dataset_n_turns": {},
            "n_turns": 0,
            "thresholds": {"medium": params.uiri_bands[0], "high": params.uiri_bands[1]},
            "peaks": {},
            "peak_mean": None,
            "attributes": {"all": {}, "by_dataset": {}},
        },
        "flags": {},
        "ari": {},
        "ari_ci": {},
        "ci": {
            "level": params.ci_level,
            "resample": params.ci_resample,
            "resamples": params.bootstrap,
            "seed": params.seed,
        },
        "attribute_risk": {},
        "fingerprint": {},
        "by_kind": {kind: {"flags": {}, "ari": {}, "attribute_risk": {}, "fingerprint": {}, "ari_ci": {},
                           "n_clusters": 0, "n_clusters_by_model": {}} for kind in KINDS},
        "by_dataset": {},
        "coupling": {
            "raw": {},
            "risk": {},
            "min_abs_rho": params.coupling_min_abs_rho,
            "max_q": params.coupling_max_q,
            "by_kind": {kind: {"raw": {}, "risk": {}} for kind in KINDS},
            "by_dataset": {},
        },
        "trajectories": {
            "threshold": params.slope_flat_threshold,
            "n_conversations": 0,
            "user": {},
            "models": {},
            "uiri_conversations": {},
            "by_dataset": {},
        },
        "spans": {**_no_spans(), "subcategories": [], "by_kind": {kind: _no_spans() for kind in KINDS},
                  "by_dataset": {}},
    }


def indices_section(
    enc: Encoded,
    params: ReportParams,
    *,
    response_texts: Mapping[tuple[str, str, int, str], str] | None = None,
    conversation_kinds: Mapping[tuple[str, str], str] | None = None,
    subcategory_attribute: Mapping[str, str] | None = None,
    boot: Bootstrap | None = None,
    progress: Callable[[float, str], None] | None = None,
) -> dict[str, object]:
    """The section; its CIs are filled in when ``boot`` runs (run here when None). ``progress`` hears of each
    part as a share of the section."""
    def step(share: float, message: str) -> None:
        if progress is not None:
            progress(share, message)

    rows = _main_rows(enc, params)
    section = empty_indices(params)
    if rows is None or len(rows) == 0:
        return section
    own = boot is None
    boot = boot or Bootstrap(seed=params.seed, resamples=params.bootstrap)
    step(0.0, "main round: per-response values")
    main = main_round(enc, rows)
    coders = np.unique(enc.judgments.coder[rows])
    step(0.15, "main round: model tables")
    tables = _model_tables(enc, main)
    multi = _multi_turn_conversations(enc, conversation_kinds)
    step(0.25, "main round: trajectories")
    trajectories, peaks = _trajectories(enc, main, params, multi)
    uiri = _uiri_section(enc, main, params)
    uiri["peaks"] = peaks
    uiri["peak_mean"] = mean_or_none(v for by_conv in peaks.values() for v in by_conv.values())
    splits = _splits(enc, main, multi)
    ari_ci, split_ci, clusters, split_clusters = _ari_intervals(enc, main, params, boot, splits.subsets)
    step(0.4, "main round: coupling")
    coupling: dict[str, object] = {**_coupling(enc, main, params, main.coded_responses),
                                   "min_abs_rho": params.coupling_min_abs_rho, "max_q": params.coupling_max_q}
    coupling["by_kind"], coupling["by_dataset"] = splits.nest(
        [_coupling(enc, main, params, subset) for subset in splits.subsets])
    step(0.65, "main round: span evidence")
    spans = section["spans"]
    span_parts = _span_evidence(enc, main, coders, response_texts, subcategory_attribute)
    if span_parts is not None:
        slugs, evidence_of = span_parts
        spans = {**evidence_of(main.coded_responses), "subcategories": slugs}
        spans["by_kind"], spans["by_dataset"] = splits.nest([evidence_of(subset) for subset in splits.subsets])
    step(0.85, "main round: tables per dataset and conversation kind")
    by_kind, by_dataset = splits.nest([_model_tables(enc, replace(main, coded_responses=subset))
                                       for subset in splits.subsets],
                                      [{"ari_ci": ci, **n} for ci, n in zip(split_ci, split_clusters, strict=True)])
    section.update(
        {
            "coders": [enc.coders[c] for c in coders.tolist()],
            "n_turns": int(np.isfinite(main.turn_mean_raw).any(axis=1).sum()),
            "n_responses": int(len(main.coded_responses)),
            "uiri": uiri,
            "flags": tables["flags"],
            "ari": tables["ari"],
            "ari_ci": ari_ci,
            "ci": {**cast("dict[str, object]", section["ci"]), **clusters},
            "attribute_risk": tables["attribute_risk"],
            "fingerprint": tables["fingerprint"],
            "coupling": coupling,
            "trajectories": trajectories,
            "spans": spans,
            "by_kind": by_kind,
            "by_dataset": by_dataset,
        }
    )
    if own:
        boot.run()
    return section
