#!/usr/bin/env python
"""Server time to render the turn view (5 responses, 80 codings) and to save one judgment, p50/p95, next to a
minimal request through the same stack (the health check) as the baseline of the same run.

Run against PostgreSQL, e.g. with throwaway servers:
    .venv/bin/python scripts/testenv.py -- .venv/bin/python benchmarks/turn_view.py
It migrates and fills the database it is given: never point it at a database you care about.
"""

from __future__ import annotations

import os
import re
import statistics
import sys
import time
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

RUNS = int(os.environ.get("RUNS", "60"))


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


def main() -> None:
    from django.contrib.auth import get_user_model

    from annotation import services
    from annotation.models import Assignment, Round
    from annotation.services import SpanInput
    from benchmark.models import ModelResponse

    print(f"database: {connection.vendor}; runs per figure: {RUNS}")
    call_command("migrate", verbosity=0)
    call_command("load_demo", "--quiet")
    call_command("generate_synthetic", "--conversations", "300", "--reviewers", "7", "--seed", "11",
                 "--slug", "bench-volume", stdout=open(os.devnull, "w"))  # noqa: SIM115 - background volume
    round_ = Round.objects.get(study__slug="demo", kind="calibration", number=1)
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    assignment = Assignment.objects.get(round=round_, coder=reviewer, position=1)
    for attribute in round_.study.schema.attributes.all():
        if attribute.unit == "turn":
            services.judgment_save(round=round_, by=reviewer, attribute=attribute, turn=assignment.turn, score=1)
            continue
        subs = list(attribute.subcategories.all())
        for response in ModelResponse.objects.filter(turn=assignment.turn):
            services.judgment_save(round=round_, by=reviewer, attribute=attribute, response=response, score=1,
                                   spans=[SpanInput(0, 6, subs[0].slug)] if subs else None,
                                   instance_count=1 if subs else None)

    client = Client()
    client.force_login(reviewer)
    turn_url = reverse("turn", args=[round_.pk, 1])
    save_url = reverse("judgment-save", args=[round_.pk, 1])
    response = ModelResponse.objects.filter(turn=assignment.turn).first()
    state = {"score": 0, "version": 1}

    def save() -> None:
        state["score"] = 1 - state["score"]
        answer = client.post(save_url, {"attribute": "TD", "response": str(response.pk), "score": state["score"],
                                        "spans": "[]", "instance_count": "0", "version": state["version"]})
        assert answer.status_code == 200, answer.content
        state["version"] = int(re.search(rb'data-version="(\d+)"', answer.content).group(1))

    def render() -> None:
        assert client.get(turn_url).status_code == 200

    def health() -> None:
        assert client.get("/healthz").status_code == 200

    figures = {"health check (baseline)": timed(health, RUNS), "turn view, 5 responses": timed(render, RUNS),
               "save one judgment": timed(save, RUNS)}
    base_p50, _ = summary(figures["health check (baseline)"])
    print(f"{'request':<26} {'p50 ms':>8} {'p95 ms':>8} {'p50 / baseline':>15}")
    for name, samples in figures.items():
        p50, p95 = summary(samples)
        print(f"{name:<26} {p50:8.1f} {p95:8.1f} {p50 / base_p50:14.1f}x")


if __name__ == "__main__":
    main()
