import shutil
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.models import Study
from common import commands
from metrics import selectors
from reports import bundle


class Command(BaseCommand):
    help = (
        "Write the study bundle of a succeeded metric run (docs/bundle.md): the judgments and the texts they were "
        "given, the gold, report.json, every figure and table, a printable report.html and datapackage.json, as one "
        "zip; the same file as the API's GET /api/v1/metric-runs/{id}/bundle.zip. The study's newest succeeded run "
        "unless --run names another."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", help="study slug")
        parser.add_argument("output", help="the zip file to write, or a folder to write it into under the name the "
                                            "download gives it (STUDY-runN-bundle.zip)")
        parser.add_argument("--run", type=int, default=None, help="a succeeded run of the study (default: the newest)")

    def handle(self, *args: object, study: str, output: str, run: int | None, **options: object) -> None:
        target = Path(output)
        if not target.is_dir():  # before the bundle is built (at paper scale, 38 s), as cab download checks it
            commands.output_folder(output)
        found = Study.objects.select_related("schema").filter(slug=study).first()
        if found is None:
            raise commands.study_missing(study)
        chosen = selectors.metric_run_latest_succeeded(study=found, run_id=run)
        if chosen is None:
            # metrics_report prints a report and stores no run: the paths that start one are these.
            raise CommandError(f"study {study} has no succeeded metric run"
                               + (f" {run}" if run is not None else "") + ": start one on the study's reports "
                               f"overview (/studies/{study}/reports/), with cab run or POST /api/v1/studies/{study}/"
                               "metric-runs/ (metrics_report stores none)")
        started = time.perf_counter()
        try:
            built = bundle.bundle_file(run=chosen)
        except bundle.BundleRefusedError as error:
            raise CommandError(str(error)) from error
        if target.is_dir():  # as cab download bundle -o FOLDER: the download's own name (its Content-Disposition)
            target = target / bundle.bundle_name(chosen)
        shutil.copyfile(built.path, target)
        self.stderr.write(f"wrote {target}: run {chosen.pk} of {found.slug}, {built.size:,} bytes, sha256 "
                          f"{built.sha256} ({time.perf_counter() - started:.1f} s)")
