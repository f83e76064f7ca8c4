from pathlib import Path
from typing import IO, cast

from django.core.management.base import BaseCommand, CommandError

from annotation import session_labels
from annotation.models import Study
from common import commands, file_formats
from common.errors import RowErrors, not_utf8, text_newline
from common.progress import ReadProgress


class Command(BaseCommand):
    help = (
        "Import session labels (methods' predictions per seed, reference labels) in the long format "
        "(CSV or JSON Lines) into a study, all or nothing and idempotently. Register the coders first: manage.py "
        "register_coder --study SLUG --method NAME or --reference NAME, or the API's methods/ and references/ "
        "(docs/sessions.md)."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--study", required=True, help="study slug")
        parser.add_argument("--format", choices=file_formats.FORMATS, default=None,
                            help="default: from the file's name (.csv; .jsonl or .ndjson); another name is refused "
                                 "without it")
        parser.add_argument("--skip-judgments", action="store_true",
                            help="a whole export file: leave its judgment rows (those with a round) to "
                                 "import_judgments and count them as skipped")

    def handle(self, *args, file: Path, study: str, format: str | None, skip_judgments: bool, **options):
        fmt = commands.input_format(commands.input_file(file), format)
        found = Study.objects.select_related("schema").filter(slug=study).first()
        if found is None:
            raise commands.study_missing(study)
        try:
            with file.open(encoding="utf-8-sig", newline=text_newline(fmt)) as opened, \
                    ReadProgress(opened, desc=f"importing {file.name}", size=file.stat().st_size) as stream:
                summary = session_labels.session_labels_import(
                    study=found, rows=session_labels.read_file_rows(cast("IO[str]", stream), fmt=fmt), by=None,
                    numbered=True,
                    typed=fmt == "jsonl", skip_judgments=skip_judgments,
                )
        except UnicodeDecodeError as error:
            raise CommandError(f"{file}: {RowErrors([not_utf8(file.read_bytes())]).summary()}") from error
        except session_labels.JudgmentRowsGiven as error:
            raise CommandError(
                f"{file}: {error.summary()}\n{error.judgment_rows} of its rows are judgments (they name a round): a "
                "whole export? Import it whole with manage.py import_judgments (its judgments and session labels "
                "in one step), or run this again with --skip-judgments to import its session labels alone and "
                "count those rows as skipped.") from error
        except RowErrors as error:
            raise CommandError(f"{file}: {error.summary()}") from error
        coders = ", ".join(f"{name} {c['created']}/{c['updated']}/{c['unchanged']}"
                           for name, c in sorted(summary.coders.items()))
        self.stdout.write(
            f"{file}: {summary.created} session labels created, {summary.updated} updated, {summary.unchanged} "
            f"unchanged in study {study!r}" + (f"; {summary.skipped} judgment rows skipped" if skip_judgments else "")
            + (f"; per coder created/updated/unchanged: {coders}" if coders else "")
        )
