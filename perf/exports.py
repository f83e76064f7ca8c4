#!/usr/bin/env python
"""All of a study's judgments streamed as CSV and JSON Lines through the API, on gunicorn + PostgreSQL, next to a
plain PostgreSQL COPY of the same rows (the export's own query, read to the end by this client) in the same run.

    .venv/bin/python scripts/testenv.py -- .venv/bin/python perf/exports.py [--scale 1] [--json]

What it does, against the (throwaway) database it is given:
1. migrates and generates two synthetic studies: the large one at --scale (1 = paper scale: 1,576 conversations,
   42,230 responses coded once in the main round, 2 calibration rounds of 10 turns coded by 7 reviewers; about
   690,000 judgments, 30 % of response judgments with spans) and a small one at a tenth of it;
2. serves the project with gunicorn (one sync worker, DEBUG off) on a free loopback port; a researcher's token;
3. exports the small study (CSV, then JSONL), then the large one, each read to the end by this client: rows per
   second, time to the first byte, and the worker's peak RSS (VmHWM) after the small exports and after the large;
4. baseline: COPY (the export's SELECT) TO STDOUT for the large study, read to the end as raw bytes, timed the same
   way.

Targets (issue 14): ≥ 150,000 rows/s and within 3.5× of the COPY; first byte under 0.5 s; the worker's peak RSS
the same for the large study as for one ten times smaller (at most 10 % more). It migrates and fills the database
it is given: never point it at a database you care about.
"""

from __future__ import annotations

import argparse
import io
import sys
import time

import requests
from _common import (
    add_arguments,
    django_setup,
    figure,
    gunicorn,
    print_figures,
    require_postgres,
    scaled,
    vm_kib,
    worker_pids,
)

CONVERSATIONS, RESPONSES = 1_576, 42_230  # the reference study


