#!/usr/bin/env python
"""Speed of ``export_study`` / ``import_study`` on a synthetic study (rows per second), and the round trip checked:
the study is exported, its rows removed (TRUNCATE), imported into the emptied installation and exported again, and
the two archives must be equal but for the import's own audit event.

Run against PostgreSQL, e.g. with throwaway servers:
    .venv/bin/python scripts/testenv.py -- .venv/bin/python perf/study_archive.py
CONVERSATIONS (default 1000) sets the size. It migrates, fills and empties the database it is given: never point
it at a database you care about.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cab.settings")
os.environ.setdefault("DEBUG", "0")
os.environ.setdefault("LOG_LEVEL", "WARNING")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

CONVERSATIONS = int(os.environ.get("CONVERSATIONS", "1000"))


def rows(text_lines: list[str]) -> int:
    """Database rows an archive holds: records, plus turns, responses, round items, spans, agreements, revisions."""
    total = 0
    for line in text_lines:
        record = json.loads(line)
        total += 1
        total += sum(1 + len(turn["responses"]) for turn in record.get("turns", []))
        for nested in ("items", "spans", "agreed_by", "revisions"):
            total += len(record.get(nested, []))
    return total


def _sha256(lines: list[str]) -> str:
    """What an end record states: the SHA-256 of the lines before it, each with its newline."""
    return hashlib.sha256("".join(line + "\n" for line in lines).encode()).hexdigest()


def main() -> None:
    from annotation.models import Judgment

    print(f"database: {connection.vendor}")
    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    call_command("generate_synthetic", "--conversations", str(CONVERSATIONS), "--reviewers", "7", "--seed", "11",
                 "--coders-per-turn", "2", "--slug", "bench", stdout=io.StringIO())
    print(f"synthetic study: {Judgment.objects.count()} judgments in {time.perf_counter() - started:.1f} s")

    with tempfile.TemporaryDirectory() as directory:
        for name in ("bench.jsonl", "bench.jsonl.gz"):
            path = Path(directory) / name
            started = time.perf_counter()
            call_command("export_study", "bench", "--output", str(path), stderr=io.StringIO())
            seconds = time.perf_counter() - started
            opener = gzip.open if name.endswith(".gz") else open
            with opener(path, "rt", encoding="utf-8") as stream:
                first = stream.read().splitlines()
            n = rows(first)
            print(f"export {name}: {n} rows ({len(first)} records, {path.stat().st_size / 1e6:.1f} MB) in "
                  f"{seconds:.1f} s = {n / seconds:,.0f} rows/s")

        with connection.cursor() as cursor:
            cursor.execute("TRUNCATE benchmark_dataset, annotation_study, audit_auditevent, auth_user CASCADE")
        started = time.perf_counter()
        call_command("import_study", str(path), stdout=io.StringIO())
        seconds = time.perf_counter() - started
        print(f"import {path.name}: {n} rows in {seconds:.1f} s = {n / seconds:,.0f} rows/s")

        again = Path(directory) / "again.jsonl"
        call_command("export_study", "bench", "--output", str(again), stderr=io.StringIO())
        second = again.read_text(encoding="utf-8").splitlines()
        imported = json.loads(second[-2])
        end = json.loads(second[-1])
        end["records"]["audit_event"] -= 1
        # The second end record's SHA-256 covers the import's own audit event too: each file's is checked against
        # its own lines, the rest of the end records compared.
        stated = {"first": json.loads(first[-1]).pop("sha256"), "second": end.pop("sha256")}
        digests = {"first": _sha256(first[:-1]), "second": _sha256(second[:-1])}
        expected_end = json.loads(first[-1])
        expected_end.pop("sha256")
        same = (second[:-2] == first[:-1] and imported["action"] == "study.import"
                and end == expected_end and stated == digests)
        print(f"round trip: {'identical' if same else 'DIFFERENT'}")
        if not same:
            sys.exit(1)


if __name__ == "__main__":
    main()
