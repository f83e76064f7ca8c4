#!/usr/bin/env python
"""In-process cost of the turn view (5 responses, 80 codings) and of an autosave of a span attribute: CPU and wall
milliseconds (p50/p95) and SQL statements per request, next to the health check through the same middleware as
the baseline of the same run; ``--profile`` adds where the time goes (cProfile, the heaviest functions).

``--cpu-ratio N`` measures issue 34's web-CPU targets in-process instead: N rounds of a health check, a turn view
and an autosave, one after the other, each sent as a browser sends it (session and CSRF cookies, the CSRF header on
the save, ``Accept-Encoding: gzip``) straight to the product's WSGI application (``cab.wsgi``: the request signals,
persistent connections and their health checks as under gunicorn, no test client), and the process CPU time
(``time.process_time``) each kind took in all, per request and against the health check's: target at most 3x for
the turn view and 2x for the autosave. Being process CPU time interleaved in one loop, the ratios hold on a busy
machine far better than wall times do; run it a few times and take the median.

Run against PostgreSQL, e.g. with throwaway servers:
    .venv/bin/python scripts/testenv.py -- .venv/bin/python perf/turn_view.py [--runs 100] [--profile 40]
    .venv/bin/python scripts/testenv.py -- .venv/bin/python perf/turn_view.py --cpu-ratio 2000
It migrates and fills the database it is given: never point it at a database you care about. The network,
gunicorn and concurrency are ``concurrent_reviewers.py``'s business; this one is for finding where a request's
own time goes.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import os
import pstats
import re
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cab.settings")
os.environ.setdefault("DEBUG", "0")
os.environ.setdefault("LOG_LEVEL", "WARNING")
# Persistent connections, as every deployment has them (the settings' default): the test environment's 0 would make
# every request of --cpu-ratio open a new PostgreSQL connection, which is no production cost.
os.environ["DB_CONN_MAX_AGE"] = "60"

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client, RequestFactory  # noqa: E402
from django.urls import reverse  # noqa: E402
from django.utils.http import urlencode  # noqa: E402

CPU_WITHIN = {"turn view": 3.0, "autosave": 2.0}  # issue 34: web CPU per request, times a health check's


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


class Browser:
    """Requests as the reviewer's browser sends them, made ready outside the measured time and handed straight to
    the product's WSGI application (what a gunicorn worker calls): the request signals run, so the database
    connection is kept and health-checked between requests as in production."""

    def __init__(self, cookies: dict[str, str]):
        from cab.wsgi import application

        self.application = application
        self.cookie = "; ".join(f"{name}={value}" for name, value in cookies.items())
        self.csrf = cookies.get("csrftoken", "")
        self.factory = RequestFactory()

    def environ(self, method: str, path: str, data: dict | None = None) -> dict:
        headers = {"HTTP_COOKIE": self.cookie, "HTTP_ACCEPT_ENCODING": "gzip, deflate, br",
                   "HTTP_ACCEPT": "text/html,application/xhtml+xml"}
        if method == "POST":
            headers |= {"HTTP_X_CSRFTOKEN": self.csrf, "HTTP_HX_REQUEST": "true"}
            # URL-encoded, as static/js/turn/save.js sends an autosave
            return self.factory.post(path, urlencode(data or {}), "application/x-www-form-urlencoded",
                                     **headers).environ
        return self.factory.get(path, **headers).environ

    def send(self, environ: dict) -> tuple[int, bytes]:
        answer: list[str] = []
        body = self.application(environ, lambda status, headers, exc_info=None: answer.append(status))
        try:
            content = b"".join(body)
        finally:
            if hasattr(body, "close"):
                body.close()
        return int(answer[0].split()[0]), content


KINDS = ("health check", "turn view", "autosave")


def cpu_ratio(send: Callable[[str], float], rounds: int) -> None:
    """Issue 34's web-CPU figures in-process: process CPU per request of each kind, interleaved in one loop."""
    for _ in range(20):  # warm: compiled templates, the schema kept per process, the session's first use
        for kind in KINDS:
            send(kind)
    gc.collect()
    gc.freeze()  # as gunicorn.conf.py does once a worker has warmed up
    spent: dict[str, list[float]] = {kind: [] for kind in KINDS}
    for _ in range(rounds):
        for kind in KINDS:
            spent[kind].append(send(kind))
    base = sum(spent["health check"]) / rounds
    print(f"web CPU per request, in-process, {rounds} rounds of the three interleaved (process CPU time; load "
          f"average {' '.join(Path('/proc/loadavg').read_text().split()[:3])})")
    print(f"{'request':<14} {'mean ms':>8} {'p50 ms':>7} {'/ health':>9} {'target':>7}")
    for kind in KINDS:
        mean = sum(spent[kind]) / rounds
        target = f"<= {CPU_WITHIN[kind]:.0f}x" if kind in CPU_WITHIN else ""
        print(f"{kind:<14} {mean * 1000:8.3f} {statistics.median(spent[kind]) * 1000:7.3f} "
              f"{mean / base:8.2f}x {target:>7}")


def cpu_profile(send: Callable[[str], float], lines: int) -> None:
    """Where each kind's CPU goes: cProfile timed by process CPU, 200 requests of each, by own and by cumulative
    time (``TURN_VIEW_PROFILE_DIR``: also the raw profiles, for pstats)."""
    for kind in KINDS:
        profiler = cProfile.Profile(time.process_time)
        profiler.enable()
        for _ in range(200):
            send(kind)
        profiler.disable()
        if os.environ.get("TURN_VIEW_PROFILE_DIR"):
            profiler.dump_stats(Path(os.environ["TURN_VIEW_PROFILE_DIR"]) / f"{kind.replace(' ', '-')}.prof")
        for order in ("tottime", "cumulative"):
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).sort_stats(order).print_stats(lines)
            print(f"\n--- {kind}: 200 requests, process CPU, by {order} ---\n{out.getvalue()}")


