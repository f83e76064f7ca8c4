#!/usr/bin/env python
"""The upgrade from 0.2.0 at paper scale: how long each migration since 0.2.0 takes, and what waits for it
(README, "Upgrading"; docs/benchmarks.md#the-upgrade-from-020-at-paper-scale).

    git worktree add /tmp/cab-0.2.0 90d194a
    .venv/bin/python scripts/testenv.py -- .venv/bin/python perf/upgrade_from_020.py --old /tmp/cab-0.2.0 \\
        [--scale 1] [--extra-coders 0] [--runs 3]

What it does, on the PostgreSQL server of ``DATABASE_URL`` (a throwaway one: it creates and drops databases there):
1. with 0.2.0's code (``--old``, a checkout of 0.2.0 that this project's interpreter can run): a database of its
   own migrated by 0.2.0, a synthetic study at ``--scale`` (1 = paper scale: 1,576 conversations, 42,230
   responses, 690,080 judgments, six reviewers' queues of about 1,400 assignments), and one reviewer taken off the
   study by 0.2.0's service (so that 0022 has a former member to restore); ``--extra-coders`` more coders queued
   every turn of the main round (written in SQL: 0.2.0 has no counters to keep), to see how the times grow with the
   assignments;
2. ``--runs`` times, on a copy of that database (``CREATE DATABASE … TEMPLATE``): each migration since 0.2.0 on
   its own with this checkout's code (``manage.py migrate APP NUMBER``, its time as Django reports it), while
   second connections, every 50 ms each, write what a reviewer's page writes (a time beat to
   ``annotation_assignment``, an autosave to ``annotation_judgment``: each an UPDATE that changes no value, in a
   transaction of its own), and the write that signing in makes (``auth_user.last_login``) and a write to
   ``annotation_round``; the longest of each during the migration is what waited. ``pg_locks`` is sampled every
   20 ms for the locks the migration holds that stop writes (SHARE and stronger);
3. once more on a fresh copy, the whole ``manage.py migrate``, its wall time with Django's start;
4. checks the result: the queue counters equal a count of the assignments, and the reviewer taken off has their
   former membership back.

The figures are the median and the largest over the runs. The server is the one it is given: ``scripts/testenv.py``
starts PostgreSQL with fsync off, as for the tests; point ``DATABASE_URL`` at another server to measure with its
durability settings.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psycopg
from _common import ROOT, loadavg, require_postgres, scaled

MIGRATIONS = [("annotation", "0017"), ("annotation", "0018"), ("annotation", "0019"), ("benchmark", "0006"),
              ("annotation", "0020"), ("annotation", "0021"), ("annotation", "0022")]
WRITES = {
    "assignment (time beat)": "UPDATE annotation_assignment SET active_seconds = active_seconds WHERE id = "
                              "(SELECT min(id) FROM annotation_assignment WHERE completed_at IS NULL)",
    "judgment (autosave)": "UPDATE annotation_judgment SET version = version, updated_at = updated_at WHERE id = "
                           "(SELECT max(id) FROM annotation_judgment)",
    "auth_user (sign-in)": "UPDATE auth_user SET last_login = last_login WHERE id = (SELECT min(id) FROM auth_user)",
    "round": "UPDATE annotation_round SET status = status WHERE id = (SELECT max(id) FROM annotation_round)",
}
STRONG = {"ShareLock": "SHARE", "ShareRowExclusiveLock": "SHARE ROW EXCLUSIVE", "ExclusiveLock": "EXCLUSIVE",
          "AccessExclusiveLock": "ACCESS EXCLUSIVE"}
OLD_DATABASE = "upgrade_from_020"
# 0.2.0's own service takes a reviewer off the study (it deletes the membership row and records member.remove).
TAKE_OFF = """
from access import roles
from access.services import user_ensure
from annotation import services
from annotation.models import StudyMember
admin = user_ensure(username="upgrade-admin", role=roles.ADMIN)
member = StudyMember.objects.filter(study__slug="upgrade", role="reviewer").order_by("user__username").last()
services.study_member_remove(member=member, by=admin)
print(member.user.username)
"""
EXTRA_CODERS = ("""
INSERT INTO auth_user (password, is_superuser, username, first_name, last_name, email, is_staff, is_active,
                       date_joined)
    SELECT '!', false, 'upgrade-extra-' || g, '', '', '', false, true, now() FROM generate_series(1, %(n)s) g""", """
WITH main AS (SELECT id FROM annotation_round WHERE kind = 'main'),
     turns AS (SELECT DISTINCT turn_id FROM annotation_assignment WHERE round_id = (SELECT id FROM main)),
     queue AS (SELECT turn_id, row_number() OVER (ORDER BY turn_id) AS position FROM turns)
