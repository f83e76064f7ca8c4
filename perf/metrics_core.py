"""Time the metrics core on a synthetic study at the reference study's scale, against the naive loops.

    .venv/bin/python perf/metrics_core.py [--scale 1] [--resamples 1000] [--no-naive] [--json]

--scale multiplies the conversations and turns (10: 15,760 conversations, 422,300 responses, about 6.9 million
judgments); no database: this is the computation alone, with this process's peak RSS.

Scale: 1,576 conversations (8,446 turns) and 42,230 responses from 5 models, coded once in the main round
(20 attributes: 688k judgments), plus 2 calibration rounds of 10 turns x 5 models coded by 7 reviewers and
gold, spans on ~30% of response judgments, bootstrap B = 1,000.

The baseline is metrics.core.naive: a Python loop per resample and per item, κ from scikit-learn per
(reviewer, attribute, resample). It covers calibration agreement, κ, bootstrap selection stability and CIs,
and the per-model ARI table with its CIs; running it at B = 1,000 would take many minutes, so it runs at a
small B and is extrapolated linearly (fixed cost measured at B = 0, per-resample cost from the difference).
The ratio compares it with the whole build_report, which also computes α, coupling, trajectories and
spans, so the ratio understates the speed-up on like-for-like work.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np  # noqa: E402
from _common import add_arguments, figure, print_figures  # noqa: E402

from metrics.core.agreement import MISSING  # noqa: E402
from metrics.core.bootstrap import draw_counts  # noqa: E402
from metrics.core.calibration import round_matrix  # noqa: E402
from metrics.core.encode import encode  # noqa: E402
from metrics.core.kappa import confusion_counts, kappa_from_confusion, quadratic_kappa  # noqa: E402
from metrics.core.naive import naive_ari, naive_calibration  # noqa: E402
from metrics.core.report import JudgmentTable, ReportParams, build_report  # noqa: E402
from metrics.core.synthetic import DEFAULT_SCHEMA, DEFAULT_SUBCATEGORIES, generate  # noqa: E402

PAPER_SCALE = {
    "single_turn_conversations": 1_300,
    "multi_turn_conversations": 276,
    "multi_turn_turns": 7_146,  # 1,300 + 7,146 = 8,446 turns x 5 models = 42,230 responses
    "calibration_rounds": 2,
    "calibration_turns": 10,
    "reviewers": 7,
    "main_coders": 6,
    "spans_per_response": 0.3,
}


SCALED = ("single_turn_conversations", "multi_turn_conversations", "multi_turn_turns")


def _timed(function, *args, **kwargs):
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return time.perf_counter() - start, result


def kappa_micro_benchmark(study_judgments: JudgmentTable, round_name: str, resamples: int, seed: int) -> None:
    """κ inside the bootstrap for one reviewer of one round: bincount confusion matrices vs scikit-learn."""
    enc = encode(DEFAULT_SCHEMA, study_judgments, None)
    m = round_matrix(enc, round_name)
    n_attributes, n_labels = len(DEFAULT_SCHEMA), enc.schema.n_labels
    ok = (m.label[:, 0] != MISSING) & (m.gold_label != MISSING)
    draws = draw_counts(m.n_turns, resamples, np.random.default_rng(seed))
    start = time.perf_counter()
    confusion = confusion_counts(
        m.item_turn[ok] * n_attributes + m.item_attribute[ok],
        m.label[ok, 0],
        m.gold_label[ok],
        m.n_turns * n_attributes,
        n_labels,
    ).reshape(m.n_turns, -1)
    fast = kappa_from_confusion((draws @ confusion).reshape(resamples, n_attributes, n_labels, n_labels))
    vectorised = (time.perf_counter() - start) / fast.size
    sample = min(resamples, 20)
    start = time.perf_counter()
    worst = 0.0
    for b in range(sample):
        weight = draws[b].astype(int)[m.item_turn[ok]]
        for a in range(n_attributes):
            rows = np.flatnonzero(m.item_attribute[ok] == a)
            first = np.repeat(m.label[ok, 0][rows], weight[rows])
            second = np.repeat(m.gold_label[ok][rows], weight[rows])
            value = quadratic_kappa(first, second, list(range(len(DEFAULT_SCHEMA[a].scale))))
            if value is not None:
                worst = max(worst, abs(value - fast[b, a]))
    loop = (time.perf_counter() - start) / (sample * n_attributes)
    print(
        f"κ per (reviewer, attribute, resample): scikit-learn {loop * 1e6:.0f} µs, "
        f"bincount confusion {vectorised * 1e6:.2f} µs ({loop / vectorised:.0f}x); max |Δκ| = {worst:.1e}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    parser.add_argument("--resamples", type=int, default=1_000)
    parser.add_argument("--naive", action=argparse.BooleanOptionalAction, default=None,
                        help="the naive baseline (default: on up to scale 1)")
    parser.add_argument("--naive-resamples", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=None, help="build_report runs (default 3, 1 above scale 1)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    repeats = args.repeats or (3 if args.scale <= 1 else 1)
    shape = {key: (max(2, round(value * args.scale)) if key in SCALED else value) for key, value in PAPER_SCALE.items()}

    seconds, study = _timed(
        generate, DEFAULT_SCHEMA, subcategory_attribute=DEFAULT_SUBCATEGORIES, seed=args.seed, **shape
    )
    generated = seconds
    j = study.judgments
    main_rows = np.asarray(j.round) == "main"
    responses = len(
        {
            (d, c, t, m)
            for d, c, t, m in zip(
                np.asarray(j.dataset)[main_rows].tolist(),
                np.asarray(j.conversation)[main_rows].tolist(),
                np.asarray(j.turn)[main_rows].tolist(),
                np.asarray(j.model)[main_rows].tolist(),
                strict=True,
            )
            if m
        }
    )
    conversations = len(study.conversation_kinds)
    print(
        f"synthetic study: {conversations:,} conversations, {responses:,} main-round responses, "
        f"{len(j):,} judgments, {len(study.spans):,} spans (built in {seconds:.1f} s)"
    )
    print(f"machine: {os.cpu_count()} CPUs, numpy {np.__version__}, python {sys.version.split()[0]}")

    params = ReportParams(bootstrap=args.resamples, seed=args.seed)
    kwargs = {
        "attributes": DEFAULT_SCHEMA,
        "judgments": j,
        "spans": study.spans,
        "response_texts": study.response_texts,
        "conversation_kinds": study.conversation_kinds,
        "subcategory_attribute": DEFAULT_SUBCATEGORIES,
        "params": params,
    }
    runs = []
    report: dict = {}
    for _ in range(repeats):
        seconds, report = _timed(build_report, **kwargs)
        runs.append(seconds)
    fast = statistics.median(runs)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"build_report, B={args.resamples}: median {fast:.2f} s over {repeats} runs "
        f"(min {min(runs):.2f} s, max {max(runs):.2f} s); peak RSS of this process {peak_mib:,.0f} MiB; "
        f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}"
    )
    label = f"metrics core at scale {args.scale:g} ({len(j):,} judgments), B = {args.resamples:,}"
    figures = [
        figure(f"{label}: build_report (compute only)", fast, "s", baseline="generating the synthetic study, same run",
               baseline_value=generated, target="< 60" if args.scale > 1 else "", met=fast < 60 or args.scale <= 1),
        figure(f"{label}: peak RSS", peak_mib, "MiB", baseline="", baseline_value=0.0, target="", met=True),
    ]
    if not (args.naive if args.naive is not None else args.scale <= 1):
        if args.json:
            print_figures(figures)
        return

    b = args.naive_resamples
    rounds = report["calibration"]["rounds"]
    naive_fixed = naive_per_resample = 0.0
    parity_errors = []
    for name in rounds:
        t0, point = _timed(naive_calibration, DEFAULT_SCHEMA, j, name, resamples=0, seed=args.seed)
        tb, _ = _timed(naive_calibration, DEFAULT_SCHEMA, j, name, resamples=b, seed=args.seed)
        naive_fixed += t0
        naive_per_resample += (tb - t0) / b
        for reviewer, values in point["point"].items():
            got = report["calibration"]["reviewers"][reviewer][name]["bucketed"]
            if abs(got - values["bucketed"]) > 1e-12:
                parity_errors.append((name, reviewer))
    t0, ari = _timed(naive_ari, DEFAULT_SCHEMA, j, panel=None, resamples=0, seed=args.seed)
    tb, _ = _timed(naive_ari, DEFAULT_SCHEMA, j, panel=None, resamples=b, seed=args.seed)
    naive_fixed += t0
    naive_per_resample += (tb - t0) / b
    for model, values in ari["point"].items():
        if abs(report["indices"]["ari"][model]["ARI"] - values["ARI"]) > 1e-12:
            parity_errors.append(("ari", model))
    kappa_micro_benchmark(j, rounds[-1], args.resamples, args.seed)
    naive_total = naive_fixed + args.resamples * naive_per_resample
    print(
        f"naive baseline: measured at B=0 and B={b}; fixed {naive_fixed:.2f} s + "
        f"{naive_per_resample:.3f} s per resample -> extrapolated to B={args.resamples}: {naive_total:.1f} s"
    )
    print(f"speed-up (extrapolated naive / build_report): {naive_total / fast:.0f}x")
    print(
        "point estimates, vectorised vs naive: "
        + ("identical to 1e-12" if not parity_errors else f"MISMATCH {parity_errors}")
    )
    figures.append(figure(f"{label}: build_report vs naive loops", fast, "s",
                          baseline=f"naive loops, extrapolated from B={b}, same run", baseline_value=naive_total,
                          target="", met=not parity_errors))
    if args.json:
        print_figures(figures)


if __name__ == "__main__":
    main()
