from django.core.management.base import BaseCommand

from annotation import long_format
from annotation.models import Judgment, Study
from common import commands, progress


class Command(BaseCommand):
    help = (
        "Write a study's judgments in the long format (JSON Lines unless --format csv; docs/reference.md) to standard "
        "output: the same file as the download of that format, so it re-imports exactly with import_judgments."
    )

    def add_arguments(self, parser):
        parser.add_argument("--study", required=True)
        parser.add_argument("--format", choices=long_format.FORMATS, default="jsonl",
                            help="default: jsonl (cab download judgments: csv)")

    def handle(self, *args, study: str, format: str, **options):
        found = Study.objects.filter(slug=study).first()
        if found is None:
            raise commands.study_missing(study)
        # The total is one count query, spent only when the bar is shown.
        total = Judgment.objects.filter(round__study=found).count() if progress.shown() else None
        out = commands.Utf8Out(self)  # the download's bytes, whatever the encoding of the shell's standard output
        with progress.bar(desc=f"exporting {study}", total=total, unit="judgment") as shown:
            for chunk in long_format.WRITERS[format](study=found):
                out.write(chunk)
                shown.update(chunk.count("\n") - (shown.n == 0 and format == "csv"))
        out.flush()
