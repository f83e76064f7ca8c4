from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from benchmark import conversation_ingest
from common import commands
from common.errors import JSON_LINES_NEWLINE, RowErrors, not_utf8
from common.progress import ReadProgress


class Command(BaseCommand):
    help = ("Import conversations in the JSON Lines format of docs/reference.md (all or nothing; re-importing changes "
            "nothing). An import without a study: it adds conversations, turns and responses, but changes no material "
            "a study owns or uses (change that through the study's API or upload page) and no text reviewers coded "
            "against.")

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path, help="JSON Lines file, one conversation per line")

    def handle(self, *args, file: Path, **options):
        commands.input_file(file)
        try:
            with file.open(encoding="utf-8-sig", newline=JSON_LINES_NEWLINE) as stream, \
                    ReadProgress(stream, desc=f"reading {file.name}", size=file.stat().st_size) as shown:
                summary = conversation_ingest.conversations_upload(stream=shown)  # as the upload page's, no study
        except UnicodeDecodeError as error:
            raise CommandError(f"{file}: {RowErrors([not_utf8(file.read_bytes())]).summary()}") from error
        except RowErrors as error:
            raise CommandError(f"{file}: {error.summary()}") from error
        self.stdout.write(
            f"{file}: {summary.conversations_created} conversations created, {summary.conversations_updated} updated, "
            f"{summary.conversations_unchanged} unchanged; {summary.turns_created} turns and "
            f"{summary.responses_created} responses created, {summary.responses_updated} responses updated"
            + (f"; {summary.sessions_created} sessions created, {summary.sessions_updated} updated"
               if summary.sessions_created or summary.sessions_updated else "")
        )
