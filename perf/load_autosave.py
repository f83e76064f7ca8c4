#!/usr/bin/env python
"""Many reviewers autosaving at once, with double submits and stale edits: no judgment may be lost or duplicated.

    .venv/bin/python perf/load_autosave.py            # 50 reviewers for 60 s
    .venv/bin/python perf/load_autosave.py --short    # 5 reviewers for 5 s (CI: tests/integration)

What it does:
1. starts a throwaway PostgreSQL and Redis (scripts/testenv.py; the DATABASE_URL of the calling shell is never
   used), migrates, loads the demo study and adds the reviewers to its open calibration round (two turns each,
   their every attribute and response an editable unit), each with a signed-in session made there (hashing 50
   passwords at the sign-in form is not what is measured);
2. serves the project with gunicorn (sync workers, DEBUG off) on a free loopback port; every reviewer has its
   own HTTP session with its session and CSRF cookies;
3. each reviewer is a thread that autosaves for the given seconds, as the turn page does (the response's handle,
   the version its page last saw, the CSRF header), pausing 0-2 x ``--think`` seconds between saves: a new score,
   spans and count for a random unit; a share of the changes is posted twice at once (a double submit: one must
   save and the other be refused as stale), and a share is an edit from a stale page (an older version: it must
   be refused, 409);
4. then compares what every reviewer believes it saved (value, spans and version of the last save answered 200)
   with the database, and prints autosave p50/p95, the answers, and the counts of lost judgments (believed saved,
   but different or missing in the database, or a stale edit that was saved over a newer value) and duplicated
   ones (two rows for one unit, a span stored twice, a row nobody saved, or a double submit saved twice).

With ``--fault`` one dependency fails in the middle of the run (issue 31): ``postgres`` (the server stopped for
``--fault-seconds``, then started on the same data), ``redis`` (killed, and started again empty), ``web-worker`` (a
gunicorn worker SIGKILLed, its requests cut off). A save answered 503 or cut off is not acknowledged: the reviewer
keeps the change and sends it again until it gets an answer, as the turn page does; a 409 for a resent change means
the first copy was stored (only that reviewer writes the unit), and the reviewer takes the version the server names.
``--faults`` runs every phase (none, then each fault) with its own servers and prints one table: acknowledged saves,
stored as acknowledged, lost, duplicated, 503s, cut-off requests and other 5xx per phase.

Exits 1 when anything was lost or duplicated, or a request failed (a 500, or an answer a correct server never
gives; 503 and cut-off requests only count as failures outside a fault); 0 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cab.settings")
os.environ.setdefault("LOG_LEVEL", "WARNING")

INNER = "LOAD_AUTOSAVE_THROWAWAY_DB"  # set when this process runs under scripts/testenv.py, started by itself
_STATE = re.compile(r'data-state="(\w+)"')
_VERSION = re.compile(r'data-version="(\d+)"')


@dataclass(frozen=True)
class Unit:
    """One editable form of a reviewer's turn page: an attribute of the turn or of one response."""

    position: int
    turn_id: int
    response_id: int | None
    handle: str
    code: str
    scale: tuple[int, ...]
    subcategories: tuple[str, ...]
    has_count: bool


@dataclass(frozen=True)
class Saved:
    score: int
    count: int | None
    spans: tuple[tuple[int, int, str], ...]
    version: int


@dataclass
class Reviewer:
    username: str
    session_id: str
    units: list[Unit]
    believed: dict[Unit, Saved] = field(default_factory=dict)
    pending: dict[Unit, tuple] = field(default_factory=dict)  # a change sent but not yet answered (503, cut off)


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    answers: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    stored_as_acknowledged: int = 0  # units whose row holds exactly what their last acknowledged save sent
    acknowledged: int = 0  # saves answered 200 "saved" (or a resent change answered 409: its first copy was saved)
    allowed: frozenset[str] = frozenset()  # answers that are no failure in this phase ("503", "cut off")
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, what: str) -> None:
        with self.lock:
            self.answers[what] = self.answers.get(what, 0) + 1

    def note(self, bucket: str, what: str) -> None:
        with self.lock:
            getattr(self, bucket).append(what)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- set-up (in this process, through the services) ----------------------------------------------------------


