"""An independent oracle for the report's ``lc8`` section: a LongCounsel-8 study with generated labels (seven
trajectories, one of four sessions, a reference with items only and a session of seven items, a second reference
source with totals, three methods with one to three seeds, float predictions, items from one method's seed and
sessions it left out, a reviewer and an expert (taken off the study) rating items in rounds, a session re-coded in
the main round, ties on the thresholds); every figure of the metric run's ``lc8`` section is worked out again from
the rows alone by the definitions of docs/lc8-metrics.md with numpy and scipy, never the project's metrics code,
and compared key by key. Every row put in is found in the section's ``input`` counts."""

from __future__ import annotations

import random
from itertools import combinations

import numpy as np
import pytest
from scipy.stats import pearsonr, spearmanr

from annotation import services
from annotation.models import AttributeDefinition, Judgment, Schema, SessionLabel, Study
from benchmark.models import Conversation, Session
from metrics import runs
from metrics import services as metric_services
from metrics.models import MetricRun
from tests.factories import DatasetFactory, RoundFactory, StudyFactory, StudyMemberFactory, UserFactory
from tests.oracle import differences_of

pytestmark = pytest.mark.django_db

S, LARGE, CUTOFF, SEVERE = 5, 5, 10, 15  # lc8-v1's block: sessions, large_change, screening_cutoff, severe_above
TYPES = ("improving", "worsening", "fluctuating", "stable")
REFERENCE, SELF_REPORT = "ref-a", "ref-self"
METHODS = {"m-lag": (0, 1, 2), "m-noisy": (0, 1), "m-one": (7,)}
RATER, LEAVER = "rater-1", "rater-2"  # a reviewer; an expert taken off the study
SEED, RESAMPLES = 3, 60
# the reference's totals: ties on the thresholds (a change of exactly 5, totals of exactly 10 and 15); t7 has four
# sessions; t3's session 4 has seven items only (no total)
TOTALS = {"t1": [20, 15, 10, 8, 3], "t2": [4, 9, 15, 16, 21], "t3": [10, 16, 9, 11, 12], "t4": [7, 8, 7, 9, 8],
          "t5": [12, 12, 17, 11, 10], "t6": [2, 7, 3, 8, 10], "t7": [14, 9, 15, 19]}
SEVEN_ITEMS = ("t3", 4)
RE_CODED = ("t2", 2)  # the reviewer's session coded in a calibration round, then again in the main round


def split(total: int, rng: random.Random) -> list[int]:
    """Eight PHQ items of 0..3 summing to ``total``, spread at random."""
    items = [0] * 8
    for _ in range(total):
        items[rng.choice([i for i in range(8) if items[i] < 3])] += 1
    return items


def _method_labels(name: str, seed: int, rng: random.Random, ref_items: dict) -> tuple[dict, dict]:
    """A method's float totals for one seed, and the items it sent (m-noisy's seed 1 only)."""
    totals, items = {}, {}
    for t, vs in TOTALS.items():
        for s, v in enumerate(vs, start=1):
            if name == "m-noisy" and seed == 1 and t == "t4":
                continue  # a trajectory this seed left out
            if name == "m-lag":
                previous = vs[s - 2] if s > 1 else v
                totals[(t, s)] = round(0.7 * previous + 0.3 * v + rng.gauss(0, 0.5) + 0.1 * seed, 2)
            elif name == "m-noisy":
                totals[(t, s)] = round(v + rng.gauss(1, 2.5), 3)
            else:
                totals[(t, s)] = float(v + rng.choice([-2, 0, 0, 1]))
    if name == "m-noisy" and seed == 1:  # items for some sessions, one with items only (the total is their sum)
        for key in (("t1", 2), ("t2", 3), ("t5", 5)):
            items[key] = [min(3, max(0, i + rng.choice([-1, 0, 0, 0.5]))) for i in ref_items[key]]
        del totals[("t5", 5)]
    return totals, items


