"""Ingest the reference study's 42,230 model responses through the REST API, against PostgreSQL, and compare with
one request per response.

    .venv/bin/python scripts/testenv.py -- .venv/bin/python perf/api_ingest.py [--scale 1] [--json]

What it does, against the (throwaway) database it is given:
1. migrates, creates an admin with a study-scoped ingestion token and a study with five model slots;
2. serves the project with gunicorn (one sync worker, DEBUG off) on a free loopback port;
3. ingests 8,446 single-turn conversations through the API (no responses yet), in batches;
4. baseline: a sample of responses for *other* turns, one HTTP request each over a kept-alive connection,
   timed and extrapolated to 42,230 (said so in the output);
5. bulk: the 42,230 responses in requests of --batch items (default 10,000), timed;
6. resend: the same 42,230 again (every item must come back "unchanged"), timed;
7. prints responses per second for each, the bulk/baseline ratio, and the peak memory (VmHWM) of the server
   worker and of this client process; with --json, the figures for scripts/bench last.

Request bodies are encoded before the clock starts (the client would be another machine; here it shares the
cores), so the rates are the server's: parsing, validation, the checks against the database and the write.
--scale multiplies the 42,230 responses and the 1,000 of the baseline sample (at least 50).
"""

from __future__ import annotations

import argparse
import json
import resource
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

RESPONSES = 42_230  # the reference study's model responses
MODELS = ["GPT", "Claude", "Gemini", "Llama", "Qwen"]
_PHRASES = ("that sounds really hard to carry on your own", "what do you notice in yourself when it happens",
            "many people feel this way after a big change", "it might help to talk it through with someone you trust",
            "what would feel like a small manageable first step", "your feelings make sense given everything")
WORDS = [word for phrase in _PHRASES for word in phrase.split()]


def response_text(seed: int) -> str:
    """About 1,100 characters (the length of a typical counselling reply), different for every response."""
    words = [WORDS[(seed * 7 + i * 13) % len(WORDS)] for i in range(190)]
    return f"Response {seed}: " + " ".join(words) + " — ça compte. 😊"


def setup(conversation_count: int) -> tuple[str, str]:
    django_setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from access import roles
    from access.services import user_ensure
    from annotation.models import Schema
    from annotation.services import study_create
    from api import services as api_services

    admin = user_ensure(username="bench-admin", role=roles.ADMIN)
    study = study_create(slug="bench", name="Ingestion benchmark", schema=Schema.objects.get(slug="cab-v1"),
                         model_slots=MODELS, by=admin)
    _, token = api_services.api_token_create(user=admin, name="bench", scopes=["ingest"], study=study, by=admin)
    return token, study.slug


def conversation(number: int, dataset: str) -> dict:
    return {"dataset": dataset, "conversation_id": f"c{number}", "kind": "single", "topic": "Anxiety",
            "complexity": ("high", "medium", "low")[number % 3],
            "turns": [{"index": 1, "client": f"Client message {number}: I keep worrying about everything.",
                       "therapist_reference": "", "responses": []}]}


def items_for(conversations: range, dataset: str) -> list[dict]:
    return [{"dataset": dataset, "conversation_id": f"c{n}", "turn_index": 1, "model": model,
             "model_version": f"{model.lower()}-2025", "text": response_text(n * 5 + i)}
            for n in conversations for i, model in enumerate(MODELS)]


def encode(items: list[dict]) -> bytes:
    return json.dumps(items, ensure_ascii=False).encode()