def client_figures(calls: dict[str, Callable[[], None]], runs: int, profile: int) -> None:
    """CPU and wall time and statements per request through Django's test client (``--runs``, ``--profile``)."""
    figures = {name: measure(call, runs) for name, call in calls.items()}
    base = figures["health check (baseline)"]
    print(f"{'request':<28} {'SQL':>4} {'CPU p50':>8} {'CPU p95':>8} {'wall p50':>9} {'wall p95':>9} "
          f"{'CPU / base':>11}")
    for name, f in figures.items():
        print(f"{name:<28} {f['queries']:>4} {f['cpu_p50']:8.2f} {f['cpu_p95']:8.2f} {f['wall_p50']:9.2f} "
              f"{f['wall_p95']:9.2f} {f['cpu_p50'] / base['cpu_p50']:10.1f}x")
    if profile:
        for name, call in list(calls.items())[1:]:
            profiler = cProfile.Profile(time.process_time)
            profiler.enable()
            for _ in range(50):
                call()
            profiler.disable()
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(profile)
            print(f"\n--- {name}: 50 requests, heaviest functions by own time (process CPU) ---\n{out.getvalue()}")


@dataclass
class Scene:
    """The demo reviewer's first calibration item, every attribute judged, signed in."""

    client: Client
    turn_url: str
    save_url: str
    save_data: Callable[[], dict]  # the next autosave's fields (the score toggles, against the last version)
    saved: Callable[[bytes], None]  # reads the version an autosave answered


def scene() -> Scene:
    from django.contrib.auth import get_user_model

    from annotation import selectors, services
    from annotation.models import Assignment, AttributeDefinition, Judgment, Round, Study
    from annotation.services import SpanInput
    from benchmark.models import ModelResponse

    call_command("migrate", verbosity=0)
    call_command("load_demo", "--quiet")
    with open(os.devnull, "w") as quiet:
        if not Study.objects.filter(slug="bench-volume").exists():  # a database kept from an earlier run
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
    # The page names a response by this reviewer's handle, never by its id.
    span_attribute = next(a for a in attributes if a.unit == AttributeDefinition.Unit.RESPONSE
                          and a.subcategories.all())
    handle = selectors.response_handle(study=round_.study, coder_id=reviewer.pk, turn_id=assignment.turn_id,
                                       response_id=responses[0].pk)
    spans = json.dumps([{"start": 0, "end": 6, "subcategory": span_attribute.subcategories.all()[0].slug}])
    version = Judgment.objects.get(round=round_, coder=reviewer, attribute=span_attribute, response=responses[0],
                                   is_gold=False).version
    state = {"score": 1, "version": version}

    def save_data() -> dict:
        state["score"] = 1 - state["score"]
        return {"form_id": f"r{handle}-{span_attribute.code}", "attribute": span_attribute.code, "response": handle,
                "score": state["score"], "spans": spans, "instance_count": "1", "version": state["version"]}

    def saved(content: bytes) -> None:
        found = re.search(rb'data-version="(\d+)"', content)
        assert found is not None, content
        state["version"] = int(found.group(1))

    return Scene(client, reverse("turn", args=[round_.pk, 1]), reverse("judgment-save", args=[round_.pk, 1]),
                 save_data, saved)


def browser_sender(at: Scene) -> Callable[[str], float]:
    """One request of a kind (``KINDS``) as the browser sends it; answers the process CPU it took."""
    assert at.client.get(at.turn_url).status_code == 200  # the page sets the CSRF cookie, as for a browser
    browser = Browser({name: morsel.value for name, morsel in at.client.cookies.items()})
    urls = {"health check": "/healthz", "turn view": at.turn_url, "autosave": at.save_url}

    def send(kind: str) -> float:
        environ = (browser.environ("POST", urls[kind], at.save_data()) if kind == "autosave"
                   else browser.environ("GET", urls[kind]))
        start = time.process_time()
        status, content = browser.send(environ)
        spent = time.process_time() - start
        assert status == 200, (kind, status, content[:300])
        if kind == "autosave":
            at.saved(content)
        return spent

    return send


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100, help="requests per figure (default 100)")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="also profile the requests and print the N heaviest functions")
    parser.add_argument("--cpu-ratio", type=int, default=0, metavar="ROUNDS",
                        help="only issue 34's web-CPU ratios: ROUNDS of a health check, a turn view and an autosave "
                             "sent to the WSGI application as a browser sends them (e.g. 2000)")
    args = parser.parse_args()
    print(f"database: {connection.vendor}; load average {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    at = scene()
    if args.cpu_ratio:
        send = browser_sender(at)
        cpu_ratio(send, args.cpu_ratio)
        if args.profile:
            cpu_profile(send, args.profile)
        return

    def save() -> None:
        answer = at.client.post(at.save_url, at.save_data(), headers={"HX-Request": "true"})
        assert answer.status_code == 200, answer.content
        at.saved(answer.content)

    def render() -> None:
        assert at.client.get(at.turn_url).status_code == 200

    def health() -> None:
        assert at.client.get("/healthz").status_code == 200

    client_figures({"health check (baseline)": health, "turn view, 5 responses": render,
                    "autosave, a span attribute": save}, args.runs, args.profile)


if __name__ == "__main__":
    main()
