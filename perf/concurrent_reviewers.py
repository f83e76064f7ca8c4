#!/usr/bin/env python
"""Reviewers at once on gunicorn + PostgreSQL: turn view and autosave p50/p95/p99 at each concurrency, saves per
second, web CPU and SQL statements per save, the web workers' memory and longest GC pause; each figure next to
the health check measured the same way in the same run (the baseline: the same stack, network, session and
database round trip, with no page behind it).

    .venv/bin/python scripts/testenv.py -- .venv/bin/python perf/concurrent_reviewers.py \
        --reviewers 1,8,32 [--json] [--think 0.3]

What it does, against the (throwaway) database it is given:
1. migrates, loads the demo study (calibration-1 open: two turns of five responses, 80 codings per turn) and a
   synthetic study of 300 conversations as background volume; adds as many reviewers as the largest
   ``--reviewers`` to the demo study with both turns queued and fully coded (each turn page shows 80 judgments
   and their spans), and one more whose requests are counted in-process: SQL statements per save, per turn
   view and per health check (BEGIN/COMMIT not counted);
2. serves the project with gunicorn (``gunicorn.conf.py``: application preloaded, GC frozen after start-up;
   sync workers, 2 x cores + 1 by default, DEBUG off) on a free loopback port;
3. each reviewer is a thread with its own HTTP session, signed in through the sign-in form, that repeats, back
   to back: health check, open a turn page, autosave ``--saves`` codings of that turn (as the page does: the
   response's handle, the version it last saw, the CSRF header), alternating its two turns;
4. for each concurrency N in ``--reviewers``: that mixed phase with N reviewers (latencies), then ``--seconds``
   of autosaves only and of health checks only with N clients (throughput, and the workers' CPU time per
   request from /proc); with ``--think`` also the "paced" phase of issue 11 (a random 0-2 x think seconds
   between requests) at the largest N;
5. prints a table per phase and the targets of issue 14 (turn view and autosave p95 < 50 ms with 8 reviewers,
   >= 400 saves/s, < 4 ms web CPU and <= 7 SQL statements per save, no GC pause > 20 ms, web workers < 100 MiB);
   ``--json``: then one JSON object per figure and line (``perf/_common.py``, read by ``scripts/bench``).

Latency is measured by the client (request sent to body read), so it includes the loopback network, gunicorn's
queueing and gzip; the client, gunicorn and PostgreSQL share this machine's cores. It migrates and fills the
database it is given: never point it at a database you care about.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests
from _common import (
    django_setup,
    figure,
    gunicorn,
    loadavg,
    percentile,
    print_figures,
    require_postgres,
    vm_kib,
    worker_pids,
)

PASSWORD = "bench-reviewer-pw"  # noqa: S105 - throwaway accounts in a throwaway database
TARGET_REVIEWERS = 8  # the concurrency issue 14's targets are stated at
P95_TARGET_MS = 50.0  # turn view and autosave
SAVES_PER_SECOND_TARGET = 400.0
CPU_PER_SAVE_TARGET_MS = 4.0
# Issue 14's 6, plus the session's row since issue 31 (sessions in the database: a Redis outage signs nobody out).
SQL_PER_SAVE_TARGET = 7
GC_PAUSE_TARGET_MS = 20.0
WORKER_RSS_TARGET_MIB = 100.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Reviewer:
    username: str
    round_id: int
    positions: list[int]
    saves: dict[int, list[dict]]  # position -> autosave bodies, in order
    versions: dict[str, int]  # "position:form_id" -> judgment version the page last saw
    cursor: dict[int, int] = field(default_factory=dict)  # position -> next body


@dataclass
class Samples:
    times: dict[str, list[float]] = field(default_factory=lambda: {"health check": [], "turn view": [],
                                                                    "autosave": []})
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, name: str, ms: float) -> None:
        with self.lock:
            self.times[name].append(ms)


def setup(count: int) -> tuple[list[Reviewer], Reviewer]:
    """The demo study and background volume; ``count`` reviewers (and one probe) with both calibration-1 turns
    queued and coded."""
    django_setup()
    from django.core.management import call_command

    from access import roles
    from access.services import user_ensure
    from annotation import selectors, services
    from annotation.models import AttributeDefinition, Judgment, Round, RoundItem
    from annotation.services import SpanInput
    from benchmark.models import ModelResponse

    call_command("migrate", verbosity=0)
    call_command("load_demo", "--quiet")
    with open(os.devnull, "w") as quiet:
        call_command("generate_synthetic", "--conversations", "300", "--reviewers", "7", "--seed", "11",
                     "--slug", "bench-volume", stdout=quiet)
    round_ = Round.objects.select_related("study__schema").get(study__slug="demo", kind="calibration", number=1)
    study = round_.study
    turns = [item.turn for item in RoundItem.objects.filter(round=round_).select_related("turn").order_by("position")]
    attributes = list(AttributeDefinition.objects.filter(schema=study.schema)
                      .exclude(unit=AttributeDefinition.Unit.CONVERSATION)
                      .prefetch_related("subcategories").order_by("position"))
    reviewers = []
    for number in range(1, count + 2):
        user = user_ensure(username=f"bench-r{number}", role=roles.REVIEWER, password=PASSWORD)
        services.study_member_add(study=study, user=user, role="reviewer", by=None)
        services.assignments_ensure(round=round_, coder=user, turns=turns, by=None)
        view_positions = []
        saves: dict[int, list[dict]] = {}
        for turn in turns:
            position = selectors.coder_assignments(user=user).get(round=round_, turn=turn).position
            view_positions.append(position)
            responses = list(ModelResponse.objects.filter(turn=turn).order_by("pk"))
            bodies = []
            for attribute in attributes:
                subs = [s.slug for s in attribute.subcategories.all()]
                positive = [v for v in attribute.scale if v > 0] or [max(attribute.scale)]
                units = [None] if attribute.unit == AttributeDefinition.Unit.TURN else responses
                for response in units:
                    spans = [SpanInput(0, 6, subs[0])] if subs else None
                    services.judgment_save(round=round_, by=user, attribute=attribute, turn=turn, response=response,
                                           score=positive[0], spans=spans, instance_count=1 if subs else None)
                    handle = (selectors.response_handle(study=study, coder_id=user.pk, turn_id=turn.pk,
                                                        response_id=response.pk)
                              if response is not None else "")
                    bodies.append({
                        "form_id": f"{'r' + handle if handle else 't'}-{attribute.code}",
                        "attribute": attribute.code, "response": handle, "scores": attribute.scale,
                        "spans": json.dumps([{"start": 0, "end": 6, "subcategory": subs[0]}]) if subs else "",
                        "instance_count": "1" if subs else "",
                    })
            saves[position] = bodies
        versions = {}
        for judgment in Judgment.objects.filter(round=round_, coder=user).select_related("attribute", "turn"):
            position = view_positions[[t.pk for t in turns].index(judgment.turn_id)]
            handle = (selectors.response_handle(study=study, coder_id=user.pk, turn_id=judgment.turn_id,
                                                response_id=judgment.response_id)
                      if judgment.response_id else "")
            versions[f"{position}:{'r' + handle if handle else 't'}-{judgment.attribute.code}"] = judgment.version
        reviewers.append(Reviewer(user.get_username(), round_.pk, view_positions, saves, versions,
                                  dict.fromkeys(view_positions, 0)))
    print(f"setup: {count} reviewers (+1 probe) x {len(turns)} turns x "
          f"{len(reviewers[0].saves[reviewers[0].positions[0]])} codings, all coded")
    return reviewers[:-1], reviewers[-1]


def save_data(reviewer: Reviewer, position: int) -> tuple[str, dict]:
    """The next autosave of ``position``: a coding of the turn, its score moved to the next value of its scale
    (so that every save is a change, with its history row), its spans and instance count as the page shows
    them."""
    bodies = reviewer.saves[position]
    body = bodies[reviewer.cursor[position] % len(bodies)]
    reviewer.cursor[position] += 1
    key = f"{position}:{body['form_id']}"
    score = body["scores"][reviewer.versions.get(key, 0) % len(body["scores"])]
    return key, {"form_id": body["form_id"], "attribute": body["attribute"], "response": body["response"],
                 "score": str(score), "instance_count": body["instance_count"], "spans": body["spans"],
                 "version": str(reviewer.versions.get(key, 0))}


def saved(reviewer: Reviewer, key: str, answer) -> None:
    """Keep the version the save answered with, as the page does (``answer``: an HTTP or a test-client response)."""
    text = answer.content.decode()
    marker = 'data-version="'
    if marker in text:
        reviewer.versions[key] = int(text.split(marker, 1)[1].split('"', 1)[0])


def sql_statements(probe: Reviewer) -> dict[str, int]:
    """SQL statements of one health check, turn view and autosave, counted in-process through the same middleware
    (BEGIN and COMMIT, which psycopg sends itself, are not counted). Each request is made a few times first: the
    figure is that of a worker that has served the study before."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client

    client = Client()
    client.force_login(get_user_model().objects.get(username=probe.username))
    position = probe.positions[0]
    turn_url = f"/rounds/{probe.round_id}/turns/{position}/"
    # The costliest common save: an attribute of a response with highlighted spans (sent again unchanged).
    spanned = next(i for i, body in enumerate(probe.saves[position]) if body["response"] and body["spans"])

    def save():
        probe.cursor[position] = spanned
        key, data = save_data(probe, position)
        answer = client.post(f"{turn_url}save", data, headers={"HX-Request": "true"})
        saved(probe, key, answer)
        return answer

    counted: list[str] = []

    def count(execute, sql, params, many, context):
        counted.append(sql)
        return execute(sql, params, many, context)

    figures = {}
    for name, call in (("health check", lambda: client.get("/healthz")), ("turn view", lambda: client.get(turn_url)),
                       ("autosave", save)):
        for _ in range(3):
            call()
        counted.clear()
        with connection.execute_wrapper(count):
            answer = call()
        if answer.status_code != 200:
            raise SystemExit(f"{name}: {answer.status_code} {answer.content[:200]!r}")
        figures[name] = len(counted)
    return figures


