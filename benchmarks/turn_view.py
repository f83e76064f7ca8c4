#!/usr/bin/env python
"""In-process cost of the turn view (5 responses, 80 codings) and of an autosave of a span attribute: CPU and wall
milliseconds (p50/p95) and SQL statements per request, next to the health check through the same middleware as
the baseline of the same run; ``--profile`` adds where the time goes (cProfile, the heaviest functions).

Run against PostgreSQL, e.g. with throwaway servers:
    .venv/bin/python scripts/testenv.py -- .venv/bin/python benchmarks/turn_view.py [--runs 100] [--profile 40]
It migrates and fills the database it is given: never point it at a database you care about. The network,
gunicorn and concurrency are ``concurrent_reviewers.py``'s business; this one is for finding where a request's
own time goes.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cab.settings")
os.environ.setdefault("DEBUG", "0")
os.environ.setdefault("LOG_LEVEL", "WARNING")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.urls import reverse  # noqa: E402


def measure(call: Callable[[], None], runs: int) -> dict[str, float]:
    for _ in range(5):  # warm: the schema and the turn's responses are read once per process
        call()
    counted: list[str] = []

    def count(execute, sql, params, many, context):
        counted.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count):
        call()
    cpu, wall = [], []
    for _ in range(runs):
        cpu_start, wall_start = time.process_time(), time.perf_counter()
        call()
        cpu.append((time.process_time() - cpu_start) * 1000)
        wall.append((time.perf_counter() - wall_start) * 1000)
    cpu.sort()
    wall.sort()
    return {"queries": len(counted), "cpu_p50": statistics.median(cpu), "cpu_p95": cpu[int(0.95 * (runs - 1))],
            "wall_p50": statistics.median(wall), "wall_p95": wall[int(0.95 * (runs - 1))]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100, help="requests per figure (default 100)")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="also profile 50 requests of each and print the N heaviest functions")
    args = parser.parse_args()

    from django.contrib.auth import get_user_model

    from annotation import selectors, services
    from annotation.models import Assignment, AttributeDefinition, Round
    from annotation.services import SpanInput
    from benchmark.models import ModelResponse

    print(f"database: {connection.vendor}; runs per figure: {args.runs}; load average "
          f"{' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    call_command("migrate", verbosity=0)
    call_command("load_demo", "--quiet")
    with open(os.devnull, "w") as quiet:
        call_command("generate_synthetic", "--conversations", "300", "--reviewers", "7", "--seed", "11",
                     "--slug", "bench-volume", stdout=quiet)
    round_ = Round.objects.get(study__slug="demo", kind="calibration", number=1)
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    assignment = Assignment.objects.get(round=round_, coder=reviewer, position=1)
    responses = list(ModelResponse.objects.filter(turn=assignment.turn).order_by("pk"))
    attributes = (round_.study.schema.attributes.exclude(unit=AttributeDefinition.Unit.CONVERSATION)
                  .prefetch_related("subcategories"))
    for attribute in attributes:
        subs = list(attribute.subcategories.all())
        for response in [None] if attribute.unit == AttributeDefinition.Unit.TURN else responses:
            services.judgment_save(round=round_, by=reviewer, attribute=attribute, turn=assignment.turn,
                                   response=response, score=1, spans=[SpanInput(0, 6, subs[0].slug)] if subs else None,
                                   instance_count=1 if subs else None)

    client = Client()
    client.force_login(reviewer)
    turn_url = reverse("turn", args=[round_.pk, 1])
    save_url = reverse("judgment-save", args=[round_.pk, 1])
    # The page names a response by this reviewer's handle, never by its id.
    span_attribute = next(a for a in attributes if a.unit == AttributeDefinition.Unit.RESPONSE
                          and a.subcategories.all())
    handle = selectors.response_handle(study=round_.study, coder_id=reviewer.pk, turn_id=assignment.turn_id,
                                       response_id=responses[0].pk)
    spans = json.dumps([{"start": 0, "end": 6, "subcategory": span_attribute.subcategories.all()[0].slug}])
    state = {"score": 1, "version": 1}

    def save() -> None:
        state["score"] = 1 - state["score"]
        answer = client.post(save_url, {"form_id": f"r{handle}-{span_attribute.code}",
                                        "attribute": span_attribute.code, "response": handle,
                                        "score": state["score"], "spans": spans, "instance_count": "1",
                                        "version": state["version"]}, headers={"HX-Request": "true"})
        assert answer.status_code == 200, answer.content
        found = re.search(rb'data-version="(\d+)"', answer.content)
        assert found is not None, answer.content
        state["version"] = int(found.group(1))

    def render() -> None:
        assert client.get(turn_url).status_code == 200

    def health() -> None:
        assert client.get("/healthz").status_code == 200

    calls = {"health check (baseline)": health, "turn view, 5 responses": render,
             "autosave, a span attribute": save}
    figures = {name: measure(call, args.runs) for name, call in calls.items()}
    base = figures["health check (baseline)"]
    print(f"{'request':<28} {'SQL':>4} {'CPU p50':>8} {'CPU p95':>8} {'wall p50':>9} {'wall p95':>9} "
          f"{'CPU / base':>11}")
    for name, f in figures.items():
        print(f"{name:<28} {f['queries']:>4} {f['cpu_p50']:8.2f} {f['cpu_p95']:8.2f} {f['wall_p50']:9.2f} "
              f"{f['wall_p95']:9.2f} {f['cpu_p50'] / base['cpu_p50']:10.1f}x")
    if args.profile:
        for name, call in list(calls.items())[1:]:
            profile = cProfile.Profile()
            profile.enable()
            for _ in range(50):
                call()
            profile.disable()
            out = io.StringIO()
            pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(args.profile)
            print(f"\n--- {name}: 50 requests, heaviest functions by own time ---\n{out.getvalue()}")


if __name__ == "__main__":
    main()
