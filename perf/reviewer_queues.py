#!/usr/bin/env python
"""Reviewers working through long queues of a paper-scale study (issue 34): the turn view and the autosave with
queues of 100, 1,400 and 14,000 assignments per reviewer, 8 reviewers back to back, next to four baselines
measured by the same clients in the same run: ``/healthz`` (Django's stack and one ``SELECT 1``), a bare request
(gunicorn and one ``SELECT 1``, no Django request handling), a signed-in ``POST`` of an autosave's body that does
nothing (Django's stack with the session, the user and the CSRF check: the autosave's floor; both served only here,
``perf/bare_wsgi.py``) and a PostgreSQL ``COPY`` of the rows the turn page shows (the database alone handing over
the page's data).

    .venv/bin/python scripts/testenv.py -- .venv/bin/python perf/reviewer_queues.py \\
        --queues 100,1400,14000 [--reviewers 8] [--json]

What it does, against the (throwaway) database it is given:
1. migrates and generates a synthetic study (``generate_synthetic``) at ``--scale`` (1 = paper scale: 1,576
   conversations, 42,230 responses, about 690,000 judgments in its open main round), larger when the longest queue
   needs more turns than its main round has;
2. for each queue length S: ``--reviewers`` reviewers, and one probe, each with a queue of S assignments in the main
   round (the round's first S turns, positions 1..S, the first half completed), written in bulk
   (``bulk_create``: PostgreSQL's statement triggers keep the queue counters, migration 0017), every reviewer
   signed in with a session made here;
3. counts in-process the SQL statements of a health check, an autosave that creates a judgment, one that updates
   it and the turn view with those judgments, for the probe of each S (BEGIN/COMMIT not counted): they must not
   grow with S;
4. serves the project with gunicorn (the product's ``gunicorn.conf.py``, sync workers, 2 x cores + 1 by default,
   DEBUG off, persistent connections) plus the two floors' paths;
5. for each S, the reviewers of S, back to back (no think time), each repeating a visit: health check, bare
   request, signed-in no-op POST, COPY of its turn page's rows, its turn page (at the first item still to do),
   then ``--saves`` autosaves in the page's order: a unit's first save creates its judgment, a unit with spans is
   highlighted first (a draft, created) and scored next (an update); when every unit of the turn is scored the
   reviewer takes a second look at its first unit (an update) and completes the turn, and the next visit opens the
   next item.
   Then ``--seconds`` of each request alone from the same clients (turn view, autosave, health check, bare,
   signed-in no-op; in five slices each, taken in rotation), the web workers' CPU time per request read from /proc;
6. prints a table per S and, with ``--json``, the figures for ``scripts/bench`` (``perf/_common.py``):
   p50/p95 as ratios against the health check's, web CPU per request against the health check's, the statement
   counts of each S against those of the shortest queue. Targets (issue 34): turn view and autosave p95 within 3x
   of the health check's; web CPU per turn view within 3x, per autosave within 2x; statements flat. The signed-in
   no-op's CPU against the health check's says how much of the autosave's 2x Django's own handling of a signed-in
   POST takes before the save starts.

Latency is measured by the client (request sent to body read): loopback network, gunicorn's queueing, gzip; the
clients, gunicorn and PostgreSQL share this machine's cores. It migrates and fills the database it is given: never
point it at a database you care about.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from html import unescape
from typing import Any

import requests
from _common import (
    BARE_APP,
    BARE_PATH,
    SIGNED_IN_PATH,
    add_arguments,
    django_setup,
    figure,
    gunicorn,
    loadavg,
    percentile,
    print_figures,
    require_postgres,
    worker_pids,
)
from concurrent_reviewers import cpu_seconds

QUEUES = "100,1400,14000"
REVIEWERS = 8  # back to back: the concurrency of issue 34's targets
PAPER_CONVERSATIONS, PAPER_RESPONSES = 1576, 42230  # generate_synthetic's paper scale
TURNS_PER_CONVERSATION = 42230 / 5 / 1576  # about 5.4 at paper scale: 5 models per turn
P95_WITHIN = 3.0  # turn view and autosave p95, times the health check's
CPU_WITHIN = {"turn view": 3.0, "autosave": 2.0}  # web CPU per request, times a health check's
ALONE_TURNS = 5  # the request-alone phases, each in this many slices taken in rotation
SIGNED_IN = "signed-in no-op POST"
KINDS = ("health check", "bare SELECT 1", SIGNED_IN, "COPY of the page's rows", "turn view", "autosave", "complete")
# The signed-in floor's body: an autosave's fields, of an autosave's length.
_NO_OP_BODY = {"form_id": "rAB12CD34-XX", "attribute": "XX", "response": "AB12CD34", "score": "1", "version": "1",
               "spans": "", "instance_count": "", "coder": "12345"}

_FORM = re.compile(r'<form class="attr( has-spans)?" id="([^"]+)" data-code="([^"]+)" data-version="(\d+)"'
                   r'(?: data-score="(-?\d+)")?')
_TEMPLATE = re.compile(r'<template data-code="([^"]+)">(.*?)</template>', re.DOTALL)
_SCORE = re.compile(r'name="score" value="(-?\d+)"')
_SUB = re.compile(r'<button type="button" class="sub" data-sub="([^"]+)" data-code="([^"]+)">')
_VERSION = re.compile(r'data-version="(\d+)"')
_CODER = re.compile(r'<div class="turn-page[^"]*"[^>]* data-coder="(\d+)"')
_TURN_URL = re.compile(r"/rounds/\d+/turns/(\d+)/")
_PARTS_URL = re.compile(r'<div id="coding-parts"></div><script src="([^"]+)">')
_PARTS = re.compile(r'document.getElementById\("coding-parts"\).innerHTML = (".*");\n', re.DOTALL)


# --- set-up, in this process ------------------------------------------------------------------------------------


@dataclass
class Coder:
    """One reviewer as its browser sees it: its queue, the item it is on, that page's forms."""

    username: str
    session_id: str
    size: int  # the length of its queue
    round_id: int
    turns: list[int]  # turn ids by position - 1 (positions 1..size)
    position: int
    forms: list[dict] = field(default_factory=list)  # the open page's units, in the page's order
    second_look: bool = False  # the re-score before completing is done for the open item
    spare: int = 0  # the saves-only phase: where it goes over the page again once every unit is scored