def sign_in(session: requests.Session, base: str, username: str) -> None:
    """Through the sign-in form, as a browser does (django-axes counts the attempt)."""
    session.get(f"{base}/login/", timeout=30).raise_for_status()
    answer = session.post(f"{base}/login/", data={"username": username, "password": PASSWORD,
                                                  "csrfmiddlewaretoken": session.cookies["csrftoken"]},
                          headers={"Referer": f"{base}/login/"}, timeout=30, allow_redirects=False)
    if answer.status_code != 302 or "sessionid" not in session.cookies:
        raise SystemExit(f"{username}: sign-in failed ({answer.status_code})")


def timed(samples: Samples, name: str, call) -> requests.Response:
    started = time.perf_counter()
    answer = call()
    _ = answer.content  # the whole body, as a browser would wait for it
    samples.add(name, (time.perf_counter() - started) * 1000)
    return answer


def post_save(reviewer: Reviewer, session: requests.Session, base: str, position: int, samples: Samples,
              name: str = "autosave") -> None:
    csrf = {"X-CSRFToken": session.cookies["csrftoken"], "HX-Request": "true", "Referer": base + "/"}
    key, data = save_data(reviewer, position)
    url = f"{base}/rounds/{reviewer.round_id}/turns/{position}/save"
    answer = timed(samples, name, lambda: session.post(url, data=data, headers=csrf, timeout=60))
    if answer.status_code != 200:
        samples.errors.append(f"save {answer.status_code}: {answer.text[:200]}")
        return
    saved(reviewer, key, answer)