def generate(slug: str, scale: float) -> int:
    from django.core.management import call_command

    from annotation.models import Judgment

    conversations = scaled(CONVERSATIONS, scale, minimum=20)
    responses = max(scaled(RESPONSES, scale), 5 * (conversations + 3 * -(-conversations // 5)))  # ≥ 2 turns a multi
    call_command("generate_synthetic", "--conversations", str(conversations), "--responses", str(responses),
                 "--reviewers", "7", "--experts", "0", "--calibration-turns", "10", "--seed", "0", "--slug", slug,
                 stdout=io.StringIO())
    return Judgment.objects.filter(round__study__slug=slug, score__isnull=False).count()


def setup(scale: float) -> tuple[str, dict[str, int]]:
    django_setup()
    from django.core.management import call_command

    from access import roles
    from access.services import user_ensure
    from api import services as api_services

    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    sizes = {"small": generate("bench-small", scale / 10), "large": generate("bench-large", scale)}
    print(f"synthetic studies: {sizes['small']:,} and {sizes['large']:,} judgments, generated in "
          f"{time.perf_counter() - started:.0f} s")
    researcher = user_ensure(username="bench-researcher", role=roles.RESEARCHER)
    _, token = api_services.api_token_create(user=researcher, name="bench", scopes=["read"], by=None)
    return token, sizes


def download(session: requests.Session, url: str) -> tuple[float, float, int, int]:
    """(seconds to the first byte of the body, seconds to the last, bytes, lines) of one streamed download."""
    started = time.perf_counter()
    first = None
    size = lines = 0
    with session.get(url, stream=True, timeout=3600) as answer:
        answer.raise_for_status()
        for chunk in answer.iter_content(chunk_size=1 << 16):
            if first is None:
                first = time.perf_counter() - started
            size += len(chunk)
            lines += chunk.count(b"\n")
    return first or 0.0, time.perf_counter() - started, size, lines


def copy_baseline(slug: str) -> tuple[float, float, int]:
    """COPY (the export's own SELECT) TO STDOUT, read to the end as raw bytes (no row parsed in Python: the
    database's own rate, which psycopg's reader caps at one Python call per row), in a transaction with the
    export's own settings (sort memory, no JIT): (seconds to the first row, to the last, rows)."""
    from django.db import connection, transaction

    from annotation import long_format, long_format_sql
    from annotation.models import Study

    sql, params = long_format.judgments_query(study=Study.objects.get(slug=slug)).query.sql_with_params()
    started = time.perf_counter()
    first = None
    rows = 0
    with transaction.atomic(), connection.cursor() as cursor:
        long_format_sql.export_settings(cursor)
        with cursor.cursor.copy(f"COPY ({sql}) TO STDOUT", params) as copy:
            for data in copy:
                if first is None:
                    first = time.perf_counter() - started
                rows += 1  # the server sends one CopyData message per row (protocol, "COPY Operations")
                del data
    return first or 0.0, time.perf_counter() - started, rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    args = parser.parse_args()
    require_postgres("exports")
    token, sizes = setup(args.scale)

    results: dict[tuple[str, str], tuple[float, float, int, int]] = {}
    with gunicorn(workers=1, timeout=3600) as (root, master):
        worker = worker_pids(master)[0]
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {token}"
        health = []
        for _ in range(20):
            started = time.perf_counter()
            session.get(f"{root}/healthz", timeout=30).raise_for_status()
            health.append(time.perf_counter() - started)
        health_p50 = sorted(health)[len(health) // 2]
        hwm = {"idle": vm_kib(worker)}
        for size in ("small", "large"):
            for fmt in ("csv", "jsonl"):
                url = f"{root}/api/v1/studies/bench-{size}/exports/judgments.{fmt}"
                results[(size, fmt)] = download(session, url)
                rows = results[(size, fmt)][3] - (1 if fmt == "csv" else 0)
                assert rows == sizes[size], f"{size} {fmt}: {rows:,} rows, expected {sizes[size]:,}"
            hwm[size] = vm_kib(worker)
    copy_first, copy_seconds, copy_rows = copy_baseline("bench-large")
    assert copy_rows == sizes["large"], (copy_rows, sizes["large"])
    copy_rate = copy_rows / copy_seconds

    print(f"\n{'export':<16}{'rows':>11}{'MB':>8}{'first byte s':>14}{'total s':>9}{'rows/s':>11}{'vs COPY':>9}")
    for (size, fmt), (first, total, nbytes, _) in results.items():
        print(f"{size + ' ' + fmt:<16}{sizes[size]:>11,}{nbytes / 1e6:>8.1f}{first:>14.3f}{total:>9.2f}"
              f"{sizes[size] / total:>11,.0f}{total / (copy_seconds * sizes[size] / copy_rows):>8.1f}x")
    print(f"{'COPY (large)':<16}{copy_rows:>11,}{'':>8}{copy_first:>14.3f}{copy_seconds:>9.2f}{copy_rate:>11,.0f}")
    print(f"server worker VmHWM: idle {hwm['idle'] / 1024:.0f} MiB, after the small exports {hwm['small'] / 1024:.0f}"
          f" MiB, after the large ({sizes['large'] / max(sizes['small'], 1):.0f}x the rows) "
          f"{hwm['large'] / 1024:.0f} MiB; /healthz p50 {health_p50 * 1000:.1f} ms")

    if args.json:
        copy_name = "PostgreSQL COPY of the same rows, same run"
        figures = []
        for fmt in ("csv", "jsonl"):
            first, total, _, _ = results[("large", fmt)]
            rate = sizes["large"] / total
            figures += [
                figure(f"export {fmt}: {sizes['large']:,} judgments", rate, "rows/s", baseline=copy_name,
                       baseline_value=copy_rate, target="≥ 150,000 rows/s", met=rate >= 150_000),
                figure(f"export {fmt}: time vs COPY", total, "s", baseline=copy_name, baseline_value=copy_seconds,
                       target="≤ 3.5× baseline", met=total <= 3.5 * copy_seconds),
                figure(f"export {fmt}: first byte", first, "s", baseline="/healthz round trip p50, same run",
                       baseline_value=health_p50, target="< 0.5 s", met=first < 0.5),
            ]
        figures.append(figure("export: server worker peak RSS", hwm["large"] / 1024, "MiB",
                              baseline="same worker after exporting a study 10× smaller",
                              baseline_value=hwm["small"] / 1024, target="≤ 1.1× baseline",
                              met=hwm["large"] <= 1.1 * hwm["small"]))
        print_figures(figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
