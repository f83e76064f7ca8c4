"""``scripts/serve worker`` runs no task on a database that lacks migrations of this version (the upgrade's other
order, README "Upgrading"): it waits for ``serve web`` to apply them, then refuses with the reason."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[2]


def test_the_worker_refuses_a_database_without_this_versions_migrations(tmp_path):
    server = os.environ["DATABASE_URL"].rsplit("/", 1)[0]  # testenv's server
    name = f"unmigrated_{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"} | {
            "DATABASE_URL": f"{server}/{name}", "CAB_VAR_DIR": str(tmp_path / "var"), "MIGRATE_WAIT": "0",
            "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
        result = subprocess.run(["sh", "scripts/serve", "worker"], cwd=ROOT, env=env, capture_output=True,
                                text=True, timeout=120)
    finally:
        with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
    assert result.returncode == 1, result.stdout[-2000:] + result.stderr[-2000:]
    assert "the database lacks migrations of this version" in result.stderr


def test_the_worker_says_so_when_it_cannot_read_the_database(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"} | {
        "DATABASE_URL": "postgres://postgres@127.0.0.1:9/nowhere", "CAB_VAR_DIR": str(tmp_path / "var"),
        "MIGRATE_WAIT": "0", "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    result = subprocess.run(["sh", "scripts/serve", "worker"], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 1, result.stdout[-2000:] + result.stderr[-2000:]
    assert "cannot read the database's migrations: " in result.stderr
    assert "lacks migrations" not in result.stderr
