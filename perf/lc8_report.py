#!/usr/bin/env python
"""The LongCounsel-8 report section at the paper's scale: 7,749 trajectories × 5 sessions, load and compute
apart, with same-run baselines.

    .venv/bin/python scripts/testenv.py -- .venv/bin/python perf/lc8_report.py [--short] [--scale 1]
        [--resamples 2000] [--methods 4] [--seeds 3] [--raters 2] [--naive-resamples 10] [--json]

The study (``lc8.synthetic``, what ``generate_lc8_synthetic`` builds): --scale 1 is 7,749
trajectories × 5 sessions (38,745 sessions), a reference coder (8 items and the total per session), 4 methods × 3
seeds of float totals (465,000 predictions) and 2 raters who code the items of the first 100 trajectories; --short
is --scale 0.05. Figures:
- the build (generator) time, printed;
- the full section, ``lc8.inputs.lc8_section(study, seed=0, resamples=2000)`` (the benchmark's 2,000
  trajectory bootstrap resamples, docs/lc8-metrics.md#definitions), next to one plain ``SELECT`` of the same label
  rows (the least any loader must do) — target: seconds at paper scale;
- load (``lc8_inputs``: a few queries into numpy) next to that plain ``SELECT``;
- compute (``lc8.core.tracking.lc8_report``) next to the naive loops of ``lc8.core.naive`` (point
  estimates, plus intervals measured at a small B and extrapolated linearly to --resamples), whose point
  estimates must equal the fast path's.
It migrates and fills the database it is given: never point it at a database you care about.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import add_arguments, django_setup, figure, print_figures, require_postgres, scaled  # noqa: E402

PAPER_TRAJECTORIES, SESSIONS = 7749, 5
FULL_TARGET_SECONDS = 10.0  # the whole section at paper scale, B = 2,000


def _plain_select_seconds(study) -> tuple[float, int]:  # noqa: ANN001
    """One plain SELECT of the study's label rows (session labels and session judgments), fetched as tuples."""
    from django.db import connection

    from annotation.models import Judgment, SessionLabel

    labels, judgments = SessionLabel._meta.db_table, Judgment._meta.db_table
    rounds = list(study.rounds.values_list("pk", flat=True))
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT coder_id, seed, session_id, attribute_id, value FROM {labels} "  # noqa: S608  # nosec B608 - table names from the models
                       "WHERE study_id = %s", [study.pk])
        n = len(cursor.fetchall())
        cursor.execute(f"SELECT coder_id, session_id, attribute_id, score FROM {judgments} "  # noqa: S608  # nosec B608 - table name from the model
                       "WHERE round_id = ANY(%s) AND session_id IS NOT NULL", [rounds])
        n += len(cursor.fetchall())
    return time.perf_counter() - started, n


def _same_points(fast: dict, naive: dict) -> float:
    """The largest difference between the fast and the naive point estimates (current and change MAE, direction
    accuracy, trend agreement), over coders."""
    worst = 0.0
    for name, entry in naive["coders"].items():
        for key in ("current_mae", "change_mae", "direction_accuracy", "trend_agreement"):
            a, b = fast["coders"][name][key], entry[key]
            if (a is None) != (b is None):
                return math.inf
            if a is not None:
                worst = max(worst, abs(a - b))
    return worst