def setup(count: int) -> tuple[int, list[Reviewer]]:
    """The demo study's calibration-1 with ``count`` more reviewers, each with both of its turns queued."""
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.test import Client

    from access import roles
    from access.services import user_ensure
    from annotation import selectors, services
    from annotation.models import Assignment, AttributeDefinition, Round, RoundItem

    started = time.monotonic()
    call_command("migrate", verbosity=0)
    migrated = time.monotonic()
    call_command("load_demo", "--quiet")
    print(f"set-up: migrate {migrated - started:.0f} s, demo study {time.monotonic() - migrated:.0f} s", flush=True)
    round_ = Round.objects.select_related("study__schema").get(study__slug="demo", kind="calibration", number=1)
    turns = [item.turn for item in RoundItem.objects.filter(round=round_).select_related("turn").order_by("position")]
    attributes = list(AttributeDefinition.objects.filter(schema=round_.study.schema)
                      .exclude(unit=AttributeDefinition.Unit.CONVERSATION)
                      .prefetch_related("subcategories").order_by("position"))
    reviewers = []
    for number in range(1, count + 1):
        user = user_ensure(username=f"load-r{number:02d}", role=roles.REVIEWER)
        services.study_member_add(study=round_.study, user=user, role="reviewer", by=None)
        services.assignments_ensure(round=round_, coder=user, turns=turns, by=None)
        units = []
        for assignment in Assignment.objects.filter(round=round_, coder=user).select_related("turn"):
            responses = list(assignment.turn.responses.order_by("pk"))
            for attribute in attributes:
                for response in [None] if attribute.unit == AttributeDefinition.Unit.TURN else responses:
                    handle = (selectors.response_handle(study=round_.study, coder_id=user.pk,
                                                        turn_id=assignment.turn_id, response_id=response.pk)
                              if response else "")
                    units.append(Unit(
                        position=assignment.position, turn_id=assignment.turn_id,
                        response_id=response.pk if response else None, handle=handle, code=attribute.code,
                        scale=tuple(attribute.scale),
                        subcategories=tuple(s.slug for s in attribute.subcategories.all()),
                        has_count=attribute.has_instance_count))
        # A signed-in session made here: hashing 50 passwords at the sign-in form is not what is measured.
        client = Client()
        client.force_login(user)
        reviewers.append(Reviewer(user.get_username(), client.cookies[settings.SESSION_COOKIE_NAME].value, units))
    return round_.pk, reviewers


# --- the reviewers ---------------------------------------------------------------------------------------------


def signed_in(base: str, reviewer: Reviewer) -> requests.Session:
    """An HTTP session with the reviewer's session cookie and a CSRF cookie, as a browser has them."""
    from django.conf import settings

    session = requests.Session()
    session.cookies.set(settings.SESSION_COOKIE_NAME, reviewer.session_id, domain="127.0.0.1", path="/")
    session.get(f"{base}/login/", timeout=60).raise_for_status()  # sets the CSRF cookie
    if "csrftoken" not in session.cookies:
        raise SystemExit(f"{reviewer.username}: no CSRF cookie")
    return session


def a_change(unit: Unit, rng: random.Random) -> tuple[int, int | None, tuple[tuple[int, int, str], ...]]:
    """A new value for the unit: a score, and where the attribute has them spans (0-2, distinct) and a count."""
    spans: set[tuple[int, int, str]] = set()
    if unit.subcategories and unit.response_id is not None:
        for _ in range(rng.randint(0, 2)):
            start = rng.randint(0, 30)
            spans.add((start, start + rng.randint(1, 20), rng.choice(unit.subcategories)))
    return rng.choice(unit.scale), (len(spans) if unit.has_count else None), tuple(sorted(spans))


def body_of(unit: Unit, value: tuple, version: int) -> dict[str, str]:
    score, count, spans = value
    body = {"form_id": f"{unit.code}-{unit.handle or 'turn'}", "attribute": unit.code, "response": unit.handle,
            "score": str(score), "version": str(version)}
    if count is not None:
        body["instance_count"] = str(count)
    if unit.subcategories:
        body["spans"] = json.dumps([{"start": s, "end": e, "subcategory": c} for s, e, c in spans])
    return body