INSERT INTO annotation_assignment (position, is_check_item, completed_at, active_seconds, coder_id, turn_id,
                                   round_id, feedback_locked, comment, flags)
    SELECT q.position, false, CASE WHEN q.position %% 2 = 0 THEN now() END, 0, u.id, q.turn_id,
           (SELECT id FROM main), false, '', '{}'
    FROM queue q CROSS JOIN auth_user u WHERE u.username LIKE 'upgrade-extra-%%'""")
COUNTERS_OFF = """
SELECT count(*) FROM (SELECT round_id, coder_id, count(*) AS total, count(completed_at) AS done
                      FROM annotation_assignment GROUP BY round_id, coder_id) a
    FULL JOIN annotation_queueprogress p USING (round_id, coder_id)
    WHERE a.total IS DISTINCT FROM p.total OR a.done IS DISTINCT FROM p.done
"""


def url_of(database: str) -> str:
    return os.environ["DATABASE_URL"].rsplit("/", 1)[0] + "/" + database


def sql(database: str, *statements: str, params: dict | None = None) -> list[tuple]:
    with psycopg.connect(url_of(database), autocommit=True) as conn:
        rows: list[tuple] = []
        for statement in statements:
            cursor = conn.execute(statement, params)
            rows = cursor.fetchall() if cursor.description else []
        return rows


def manage(code: Path, database: str, *args: str) -> str:
    """``manage.py`` of the checkout ``code`` on ``database`` (tasks in-process, as without Redis)."""
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env.update(DATABASE_URL=url_of(database), DJANGO_SETTINGS_MODULE="cab.settings", LOG_LEVEL="WARNING",
               CAB_VAR_DIR=tempfile.mkdtemp(prefix="cab-upgrade-var-"))
    run = subprocess.run([sys.executable, "manage.py", *args], cwd=code, env=env, capture_output=True, text=True)
    if run.returncode:
        raise SystemExit(f"manage.py {' '.join(args)} in {code} failed:\n{run.stdout}\n{run.stderr}")
    return run.stdout


def build(old: Path, scale: float, extra_coders: int) -> str:
    """0.2.0's database: its migrations, a synthetic study, a reviewer taken off; returns who was taken off."""
    sql("postgres", f"DROP DATABASE IF EXISTS {OLD_DATABASE}", f"CREATE DATABASE {OLD_DATABASE}")
    started = time.monotonic()
    manage(old, OLD_DATABASE, "migrate", "--noinput", "-v", "0")
    said = manage(old, OLD_DATABASE, "generate_synthetic", "--conversations", str(scaled(1576, scale, minimum=20)),
                  "--responses", str(scaled(42230, scale, minimum=200)), "--seed", "34", "--slug", "upgrade")
    print(said.strip().splitlines()[-1], flush=True)
    taken_off = manage(old, OLD_DATABASE, "shell", "-c", TAKE_OFF).strip().splitlines()[-1]
    if extra_coders:
        sql(OLD_DATABASE, *EXTRA_CODERS, params={"n": extra_coders})
    sql(OLD_DATABASE, "VACUUM ANALYZE")
    (assignments, judgments, size), = sql(OLD_DATABASE, "SELECT (SELECT count(*) FROM annotation_assignment), "
                                          "(SELECT count(*) FROM annotation_judgment), "
                                          "pg_size_pretty(pg_database_size(current_database()))")
    print(f"0.2.0's database: {assignments:,} assignments, {judgments:,} judgments, {size}; "
          f"{taken_off} taken off the study; built in {time.monotonic() - started:.0f} s", flush=True)
    return taken_off


