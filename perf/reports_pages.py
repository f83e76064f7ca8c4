#!/usr/bin/env python
"""Server time of the researcher dashboards at paper scale: each page (it reads the stored report, draws
nothing) and each figure (drawn once, then served from the cache), p50/p95, next to the health check through
the same stack as the baseline of the same run. Target (issue 13): every page under 300 ms.

The report is the paper-scale synthetic study's (1,576 conversations, 42,230 responses, 688k judgments; computed
by the metrics core at B = 200, the size of the report does not depend on B) stored as a succeeded metric run.

    .venv/bin/python scripts/testenv.py -- .venv/bin/python perf/reports_pages.py [--scale 1] [--json]
It migrates and fills the database it is given: never point it at a database you care about. --scale multiplies
the study's conversations (1 = paper scale); --runs (or RUNS) sets the requests per page.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

os.environ.setdefault("DEBUG", "0")
from _common import add_arguments, django_setup, figure, print_figures, scaled  # noqa: E402

RUNS = int(os.environ.get("RUNS", "20"))
TARGET_MS = 300.0


def timed(fn, runs: int) -> list[float]:
    fn()  # warm-up
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def summary(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]


def paper_scale_report(scale: float) -> dict:
    from metrics.core.report import ReportParams, build_report
    from metrics.core.synthetic import DEFAULT_SCHEMA, DEFAULT_SUBCATEGORIES, generate
    from perf.metrics_core import PAPER_SCALE

    sized = dict(PAPER_SCALE)
    for name in ("single_turn_conversations", "multi_turn_conversations"):
        sized[name] = scaled(PAPER_SCALE[name], scale, minimum=2)
    sized["multi_turn_turns"] = max(2 * sized["multi_turn_conversations"],
                                    scaled(PAPER_SCALE["multi_turn_turns"], scale))
    study = generate(DEFAULT_SCHEMA, subcategory_attribute=DEFAULT_SUBCATEGORIES, seed=0, **sized)
    return build_report(attributes=DEFAULT_SCHEMA, judgments=study.judgments, spans=study.spans,
                        response_texts=study.response_texts, conversation_kinds=study.conversation_kinds,
                        subcategory_attribute=DEFAULT_SUBCATEGORIES, params=ReportParams(bootstrap=200))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=RUNS, help=f"requests per page (default {RUNS})")
    add_arguments(parser)
    args = parser.parse_args()
    django_setup()
    from django.contrib.auth import get_user_model
    from django.core.cache import cache
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.urls import reverse
    from django.utils import timezone

    from annotation.models import Study
    from metrics.models import MetricRun
    from reports import charts

    runs = args.runs
    print(f"database: {connection.vendor}; runs per page: {runs}; scale {args.scale:g}")
    call_command("migrate", verbosity=0)
    call_command("load_demo", "--quiet")
    started = time.perf_counter()
    report = paper_scale_report(args.scale)
    size = len(json.dumps(report))
    print(f"report (scale {args.scale:g}) computed in {time.perf_counter() - started:.1f} s; "
          f"{size / 1e6:.1f} MB of JSON")
    study = Study.objects.get(slug="demo")
    MetricRun.objects.create(study=study, status="succeeded", result=report, progress=1.0,
                             parameters={"seed": 0, "bootstrap": 200, "top_k": 6}, finished_at=timezone.now())
    client = Client()
    client.force_login(get_user_model().objects.get(username="demo-researcher"))

    rows = [("/healthz (baseline)", *summary(timed(lambda: client.get(reverse("healthz")), runs)))]
    baseline_p95 = rows[0][2]
    rows.append(("overview", *summary(timed(lambda: client.get(reverse("reports", args=["demo"])), runs))))
    for slug in charts.PAGES:
        url = reverse("reports-page", args=["demo", slug])
        rows.append((f"page {slug}", *summary(timed(lambda url=url: client.get(url), runs))))
    pages = rows[1:]
    figures = []
    for slug, page in charts.PAGES.items():
        for block in charts.page_blocks(page, report, charts.Filters()):
            if not block.is_chart:
                continue
            url = reverse("reports-file", args=["demo", slug, block.name, "svg"])
            cache.clear()
            first = time.perf_counter()
            assert client.get(url).status_code == 200
            drawn = (time.perf_counter() - first) * 1000
            cached = summary(timed(lambda url=url: client.get(url), 5))[0]
            figures.append((f"{slug}/{block.name}.svg", drawn, cached))

    print(f"\n{'request':<34}{'p50 ms':>9}{'p95 ms':>9}{'p95 / baseline':>16}  target p95 < {TARGET_MS:.0f} ms")
    for name, p50, p95 in rows:
        verdict = "" if name.startswith("/healthz") else ("met" if p95 < TARGET_MS else
                                                          f"missed by {p95 - TARGET_MS:.0f} ms")
        print(f"{name:<34}{p50:>9.1f}{p95:>9.1f}{p95 / baseline_p95:>15.1f}x  {verdict}")
    print(f"\n{'figure (SVG)':<40}{'first draw ms':>14}{'cached p50 ms':>15}")
    for name, drawn, cached in figures:
        print(f"{name:<40}{drawn:>14.0f}{cached:>15.1f}")
    worst = max(p95 for _, _, p95 in pages)
    print(f"\nslowest page p95 {worst:.0f} ms: {'every page under' if worst < TARGET_MS else 'NOT every page under'} "
          f"{TARGET_MS:.0f} ms")
    if args.json:
        print_figures([figure(f"dashboard {name} p95", p95, "ms", baseline="/healthz p95, same stack and run",
                              baseline_value=baseline_p95, target=f"< {TARGET_MS:.0f} ms", met=p95 < TARGET_MS)
                       for name, _, p95 in pages])


if __name__ == "__main__":
    main()