def post(session: requests.Session, url: str, body: dict, headers: dict, tally: Tally) -> tuple[str, int | None]:
    """One autosave: (its state, the version it answered with). The state is the page's ("saved", "stale"), or
    "unavailable" (503) or "cut off" (no answer at all) where the phase's fault allows them."""
    started = time.perf_counter()
    try:
        answer = session.post(url, data=body, headers=headers, timeout=120)
        text = answer.text
    except requests.RequestException as error:
        tally.count("cut off")
        if "cut off" not in tally.allowed:
            tally.note("errors", f"request failed: {error}")
        return "cut off", None
    elapsed = (time.perf_counter() - started) * 1000
    with tally.lock:
        tally.latencies.append(elapsed)
    state = _STATE.search(text)
    version = _VERSION.search(text)
    label = f"{answer.status_code} {state[1] if state else '?'}"
    tally.count(label)
    if answer.status_code == 503 and "503" in tally.allowed:
        return "unavailable", None
    if answer.status_code >= 500 or (answer.status_code, state[1] if state else None) not in {
            (200, "saved"), (409, "stale")}:
        tally.note("errors", f"{label}: {text[:200]}")
    return (state[1] if state else "failed"), (int(version[1]) if version else None)


RESEND_PAUSE_SECONDS = 0.5
RESEND_FOR_SECONDS = 60.0  # how long a reviewer keeps resending an unanswered change after the run's end


def save_until_answered(reviewer: Reviewer, session: requests.Session, url: str, unit: Unit, value: tuple,
                        version: int, headers: dict, tally: Tally, *, until: float, resent: bool = False) -> None:
    """Send a change, and again after a pause while it gets no answer (503, cut off), as the turn page does. A 409
    for a change sent before means its earlier copy was stored (only this reviewer writes the unit): the reviewer
    takes the version the server names. ``resent``: a copy of this change was sent already without an answer."""
    while True:
        state, answered = post(session, url, body_of(unit, value, version), headers, tally)
        if state == "saved" or (state == "stale" and resent and answered is not None):
            reviewer.believed[unit] = Saved(*value, version=answered or 0)
            reviewer.pending.pop(unit, None)
            with tally.lock:
                tally.acknowledged += 1
            return
        if state not in ("unavailable", "cut off"):
            return
        reviewer.pending[unit] = value
        if time.monotonic() > until + RESEND_FOR_SECONDS:
            return  # compare() accepts the stored value being this change or the one before
        resent = True
        time.sleep(RESEND_PAUSE_SECONDS)


def reviewer_loop(reviewer: Reviewer, sessions: tuple[requests.Session, requests.Session], base: str,
                  round_id: int, *, until: float, think: float, double_share: float, stale_share: float,
                  rng: random.Random, tally: Tally) -> None:
    session, twin = sessions  # the twin sends the second copy of a double submit, with the same cookies
    headers = {"X-CSRFToken": session.cookies["csrftoken"], "HX-Request": "true", "Referer": base + "/"}
    with ThreadPoolExecutor(max_workers=2) as pair:
        while time.monotonic() < until:
            time.sleep(rng.uniform(0, 2 * think))
            roll = rng.random()
            stale = roll < stale_share and bool(reviewer.believed)
            unit = rng.choice(list(reviewer.believed) if stale else reviewer.units)
            url = f"{base}/rounds/{round_id}/turns/{unit.position}/save"
            current = reviewer.believed.get(unit)
            value = a_change(unit, rng)
            if stale and current is not None:
                # An edit from a page that was loaded before the last save (another tab): must be refused.
                tally.count("stale edits sent")
                state, version = post(session, url, body_of(unit, value, current.version - 1), headers, tally)
                if state == "saved":
                    tally.note("lost", f"{reviewer.username} {unit.code}: a stale edit was saved over version "
                                       f"{current.version}")
                    reviewer.believed[unit] = Saved(*value, version=version or 0)
            elif roll < stale_share + double_share:
                tally.count("double submits sent")
                body = body_of(unit, value, current.version if current else 0)
                futures = [pair.submit(post, s, url, body, headers, tally) for s in (session, twin)]
                outcomes = [f.result() for f in futures]
                saved = [version for state, version in outcomes if state == "saved"]
                if len(saved) > 1:
                    tally.note("duplicated", f"{reviewer.username} {unit.code}: both copies of a double submit "
                                             f"were saved (versions {saved})")
                if saved:
                    reviewer.believed[unit] = Saved(*value, version=max(v or 0 for v in saved))
                    reviewer.pending.pop(unit, None)
                    with tally.lock:
                        tally.acknowledged += 1
                elif any(state in ("unavailable", "cut off") for state, _ in outcomes):
                    save_until_answered(reviewer, session, url, unit, value, current.version if current else 0,
                                        headers, tally, until=until, resent=True)
                elif all(state == "stale" for state, _ in outcomes):
                    tally.note("errors", f"{reviewer.username} {unit.code}: neither copy of a double submit saved")
            else:
                save_until_answered(reviewer, session, url, unit, value, current.version if current else 0,
                                    headers, tally, until=until)