def post(session: requests.Session, url: str, items: list[dict] | bytes) -> dict:
    body = items if isinstance(items, bytes) else encode(items)
    response = session.post(url, data=body, headers={"Content-Type": "application/json"}, timeout=900)
    if response.status_code != 200:
        raise SystemExit(f"{url}: {response.status_code} {response.text[:2000]}")
    return response.json()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--responses", type=int, help=f"responses to ingest (default {RESPONSES:,} x scale)")
    parser.add_argument("--batch", type=int, default=10_000, help="items per bulk request (default 10,000)")
    parser.add_argument("--sample", type=int, help="baseline: responses sent one per request (default 1,000 x scale)")
    add_arguments(parser)
    args = parser.parse_args()
    require_postgres("api_ingest")
    responses = args.responses or scaled(RESPONSES, args.scale, minimum=len(MODELS))
    sample_size = args.sample or scaled(1_000, args.scale, minimum=50)
    turns = -(-responses // len(MODELS))
    sample_turns = -(-sample_size // len(MODELS))
    token, slug = setup(turns)

    with gunicorn(workers=1) as (root, master):
        worker = worker_pids(master)[0]
        base = f"{root}/api/v1/studies/{slug}"
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {token}"
        hwm_idle = vm_kib(worker)

        started = time.perf_counter()
        for start in range(0, turns, 2_000):
            post(session, f"{base}/conversations/", [conversation(n, "Bench") for n in
                                                     range(start, min(start + 2_000, turns))])
        post(session, f"{base}/conversations/", [conversation(n, "BenchBaseline") for n in range(sample_turns)])
        conversations_seconds = time.perf_counter() - started

        # Baseline: one response per request, on turns of their own (so both runs create new rows).
        sample = [encode([item]) for item in items_for(range(sample_turns), "BenchBaseline")[:sample_size]]
        started = time.perf_counter()
        for body in sample:
            assert post(session, f"{base}/responses/", body)["created"] == 1
        baseline_seconds = time.perf_counter() - started
        baseline_rate = len(sample) / baseline_seconds
        hwm_after_baseline = vm_kib(worker)

        items = items_for(range(turns), "Bench")[:responses]
        bodies = [encode(items[start:start + args.batch]) for start in range(0, len(items), args.batch)]
        started, client_cpu = time.perf_counter(), time.process_time()
        created = 0
        for body in bodies:
            created += post(session, f"{base}/responses/", body)["created"]
        bulk_seconds = time.perf_counter() - started
        client_cpu = time.process_time() - client_cpu  # sending the bodies, reading the answers
        assert created == len(items), created
        hwm_after_bulk = vm_kib(worker)

        started = time.perf_counter()
        unchanged = 0
        for body in bodies:
            unchanged += post(session, f"{base}/responses/", body)["unchanged"]
        resend_seconds = time.perf_counter() - started
        assert unchanged == len(items), unchanged
        hwm_after_resend = vm_kib(worker)

    bulk_rate = len(items) / bulk_seconds
    client_peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    server_peak_mb = max(hwm_after_bulk, hwm_after_resend) * 1024 / 1e6
    print(f"conversations: {turns + sample_turns:,} (one turn each) ingested through the API in "
          f"{conversations_seconds:.1f} s")
    print(f"bulk:     {len(items):,} responses in {len(bodies)} requests of ≤ {args.batch:,} in "
          f"{bulk_seconds:.1f} s = {bulk_rate:,.0f} responses/s (this client's CPU meanwhile: {client_cpu:.2f} s)")
    print(f"resend:   {len(items):,} identical responses, all reported unchanged, in {resend_seconds:.1f} s = "
          f"{len(items) / resend_seconds:,.0f} responses/s")
    print(f"baseline: one request per response, measured on a sample of {len(sample):,} in "
          f"{baseline_seconds:.1f} s = {baseline_rate:,.0f} responses/s; extrapolated to {len(items):,}: "
          f"{len(items) / baseline_rate:,.0f} s")
    print(f"ratio:    bulk is {bulk_rate / baseline_rate:,.1f}× the one-request-per-response rate")
    print(f"peak memory: server worker VmHWM {hwm_idle / 1024:,.0f} MiB idle, {hwm_after_baseline / 1024:,.0f} MiB "
          f"after the baseline, {hwm_after_bulk / 1024:,.0f} MiB after the bulk requests, "
          f"{hwm_after_resend / 1024:,.0f} MiB after the resend ({server_peak_mb:,.0f} MB); "
          f"this client {client_peak_mib:,.0f} MiB")
    if args.json:
        one_each = "one request per response, same run"
        print_figures([
            figure("ingest: bulk responses through the API", bulk_rate, "responses/s", baseline=one_each,
                   baseline_value=baseline_rate, target="≥ 30,000 responses/s", met=bulk_rate >= 30_000),
            figure("ingest: bulk vs one request per response", bulk_rate, "responses/s", baseline=one_each,
                   baseline_value=baseline_rate, target="≥ 300× baseline", met=bulk_rate >= 300 * baseline_rate),
            figure("ingest: resend, all unchanged", len(items) / resend_seconds, "responses/s", baseline=one_each,
                   baseline_value=baseline_rate, target="", met=True),
            figure("ingest: server worker peak RSS", server_peak_mb, "MB", baseline="the same worker after the "
                   "one-per-request baseline", baseline_value=hwm_after_baseline * 1024 / 1e6, target="< 150 MB",
                   met=server_peak_mb < 150),
        ])
    return 0


if __name__ == "__main__":
    sys.exit(main())
