#!/usr/bin/env python
"""What keeping a judgment's history costs: the autosave service (``judgment_save``) in a loop, each save a real
change (score and spans alternate), p50/p95 and saves per second; the long-format judgment import of a
synthetic study's export into a new study, rows per second; and how many history rows each wrote.

Run against PostgreSQL, e.g. with throwaway servers:
    .venv/bin/python scripts/testenv.py -- .venv/bin/python perf/judgment_history.py
It migrates and fills the database it is given: never point it at a database you care about.
SAVES (default 400) and CONVERSATIONS (synthetic study exported then imported, default 40) size the runs.
"""

from __future__ import annotations

import os
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

from django.apps import apps  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

SAVES = int(os.environ.get("SAVES", "400"))
CONVERSATIONS = int(os.environ.get("CONVERSATIONS", "40"))


def revisions() -> int:
    try:
        return apps.get_model("annotation", "JudgmentRevision").objects.count()
    except LookupError:
        return 0


def autosave() -> None:
    from django.contrib.auth import get_user_model

    from annotation import services
    from annotation.models import Assignment, Round
    from annotation.services import SpanInput
    from benchmark.models import ModelResponse

    round_ = Round.objects.select_related("study").get(study__slug="demo", kind="calibration", number=1)
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    turn = Assignment.objects.get(round=round_, coder=reviewer, position=1).turn
    attribute = round_.study.schema.attributes.filter(unit="response", subcategories__isnull=False).first()
    assert attribute is not None
    slug = attribute.subcategories.first().slug
    response = ModelResponse.objects.filter(turn=turn).first()
    samples, version = [], None
    before = revisions()
    for i in range(SAVES + 1):
        score = attribute.scale_min + i % 2
        spans = [SpanInput(0, 3 + i % 2, slug)]
        started = time.perf_counter()
        judgment = services.judgment_save(round=round_, by=reviewer, attribute=attribute, response=response,
                                          score=score, spans=spans, instance_count=1, expected_version=version)
        if i:  # the first save creates the judgment: left out, like a warm-up
            samples.append((time.perf_counter() - started) * 1000)
        version = judgment.version
    ordered = sorted(samples)
    p50, p95 = statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]
    with CaptureQueriesContext(connection) as one_save:
        services.judgment_save(round=round_, by=reviewer, attribute=attribute, response=response, score=score + 1,
                               spans=[SpanInput(1, 5, slug)], instance_count=1, expected_version=version)
    print(f"autosave (judgment_save, one span): {SAVES} saves, p50 {p50:.2f} ms, p95 {p95:.2f} ms, "
          f"{1000 * len(samples) / sum(samples):.0f} saves/s; {len(one_save.captured_queries)} queries per save; "
          f"history rows written: {revisions() - before}")


def bulk_import() -> None:
    from annotation import judgment_import, services
    from annotation.long_format import judgment_rows
    from annotation.models import Study

    call_command("generate_synthetic", "--conversations", str(CONVERSATIONS), "--reviewers", "7", "--seed", "3",
                 "--slug", "bench-source", stdout=open(os.devnull, "w"))  # noqa: SIM115
    rows = [row | {"study": "bench-copy"} for row in judgment_rows(study=Study.objects.get(slug="bench-source"))]
    n_spans = sum(len(row["spans"]) for row in rows)
    before = revisions()
    history_took = [0.0]
    start_history = getattr(services, "revisions_start", None)
    if start_history is not None:  # the share of the import spent starting the judgments' history
        def timed_start(**kwargs):
            started = time.perf_counter()
            try:
                return start_history(**kwargs)
            finally:
                history_took[0] += time.perf_counter() - started
        services.revisions_start = timed_start
    started = time.perf_counter()
    summary = judgment_import.judgments_import(rows=enumerate(rows, start=1), study_slug="bench-copy", by=None,
                                               create_study=True)
    took = time.perf_counter() - started
    assert summary.judgments_created == len(rows)
    print(f"judgment import: {len(rows)} rows ({n_spans} spans) in {took:.2f} s, {len(rows) / took:.0f} rows/s, "
          f"of which starting the history {history_took[0]:.2f} s; history rows written: {revisions() - before}")


def main() -> None:
    print(f"database: {connection.vendor}")
    call_command("migrate", verbosity=0)
    call_command("load_demo", "--quiet")
    autosave()
    bulk_import()


if __name__ == "__main__":
    main()
