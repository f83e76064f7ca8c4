import json

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from metrics import services


class Command(BaseCommand):
    help = "Print the SPEC §7 metrics report of a study as one JSON document."

    def add_arguments(self, parser):
        parser.add_argument("--study", required=True, help="study slug")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples")
        parser.add_argument("--indent", type=int, default=2)

    def handle(self, *args, study: str, seed: int, bootstrap: int, indent: int, **options):
        found = Study.objects.select_related("schema").filter(slug=study).first()
        if found is None:
            raise CommandError(f"no study with slug {study!r}")
        if bootstrap < 1:
            raise CommandError("--bootstrap must be at least 1")
        if not 0 <= seed < 2**32:
            raise CommandError("--seed must be between 0 and 2^32 - 1")
        report = services.report_build(study=found, seed=seed, bootstrap=bootstrap)
        document = json.dumps(report, indent=indent or None, sort_keys=True, allow_nan=False, ensure_ascii=False)
        self.stdout.write(document)
