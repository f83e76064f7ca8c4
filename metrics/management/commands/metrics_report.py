import json

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from common import commands
from common.progress import fraction_bar
from metrics import runs
from metrics.core.report_file import canonical
from metrics.kind_sections import default_bootstrap
from metrics.parameters import DEFAULT_SEED, DEFAULT_TOP_K, RunParameters
from metrics.report_warnings import section_warnings


class Command(BaseCommand):
    help = ("Print the metrics report (docs/metrics.md) of a study as one JSON document. A section that is empty "
            "although the study has judgments or session labels for it is named on stderr (the report's warnings).")

    def add_arguments(self, parser):
        parser.add_argument("--study", required=True, help="study slug")
        parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
        parser.add_argument("--bootstrap", type=int, default=None,
                            help="bootstrap resamples (default: the study's, docs/metrics.md#parameters-of-a-run)")
        parser.add_argument("--top-k", type=int, default=DEFAULT_TOP_K, dest="top_k",
                            help="panel size k (ranking cut; stability shares for k-2, k-1, k)")
        parser.add_argument("--indent", type=int, default=2)

    def handle(self, *args, study: str, seed: int, bootstrap: int | None, top_k: int, indent: int, **options):
        found = Study.objects.select_related("schema").filter(slug=study).first()
        if found is None:
            raise commands.study_missing(study)
        if bootstrap is None:
            bootstrap = default_bootstrap(found)
        problems = RunParameters(seed=seed, bootstrap=bootstrap, top_k=top_k).problems()
        if problems:
            raise CommandError("; ".join(f"--{name.replace('_', '-')} {message}" for name, message in problems.items()))
        with fraction_bar(f"report of {study}") as progress:
            report = runs.report_build(study=found, seed=seed, bootstrap=bootstrap, top_k=top_k, progress=progress)
        # As the downloads write it (report_file_text): keys in the stored report's order, its numbers as stored.
        document = json.dumps(canonical(report), indent=indent or None, allow_nan=False, ensure_ascii=False)
        self.stdout.write(document)
        for message in section_warnings(report):  # an empty section the study coded for: said, beside the JSON
            self.stderr.write(f"warning: {message}")
