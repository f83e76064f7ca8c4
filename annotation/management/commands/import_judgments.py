from pathlib import Path
from typing import IO, cast

from django.core.management.base import BaseCommand, CommandError

from annotation import judgment_import
from common import commands, file_formats
from common.errors import RowErrors
from common.progress import ReadProgress


class Command(BaseCommand):
    help = (
        "Import judgments in the long format (CSV or JSON Lines; docs/reference.md) into a study, all or nothing. A "
        "missing study is created with schema cab-v1 together with the rounds and reviewer accounts the file names. "
        "The session labels of an export (role method or reference, no round) are imported with the judgments."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--study", required=True, help="study slug")
        parser.add_argument("--format", choices=file_formats.FORMATS, default=None,
                            help="default: from the file's name (.csv; .jsonl or .ndjson); another name is refused "
                                 "without it")

    def handle(self, *args, file: Path, study: str, format: str | None, **options):
        fmt = commands.input_format(commands.input_file(file), format)
        try:
            with file.open("rb") as opened, \
                    ReadProgress(opened, desc=f"importing {file.name}", size=file.stat().st_size) as stream:
                summary = judgment_import.judgments_file_import(file=cast("IO[bytes]", stream), fmt=fmt,
                                                                study_slug=study, by=None)
        except RowErrors as error:
            raise CommandError(f"{file}: {error.summary()}") from error
        created = "created" if summary.study_created else "existing"
        labelled = summary.session_labels_created + summary.session_labels_updated + summary.session_labels_unchanged
        self.stdout.write(
            f"{file}: {summary.judgments_created} judgments and {summary.spans_created} spans imported into "
            f"{created} study {study!r}; {summary.judgments_unchanged} unchanged; rounds created: "
            f"{', '.join(summary.rounds_created) or 'none'}; accounts created: {len(summary.accounts_created)}"
            + (f"; session labels: {summary.session_labels_created} created, {summary.session_labels_updated} "
               f"updated, {summary.session_labels_unchanged} unchanged" if labelled else "")
        )
