import gzip
import io
import time
from typing import Any, BinaryIO, TextIO

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.models import Study
from common import command_files, commands
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
        # Written beside the target and renamed when complete (``command_files.written_whole``): a failed export never
        # leaves a file that looks whole, nor touches one already there; two exports to one name never share a file.
        started = time.monotonic()
        try:
            with command_files.written_whole(path) as raw, _text(raw, gz=path.name.endswith(".gz")) as stream, \
                    WriteProgress(stream, desc=f"exporting {study}", unit="record") as shown:
                counts = study_export(study=found, out=shown, warn=warnings.append)  # type: ignore[arg-type]
        except OSError as error:
            raise CommandError(f"{path}: {error.strerror or error}") from error
        summary = ", ".join(f"{n} {kind}" for kind, n in counts.items() if kind not in ("archive", "end"))
        self.stderr.write(f"{path}: study {study!r} exported in {time.monotonic() - started:.1f} s ({summary})")
        for warning in warnings:
            self.stderr.write(warning)


def _text(raw: BinaryIO, *, gz: bool) -> TextIO:
    """The archive's text stream over the file being written: UTF-8 with ``\\n`` line ends, gzip-compressed for a
    ``.gz`` name."""
    if gz:
        return gzip.open(raw, "wt", encoding="utf-8", newline="\n")
    return io.TextIOWrapper(raw, encoding="utf-8", newline="\n")