def main() -> int:  # noqa: PLR0915 - one benchmark, step by step
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    parser.add_argument("--short", action="store_true", help="a small study (--scale 0.05)")
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--methods", type=int, default=4)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--raters", type=int, default=2)
    parser.add_argument("--naive-resamples", type=int, default=10,
                        help="B at which the naive intervals are timed (extrapolated to --resamples)")
    args = parser.parse_args()
    scale = 0.05 if args.short else args.scale
    require_postgres("lc8_report")
    django_setup()

    from django.core.management import call_command

    from lc8.core.naive import naive_intervals, naive_points
    from lc8.core.tracking import lc8_report, trajectory_draws
    from lc8.inputs import lc8_inputs, lc8_section
    from lc8.synthetic import Lc8SyntheticSpec, lc8_synthetic_build

    call_command("migrate", verbosity=0)
    n = scaled(PAPER_TRAJECTORIES, scale, minimum=20)
    started = time.perf_counter()
    built = lc8_synthetic_build(Lc8SyntheticSpec(trajectories=n, sessions=SESSIONS, methods=args.methods,
                                                 seeds=args.seeds, raters=args.raters, slug="bench-lc8"))
    build = time.perf_counter() - started
    print(f"build: {n:,} trajectories × {SESSIONS} sessions, {built.reference_labels:,} reference labels, "
          f"{built.predictions:,} predictions, {built.judgments:,} rater judgments in {build:.1f} s "
          f"(reference types: {built.reference_types})", flush=True)
    print(f"machine: {os.cpu_count()} CPUs, load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    study = built.study

    lc8_inputs(study=study)  # warm the database's caches (a worker's would be)
    select, n_rows = _plain_select_seconds(study)
    started = time.perf_counter()
    inputs = lc8_inputs(study=study)
    load = time.perf_counter() - started
    started = time.perf_counter()
    report = lc8_report(inputs.study, resamples=args.resamples, seed=0)
    compute = time.perf_counter() - started
    started = time.perf_counter()
    section = lc8_section(study=study, seed=0, resamples=args.resamples)
    full = time.perf_counter() - started
    assert section is not None and "coders" in section, section  # noqa: S101 - a benchmark's own sanity check

    started = time.perf_counter()
    points = naive_points(inputs.study)
    naive_point_seconds = time.perf_counter() - started
    picks = trajectory_draws(len(inputs.study.trajectories), args.naive_resamples, 0)
    started = time.perf_counter()
    naive_intervals(inputs.study, picks)
    per_resample = (time.perf_counter() - started) / max(args.naive_resamples, 1)
    naive_total = naive_point_seconds + per_resample * args.resamples
    difference = _same_points(report, points)

    rows = [
        ("plain SELECT of the label rows (baseline)", select, ""),
        ("load: lc8_inputs", load, f"{load / select:.1f}× the SELECT"),
        (f"compute: lc8_report, B={args.resamples}", compute,
         f"naive loops {naive_total:.0f} s (extrapolated): {naive_total / compute:.0f}× slower"),
        (f"full: lc8_section, B={args.resamples}", full, f"{full / select:.1f}× the SELECT"),
    ]
    print(f"\n{n:,} trajectories × {SESSIONS} sessions, {len(inputs.study.coders)} coders besides the reference, "
          f"{n_rows:,} label rows")
    print(f"{'step':<48} {'seconds':>9}  vs baseline")
    for name, seconds, versus in rows:
        print(f"{name:<48} {seconds:>9.2f}  {versus}")
    print(f"naive point estimates {naive_point_seconds:.2f} s + {per_resample:.3f} s per resample (measured at "
          f"B={args.naive_resamples}); largest difference from the fast point estimates: {difference:.2e}")
    ranking = {name: (round(c["current_mae"], 3), round(c["direction_accuracy"], 3))
               for name, c in report["coders"].items() if inputs.roles.get(name) == "method"}
    print(f"methods (current MAE, direction accuracy): {ranking}")

    paper = abs(scale - 1) < 1e-9
    figures = [
        figure(f"LC8 section at {n:,}×{SESSIONS}, B={args.resamples} (load + compute)", full, "s",
               baseline="one plain SELECT of the same label rows, same run", baseline_value=select,
               target=f"< {FULL_TARGET_SECONDS:g}", met=full < FULL_TARGET_SECONDS or not paper),
        figure(f"LC8 load at {n:,}×{SESSIONS} (lc8_inputs)", load, "s",
               baseline="one plain SELECT of the same label rows, same run", baseline_value=select,
               target="≤ 5×", met=load <= 5 * select),
        figure(f"LC8 compute at {n:,}×{SESSIONS}, B={args.resamples} (lc8_report)", compute, "s",
               baseline=f"naive loops (lc8_naive), intervals extrapolated from B={args.naive_resamples}, same run",
               baseline_value=naive_total, target="", met=difference < 1e-9),
    ]
    if args.json:
        print_figures(figures)
    return 0 if difference < 1e-9 else 1


if __name__ == "__main__":
    sys.exit(main())
