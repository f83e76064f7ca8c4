#!/usr/bin/env python
"""Eight reviewers at once on gunicorn + PostgreSQL: turn view and autosave p50/p95, each next to the health
check measured under the same concurrency in the same run (the baseline: the same stack, network, session and
database round trip, with no page behind it).

    .venv/bin/python scripts/testenv.py -- .venv/bin/python benchmarks/concurrent_reviewers.py

What it does, against the (throwaway) database it is given:
1. migrates, loads the demo study (calibration-1 open: two turns of five responses, 80 codings per turn) and a
   synthetic study of 300 conversations as background volume; adds eight reviewers to the demo study with both
   turns queued and fully coded (so each turn page shows 80 judgments and their spans);
2. serves the project with gunicorn (sync workers, 2 x cores + 1 by default, DEBUG off) on a free loopback port;
3. each reviewer is a thread with its own HTTP session, signed in through the sign-in form (django-axes sees a
   real sign-in), that repeats: health check, open a turn page, autosave ``--saves`` codings of that turn (as
   the page does: the response's handle, the version it last saw, the CSRF header), alternating its two turns;
4. two phases: "paced" (each reviewer waits a random 0-2 x ``--think`` seconds between requests, a fast reviewer)
   and "saturated" (no wait: eight requests always in flight, on this machine's cores shared with the client
   and PostgreSQL);
5. prints, per phase, n, p50 and p95 in ms, and p50 / p95 as multiples of the health check's; the targets
   (turn view p95 < 100 ms, autosave p95 < 50 ms); the load average before and after.

Latency is measured by the client (request sent to body read), so it includes the loopback network, gunicorn's
queueing and gzip. It migrates and fills the database it is given: never point it at a database you care about.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cab.settings")
os.environ.setdefault("LOG_LEVEL", "WARNING")

REVIEWERS = 8
PASSWORD = "bench-reviewer-pw"  # noqa: S105 - throwaway accounts in a throwaway database
TARGETS = {"turn view": 100.0, "autosave": 50.0}  # p95, ms


@dataclass
class Reviewer:
    username: str
    round_id: int
    positions: list[int]
    saves: dict[int, list[dict]]  # position -> autosave bodies, in order
    versions: dict[str, int]  # "position:form_id" -> judgment version the page last saw


@dataclass
class Samples:
    times: dict[str, list[float]] = field(default_factory=lambda: {"health check": [], "turn view": [],
                                                                    "autosave": []})
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, name: str, ms: float) -> None:
        with self.lock:
            self.times[name].append(ms)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def setup() -> list[Reviewer]:
    """The demo study and background volume; eight reviewers with both calibration-1 turns queued and coded."""
    import django

    django.setup()
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
    for number in range(1, REVIEWERS + 1):
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
                    handle = (selectors.response_handle(coder_id=user.pk, turn_id=turn.pk, response_id=response.pk)
                              if response is not None else "")
                    bodies.append({
                        "form_id": f"{'r' + handle if handle else 't'}-{attribute.code}",
                        "attribute": attribute.code, "response": handle, "scores": positive,
                        "spans": json.dumps([{"start": 0, "end": 6, "subcategory": subs[0]}]) if subs else "",
                        "instance_count": "1" if subs else "",
                    })
            saves[position] = bodies
        versions = {}
        for judgment in Judgment.objects.filter(round=round_, coder=user).select_related("attribute", "turn"):
            position = view_positions[[t.pk for t in turns].index(judgment.turn_id)]
            handle = (selectors.response_handle(coder_id=user.pk, turn_id=judgment.turn_id,
                                                response_id=judgment.response_id)
                      if judgment.response_id else "")
            versions[f"{position}:{'r' + handle if handle else 't'}-{judgment.attribute.code}"] = judgment.version
        reviewers.append(Reviewer(user.get_username(), round_.pk, view_positions, saves, versions))
    print(f"setup: {len(reviewers)} reviewers x {len(turns)} turns x {len(reviewers[0].saves[view_positions[0]])} "
          "codings, all coded")
    return reviewers


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


def reviewer_loop(reviewer: Reviewer, session: requests.Session, base: str, *, cycles: int, saves_per_turn: int,
                  think: float, samples: Samples, rng: random.Random, cursor: dict[int, int]) -> None:
    def pause() -> None:
        if think:
            time.sleep(rng.uniform(0, 2 * think))

    csrf = {"X-CSRFToken": session.cookies["csrftoken"], "HX-Request": "true", "Referer": base + "/"}
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
        bodies = reviewer.saves[position]
        for _ in range(saves_per_turn):
            pause()
            body = bodies[cursor[position] % len(bodies)]
            cursor[position] += 1
            key = f"{position}:{body['form_id']}"
            score = body["scores"][cursor[position] % len(body["scores"])]
            data = {"form_id": body["form_id"], "attribute": body["attribute"], "response": body["response"],
                    "score": str(score), "instance_count": body["instance_count"], "spans": body["spans"],
                    "version": str(reviewer.versions.get(key, 0))}
            save_url = f"{url}save"
            answer = timed(samples, "autosave",
                           lambda save_url=save_url, data=data: session.post(save_url, data=data, headers=csrf,
                                                                             timeout=60))
            if answer.status_code != 200:
                samples.errors.append(f"save {answer.status_code}: {answer.text[:200]}")
                continue
            text = answer.text
            marker = 'data-version="'
            if marker in text:
                reviewer.versions[key] = int(text.split(marker, 1)[1].split('"', 1)[0])
            else:
                reviewer.versions[key] = reviewer.versions.get(key, 0) + 1
        pause()


def percentile(ordered: list[float], fraction: float) -> float:
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def report(phase: str, samples: Samples) -> dict[str, dict[str, float]]:
    figures = {}
    for name, times in samples.times.items():
        ordered = sorted(times)
        figures[name] = {"n": len(ordered), "p50": statistics.median(ordered), "p95": percentile(ordered, 0.95)}
    base = figures["health check"]
    print(f"\n{phase}: {'request':<14} {'n':>5} {'p50 ms':>8} {'p95 ms':>8} {'p50/base':>9} {'p95/base':>9}  target")
    for name, f in figures.items():
        target = TARGETS.get(name)
        verdict = (f"p95 < {target:.0f} ms: {'met' if f['p95'] < target else 'MISSED'}" if target
                   else "(baseline)")
        print(f"{'':{len(phase) + 2}}{name:<14} {f['n']:>5} {f['p50']:8.1f} {f['p95']:8.1f} "
              f"{f['p50'] / base['p50']:8.1f}x {f['p95'] / base['p95']:8.1f}x  {verdict}")
    if samples.errors:
        print(f"{'':{len(phase) + 2}}{len(samples.errors)} request(s) failed, e.g. {samples.errors[:3]}")
    return figures


def run_phase(reviewers: list[Reviewer], sessions: list[requests.Session], base: str, *, cycles: int,
              saves_per_turn: int, think: float, seed: int) -> Samples:
    samples = Samples()
    cursors = [dict.fromkeys(r.positions, 0) for r in reviewers]
    threads = [threading.Thread(target=reviewer_loop, args=(r, s, base), kwargs={
        "cycles": cycles, "saves_per_turn": saves_per_turn, "think": think, "samples": samples,
        "rng": random.Random(seed + i), "cursor": cursors[i]}) for i, (r, s) in enumerate(zip(reviewers, sessions,
                                                                                              strict=True))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2 * (os.cpu_count() or 1) + 1,
                        help="gunicorn sync workers (default 2 x cores + 1)")
    parser.add_argument("--cycles", type=int, default=15, help="turn pages per reviewer and phase (default 15)")
    parser.add_argument("--saves", type=int, default=5, help="autosaves after each turn page (default 5)")
    parser.add_argument("--think", type=float, default=0.3,
                        help="paced phase: mean seconds a reviewer waits between requests (default 0.3)")
    parser.add_argument("--warmup", type=int, default=2, help="unmeasured cycles per reviewer first (default 2)")
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        sys.exit("concurrent_reviewers: run under scripts/testenv.py (PostgreSQL, throwaway)")
    print(f"load average at start: {loadavg()} ({os.cpu_count()} cores)")
    reviewers = setup()

    port = free_port()
    env = dict(os.environ, DEBUG="0", PYTHONUNBUFFERED="1")
    server = subprocess.Popen(
        [str(ROOT / ".venv/bin/gunicorn"), "cab.wsgi:application", "--bind", f"127.0.0.1:{port}",
         "--workers", str(args.workers), "--timeout", "120", "--log-level", "warning"],
        cwd=ROOT, env=env,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if requests.get(f"{base}/healthz", timeout=10).status_code == 200:
                    break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit("gunicorn did not start")
            time.sleep(0.2)
        sessions = []
        for reviewer in reviewers:
            session = requests.Session()
            sign_in(session, base, reviewer.username)
            sessions.append(session)
        page = sessions[0].get(f"{base}/rounds/{reviewers[0].round_id}/turns/{reviewers[0].positions[0]}/",
                               timeout=60)
        print(f"gunicorn: {args.workers} sync workers; turn page {len(page.content):,} bytes "
              f"({page.headers.get('Content-Encoding', 'identity')} on the wire)")
        run_phase(reviewers, sessions, base, cycles=args.warmup, saves_per_turn=args.saves, think=0, seed=0)
        print(f"load average before the phases: {loadavg()}")
        paced = run_phase(reviewers, sessions, base, cycles=args.cycles, saves_per_turn=args.saves,
                          think=args.think, seed=100)
        saturated = run_phase(reviewers, sessions, base, cycles=args.cycles, saves_per_turn=args.saves, think=0,
                              seed=200)
        print(f"load average at the end: {loadavg()}")
        report(f"paced (think 0-{2 * args.think:g} s)", paced)
        report("saturated (no think time)", saturated)
        return 1 if paced.errors or saturated.errors else 0
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main())
