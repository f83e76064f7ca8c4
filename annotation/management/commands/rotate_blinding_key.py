from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from annotation import services
from annotation.models import Study
from common import commands


class Command(BaseCommand):
    help = (
        "Give a study a new random blinding key, the key of its reviewers' response handles (and so of the order "
        "in which each reviewer sees a turn's responses), as the Rotate button of the study's settings page does: "
        "the same service and audit event (study.blinding_rotate, without the key). Refused while a round of the "
        "study is open, since reviewers' open pages name responses by the current key. A study created before "
        "study keys existed has a key derived from the SECRET_KEY of that time until this is run."
    )

    def add_arguments(self, parser):
        parser.add_argument("study", help="the study's slug")

    def handle(self, *args, study: str, **options):
        found = Study.objects.filter(slug=study).first()
        if found is None:
            raise commands.study_missing(study)
        try:
            services.study_blinding_key_rotate(study=found, by=None)
        except ValidationError as error:
            raise CommandError("; ".join(error.messages)) from error
        self.stdout.write(f"study {found.slug} has a new blinding key: its reviewers' response handles and the order "
                          "of each turn's responses changed")