def synthetic_size(scale: float, longest: int) -> tuple[int, int]:
    """Conversations and responses of the study: paper scale times ``scale``, and enough turns for ``longest``."""
    conversations = max(round(PAPER_CONVERSATIONS * scale), math.ceil(1.15 * longest / TURNS_PER_CONVERSATION) + 30)
    return conversations, round(PAPER_RESPONSES * conversations / PAPER_CONVERSATIONS)


def setup(sizes: list[int], reviewers: int, scale: float) -> tuple[dict[int, list[Coder]], dict[int, Coder]]:
    django_setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.utils import timezone

    from access import roles
    from access.services import user_ensure
    from annotation import services
    from annotation.models import Assignment, Round

    started = time.monotonic()
    call_command("migrate", verbosity=0)
    conversations, responses = synthetic_size(scale, max(sizes))
    with open(os.devnull, "w") as quiet:
        call_command("generate_synthetic", "--conversations", str(conversations), "--responses", str(responses),
                     "--reviewers", "7", "--seed", "34", "--slug", "bench-queues", stdout=quiet)
    generated = time.monotonic()
    main = Round.objects.select_related("study").get(study__slug="bench-queues", kind=Round.Kind.MAIN)
    turns = list(Assignment.objects.filter(round=main).order_by("position", "pk").values_list("turn_id", flat=True))
    turns = list(dict.fromkeys(turns))  # one per turn, in the round's order
    if len(turns) < max(sizes):
        raise SystemExit(f"the main round has {len(turns)} turns, fewer than a queue of {max(sizes)}")
    now = timezone.now()
    coders: dict[int, list[Coder]] = {}
    probes: dict[int, Coder] = {}
    for size in sizes:
        made = []
        for number in range(reviewers + 1):
            user = user_ensure(username=f"queue{size}-r{number}", role=roles.REVIEWER)
            services.study_member_add(study=main.study, user=user, role="reviewer", by=None)
            # Positions 1..size; the first half completed, as a reviewer halfway through the queue.
            Assignment.objects.bulk_create(
                (Assignment(round=main, coder=user, turn_id=turn, position=i + 1,
                            completed_at=now if i < size // 2 else None) for i, turn in enumerate(turns[:size])),
                batch_size=5000)
            client = Client()
            client.force_login(user)
            made.append(Coder(user.get_username(), client.cookies["sessionid"].value, size, main.pk, turns[:size],
                              position=size // 2 + 1))
        probes[size], coders[size] = made[0], made[1:]
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    print(f"setup: synthetic study of {conversations:,} conversations and {responses:,} responses "
          f"{generated - started:.0f} s; queues of {', '.join(f'{s:,}' for s in sizes)} for {reviewers} reviewers "
          f"(+1 probe) each, {Assignment.objects.filter(round=main).count():,} assignments in the main round, "
          f"{time.monotonic() - generated:.0f} s", flush=True)
    return coders, probes


# --- the turn page as its script reads it ----------------------------------------------------------------------


def parts_url(html: str) -> str:
    """The URL of the script that puts the schema's parts (its templates and palette) into the page, which the
    browser keeps from page to page."""
    found = _PARTS_URL.search(html)
    if found is None:
        raise SystemExit("the turn page names no schema parts")
    return unescape(found.group(1))


def parts_of(script: str) -> str:
    """The HTML that the parts' script puts into the page."""
    found = _PARTS.fullmatch(script)
    if found is None:
        raise SystemExit(f"not the schema parts' script: {script[:200]!r}")
    return json.loads(found.group(1))


def page_forms(html: str, parts: str) -> list[dict]:
    """The page's autosaving forms in the page's order: attribute, response handle, version, score, the page's
    account (``data-coder``, sent with every change), and what the attribute's template in the schema's ``parts``
    (``parts_of``) offers (scale values, a count field, span subcategories)."""
    templates = dict(_TEMPLATE.findall(parts))
    subcategories: dict[str, list[str]] = {}
    for slug, code in _SUB.findall(parts):
        subcategories.setdefault(code, []).append(slug)
    coder = _CODER.search(html)
    forms = []
    for spans, form_id, code, version, score in _FORM.findall(html):
        handle = form_id[1:-len(code) - 1] if form_id.startswith("r") else ""
        template = templates.get(code, "")
        forms.append({"form_id": form_id, "code": code, "response": handle, "version": int(version),
                      "coder": coder.group(1) if coder else "",
                      "score": int(score) if score else None, "scale": [int(v) for v in _SCORE.findall(template)],
                      "count": 'name="instance_count"' in template,
                      "sub": (subcategories.get(code) or [None])[0] if spans and handle else None})
    return forms


def body(form: dict, *, score: int | None, spans: bool) -> dict[str, str]:
    sub = form["sub"]
    spanned = spans and sub is not None
    return {"form_id": form["form_id"], "attribute": form["code"], "response": form["response"],
            "score": "" if score is None else str(score), "version": str(form["version"]),
            "spans": f'[{{"start": 0, "end": 6, "subcategory": "{sub}"}}]' if spanned else "",
            "instance_count": "1" if spanned and form["count"] and score is not None else "",
            "coder": form["coder"]}  # the account that opened the page, as the page names it


def next_save(coder: Coder) -> dict | None:
    """The page's next autosave: the first unit not scored, in the page's order (a spanned unit is highlighted
    first, a draft, and scored next); once every unit is scored, a second look at the first unit; then None
    (complete the turn)."""
    for form in coder.forms:
        if form["score"] is not None:
            continue
        if form["sub"] is not None and form["version"] == 0:
            return body(form, score=None, spans=True)  # the highlight: creates a draft
        positive = [v for v in form["scale"] if v > 0] or form["scale"]
        return body(form, score=positive[0] if form["sub"] else form["scale"][0], spans=True)
    if not coder.second_look and coder.forms:
        coder.second_look = True
        return rescore(coder.forms[0])
    return None


def rescore(form: dict) -> dict:
    """An update of a scored unit: its score moved to the next value its scale allows (with its spans kept)."""
    allowed = [v for v in form["scale"] if v > 0] if form["sub"] else form["scale"]
    allowed = allowed or form["scale"]
    at = allowed.index(form["score"]) if form["score"] in allowed else -1
    return body(form, score=allowed[(at + 1) % len(allowed)], spans=True)


def answered(coder: Coder, data: dict, text: str) -> None:
    """What a save's answer tells the page: the judgment's version, and the score it holds now."""
    found = _VERSION.search(text)
    form = next(f for f in coder.forms if f["form_id"] == data["form_id"])
    if found:
        form["version"] = int(found.group(1))
        form["score"] = int(data["score"]) if data["score"] else None


# --- statements, in-process ------------------------------------------------------------------------------------


def sql_statements(probe: Coder) -> dict[str, int]:
    """Statements of a health check, an autosave that creates a judgment, one that updates it and the turn view
    with those judgments, at the probe's first item still to do (BEGIN/COMMIT not counted); each kind of request is
    made once first, as by a worker that has served the study before."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client

    client = Client()
    client.force_login(get_user_model().objects.get(username=probe.username))
    turn_url = f"/rounds/{probe.round_id}/turns/{probe.position}/"
    counted: list[str] = []

    def count(execute, sql, params, many, context):
        counted.append(sql)
        return execute(sql, params, many, context)

    def measured(call) -> tuple[int, Any]:
        counted.clear()
        with connection.execute_wrapper(count):
            answer = call()
        if answer.status_code != 200:
            raise SystemExit(f"{probe.username}: {answer.status_code} {answer.content[:200]!r}")
        return len(counted), answer

    client.get("/healthz")
    figures = {"health check": measured(lambda: client.get("/healthz"))[0]}
    html = client.get(turn_url).content.decode()
    probe.forms = page_forms(html, parts_of(client.get(parts_url(html)).content.decode()))
    plain = [f for f in probe.forms if f["sub"] is None and f["version"] == 0]
    if len(plain) < 2:
        raise SystemExit(f"{probe.username}: the turn page has too few units to code ({len(probe.forms)})")

    def save(data: dict):
        answer = client.post(f"{turn_url}save", data, headers={"HX-Request": "true"})
        answered(probe, data, answer.content.decode())
        return answer

    save(body(plain[0], score=plain[0]["scale"][0], spans=False))  # the first save of the page, not measured
    figures["autosave (create)"] = measured(lambda: save(body(plain[1], score=plain[1]["scale"][0], spans=False)))[0]
    figures["autosave (update)"] = measured(lambda: save(rescore(plain[1])))[0]
    # The page as a reviewer mostly sees it: some units coded (the spans are read only when there are judgments).
    figures["turn view"] = measured(lambda: client.get(turn_url))[0]
    return figures


# --- the clients -----------------------------------------------------------------------------------------------


@dataclass
class Samples:
    times: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in KINDS})
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, name: str, ms: float) -> None:
        with self.lock:
            self.times[name].append(ms)

    def error(self, what: str) -> None:
        with self.lock:
            self.errors.append(what)


def signed_in(base: str, coder: Coder) -> requests.Session:
    from django.conf import settings

    session = requests.Session()
    session.cookies.set(settings.SESSION_COOKIE_NAME, coder.session_id, domain="127.0.0.1", path="/")
    session.get(f"{base}/login/", timeout=60).raise_for_status()  # sets the CSRF cookie
    if "csrftoken" not in session.cookies:
        raise SystemExit(f"{coder.username}: no CSRF cookie")
    return session


def timed(samples: Samples, name: str, call) -> requests.Response:
    started = time.perf_counter()
    answer = call()
    _ = answer.content  # the whole body, as a browser waits for it
    samples.add(name, (time.perf_counter() - started) * 1000)
    if answer.status_code not in (200, 204):
        samples.error(f"{name} {answer.status_code}: {answer.text[:200]}")
    return answer


_PAGE_ROWS: list[str] = []


def page_rows_sql() -> str:
    """The rows the turn page shows, in one statement: the turn's text, its responses' texts and the coder's
    judgments of the turn (of a response or of the turn itself)."""
    if not _PAGE_ROWS:
        from annotation.models import Judgment
        from benchmark.models import ModelResponse, Turn

        turn, response, judgment = (m._meta.db_table for m in (Turn, ModelResponse, Judgment))
        mine = "j.round_id = %(round)s AND j.coder_id = %(coder)s AND j.turn_id = %(turn)s"
        _PAGE_ROWS.append(
            f"SELECT t.client_text, r.text, j.attribute_id, j.score, j.version FROM {turn} t "  # noqa: S608  # nosec B608 - table names from the models, values bound
            f"JOIN {response} r ON r.turn_id = t.id "
            f"LEFT JOIN {judgment} j ON {mine} AND j.response_id = r.id WHERE t.id = %(turn)s "
            f"UNION ALL SELECT NULL, NULL, j.attribute_id, j.score, j.version FROM {judgment} j "
            f"WHERE {mine} AND j.response_id IS NULL")
    return _PAGE_ROWS[0]


def copy_page_rows(coder: Coder, coder_id: int) -> int:
    """COPY (the page's rows) TO STDOUT on this thread's own connection, read to the end as raw bytes."""
    from django.db import connection

    params = {"round": coder.round_id, "coder": coder_id, "turn": coder.turns[coder.position - 1]}
    size = 0
    with connection.cursor() as cursor, cursor.cursor.copy(f"COPY ({page_rows_sql()}) TO STDOUT", params) as copy:
        for data in copy:
            size += len(data)
    return size


@dataclass
class Browser:
    coder: Coder
    session: requests.Session
    coder_id: int
    base: str
    parts: dict[str, str] = field(default_factory=dict)  # the schema's parts by URL, as the browser keeps them

    def headers(self) -> dict[str, str]:
        return {"X-CSRFToken": self.session.cookies["csrftoken"], "HX-Request": "true", "Referer": self.base + "/"}

    def turn_url(self) -> str:
        return f"{self.base}/rounds/{self.coder.round_id}/turns/{self.coder.position}/"

    def view(self, samples: Samples) -> None:
        answer = timed(samples, "turn view", lambda: self.session.get(self.turn_url(), timeout=60))
        if answer.status_code == 200:
            url = parts_url(answer.text)
            if url not in self.parts:  # fetched once: the browser keeps them (not timed)
                self.parts[url] = parts_of(self.session.get(f"{self.base}{url}", timeout=60).text)
            self.coder.forms = page_forms(answer.text, self.parts[url])

    def save(self, samples: Samples, data: dict) -> None:
        answer = timed(samples, "autosave", lambda: self.session.post(f"{self.turn_url()}save", data=data,
                                                                      headers=self.headers(), timeout=60))
        if answer.status_code == 200:
            answered(self.coder, data, answer.text)

    def complete(self, samples: Samples) -> None:
        answer = timed(samples, "complete", lambda: self.session.post(f"{self.turn_url()}complete",
                                                                      data={"confirm": "1"}, headers=self.headers(),
                                                                      timeout=60))
        target = _TURN_URL.search(answer.headers.get("HX-Redirect", ""))
        if answer.status_code != 204 or target is None:
            samples.error(f"complete {answer.status_code}: {answer.text[:200]}")
            return
        self.coder.position = int(target.group(1))
        self.coder.forms, self.coder.second_look = [], False

    def baselines(self, samples: Samples) -> None:
        timed(samples, "health check", lambda: self.session.get(f"{self.base}/healthz", timeout=60))
        timed(samples, "bare SELECT 1", lambda: self.session.get(f"{self.base}{BARE_PATH}", timeout=60))
        self.signed_in_no_op(samples)
        started = time.perf_counter()
        copy_page_rows(self.coder, self.coder_id)
        samples.add("COPY of the page's rows", (time.perf_counter() - started) * 1000)

    def signed_in_no_op(self, samples: Samples) -> None:
        answer = timed(samples, SIGNED_IN, lambda: self.session.post(f"{self.base}{SIGNED_IN_PATH}", data=_NO_OP_BODY,
                                                                     headers=self.headers(), timeout=60))
        if answer.status_code != 200:
            samples.error(f"{SIGNED_IN} {answer.status_code}: {answer.text[:200]}")

    def visit(self, samples: Samples, saves: int) -> None:
        """One visit of the turn page: the baselines, the page, up to ``saves`` autosaves in the page's order, and
        the completion when the turn is done."""
        self.baselines(samples)
        self.view(samples)
        for _ in range(saves):
            data = next_save(self.coder)
            if data is None:
                break
            self.save(samples, data)
        if self.coder.forms and next_save(self.coder) is None and self.coder.position < self.coder.size:
            self.complete(samples)


def run_threads(clients: list[Browser], work) -> float:
    threads = [threading.Thread(target=work, args=(client,)) for client in clients]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started


def mixed(clients: list[Browser], *, visits: int, saves: int) -> Samples:
    samples = Samples()

    def work(client: Browser) -> None:
        from django.db import connection

        try:
            for _ in range(visits):
                client.visit(samples, saves)
        finally:
            connection.close()  # this thread's, opened by its COPY

    run_threads(clients, work)
    return samples


def alone(clients: list[Browser], master: int, *, what: str, seconds: float) -> dict[str, float]:
    """``what`` alone, back to back from every client for ``seconds``: the web workers' CPU per request."""
    samples = Samples()
    for client in clients:  # each client's page is open (not measured)
        if not client.coder.forms:
            client.view(Samples())
    stop = time.monotonic() + seconds

    def work(client: Browser) -> None:
        coder = client.coder
        while time.monotonic() < stop:
            if what == "turn view":
                timed(samples, what, lambda: client.session.get(client.turn_url(), timeout=60))
            elif what == "autosave":
                data = next_save(coder)
                if data is None:  # every unit scored: over the page again, as updates
                    coder.spare += 1
                    data = rescore(coder.forms[coder.spare % len(coder.forms)])
                client.save(samples, data)
            elif what == "health check":
                timed(samples, what, lambda: client.session.get(f"{client.base}/healthz", timeout=60))
            elif what == SIGNED_IN:
                client.signed_in_no_op(samples)
            else:
                timed(samples, what, lambda: client.session.get(f"{client.base}{BARE_PATH}", timeout=60))

    pids = worker_pids(master)
    before = cpu_seconds(pids)
    elapsed = run_threads(clients, work)
    cpu = cpu_seconds(pids) - before
    return {"n": len(samples.times[what]), "seconds": elapsed, "cpu_seconds": cpu, "errors": len(samples.errors)}


def alone_in_turns(clients: list[Browser], master: int, *, kinds: tuple[str, ...], seconds: float,
                   turns: int = ALONE_TURNS) -> dict[str, dict[str, float]]:
    """Each of ``kinds`` alone for ``seconds`` in all, in ``turns`` slices taken in rotation (each turn starts one
    kind later), so that a host that slows down or speeds up during the phase weighs on every kind alike and the
    ratios between them keep: the web workers' CPU per request of each."""
    totals = {what: {"n": 0, "seconds": 0.0, "cpu_seconds": 0.0, "errors": 0} for what in kinds}
    for turn in range(turns):
        for what in kinds[turn % len(kinds):] + kinds[:turn % len(kinds)]:
            for key, value in alone(clients, master, what=what, seconds=seconds / turns).items():
                totals[what][key] += value
    return {what: {"n": t["n"], "per_second": t["n"] / max(t["seconds"], 1e-9),
                   "cpu_ms": 1000 * t["cpu_seconds"] / max(t["n"], 1), "errors": t["errors"]}
            for what, t in totals.items()}


def summary(samples: Samples) -> dict[str, dict[str, float]]:
    return {name: {"n": len(times), "p50": statistics.median(times), "p95": percentile(times, 0.95)}
            for name, times in samples.times.items() if times}


def worked(sizes: list[int], coders: dict[int, list[Coder]]) -> bool:
    """What the reviewers left in the database: judgments written, turns completed, as the queue counters show
    them (each queue started half done). False when no reviewer saved anything: the figures would be of refusals."""
    from django.db.models import Sum

    from annotation.models import Judgment, QueueProgress

    wrote = True
    for size in sizes:
        names = [c.username for c in coders[size]]
        judgments = Judgment.objects.filter(coder__username__in=names).count()
        done = QueueProgress.objects.filter(coder__username__in=names).aggregate(done=Sum("done"))["done"] or 0
        print(f"queue of {size:,}: {judgments:,} judgments saved, {done - len(names) * (size // 2)} turns completed "
              f"(queue counters: {done:,} done of {len(names) * size:,})")
        wrote = wrote and judgments > 0
    return wrote


# --- the run ---------------------------------------------------------------------------------------------------


def figures_of(sizes: list[int], reviewers: int, phases: dict[int, dict[str, dict[str, float]]],
               costs: dict[int, dict[str, dict[str, float]]], statements: dict[int, dict[str, int]]) -> list[dict]:
    """The figures for scripts/bench: per queue length, latency and web CPU against the health check's, the page
    against a COPY of its rows, the health check against the bare request, statements against the shortest
    queue's."""
    figures = []
    shortest = sizes[0]
    for size in sizes:
        queue = f"queue of {size:,}"
        health = phases[size]["health check"]
        for name in ("turn view", "autosave"):
            for q in ("p50", "p95"):
                targeted = q == "p95"
                figures.append(figure(
                    f"{name} {q}, {queue}, {reviewers} reviewers back to back", phases[size][name][q], "ms",
                    baseline=f"/healthz {q}, same clients and run", baseline_value=health[q],
                    target=f"≤ {P95_WITHIN:g}×" if targeted else "",
                    met=phases[size][name][q] <= P95_WITHIN * health[q] if targeted else True))
        for name in ("turn view", "autosave"):
            cpu, health_cpu = costs[size][name]["cpu_ms"], costs[size]["health check"]["cpu_ms"]
            figures.append(figure(
                f"web CPU per {name}, {queue}", cpu, "ms", baseline="web CPU per /healthz, same clients and run",
                baseline_value=health_cpu, target=f"≤ {CPU_WITHIN[name]:g}×", met=cpu <= CPU_WITHIN[name] * health_cpu))
        figures.append(figure(
            f"web CPU per signed-in no-op POST (the autosave's floor), {queue}", costs[size][SIGNED_IN]["cpu_ms"],
            "ms", baseline="web CPU per /healthz, same clients and run",
            baseline_value=costs[size]["health check"]["cpu_ms"], target="", met=True))
        figures.append(figure(
            f"turn view p50 against a COPY of its rows, {queue}", phases[size]["turn view"]["p50"], "ms",
            baseline="COPY (the page's rows) TO STDOUT p50, same clients and run",
            baseline_value=phases[size]["COPY of the page's rows"]["p50"], target="", met=True))
        figures.append(figure(
            f"/healthz p50 against a bare request, {queue}", health["p50"], "ms",
            baseline="bare SELECT 1 request p50 (no Django), same clients and run",
            baseline_value=phases[size]["bare SELECT 1"]["p50"], target="", met=True))
        for name in ("turn view", "autosave (create)", "autosave (update)"):
            value = statements[size][name]
            if size == shortest:
                figures.append(figure(f"SQL statements per {name}, {queue}", value, "statements",
                                      baseline="SQL statements per /healthz", baseline_value=statements[size][
                                          "health check"], target="", met=True))
            else:
                figures.append(figure(f"SQL statements per {name}, {queue}", value, "statements",
                                      baseline=f"the same, queue of {shortest:,}",
                                      baseline_value=statements[shortest][name], target="≤ 1×",
                                      met=value <= statements[shortest][name]))
    if len(sizes) > 1:
        # Each against the health check of its own phase: the host's drift over a run (a later phase slower for
        # everything, the health check too) cancels, and what is left is the queue's length.
        longest = sizes[-1]

        def per_health(size: int, name: str) -> float:
            return costs[size][name]["cpu_ms"] / costs[size]["health check"]["cpu_ms"]

        for name in ("turn view", "autosave"):
            figures.append(figure(
                f"web CPU per {name} / per /healthz, queue of {longest:,} against {shortest:,}",
                per_health(longest, name), "×", baseline=f"the same, queue of {shortest:,}, same run",
                baseline_value=per_health(shortest, name), target="", met=True))
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    parser.add_argument("--queues", default=QUEUES, help=f"queue lengths, comma-separated (default {QUEUES})")
    parser.add_argument("--reviewers", type=int, default=REVIEWERS,
                        help=f"reviewers per queue length, back to back (default {REVIEWERS})")
    parser.add_argument("--workers", type=int, default=2 * (os.cpu_count() or 1) + 1,
                        help="gunicorn sync workers (default 2 x cores + 1)")
    parser.add_argument("--cycles", type=int, default=15, help="visits of the turn page per reviewer (default 15)")
    parser.add_argument("--saves", type=int, default=10, help="autosaves per visit at most (default 10)")
    parser.add_argument("--seconds", type=float, default=5.0,
                        help="length of each request-alone phase, for the web CPU (default 5)")
    parser.add_argument("--warmup", type=int, default=2, help="unmeasured visits per reviewer first (default 2)")
    args = parser.parse_args()
    sizes = sorted({int(n) for n in args.queues.split(",") if n.strip()})
    if not sizes or sizes[0] < 4:
        parser.error("--queues: lengths of at least 4")
    require_postgres("reviewer_queues")
    print(f"load average at start: {loadavg()} ({os.cpu_count()} cores)", flush=True)
    coders, probes = setup(sizes, args.reviewers, args.scale)
    statements = {size: sql_statements(probes[size]) for size in sizes}
    for size in sizes:
        print(f"SQL statements, queue of {size:,} (in-process, BEGIN/COMMIT not counted): {statements[size]}")

    from django.contrib.auth import get_user_model

    ids = dict(get_user_model().objects.filter(username__startswith="queue").values_list("username", "pk"))
    phases: dict[int, dict[str, dict[str, float]]] = {}
    costs: dict[int, dict[str, dict[str, float]]] = {}
    failed = 0
    with gunicorn(workers=args.workers, timeout=120, app=BARE_APP) as (base, master):
        print(f"gunicorn: {args.workers} sync workers; load average {loadavg()}", flush=True)
        for size in sizes:
            began = time.monotonic()
            clients = [Browser(c, signed_in(base, c), ids[c.username], base) for c in coders[size]]
            mixed(clients, visits=args.warmup, saves=args.saves)
            samples = mixed(clients, visits=args.cycles, saves=args.saves)
            phases[size] = summary(samples)
            costs[size] = alone_in_turns(clients, master, seconds=args.seconds,
                                         kinds=("turn view", "autosave", "health check", "bare SELECT 1", SIGNED_IN))
            failed += len(samples.errors) + sum(int(c["errors"]) for c in costs[size].values())
            health = phases[size]["health check"]
            print(f"\nqueue of {size:,}, {len(clients)} reviewers back to back, {time.monotonic() - began:.0f} s "
                  f"(load average {loadavg()})")
            print(f"  {'request':<24} {'n':>6} {'p50 ms':>8} {'p95 ms':>8} {'p95/healthz':>12} {'CPU ms':>8} "
                  f"{'CPU/healthz':>12}")
            for name, f in phases[size].items():
                cpu = costs[size].get(name, {}).get("cpu_ms")
                cpu_text = (f"{cpu:8.2f} {cpu / costs[size]['health check']['cpu_ms']:11.2f}x" if cpu is not None
                            else f"{'':8} {'':12}")
                print(f"  {name:<24} {f['n']:>6} {f['p50']:8.1f} {f['p95']:8.1f} "
                      f"{f['p95'] / health['p95']:11.2f}x {cpu_text}")
            if samples.errors:
                print(f"  {len(samples.errors)} request(s) failed, e.g. {samples.errors[:3]}")
    print(f"\nload average at the end: {loadavg()}")
    failed += not worked(sizes, coders)

    figures = figures_of(sizes, args.reviewers, phases, costs, statements)
    if args.json:
        print_figures(figures)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