# --- the comparison with the database ---------------------------------------------------------------------------


def compare(round_id: int, reviewers: list[Reviewer], tally: Tally) -> None:
    from django.db.models import Count

    from annotation.models import Judgment, Span

    rows = list(Judgment.objects.filter(round_id=round_id, is_gold=False,
                                        coder__username__in=[r.username for r in reviewers])
                .values_list("pk", "coder__username", "turn_id", "response_id", "attribute__code", "score",
                             "instance_count", "version"))
    spans: dict[int, list[tuple[int, int, str]]] = {}
    for judgment_id, start, end, slug in Span.objects.filter(judgment_id__in=[r[0] for r in rows]).values_list(
            "judgment_id", "start", "end", "subcategory__slug"):
        spans.setdefault(judgment_id, []).append((start, end, slug))
    stored: dict[tuple, list[tuple]] = {}
    for pk, username, turn_id, response_id, code, score, count, version in rows:
        stored.setdefault((username, turn_id, response_id, code), []).append(
            (score, count, tuple(sorted(spans.get(pk, []))), version, pk))
    believed = {(r.username, u.turn_id, u.response_id, u.code): saved
                for r in reviewers for u, saved in r.believed.items()}
    # A change whose resends never got an answer may be stored or not: either it or the value before it is right.
    unanswered = {(r.username, u.turn_id, u.response_id, u.code): value
                  for r in reviewers for u, value in r.pending.items()}
    for key, copies in stored.items():
        if len(copies) > 1:
            tally.note("duplicated", f"{key}: {len(copies)} rows")
        if key not in believed and (key not in unanswered or unanswered[key] != copies[0][:3]):
            tally.note("duplicated", f"{key}: a row no reviewer saved")
    for key, saved in believed.items():
        copies = stored.get(key)
        if not copies:
            tally.note("lost", f"{key}: saved (version {saved.version}) but not in the database")
            continue
        score, count, stored_spans, version, _ = copies[0]
        if (score, count, stored_spans, version) == (saved.score, saved.count, saved.spans, saved.version):
            tally.stored_as_acknowledged += 1
        elif unanswered.get(key) != (score, count, stored_spans) or version != saved.version + 1:
            tally.note("lost", f"{key}: believed {saved}, stored {(score, count, stored_spans, version)}")
    doubled = (Span.objects.filter(judgment_id__in=[r[0] for r in rows])
               .values("judgment_id", "start", "end", "subcategory_id").annotate(n=Count("id")).filter(n__gt=1))
    for row in doubled:
        tally.note("duplicated", f"judgment {row['judgment_id']}: span {row} stored twice")


# --- faults (issue 31) -------------------------------------------------------------------------------------------

FAULTS = ("none", "postgres", "redis", "web-worker")
# What is no failure in each phase: a stopped PostgreSQL answers 503; a killed worker cuts its requests off; with Redis
# down nothing a reviewer does may fail at all.
ALLOWED = {"none": frozenset(), "postgres": frozenset({"503"}), "redis": frozenset(),
           "web-worker": frozenset({"cut off"})}