def _rater_items(name: str, trajectories: tuple[str, ...], rng: random.Random, ref_items: dict) -> dict:
    """A person's items: the reference's, a quarter of them one step off; two left uncoded in one session."""
    rated = {}
    for t in trajectories:
        for s in range(1, len(TOTALS[t]) + 1):
            items = [min(3, max(0, i + (rng.choice([-1, 1]) if rng.random() < 0.25 else 0)))
                     for i in ref_items[(t, s)]]
            rated[(t, s)] = items[:6] if (name, t, s) == (LEAVER, "t5", 3) else items
    return rated


def _labels() -> dict:
    """Everything the study holds, as the oracle reads it."""
    rng = random.Random(20261207)
    ref_items = {(t, s): split(v, rng) for t, vs in TOTALS.items() for s, v in enumerate(vs, start=1)}
    methods = {name: {seed: _method_labels(name, seed, rng, ref_items) for seed in seeds}
               for name, seeds in METHODS.items()}
    methods["m-one"][7][0][("t6", 2)] = methods["m-one"][7][0][("t6", 1)]  # a predicted change of 0 on a large one
    raters = {RATER: _rater_items(RATER, ("t1", "t2", "t3", "t7"), rng, ref_items),
              LEAVER: _rater_items(LEAVER, ("t2", "t4", "t5", "t6"), rng, ref_items)}
    self_report = {(t, s): v + rng.choice([-1, 0, 0, 1]) for t, vs in TOTALS.items() for s, v in enumerate(vs, 1)}
    ref_items[SEVEN_ITEMS] = ref_items[SEVEN_ITEMS][:7]
    return {"ref_items": ref_items, "methods": methods, "raters": raters, "self_report": self_report}


def _build(admin, data: dict) -> tuple[Study, dict]:
    """The study, through the models as tests/lc8/test_inputs.py builds it; returns the rows put in, counted."""
    schema = Schema.objects.get(slug="lc8-v1")
    study = StudyFactory(slug="lc8-oracle", name="LC8 oracle", schema=schema, model_slots=[])
    attributes = dict(AttributeDefinition.objects.filter(schema=schema).values_list("code", "pk"))
    items, total = schema.definition["lc8"]["items"], schema.definition["lc8"]["total"]
    dataset = DatasetFactory(name="LC8-oracle")
    sessions = {}
    for t, vs in TOTALS.items():
        conversation = Conversation.objects.create(dataset=dataset, external_id=t, kind="longitudinal",
                                                   topic="Depression", study=study, is_synthetic=True)
        for s in range(1, len(vs) + 1):
            sessions[(t, s)] = Session.objects.create(conversation=conversation, index=s, kind="counseling")
    members = {name: StudyMemberFactory(study=study, user=UserFactory(username=name), role=role)
               for name, role in ((REFERENCE, "reference"), (SELF_REPORT, "reference"), (RATER, "reviewer"),
                                  (LEAVER, "expert"), *((m, "method") for m in METHODS))}
    labels = []

    def label(coder: str, seed: int | None, key: tuple[str, int], codes: list[str], values: list) -> None:
        labels.extend(SessionLabel(study=study, coder=members[coder], seed=seed, session=sessions[key],
                                   attribute_id=attributes[code], value=value)
                      for code, value in zip(codes, values, strict=False))

    for key, values in data["ref_items"].items():
        label(REFERENCE, None, key, items, values)
    for key, value in data["self_report"].items():
        label(SELF_REPORT, None, key, [total], [value])
    for name, seeds in data["methods"].items():
        for seed, (totals, item_values) in seeds.items():
            for key, value in totals.items():
                label(name, seed, key, [total], [value])
            for key, values in item_values.items():
                label(name, seed, key, items, values)
    SessionLabel.objects.bulk_create(labels)
    calibration, main = RoundFactory(study=study, kind="calibration", number=1), RoundFactory(study=study, kind="main")
    # the re-coded session's first coding, in the calibration round: left out for the main round's
    coded = [(RATER, calibration, RE_CODED, [3] * len(items))]
    coded += [(name, main if (name, key) == (RATER, RE_CODED) else calibration, key, values)
              for name in (RATER, LEAVER) for key, values in data["raters"][name].items()]
    judgments = [Judgment(round=round_, coder=members[name].user, attribute_id=attributes[code], session=sessions[key],
                          conversation=sessions[key].conversation, score=value)
                 for name, round_, key, values in coded for code, value in zip(items, values, strict=False)]
    Judgment.objects.bulk_create(judgments)
    services.study_member_remove(member=members[LEAVER], by=admin)
    return study, {"labels": len(labels), "judgments": len(judgments), "recoded": len(items)}


