from pathlib import Path
from typing import IO, Any

from django.core.management.base import BaseCommand

from annotation import long_format
from annotation.models import Judgment, Study
from common import command_files, commands, outage, progress


class Command(BaseCommand):
    help = (
        "Write a study's judgments in the long format (JSON Lines unless --format csv; docs/reference.md) to standard "
        "output, or to --output FILE: the same file as the download of that format, so it re-imports exactly with "
        "import_judgments. An export that fails halfway exits 1 and says on standard error that what was written is "
        "incomplete and how many rows it holds; with --output it leaves no file of that name."
    )

    def add_arguments(self, parser):
        parser.add_argument("--study", required=True)
        parser.add_argument("--format", choices=long_format.FORMATS, default="jsonl",
                            help="default: jsonl (cab download judgments: csv)")
        parser.add_argument("-o", "--output", type=Path, default=None,
                            help="the file to write, whole or not at all (written beside it and renamed when "
                                 "complete: an export that fails leaves no file of this name, and one already there "
                                 "as it was); default, or -: standard output")

    def handle(self, *args, study: str, format: str, output: Path | None, **options):
        target = commands.output_file(output) if output is not None and str(output) != "-" else None
        found = Study.objects.filter(slug=study).first()
        if found is None:
            raise commands.study_missing(study)
        # The total is one count query, spent only when the bar is shown.
        total = Judgment.objects.filter(round__study=found).count() if progress.shown() else None
        written = [0]  # the file's rows handed on so far (its CSV header not counted)
        try:
            if target is None:
                out = commands.Utf8Out(self)  # the download's bytes, whatever the encoding of the shell's output
                try:
                    self._export(found, format, out, total, written)
                finally:
                    out.flush()
            else:
                with command_files.written_whole(target) as stream:
                    self._export(found, format, _Utf8(stream), total, written)
        except Exception as error:
            self.stderr.write(_stopped(study, target, written[0], error))
            raise

    @staticmethod
    def _export(study: Study, fmt: str, out: Any, total: int | None, written: list[int]) -> None:
        ending = "\r\n" if fmt == "csv" else "\n"  # a CSV cell may hold a "\n", never the "\r\n" that ends its row
        header = fmt == "csv"
        with progress.bar(desc=f"exporting {study.slug}", total=total, unit="judgment") as shown:
            for chunk in long_format.WRITERS[fmt](study=study):
                out.write(chunk)
                rows = chunk.count(ending) - header
                header = False
                written[0] += rows
                shown.update(rows)


class _Utf8:
    """A binary file written as the UTF-8 text of the file (what ``Utf8Out`` writes to standard output)."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(text.encode("utf-8"))
        return len(text)


def _stopped(study: str, target: Path | None, rows: int, error: Exception) -> str:
    """What an export that failed halfway says on standard error, before its error: the rows written, and that they
    are not the study's file."""
    why = outage.said(error) or "it failed"
    detail = next((line.strip() for line in str(error).splitlines() if line.strip()), "")
    cause = f"{why} ({type(error).__name__}{': ' + detail if detail else ''})"
    if target is None:
        return (f"export_judgments: the export of study {study!r} stopped after {rows} row(s): {cause}. The output "
                f"is INCOMPLETE (its first {rows} row(s) only): do not use it; run the command again (with --output "
                "FILE, a failed export leaves no file).")
    return (f"export_judgments: {target} was not written: the export of study {study!r} stopped after {rows} "
            f"row(s): {cause}. No file of that name was left (one already there is as it was); run the command "
            "again.")
