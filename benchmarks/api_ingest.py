"""Ingest the reference study's 42,230 model responses through the REST API, against PostgreSQL, and compare with
one request per response.

    .venv/bin/python scripts/testenv.py -- .venv/bin/python benchmarks/api_ingest.py

What it does, against the (throwaway) database it is given:
1. migrates, creates an admin with a study-scoped ingestion token and a study with five model slots;
2. serves the project with gunicorn (one sync worker, DEBUG off) on a free loopback port;
3. ingests 8,446 single-turn conversations through the API (no responses yet), in batches;
4. baseline: a sample of responses for *other* turns, one HTTP request each over a kept-alive connection,
   timed and extrapolated to 42,230 (said so in the output);
5. bulk: the 42,230 responses in requests of --batch items (default 10,000), timed;
6. resend: the same 42,230 again (every item must come back "unchanged"), timed;
7. prints responses per second for each, the bulk/baseline ratio, and the peak memory (VmHWM) of the server
   worker and of this client process.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cab.settings")

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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def vm_hwm_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def worker_pid(master: int) -> int:
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    return int(children[0]) if children else master


def setup(conversation_count: int) -> tuple[str, str]:
    import django

    django.setup()
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


def post(session: requests.Session, url: str, items: list[dict]) -> dict:
    response = session.post(url, data=json.dumps(items, ensure_ascii=False).encode(),
                            headers={"Content-Type": "application/json"}, timeout=900)
    if response.status_code != 200:
        raise SystemExit(f"{url}: {response.status_code} {response.text[:2000]}")
    return response.json()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--responses", type=int, default=RESPONSES)
    parser.add_argument("--batch", type=int, default=10_000, help="items per bulk request (default 10,000)")
    parser.add_argument("--sample", type=int, default=1_000, help="baseline: responses sent one per request")
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        sys.exit("api_ingest: run under scripts/testenv.py (PostgreSQL, throwaway)")
    turns = -(-args.responses // len(MODELS))
    sample_turns = -(-args.sample // len(MODELS))
    token, slug = setup(turns)

    port = free_port()
    env = dict(os.environ, DEBUG="0", PYTHONUNBUFFERED="1")
    server = subprocess.Popen(
        [str(ROOT / ".venv/bin/gunicorn"), "cab.wsgi:application", "--bind", f"127.0.0.1:{port}", "--workers", "1",
         "--timeout", "900", "--log-level", "warning"],
        cwd=ROOT, env=env,
    )
    try:
        base = f"http://127.0.0.1:{port}/api/v1/studies/{slug}"
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {token}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if session.get(f"http://127.0.0.1:{port}/healthz", timeout=10).status_code == 200:
                    break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit("gunicorn did not start")
            time.sleep(0.2)

        started = time.perf_counter()
        for start in range(0, turns, 2_000):
            post(session, f"{base}/conversations/", [conversation(n, "Bench") for n in
                                                     range(start, min(start + 2_000, turns))])
        post(session, f"{base}/conversations/", [conversation(n, "BenchBaseline") for n in range(sample_turns)])
        conversations_seconds = time.perf_counter() - started

        # Baseline: one response per request, on turns of their own (so both runs create new rows).
        sample = items_for(range(sample_turns), "BenchBaseline")[: args.sample]
        started = time.perf_counter()
        for item in sample:
            assert post(session, f"{base}/responses/", [item])["created"] == 1
        baseline_seconds = time.perf_counter() - started
        baseline_rate = len(sample) / baseline_seconds
        hwm_after_baseline = vm_hwm_kib(worker_pid(server.pid))

        items = items_for(range(turns), "Bench")[: args.responses]
        started = time.perf_counter()
        created = 0
        for start in range(0, len(items), args.batch):
            created += post(session, f"{base}/responses/", items[start:start + args.batch])["created"]
        bulk_seconds = time.perf_counter() - started
        assert created == len(items), created
        hwm_after_bulk = vm_hwm_kib(worker_pid(server.pid))

        started = time.perf_counter()
        unchanged = 0
        for start in range(0, len(items), args.batch):
            unchanged += post(session, f"{base}/responses/", items[start:start + args.batch])["unchanged"]
        resend_seconds = time.perf_counter() - started
        assert unchanged == len(items), unchanged
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)

    bulk_rate = len(items) / bulk_seconds
    client_peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"conversations: {turns + sample_turns:,} (one turn each) ingested through the API in "
          f"{conversations_seconds:.1f} s")
    print(f"bulk:     {len(items):,} responses in {-(-len(items) // args.batch)} requests of ≤ {args.batch:,} in "
          f"{bulk_seconds:.1f} s = {bulk_rate:,.0f} responses/s")
    print(f"resend:   {len(items):,} identical responses, all reported unchanged, in {resend_seconds:.1f} s = "
          f"{len(items) / resend_seconds:,.0f} responses/s")
    print(f"baseline: one request per response, measured on a sample of {len(sample):,} in "
          f"{baseline_seconds:.1f} s = {baseline_rate:,.0f} responses/s; extrapolated to {len(items):,}: "
          f"{len(items) / baseline_rate:,.0f} s")
    print(f"ratio:    bulk is {bulk_rate / baseline_rate:,.1f}× the one-request-per-response rate")
    print(f"peak memory: server worker VmHWM {hwm_after_baseline / 1024:,.0f} MiB after the baseline, "
          f"{hwm_after_bulk / 1024:,.0f} MiB after the bulk requests; this client {client_peak_mib:,.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
