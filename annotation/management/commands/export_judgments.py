import csv
import json
import sys

from django.core.management.base import BaseCommand, CommandError

from annotation import selectors
from annotation.judgment_import import COLUMNS
from annotation.models import Study


class Command(BaseCommand):
    help = "Write a study's judgments in the SPEC §6 long format (CSV or JSON Lines) to standard output."

    def add_arguments(self, parser):
        parser.add_argument("--study", required=True)
        parser.add_argument("--format", choices=["csv", "jsonl"], default="jsonl")

    def handle(self, *args, study: str, format: str, **options):
        found = Study.objects.filter(slug=study).first()
        if found is None:
            raise CommandError(f"no study with slug {study!r}")
        rows = selectors.judgment_rows(study=found)
        out = self.stdout if self.stdout else sys.stdout
        if format == "jsonl":
            for row in rows:
                out.write(json.dumps(row, ensure_ascii=False))
            return
        writer = csv.DictWriter(_Lines(out), fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow(row | {
                "model": row["model"] or "",
                "spans": json.dumps(row["spans"]) if row["spans"] else "",
                "instance_count": "" if row["instance_count"] is None else row["instance_count"],
                "is_gold": "true" if row["is_gold"] else "false",
            })


class _Lines:
    """csv.writer needs .write; OutputWrapper adds a newline per write unless told otherwise."""

    def __init__(self, out):
        self.out = out

    def write(self, text: str) -> None:
        self.out.write(text, ending="")
