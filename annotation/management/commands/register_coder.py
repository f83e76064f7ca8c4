from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotation import automated_coders
from annotation.models import Study
from common.commands import study_missing


class Command(BaseCommand):
    help = (
        "Register an automated coder in a study, as POST /api/v1/studies/S/methods/ and …/references/ do (the same "
        "service, checks and audit event; idempotent): a method (an LLM judge or a tracking method, whose labels "
        "then arrive by import_judgments or import_session_labels with role method) or a reference coder (the "
        "source of a study's reference labels, e.g. the controlled PHQ-8 state). Examples: register_coder --study "
        "pilot --method gpt-judge --method-version v2 --prompt-id judge-v3; register_coder --study tracking-pilot "
        "--reference phq8-state --description 'controlled PHQ-8 state'"
    )

    def add_arguments(self, parser):
        parser.add_argument("--study", required=True, help="the study's slug")
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--method", metavar="NAME", help="register NAME as a method (automated coder)")
        which.add_argument("--reference", metavar="NAME", help="register NAME as a reference coder")
        parser.add_argument("--method-version", default="", help="--method: its version (default: none)")
        parser.add_argument("--prompt-id", default="", help="--method: its prompt's id (default: none)")
        parser.add_argument("--description", default="", help="--reference: what its labels are (default: none)")

    def handle(self, *args, **options):
        study = Study.objects.filter(slug=options["study"]).first()
        if study is None:
            raise study_missing(options["study"])
        if options["method"] is not None and options["description"]:
            raise CommandError("--description: only for --reference (a method has --method-version and --prompt-id)")
        if options["reference"] is not None and (options["method_version"] or options["prompt_id"]):
            raise CommandError("--method-version, --prompt-id: only for --method (a reference has --description)")
        try:
            with transaction.atomic():
                if options["method"] is not None:
                    member = automated_coders.method_register(study=study, name=options["method"],
                                                              version=options["method_version"],
                                                              prompt_id=options["prompt_id"], by=None)
                    kind = "method"
                else:
                    member = automated_coders.reference_register(study=study, name=options["reference"],
                                                                 description=options["description"], by=None)
                    kind = "reference coder"
        except ValidationError as error:  # the service's checks, by field: named by their options
            flags = {"name": "--method" if options["method"] is not None else "--reference",
                     "version": "--method-version", "prompt_id": "--prompt-id", "description": "--description"}
            raise CommandError("; ".join(f"{flags.get(field, '--' + field)}: {message}"
                                         for field, messages in automated_coders.coder_errors(error).items()
                                         for message in messages)) from error
        self.stdout.write(f"{member.method_name} is a {kind} of study {study.slug}")