# --- the oracle: docs/lc8-metrics.md#definitions and its reading choices, from the rows ------------------------------

def _series(data: dict) -> tuple[list[str], np.ndarray, np.ndarray, dict]:
    """Trajectory names (in name order), the reference's totals (n, S) and items (n, S, 8), NaN where missing, and
    each coder's {seed: (totals, items)}: a total is the label, else the sum of all eight items."""
    names = sorted(TOTALS)

    def arrays(totals: dict, items: dict) -> tuple[np.ndarray, np.ndarray]:
        y, cells = np.full((len(names), S), np.nan), np.full((len(names), S, 8), np.nan)
        for (t, s), values in items.items():
            cells[names.index(t), s - 1, :len(values)] = values
            if len(values) == 8 and (t, s) not in totals:
                y[names.index(t), s - 1] = sum(values)
        for (t, s), value in totals.items():
            y[names.index(t), s - 1] = value
        return y, cells

    ref_y, ref_items = arrays({}, data["ref_items"])
    coders = {SELF_REPORT: {None: arrays(data["self_report"], {})}}
    coders |= {name: {seed: arrays(*pair) for seed, pair in seeds.items()} for name, seeds in data["methods"].items()}
    coders |= {name: {None: arrays({}, items)} for name, items in data["raters"].items()}
    return names, ref_y, ref_items, coders


def _type(series: np.ndarray) -> str | None:
    if np.isnan(series).any():
        return None
    if series[-1] - series[0] <= -LARGE:
        return "improving"
    if series[-1] - series[0] >= LARGE:
        return "worsening"
    return "fluctuating" if series.max() - series.min() >= LARGE else "stable"


def _mean(values: list) -> float | None:
    return float(np.mean(values)) if values else None


