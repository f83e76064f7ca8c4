"""A management command run on a database that lacks this version's migrations (a fresh ``var/`` or a new
``DATABASE_URL`` before ``migrate``: README "Data and commands") says so in one line with what to run, instead of
PostgreSQL's "relation … does not exist" at the end of a traceback; any other error is raised as it was."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def empty_database(tmp_path):
    server = os.environ["DATABASE_URL"].rsplit("/", 1)[0]  # testenv's server
    name = f"unmigrated_cmd_{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    yield f"{server}/{name}"
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')


def _manage(database_url: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"} | {
        "DATABASE_URL": database_url, "CAB_VAR_DIR": str(tmp_path / "var")}
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize("command", [["load_demo"], ["metrics_report", "--study", "demo"],
                                     ["create_study", "--slug", "pilot", "--schema", "cab-v1", "--model-slot", "A"]])
def test_a_command_on_an_unmigrated_database_says_to_migrate_in_one_line(empty_database, tmp_path, command):
    result = _manage(empty_database, tmp_path, *command)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    line = result.stderr.strip()
    assert "\n" not in line and line.startswith("cab: the database unmigrated_cmd_"), line
    assert "migration(s) of this version" in line and "run python manage.py migrate first" in line


def test_other_database_errors_are_raised_as_they_were(empty_database, tmp_path):
    """Once migrated, a command's own error is its own (here: a study that does not exist), not the hint."""
    assert _manage(empty_database, tmp_path, "migrate", "--noinput", "-v", "0").returncode == 0
    result = _manage(empty_database, tmp_path, "metrics_report", "--study", "nosuch")
    assert result.returncode == 1 and "no study with slug 'nosuch'" in result.stderr
    assert "migrate first" not in result.stderr