class Probe:
    """The writes of ``WRITES`` in a loop, each on a connection of its own, and the strong locks of other
    backends, sampled, from start to ``stop()``."""

    def __init__(self, database: str) -> None:
        self.url = url_of(database)
        self.done = threading.Event()
        self.samples: dict[str, list[tuple[float, float]]] = {name: [] for name in WRITES}
        self.locks: dict[str, tuple[float, float]] = {}
        self.threads = [threading.Thread(target=self.write, args=(name,)) for name in WRITES]
        self.threads.append(threading.Thread(target=self.watch))
        for thread in self.threads:
            thread.start()

    def write(self, name: str) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self.done.is_set():
                started = time.time()
                conn.execute(WRITES[name])
                self.samples[name].append((started, time.time() - started))
                time.sleep(0.05)

    def watch(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self.done.is_set():
                now = time.time()
                for mode, table in conn.execute(
                        "SELECT l.mode, c.relname FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
                        "WHERE l.granted AND l.pid <> pg_backend_pid() AND c.relkind IN ('r', 'p') "
                        "AND c.relname NOT LIKE 'pg\\_%%' AND l.mode = ANY(%s)", (list(STRONG),)):
                    first, _ = self.locks.get(f"{table} {STRONG[mode]}", (now, now))
                    self.locks[f"{table} {STRONG[mode]}"] = (first, now)
                time.sleep(0.02)

    def stop(self) -> None:
        self.done.set()
        for thread in self.threads:
            thread.join()

    def longest(self, name: str, start: float, end: float) -> float:
        """The longest write that started between ``start`` and ``end`` or was waiting at ``start``."""
        return max((took for at, took in self.samples[name] if start <= at + took and at <= end), default=0.0)

    def held(self, start: float, end: float) -> list[str]:
        return sorted(key for key, (first, last) in self.locks.items() if first <= end and last >= start)


def migrate_each(code: Path, database: str) -> dict[str, dict]:
    """Each migration on its own, with the probe: its time, the longest write of each kind, the locks seen."""
    figures = {}
    for app, number in MIGRATIONS:
        probe = Probe(database)
        time.sleep(0.5)
        start = time.time()
        said = manage(code, database, "migrate", app, number, "--noinput", "-v", "2")
        end = time.time()
        time.sleep(0.3)
        probe.stop()
        applied = re.search(r"Applying (\S+)\.\.\. OK \(([\d.]+)s\)", said)
        if applied is None:
            raise SystemExit(f"migrate {app} {number} applied nothing:\n{said}")
        figures[applied.group(1)] = {"seconds": float(applied.group(2)),
                                     "waits": {name: probe.longest(name, start, end) for name in WRITES},
                                     "before": {name: probe.longest(name, 0, start - 0.05) for name in WRITES},
                                     "locks": probe.held(start, end)}
    return figures


def check(database: str, taken_off: str) -> None:
    (off,), = sql(database, COUNTERS_OFF)
    restored = sql(database, "SELECT f.role FROM annotation_formerstudymember f JOIN auth_user u ON u.id = f.user_id "
                             "WHERE u.username = %(u)s", params={"u": taken_off})
    if off or not restored:
        raise SystemExit(f"{database}: {off} queue counters off the assignments; former member of "
                         f"{taken_off}: {restored or 'none'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", type=Path, required=True, help="a checkout of 0.2.0 (git worktree add DIR 90d194a)")
    parser.add_argument("--scale", type=float, default=1.0, help="1 = paper scale (42,230 responses)")
    parser.add_argument("--extra-coders", type=int, default=0,
                        help="more coders, each queued every turn of the main round (default 0)")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    require_postgres("upgrade_from_020")
    print(f"load average {loadavg()}, {os.cpu_count()} cores", flush=True)
    taken_off = build(args.old.resolve(), args.scale, args.extra_coders)
    existing = {table for table, in sql(OLD_DATABASE, "SELECT relname FROM pg_class WHERE relkind IN ('r', 'p') "
                                                      "AND relnamespace = 'public'::regnamespace")}
    runs = []
    for number in range(args.runs):
        copy = f"upgrade_run_{number}"
        sql("postgres", f"DROP DATABASE IF EXISTS {copy}", f"CREATE DATABASE {copy} TEMPLATE {OLD_DATABASE}")
        runs.append(migrate_each(ROOT, copy))
        check(copy, taken_off)
        sql("postgres", f"DROP DATABASE {copy}")
    sql("postgres", "DROP DATABASE IF EXISTS upgrade_whole", f"CREATE DATABASE upgrade_whole TEMPLATE {OLD_DATABASE}")
    started = time.monotonic()
    manage(ROOT, "upgrade_whole", "migrate", "--noinput", "-v", "0")
    whole = time.monotonic() - started
    check("upgrade_whole", taken_off)
    sql("postgres", "DROP DATABASE upgrade_whole")

    before = {write: max(run[name]["before"][write] for run in runs for name in run) for write in WRITES}
    print(f"\n{args.runs} runs, each migration on its own: its time in s, the longest write of each kind while it "
          f"ran in ms, median (largest). The longest of each in the half second before a migration, for comparison: "
          + ", ".join(f"{write} {seconds * 1000:.0f} ms" for write, seconds in before.items()))
    print("| migration | time | " + " | ".join(WRITES) + " | locks on 0.2.0's tables that stop writes |")
    print("|---" * (len(WRITES) + 3) + "|")
    for name in runs[0]:
        seconds = [run[name]["seconds"] for run in runs]
        waits = []
        for write in WRITES:
            waited = [run[name]["waits"][write] for run in runs]
            waits.append(f" {statistics.median(waited) * 1000:.0f} ({max(waited) * 1000:.0f})")
        locks = sorted({lock for run in runs for lock in run[name]["locks"] if lock.split()[0] in existing})
        print(f"| {name} | {statistics.median(seconds):.2f} ({max(seconds):.2f}) |" + " |".join(waits)
              + f" | {', '.join(locks) or 'none'} |")
    print(f"\nthe whole `manage.py migrate` (Django's start included): {whole:.1f} s; load average {loadavg()}")
    sql("postgres", f"DROP DATABASE {OLD_DATABASE}")


if __name__ == "__main__":
    main()
