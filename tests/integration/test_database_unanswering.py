"""PostgreSQL stopped, or frozen (SIGSTOP: it takes connections and never answers, as a hung host does), under the
product's own processes, on a server of the test's own: the health check answers 503 naming the database within
seconds, and every command users run (the importers, the exports, the metrics and the demo) ends at once with one line
that says the database cannot be reached and exit status 1, never a traceback and never a wait without end. Once the
server answers again, the same command works."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cab.embedded_db.server import Server
from tests.integration.test_default_configuration import NOT_DEFAULT
from tests.redis_server import free_port

ROOT = Path(__file__).resolve().parents[2]
WITHIN = 30  # seconds: the 5 s connect timeout (a command may connect twice), and a loaded host's start of Django
HEALTH = ("from django.test import Client\n"
          "answer = Client(raise_request_exception=False).get('/healthz')\n"
          "print(answer.status_code, answer.content.decode())")
# Each command as a user runs it, on a file or study it would take (the database is met first, and cannot answer).
COMMANDS = {
    "import_judgments": ["import_judgments", "--study", "demo", "{file}"],
    "import_study": ["import_study", "{file}"],
    "export_bundle": ["export_bundle", "demo", "{out}"],
    "metrics_report": ["metrics_report", "--study", "demo", "--bootstrap", "10"],
    "requeue_short_turns": ["requeue_short_turns"],
    "load_demo": ["load_demo", "--quiet"],
}


@pytest.fixture(scope="module")
def database(tmp_path_factory) -> Iterator[tuple[list[Server], dict[str, str]]]:
    """A migrated PostgreSQL of the module's own (the suite's is shared: never stopped) and the product's environment
    on it; the list holds each object that attached to it (the last one the server now runs under)."""
    folder = tmp_path_factory.mktemp("unanswering")
    servers = [Server(folder / "pg", tcp_port=free_port())]
    url = servers[0].attach().url("cab")
    env = {key: value for key, value in os.environ.items() if key not in NOT_DEFAULT}
    env |= {"DATABASE_URL": url, "DEBUG": "0", "CAB_VAR_DIR": str(folder / "var"), "PYTHONUNBUFFERED": "1",
            "TEST_FOLDER": str(folder)}
    (folder / "judgments.csv").write_text("study,reviewer\n")
    (folder / "archive.jsonl").write_text("{}\n")
    try:
        done, _ = _manage(env, "migrate", "--no-input", "-v", "0", timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        yield servers, env
    finally:
        for server in servers[:-1]:
            server.detach()
        servers[-1].remove()


@contextlib.contextmanager
def _frozen(servers: list[Server]) -> Iterator[None]:
    """Every process of the server stopped (SIGSTOP) until the block ends: connections are taken by the kernel and
    nothing answers them."""
    server = servers[-1]
    postmaster = int((server.data / "postmaster.pid").read_text().split()[0])
    children = subprocess.run(["pgrep", "-P", str(postmaster)], capture_output=True, text=True).stdout.split()
    pids = [postmaster, *map(int, children)]
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)


@contextlib.contextmanager
def _stopped(servers: list[Server]) -> Iterator[None]:
    servers[-1].stop()
    try:
        yield
    finally:  # the same data directory, started again
        servers.append(Server(servers[-1].root, tcp_port=servers[-1].tcp_port))
        servers[-1].attach()


def _manage(env: dict[str, str], *args: str, timeout: float = 90) -> tuple[subprocess.CompletedProcess, float]:
    folder = Path(env["TEST_FOLDER"])
    args = tuple(a.format(file=folder / ("archive.jsonl" if "import_study" in args else "judgments.csv"),
                          out=folder / "bundle.zip") for a in args)
    started = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"manage.py {' '.join(args)} did not end within {timeout:.0f} s") from None
    return done, time.monotonic() - started


def _health(env: dict[str, str]) -> tuple[int, dict, float]:
    done, took = _manage(env, "shell", "-c", HEALTH)
    assert done.returncode == 0, done.stderr[-3000:]
    status, body = done.stdout.strip().splitlines()[-1].split(" ", 1)
    return int(status), json.loads(body), took


@pytest.mark.slow(40)
def test_a_frozen_database_answers_the_health_check_503_naming_it_within_seconds(database):
    """Before, the check's connection waited for the frozen server without end (gunicorn killed the worker at
    WEB_TIMEOUT, 300 s): the orchestrator's probe timed out and was told nothing."""
    server, env = database
    assert _health(env)[:2] == (200, {"status": "ok", "database": "postgresql", "checks": {"database": "ok"}})
    with _frozen(server):
        status, body, took = _health(env)
    assert took < WITHIN, f"the health check took {took:.0f} s"
    assert status == 503 and body["status"] == "unavailable", body
    assert body["checks"]["database"].startswith("unreachable ("), body
    assert _health(env)[:2] == (200, {"status": "ok", "database": "postgresql", "checks": {"database": "ok"}})


def _said_unreachable(done: subprocess.CompletedProcess, took: float) -> None:
    assert took < WITHIN, (f"the command took {took:.0f} s", done.stderr[-2000:])
    assert done.returncode == 1, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("cab: the database cannot be reached ("), line
    assert "run the command again once the database answers" in line, line


@pytest.mark.slow(60)
@pytest.mark.parametrize("command", COMMANDS)
def test_a_command_meets_a_stopped_database_with_one_line_and_exit_status_1(database, command):
    server, env = database
    with _stopped(server):
        _said_unreachable(*_manage(env, *COMMANDS[command]))


@pytest.mark.slow(40)
@pytest.mark.parametrize("command", ["import_judgments", "requeue_short_turns"])
def test_a_command_meets_a_frozen_database_with_one_line_within_seconds_and_works_once_it_answers(database, command):
    server, env = database
    with _frozen(server):
        _said_unreachable(*_manage(env, *COMMANDS[command]))
    done, _ = _manage(env, "requeue_short_turns")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "0 completed turn(s) are short" in done.stdout, done.stdout