def _redis_answers(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
        sock.sendall(b"PING\r\n")
        return sock.recv(16).startswith(b"+PONG")
    return False


def inject(fault: str, *, seconds: float, server: subprocess.Popen, started: list[subprocess.Popen],
           said: list[str]) -> None:
    """Make ``fault`` happen now and last ``seconds``; what it started again goes into ``started`` (stopped at the
    end of the run), what it did into ``said``."""
    if fault == "postgres":
        from cab.embedded_db.server import Server

        root = Path(os.environ["TESTENV_PG_ROOT"])
        port = urllib.parse.urlsplit(os.environ["DATABASE_URL"]).port
        version = int((root / "data" / "PG_VERSION").read_text().strip())
        Server(root, version=version, tcp_port=port).stop()
        said.append(f"PostgreSQL stopped for {seconds:g} s")
        time.sleep(seconds)
        Server(root, version=version, tcp_port=port, settings=("max_connections=200",)).attach()
        said.append("PostgreSQL started again on the same data")
    elif fault == "redis":
        port = urllib.parse.urlsplit(os.environ["REDIS_URL"]).port or 6379
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(b"SHUTDOWN NOSAVE\r\n")
            sock.recv(16)
        said.append(f"Redis shut down for {seconds:g} s")
        time.sleep(seconds)
        folder = tempfile.mkdtemp(prefix="cab-redis-again-")
        started.append(subprocess.Popen(  # noqa: S603 - redis-server, fixed arguments
            [shutil.which("redis-server") or "redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save",
             "", "--appendonly", "no", "--dir", folder], stdout=subprocess.DEVNULL))
        deadline = time.monotonic() + 20
        while not _redis_answers(port) and time.monotonic() < deadline:
            time.sleep(0.1)
        said.append("Redis started again, empty")
    elif fault == "web-worker":
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            children = Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()
            if children:
                os.kill(int(random.choice(children)), signal.SIGKILL)  # noqa: S311 - which worker, not a secret
                said.append("a gunicorn worker SIGKILLed")
            time.sleep(2)


# --- main ------------------------------------------------------------------------------------------------------


def percentile(ordered: list[float], fraction: float) -> float:
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def run(args: argparse.Namespace) -> int:
    started = time.monotonic()
    round_id, reviewers = setup(args.reviewers)
    prepared = time.monotonic()
    port = free_port()
    server_log = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 - every 409 is logged: shown only on failure
    server = subprocess.Popen(  # noqa: S603 - our own gunicorn, fixed arguments
        [str(ROOT / ".venv/bin/gunicorn"), args.app, "--bind", f"127.0.0.1:{port}",
         "--workers", str(args.workers), "--timeout", "120", "--log-level", "warning"],
        cwd=ROOT, env=dict(os.environ, DEBUG="0", PYTHONUNBUFFERED="1"), stdout=server_log, stderr=server_log,
    )
    tally = Tally(allowed=ALLOWED[args.fault])
    restarted: list[subprocess.Popen] = []
    said: list[str] = []
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
                raise SystemExit("load_autosave: gunicorn did not start")
            time.sleep(0.2)
        print(f"set-up: {len(reviewers)} reviewers {prepared - started:.0f} s, gunicorn up "
              f"{time.monotonic() - prepared:.0f} s", flush=True)
        with ThreadPoolExecutor(max_workers=8) as signing:
            sessions = list(signing.map(lambda r: signed_in(base, r), reviewers))
        pairs = []
        for session in sessions:
            twin = requests.Session()
            twin.cookies.update(session.cookies)
            pairs.append((session, twin))
        units = len(reviewers[0].units)
        print(f"load_autosave: {len(reviewers)} reviewers x {units} units, {args.seconds:g} s, gunicorn with "
              f"{args.workers} sync workers, think 0-{2 * args.think:g} s, double submits {args.double:.0%}, "
              f"stale edits {args.stale:.0%} (set-up {time.monotonic() - started:.0f} s)", flush=True)
        until = time.monotonic() + args.seconds
        threads = [threading.Thread(target=reviewer_loop, args=(r, pair, base, round_id), kwargs={
            "until": until, "think": args.think, "double_share": args.double, "stale_share": args.stale,
            "rng": random.Random(args.seed + i), "tally": tally}) for i, (r, pair) in enumerate(zip(reviewers, pairs,
                                                                                                 strict=True))]
        for thread in threads:
            thread.start()
        if args.fault != "none":
            time.sleep(min(args.fault_after, args.seconds))
            inject(args.fault, seconds=args.fault_seconds, server=server, started=restarted, said=said)
        for thread in threads:
            thread.join()
    finally:
        server.terminate()
        server.wait(timeout=30)
        for process in restarted:
            process.terminate()
            process.wait(timeout=10)
    from django.db import connections

    connections.close_all()  # a PostgreSQL restarted meanwhile ended this process's connection
    compare(round_id, reviewers, tally)
    return report(args, tally, reviewers, said, server_log)


def report(args: argparse.Namespace, tally: Tally, reviewers: list[Reviewer], said: list[str],
           server_log: IO[str]) -> int:
    ordered = sorted(tally.latencies)
    believed = sum(len(r.believed) for r in reviewers)
    p50, p95 = (statistics.median(ordered), percentile(ordered, 0.95)) if ordered else (0.0, 0.0)
    print(f"autosave requests: {len(ordered)} in {args.seconds:g} s ({len(ordered) / args.seconds:.1f}/s); "
          f"p50 {p50:.1f} ms, p95 {p95:.1f} ms")
    print("answers: " + ", ".join(f"{what}: {n}" for what, n in sorted(tally.answers.items())))
    print(f"judgments the reviewers believe saved: {believed}")
    for bucket in ("errors", "lost", "duplicated"):
        for line in getattr(tally, bucket)[:10]:
            print(f"  {bucket}: {line}")
    if tally.errors:
        server_log.seek(0)
        print("server log (last lines):\n" + "".join(server_log.readlines()[-20:]))
    if said:
        print("fault: " + "; ".join(dict.fromkeys(f"{what} (x{said.count(what)})" if said.count(what) > 1 else what
                                                  for what in said)))
    failures = sum(n for what, n in tally.answers.items() if what.startswith("5") and not what.startswith("503"))
    print(f"phase {args.fault}: acknowledged saves {tally.acknowledged}, units saved {believed}, stored as "
          f"acknowledged {tally.stored_as_acknowledged}, lost {len(tally.lost)}, duplicated {len(tally.duplicated)}, "
          f"answered 503 {tally.answers.get('503 ?', 0)}, cut off {tally.answers.get('cut off', 0)}, other 5xx "
          f"{failures}")
    print(f"failed requests: {len(tally.errors)}")
    print(f"lost judgments: {len(tally.lost)}")
    print(f"duplicated judgments: {len(tally.duplicated)}")
    return 1 if tally.lost or tally.duplicated or tally.errors or not believed else 0


def every_phase(arguments: list[str]) -> int:
    """Each phase in its own process (its own PostgreSQL, Redis and gunicorn), then the table of the phases."""
    rows, worst = [], 0
    for fault in FAULTS:
        print(f"--- phase {fault}", flush=True)
        done = subprocess.run([sys.executable, str(Path(__file__).resolve()), *arguments,  # noqa: S603
                               "--fault", fault], capture_output=True, text=True, check=False)
        print(done.stdout + done.stderr, flush=True)
        found = re.search(r"^phase \S+: (.*)$", done.stdout, re.MULTILINE)
        rows.append((fault, found[1] if found else f"no summary (exit {done.returncode})", done.returncode))
        worst = max(worst, done.returncode)
    print("\nphase       | exit | " + "what was acknowledged and what was stored")
    for fault, summary, code in rows:
        print(f"{fault:<11} | {code:>4} | {summary}")
    return worst


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reviewers", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--short", action="store_true", help="5 reviewers for 5 s (the CI version)")
    parser.add_argument("--think", type=float, default=0.25,
                        help="mean seconds a reviewer pauses between autosaves (default 0.25)")
    parser.add_argument("--double", type=float, default=0.2, help="share of changes posted twice at once")
    parser.add_argument("--stale", type=float, default=0.1, help="share of edits from a stale page")
    parser.add_argument("--workers", type=int, default=2 * (os.cpu_count() or 1) + 1,
                        help="gunicorn sync workers (default 2 x cores + 1)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--fault", choices=FAULTS, default="none",
                        help="a dependency that fails during the run (see above)")
    parser.add_argument("--fault-after", type=float, default=10.0, help="seconds into the run the fault starts")
    parser.add_argument("--fault-seconds", type=float, default=10.0, help="how long the fault lasts")
    parser.add_argument("--faults", action="store_true",
                        help="every phase (none and each fault) in turn, each on its own servers, and one table")
    parser.add_argument("--app", default="cab.wsgi:application",
                        help="the WSGI application gunicorn serves (another one checks that this script notices a "
                             "server that loses saves)")
    args = parser.parse_args()
    if args.short:
        args.reviewers, args.seconds = 5, 5.0
    if args.faults:
        return every_phase([a for a in sys.argv[1:] if a != "--faults"])
    if os.environ.get(INNER) != "1":
        # Never the caller's database: a throwaway PostgreSQL and Redis of our own, removed afterwards.
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")} | {INNER: "1"}
        return subprocess.call([sys.executable, str(ROOT / "scripts/testenv.py"), "--", sys.executable,  # noqa: S603
                                str(Path(__file__).resolve()), *sys.argv[1:]], env=env)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
