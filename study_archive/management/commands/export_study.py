import gzip
import os
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.models import Study
from common import commands
from common.progress import WriteProgress
from study_archive.exporter import study_export


class Command(BaseCommand):
    help = (
        "Write a whole study (schema, conversations, members, rounds, assignments, judgments with spans, gold and "
        "history, workshop notes, alerts, metric runs, audit trail) as one JSON Lines archive that import_study "
        "reads in any installation. Gzip-compressed when the file name ends in .gz. No passwords or API tokens. "
        "A conversation the study's kind cannot place (stored before the kind checked it, e.g. under 0.2.0) is "
        "written as stored and named on standard error: import_study restores it as stored."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", help="study slug")
        parser.add_argument("-o", "--output", default="-", help="file to write (default: standard output)")

    def handle(self, *args: Any, study: str, output: str, **options: Any) -> None:
        # A file it cannot write is refused before anything is read, as export_bundle refuses it: ``OUT/`` was
        # written as a file named OUT, and a folder failed only once the whole study was exported.
        path = None if output == "-" else commands.output_file(output)
        found = Study.objects.select_related("schema").filter(slug=study).first()
        if found is None:
            raise commands.study_missing(study)
        # The archive is written whole whatever it holds; a conversation the study's kind cannot place (stored before
        # the kind checked it) is named on standard error, after the summary when there is one.
        warnings: list[str] = []
        if path is None:  # standard output
            out = commands.Utf8Out(self)  # UTF-8, as the file is, whatever the encoding of the shell's output
            study_export(study=found, out=out, warn=warnings.append)  # type: ignore[arg-type]
            out.flush()
            for warning in warnings:
                self.stderr.write(warning)
            return
        # Written beside the target and renamed when complete: a failed export never leaves a file that looks whole.
        partial = path.with_name(path.name + ".partial")
        started = time.monotonic()
        try:
            opener = gzip.open if path.name.endswith(".gz") else open
            with opener(partial, "wt", encoding="utf-8", newline="\n") as stream, \
                    WriteProgress(stream, desc=f"exporting {study}", unit="record") as shown:
                counts = study_export(study=found, out=shown, warn=warnings.append)  # type: ignore[arg-type]
            os.replace(partial, path)
        except OSError as error:
            partial.unlink(missing_ok=True)
            raise CommandError(f"{path}: {error.strerror or error}") from error
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        summary = ", ".join(f"{n} {kind}" for kind, n in counts.items() if kind not in ("archive", "end"))
        self.stderr.write(f"{path}: study {study!r} exported in {time.monotonic() - started:.1f} s ({summary})")
        for warning in warnings:
            self.stderr.write(warning)
