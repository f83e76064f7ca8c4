#!/usr/bin/env python3
"""Run a command with a real PostgreSQL and a real Redis.

``DATABASE_URL`` / ``REDIS_URL`` from the environment are used as they are. When one is missing, a throwaway
server is started on loopback on a free port (PostgreSQL through initdb/pg_ctl, run as the ``postgres`` user
when we are root because initdb refuses root), its URL is exported, the command runs, and the server and its
files are removed afterwards, whatever the command's outcome.

    python scripts/testenv.py -- python -m pytest -q
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def pg_bin(name: str) -> str:
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)
    found = candidates[0] if candidates else shutil.which(name)
    if not found:
        sys.exit(f"testenv: {name} not found; install PostgreSQL (apt-get install postgresql) or set DATABASE_URL")
    return found


def as_pg_user(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        sys.exit("testenv: running as root and there is no 'postgres' user to run initdb as")
    return ["runuser", "-u", "postgres", "--", *argv]


@contextlib.contextmanager
def postgres() -> Iterator[str]:
    root = tempfile.mkdtemp(prefix="cab-pg-")
    data, sockets = os.path.join(root, "data"), os.path.join(root, "run")
    os.makedirs(sockets)
    if os.geteuid() == 0:
        entry = pwd.getpwnam("postgres")
        for path in (root, sockets):
            os.chown(path, entry.pw_uid, entry.pw_gid)
    port = free_port()
    subprocess.run(
        as_pg_user([pg_bin("initdb"), "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8",
                    "--locale=C.UTF-8", "--no-sync"]),
        check=True, stdout=subprocess.DEVNULL,
    )
    options = (f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c fsync=off "
               "-c synchronous_commit=off -c full_page_writes=off -c max_connections=100")
    subprocess.run(
        as_pg_user([pg_bin("pg_ctl"), "-D", data, "-o", options, "-l", os.path.join(root, "server.log"),
                    "-w", "-t", "60", "start"]),
        check=True, stdout=subprocess.DEVNULL,
    )
    try:
        yield f"postgres://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(as_pg_user([pg_bin("pg_ctl"), "-D", data, "-m", "immediate", "stop"]),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(root, ignore_errors=True)


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
    if "--" in argv:
        argv = argv[argv.index("--") + 1:]
    if not argv:
        sys.exit("usage: testenv.py -- COMMAND [ARGS…]")
    # Persistent connections would outlive the live server's request threads and block test-database teardown.
    env = dict(os.environ, CAB_TEST_SERVICES="1", DB_CONN_MAX_AGE="0")
    with contextlib.ExitStack() as stack:
        if not env.get("DATABASE_URL"):
            env["DATABASE_URL"] = stack.enter_context(postgres())
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