def reviewer_loop(reviewer: Reviewer, session: requests.Session, base: str, *, cycles: int, saves_per_turn: int,
                  think: float, samples: Samples, rng: random.Random) -> None:
    def pause() -> None:
        if think:
            time.sleep(rng.uniform(0, 2 * think))

    for cycle in range(cycles):
        position = reviewer.positions[cycle % len(reviewer.positions)]
        answer = timed(samples, "health check", lambda: session.get(f"{base}/healthz", timeout=60))
        if answer.status_code != 200:
            samples.errors.append(f"healthz {answer.status_code}")
        pause()
        url = f"{base}/rounds/{reviewer.round_id}/turns/{position}/"
        answer = timed(samples, "turn view", lambda url=url: session.get(url, timeout=60))
        if answer.status_code != 200:
            samples.errors.append(f"turn {answer.status_code}")
        for _ in range(saves_per_turn):
            pause()
            post_save(reviewer, session, base, position, samples)
        pause()


def run_threads(target, pairs: list[tuple[Reviewer, requests.Session]], **kwargs) -> None:
    threads = [threading.Thread(target=target, args=(r, s), kwargs={**kwargs, "index": i})
               for i, (r, s) in enumerate(pairs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def run_phase(pairs: list[tuple[Reviewer, requests.Session]], base: str, *, cycles: int, saves_per_turn: int,
              think: float, seed: int) -> Samples:
    samples = Samples()

    def one(reviewer: Reviewer, session: requests.Session, *, index: int) -> None:
        reviewer_loop(reviewer, session, base, cycles=cycles, saves_per_turn=saves_per_turn, think=think,
                      samples=samples, rng=random.Random(seed + index))

    run_threads(one, pairs)
    return samples


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of the processes so far (a worker that restarted meanwhile is left out)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / CLOCK_TICKS


def throughput(pairs: list[tuple[Reviewer, requests.Session]], base: str, master: int, *, seconds: float,
               what: str) -> dict[str, float]:
    """``what`` ("autosave" or "health check") back to back from every client for ``seconds``: requests per
    second and the web workers' CPU milliseconds per request."""
    samples = Samples()
    stop = time.monotonic() + seconds

    def one(reviewer: Reviewer, session: requests.Session, *, index: int) -> None:
        turn = 0
        while time.monotonic() < stop:
            if what == "autosave":
                post_save(reviewer, session, base, reviewer.positions[turn % len(reviewer.positions)], samples)
                turn += 1
            else:
                timed(samples, "health check", lambda: session.get(f"{base}/healthz", timeout=60))

    pids = worker_pids(master)
    cpu_before, started = cpu_seconds(pids), time.perf_counter()
    run_threads(one, pairs)
    elapsed, cpu = time.perf_counter() - started, cpu_seconds(pids) - cpu_before
    n = len(samples.times[what])
    return {"n": n, "per_second": n / elapsed, "cpu_ms": 1000 * cpu / max(n, 1), "errors": len(samples.errors)}


def summary(samples: Samples) -> dict[str, dict[str, float]]:
    return {name: {"n": len(times), "p50": statistics.median(times), "p95": percentile(times, 0.95),
                   "p99": percentile(times, 0.99)}
            for name, times in samples.times.items() if times}


def print_phase(phase: str, figures: dict[str, dict[str, float]], errors: list[str]) -> None:
    base = figures["health check"]
    print(f"\n{phase}")
    print(f"  {'request':<14} {'n':>6} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'p95/base':>9}")
    for name, f in figures.items():
        print(f"  {name:<14} {f['n']:>6} {f['p50']:8.1f} {f['p95']:8.1f} {f['p99']:8.1f} "
              f"{f['p95'] / base['p95']:8.1f}x")
    if errors:
        print(f"  {len(errors)} request(s) failed, e.g. {errors[:3]}")


def gc_pauses(directory: Path) -> dict[str, float]:
    stats = [json.loads(p.read_text()) for p in directory.glob("worker-*.json")]
    return {"workers": len(stats), "max_ms": max((s["max_ms"] for s in stats), default=float("nan")),
            "max_cpu_ms": max((s["max_cpu_ms"] for s in stats), default=float("nan")),
            "count": sum(s["count"] for s in stats), "over_20ms": sum(s["over_20ms"] for s in stats),
            "cpu_over_20ms": sum(s["cpu_over_20ms"] for s in stats),
            "between_count": sum(s.get("between_count", 0) for s in stats),
            "between_max_ms": max((s.get("between_max_ms", 0.0) for s in stats), default=float("nan"))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reviewers", default=str(TARGET_REVIEWERS),
                        help="concurrencies to measure, comma-separated (default 8; issue 14: 1,8,32)")
    parser.add_argument("--workers", type=int, default=2 * (os.cpu_count() or 1) + 1,
                        help="gunicorn sync workers (default 2 x cores + 1)")
    parser.add_argument("--cycles", type=int, default=15, help="turn pages per reviewer and phase (default 15)")
    parser.add_argument("--saves", type=int, default=5, help="autosaves after each turn page (default 5)")
    parser.add_argument("--seconds", type=float, default=5.0,
                        help="length of each saves-only and health-checks-only phase (default 5)")
    parser.add_argument("--think", type=float, default=0.0,
                        help="also a paced phase at the largest concurrency: mean seconds between a reviewer's "
                             "requests (issue 11 used 0.3; default 0: none)")
    parser.add_argument("--warmup", type=int, default=2, help="unmeasured cycles per reviewer first (default 2)")
    parser.add_argument("--json", action="store_true", help="end with the figures for scripts/bench, a JSON line each")
    args = parser.parse_args()
    counts = sorted({int(n) for n in args.reviewers.split(",") if n.strip()})
    require_postgres("concurrent_reviewers")
    print(f"load average at start: {loadavg()} ({os.cpu_count()} cores)")
    reviewers, probe = setup(max(counts))
    statements = sql_statements(probe)
    print(f"SQL statements (in-process, BEGIN/COMMIT not counted): {statements}")

    gc_dir = Path(tempfile.mkdtemp(prefix="cab-gc-"))
    phases: dict[int, dict[str, dict[str, float]]] = {}
    rates: dict[int, dict[str, dict[str, float]]] = {}
    failed = 0
    with gunicorn(workers=args.workers, timeout=120, env={"CAB_GC_STATS": str(gc_dir)}) as (base, master):
        sessions = []
        for reviewer in reviewers:
            session = requests.Session()
            sign_in(session, base, reviewer.username)
            sessions.append(session)
        pairs = list(zip(reviewers, sessions, strict=True))
        page = sessions[0].get(f"{base}/rounds/{reviewers[0].round_id}/turns/{reviewers[0].positions[0]}/",
                               headers={"Accept-Encoding": "gzip"}, timeout=60)
        wire = page.raw.headers.get("Content-Length") or "?"
        print(f"gunicorn: {args.workers} sync workers; turn page {len(page.content):,} bytes, {wire} on the wire "
              f"({page.headers.get('Content-Encoding', 'identity')})")
        run_phase(pairs, base, cycles=args.warmup, saves_per_turn=args.saves, think=0, seed=0)
        idle_rss = max(vm_kib(pid, "VmRSS") for pid in worker_pids(master)) / 1024
        print(f"load average before the phases: {loadavg()}")
        for n in counts:
            samples = run_phase(pairs[:n], base, cycles=args.cycles, saves_per_turn=args.saves, think=0, seed=100 + n)
            phases[n] = summary(samples)
            failed += len(samples.errors)
            print_phase(f"{n} reviewer(s), back to back (load average {loadavg()})", phases[n], samples.errors)
            rates[n] = {what: throughput(pairs[:n], base, master, seconds=args.seconds, what=what)
                        for what in ("autosave", "health check")}
            failed += sum(int(r["errors"]) for r in rates[n].values())
            for what, r in rates[n].items():
                print(f"  {what} only: {r['n']:.0f} in {args.seconds:g} s = {r['per_second']:.0f}/s, "
                      f"{r['cpu_ms']:.2f} ms web CPU each")
        if args.think:
            n = max(counts)
            paced = run_phase(pairs[:n], base, cycles=args.cycles, saves_per_turn=args.saves, think=args.think,
                              seed=300)
            failed += len(paced.errors)
            print_phase(f"{n} reviewer(s), paced (think 0-{2 * args.think:g} s)", summary(paced), paced.errors)
        pids = worker_pids(master)
        rss = max(vm_kib(pid, "VmRSS") for pid in pids) / 1024
        peak = max(vm_kib(pid, "VmHWM") for pid in pids) / 1024
    time.sleep(0.5)  # the workers write their GC figures as they stop
    pauses = gc_pauses(gc_dir)
    print(f"\nload average at the end: {loadavg()}")
    print(f"web workers: RSS {rss:.1f} MiB now (peak {peak:.1f}, {idle_rss:.1f} after warm-up); GC: "
          f"{pauses['count']} collections in {pauses['workers']} workers; during requests the longest "
          f"{pauses['max_ms']:.1f} ms ({pauses['max_cpu_ms']:.1f} ms of CPU), {pauses['over_20ms']} over 20 ms "
          f"({pauses['cpu_over_20ms']} by CPU time); {pauses['between_count']} full collections between requests "
          f"(gunicorn.conf.py), the longest {pauses['between_max_ms']:.1f} ms")

    figures = []
    for n in counts:
        base_p = phases[n]["health check"]
        for name in ("turn view", "autosave"):
            for q in ("p50", "p95", "p99"):
                targeted = n == TARGET_REVIEWERS and q == "p95"
                figures.append(figure(
                    f"{name} {q}, {n} reviewer{'s' if n > 1 else ''} back to back", phases[n][name][q], "ms",
                    baseline=f"/healthz {q}, same clients and run", baseline_value=base_p[q],
                    target=f"< {P95_TARGET_MS:g} ms" if targeted else "",
                    met=phases[n][name][q] < P95_TARGET_MS if targeted else True))
        save_rate, health_rate = rates[n]["autosave"], rates[n]["health check"]
        targeted = n == TARGET_REVIEWERS
        figures.append(figure(
            f"autosaves per second, {n} client{'s' if n > 1 else ''} back to back", save_rate["per_second"],
            "saves/s", baseline="/healthz per second, same clients and run", baseline_value=health_rate["per_second"],
            target=f"≥ {SAVES_PER_SECOND_TARGET:g}" if targeted else "",
            met=save_rate["per_second"] >= SAVES_PER_SECOND_TARGET if targeted else True))
        figures.append(figure(
            f"web CPU per autosave, {n} client{'s' if n > 1 else ''}", save_rate["cpu_ms"], "ms",
            baseline="web CPU per /healthz, same clients and run", baseline_value=health_rate["cpu_ms"],
            target=f"< {CPU_PER_SAVE_TARGET_MS:g}" if targeted else "",
            met=save_rate["cpu_ms"] < CPU_PER_SAVE_TARGET_MS if targeted else True))
    figures += [
        figure("SQL statements per autosave", statements["autosave"], "statements",
               baseline="SQL statements per /healthz", baseline_value=statements["health check"],
               target=f"≤ {SQL_PER_SAVE_TARGET}", met=statements["autosave"] <= SQL_PER_SAVE_TARGET),
        figure("SQL statements per turn view", statements["turn view"], "statements",
               baseline="SQL statements per /healthz", baseline_value=statements["health check"], target="",
               met=True),
        figure("longest GC pause during a request in a web worker", pauses["max_ms"], "ms",
               baseline="GC collections in the web workers", baseline_value=pauses["count"],
               target=f"≤ {GC_PAUSE_TARGET_MS:g}", met=pauses["max_ms"] <= GC_PAUSE_TARGET_MS),
        figure("longest GC pause during a request, CPU time", pauses["max_cpu_ms"], "ms",
               baseline="GC collections in the web workers", baseline_value=pauses["count"],
               target=f"≤ {GC_PAUSE_TARGET_MS:g}", met=pauses["max_cpu_ms"] <= GC_PAUSE_TARGET_MS),
        figure("longest full collection between requests (after the response)", pauses["between_max_ms"], "ms",
               baseline="full collections between requests", baseline_value=pauses["between_count"], target="",
               met=True),
        figure("web worker RSS after the run", rss, "MiB", baseline="web worker RSS after warm-up",
               baseline_value=idle_rss, target=f"< {WORKER_RSS_TARGET_MIB:g}", met=rss < WORKER_RSS_TARGET_MIB),
    ]
    print(f"\n{'figure':<48} {'value':>10} {'baseline':>10}  target")
    for row in figures:
        if row["target"]:
            verdict = "met" if row["met"] else "MISSED"
            print(f"{row['figure']:<48} {row['value']:>10.2f} {row['baseline_value']:>10.2f}  "
                  f"{row['target']} {row['unit']}: {verdict}")
    if args.json:
        print_figures(figures)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