def _per_trajectory(y: np.ndarray, yhat: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per trajectory (numerator, denominator) of current MAE, change MAE and direction accuracy (L4: pooled)."""
    both = ~np.isnan(y) & ~np.isnan(yhat)
    dy, dyhat = np.diff(y, axis=1), np.diff(yhat, axis=1)
    pairs = both[:, 1:] & both[:, :-1]
    large = pairs & (np.abs(np.where(pairs, dy, 0)) >= LARGE)
    predicted = np.where(large, dyhat, 0)
    right = large & (np.sign(predicted) == np.sign(np.where(large, dy, 0))) & (predicted != 0)
    return {"current_mae": (np.where(both, np.abs(yhat - y), 0).sum(1), both.sum(1)),
            "change_mae": (np.where(pairs, np.abs(dyhat - dy), 0).sum(1), pairs.sum(1)),
            "direction_accuracy": (right.sum(1), large.sum(1))}


def _ratio(parts: tuple[np.ndarray, np.ndarray], weights: np.ndarray | None = None) -> float | None:
    num, den = parts if weights is None else (parts[0] @ weights, parts[1] @ weights)
    return float(num.sum() / den.sum()) if den.sum() else None


def _seed_figures(y: np.ndarray, yhat: np.ndarray, types: list) -> dict:
    parts = _per_trajectory(y, yhat)
    figures = {key: _ratio(part) for key, part in parts.items()}
    typed = [(a, _type(row)) for a, row in zip(types, yhat, strict=True) if a is not None]
    typed = [(a, b) for a, b in typed if b is not None]
    figures["trend_agreement"] = sum(a == b for a, b in typed) / len(typed) if typed else None
    figures["mae_by_type"] = {kind: _ratio(tuple(p[[i for i, a in enumerate(types) if a == kind]]
                                                 for p in parts["current_mae"]))
                              if kind in types else None for kind in TYPES}
    return figures


def _fidelity(y: np.ndarray, items: np.ndarray, yhat: np.ndarray, cells: np.ndarray) -> tuple[dict, dict]:
    """One seed's fidelity figures, and the sessions each count covers."""
    both = ~np.isnan(y) & ~np.isnan(yhat)
    a, b = yhat[both], y[both]
    item_both = ~np.isnan(items) & ~np.isnan(cells)
    severe = both & (y > SEVERE)
    correlated = len(a) >= 2 and np.ptp(a) > 0 and np.ptp(b) > 0
    figures = {"item_exact": float((cells[item_both] == items[item_both]).mean()) if item_both.any() else None,
               "item_mae": float(np.abs(cells[item_both] - items[item_both]).mean()) if item_both.any() else None,
               "total_bias": float((a - b).mean()) if len(a) else None,
               "pearson": float(pearsonr(a, b)[0]) if correlated else None,
               "spearman": float(spearmanr(a, b)[0]) if correlated else None,
               "screening_agreement": float(((a >= CUTOFF) == (b >= CUTOFF)).mean()) if len(a) else None,
               "severe_tail_mae": float(np.abs(yhat[severe] - y[severe]).mean()) if severe.any() else None}
    return figures, {"n_sessions": both, "n_item_sessions": item_both.any(2), "n_severe_sessions": severe}


def _oracle(data: dict) -> dict:
    names, y, items, coders = _series(data)
    types = [_type(row) for row in y]
    draws = np.random.default_rng(SEED).integers(0, len(names), (RESAMPLES, len(names)))
    weights = np.stack([np.bincount(d, minlength=len(names)) for d in draws])
    section: dict = {"coders": {}, "fidelity": {},
                     "reference_types": {kind: types.count(kind) for kind in TYPES}}
    for name, seeds in coders.items():
        per_seed = {seed: _seed_figures(y, yhat, types) for seed, (yhat, _) in seeds.items()}
        keys = ("current_mae", "change_mae", "direction_accuracy", "trend_agreement")
        entry = {key: _mean([f[key] for f in per_seed.values() if f[key] is not None]) for key in keys}
        entry["mae_by_type"] = {kind: _mean([f["mae_by_type"][kind] for f in per_seed.values()
                                             if f["mae_by_type"][kind] is not None]) for kind in TYPES}
        entry["per_seed"] = {("none" if seed is None else str(seed)): {k: f[k] for k in keys}
                             for seed, f in sorted(per_seed.items(), key=lambda p: -1 if p[0] is None else p[0])}
        entry["n_seeds"] = len(seeds)
        shared = np.zeros(len(names), bool)
        large = np.zeros((len(names), S - 1), bool)
        for yhat, _ in seeds.values():
            both = ~np.isnan(y) & ~np.isnan(yhat)
            shared |= both.any(1)
            large |= both[:, 1:] & both[:, :-1] & (np.abs(np.nan_to_num(np.diff(y, axis=1))) >= LARGE)
        entry["n_trajectories"], entry["n_large_changes"] = int(shared.sum()), int(large.sum())
        # L6: per interval, the trajectories with a term of its figure in some seed (its denominator's count there)
        entry["ci_trajectories"] = {key: int(np.logical_or.reduce([_per_trajectory(y, yhat)[key][1] > 0
                                                                   for yhat, _ in seeds.values()]).sum())
                                    for key in ("current_mae", "change_mae", "direction_accuracy")}
        entry["ci"], entry["ci_resamples"] = {}, {}
        for key in ("current_mae", "change_mae", "direction_accuracy"):
            values = []
            for w in weights:
                by_seed = [_ratio(_per_trajectory(y, yhat)[key], w) for yhat, _ in seeds.values()]
                defined = [v for v in by_seed if v is not None]
                if defined:
                    values.append(np.mean(defined))
            entry["ci"][key] = [float(np.percentile(values, 2.5)), float(np.percentile(values, 97.5))] if values \
                else [None, None]
            entry["ci_resamples"][key] = len(values)  # the resamples where the figure is defined
        section["coders"][name] = entry
        fidelity = [_fidelity(y, items, yhat, cells) for yhat, cells in seeds.values()]
        figures = {key: _mean([f[key] for f, _ in fidelity if f[key] is not None]) for key in fidelity[0][0]}
        counts = {key: int(np.logical_or.reduce([c[key] for _, c in fidelity]).sum()) for key in fidelity[0][1]}
        section["fidelity"][name] = figures | counts
    methods = sorted(METHODS)
    figure = {key: {m: section["coders"][m][key] for m in methods if section["coders"][m][key] is not None}
              for key in ("current_mae", "change_mae", "direction_accuracy")}
    by_change = sorted(figure["change_mae"], key=lambda m: (figure["change_mae"][m], m))
    section["ranking"] = {
        "by_current_mae": sorted(figure["current_mae"], key=lambda m: (figure["current_mae"][m], m)),
        "by_change_mae": by_change,
        "by_direction_accuracy": sorted(figure["direction_accuracy"],
                                        key=lambda m: (-figure["direction_accuracy"][m], m)),
        "reversals": [[a, b] for a, b in combinations(by_change, 2) if a in figure["direction_accuracy"]
                      and b in figure["direction_accuracy"] and figure["change_mae"][a] < figure["change_mae"][b]
                      and figure["direction_accuracy"][b] > figure["direction_accuracy"][a]]}
    section["resamples"], section["seed"], section["reference"] = RESAMPLES, SEED, REFERENCE
    section["roles"] = {SELF_REPORT: "reference", RATER: "reviewer", LEAVER: "expert",
                        **dict.fromkeys(METHODS, "method")}
    return section


@pytest.fixture(scope="module")
def oracle_run(shared_state):
    with shared_state():
        admin = UserFactory(username="oracle-admin", is_staff=True, is_superuser=True)
        data = _labels()
        study, put_in = _build(admin, data)
        run = metric_services.metric_run_request(study=study, by=None, bootstrap=RESAMPLES, seed=SEED)
        assert runs.metric_run_execute(run_id=run.pk)
        yield MetricRun.objects.get(pk=run.pk).result["lc8"], data, put_in


def test_every_figure_of_the_lc8_section_is_the_oracles(oracle_run):
    section, data, _ = oracle_run
    expected = _oracle(data)
    differences: list[str] = []
    differences_of({key: section.get(key) for key in expected}, expected, "lc8", differences)
    assert differences == [], "\n".join(differences)


def test_every_row_put_in_is_counted(oracle_run):
    section, _, put_in = oracle_run
    counted = section["input"]
    assert counted["trajectories"] == len(TOTALS)
    assert (counted["labels"], counted["labels_used"]) == (put_in["labels"], put_in["labels"])
    assert {reason: n for reason, n in counted["labels_dropped"].items() if n} == {}
    assert counted["judgments"] == put_in["judgments"]
    assert {reason: n for reason, n in counted["dropped"].items() if n} == {"recoded": put_in["recoded"]}
    assert counted["used"] == put_in["judgments"] - put_in["recoded"]
    # ingested in one go, then rated: no session grew after its rating
    assert "grown_after_rating" not in counted
