from pathlib import Path
from typing import IO, cast

from django.core.management.base import BaseCommand, CommandError

from annotation import judgment_import
from annotation.models import Study
from common import commands, file_formats
from common.errors import RowErrors
from common.progress import ReadProgress


class Command(BaseCommand):
    help = (
        "Import judgments in the long format (CSV or JSON Lines; docs/reference.md) into a study, all or nothing. A "
        "study that does not exist is refused, nothing read, unless --create-study says to create it (schema cab-v1); "
        "the rounds and reviewer accounts the file names are created either way. The session labels of an export "
        "(role method or reference, no round) are imported with the judgments."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--study", required=True, help="study slug")
        parser.add_argument("--format", choices=file_formats.FORMATS, default=None,
                            help="default: from the file's name (.csv; .jsonl or .ndjson); another name is refused "
                                 "without it")
        parser.add_argument("--create-study", action="store_true",
                            help="create the study when no study has its slug (schema cab-v1, opened by the import); "
                                 "without it such a slug is refused (a slug mistyped never makes a new study)")

    def handle(self, *args, file: Path, study: str, format: str | None, create_study: bool, **options):
        fmt = commands.input_format(commands.input_file(file), format)
        if not create_study and not Study.objects.filter(slug=study).exists():  # before the file is read
            raise commands.study_missing(study)
        try:
            with file.open("rb") as opened, \
                    ReadProgress(opened, desc=f"importing {file.name}", size=file.stat().st_size) as stream:
                summary = judgment_import.judgments_file_import(file=cast("IO[bytes]", stream), fmt=fmt,
                                                                study_slug=study, by=None,
                                                                create_study=create_study)
        except judgment_import.StudyMissing as error:  # gone since the check above
            raise commands.study_missing(study) from error
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
