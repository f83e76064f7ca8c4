"""The oldest PostgreSQL the product supports (cab.embedded_db.OLDEST_VERSION, 16) runs every migration and the
demo, from the same wheel as the embedded server; docker-compose.yml runs that version."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import psycopg

from cab.embedded_db.server import OLDEST_VERSION, Server

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_migrations_and_the_demo_run_on_the_oldest_supported_postgresql(tmp_path):
    server = Server(tmp_path / "postgres", version=OLDEST_VERSION, tcp_port=free_port(),
                    settings=("fsync=off", "synchronous_commit=off"))
    try:
        url = server.attach().url()
        with psycopg.connect(url) as conn:
            (version,) = conn.execute("SHOW server_version_num").fetchone()
        assert int(version) // 10000 == OLDEST_VERSION
        env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"} | {
            "DATABASE_URL": url, "CAB_VAR_DIR": str(tmp_path / "var")}
        for command in (["migrate", "--noinput", "-v", "0"], ["makemigrations", "--check", "--dry-run"],
                        ["load_demo", "--care", "--lc8"]):
            result = subprocess.run([sys.executable, "manage.py", *command], cwd=ROOT, env=env,
                                    capture_output=True, text=True, timeout=600)
            assert result.returncode == 0, f"{command}: {result.stdout[-2000:]}{result.stderr[-2000:]}"
        with psycopg.connect(url) as conn:  # the triggers that guard judged text are there
            triggers = {name for (name,) in conn.execute("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal")}
        assert len(triggers) >= 5, triggers
    finally:
        server.remove()


def test_docker_compose_runs_the_oldest_supported_postgresql():
    compose = (ROOT / "docker-compose.yml").read_text()
    images = re.findall(r"image:\s*postgres:(\d+)", compose)
    assert images == [str(OLDEST_VERSION)], images
