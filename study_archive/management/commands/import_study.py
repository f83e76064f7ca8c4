import gzip
import io
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from common import commands
from common.progress import ReadProgress
from study_archive.importer import study_import
from study_archive.records import ArchiveError


class Command(BaseCommand):
    help = (
        "Import a study archive written by export_study, all or nothing. Accounts are matched by username; missing "
        "ones are created with their roles and no usable password. The schema is reused when identical; the study "
        "slug must be free (--as imports under another one). A conversation the study's kind cannot place (stored "
        "before the kind checked it, e.g. under 0.2.0) is restored as stored, as the archived study held it, and "
        "named in a warning and in the import's audit event."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--as", dest="as_slug", default=None, metavar="NEW_SLUG",
                            help="import the study under this slug instead of the archived one")

    def handle(self, *args: Any, file: Path, as_slug: str | None, **options: Any) -> None:
        commands.input_file(file)
        started = time.monotonic()
        warnings: list[str] = []  # conversations the study's kind cannot place, restored as stored
        try:
            with file.open("rb") as opened, \
                    ReadProgress(opened, desc=f"importing {file.name}", size=file.stat().st_size) as raw:
                compressed = opened.read(2) == b"\x1f\x8b"
                opened.seek(0)
                binary = gzip.GzipFile(fileobj=raw, mode="rb") if compressed else raw
                with io.TextIOWrapper(binary, encoding="utf-8-sig", newline="\n") as lines:
                    study = study_import(lines=lines, as_slug=as_slug, by=None, warn=warnings.append)
        except ArchiveError as error:
            raise CommandError(f"{file}: {error}; nothing was imported") from error
        except OSError as error:
            raise CommandError(f"{file}: {error.strerror or error}; nothing was imported") from error
        self.stdout.write(f"{file}: study {study.slug!r} imported in {time.monotonic() - started:.1f} s")
        for warning in warnings:
            self.stdout.write(warning)
