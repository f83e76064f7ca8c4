import argparse

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.core.management.base import BaseCommand, CommandError

from annotation.forms import SCRIPT_NAMES, StudyForm, study_create_scripted

# The form's fields as options: --slug, --check-threshold, …; the model slots one --model-slot each.
OPTIONS = {"model_slots": "--model-slot"}


def option(field: str) -> str:
    name = SCRIPT_NAMES.get(field, field)
    return OPTIONS.get(name, f"--{name.replace('_', '-')}")


HELP = {
    "slug": "required: letters, digits, - and _, at most 80 characters",
    "schema": "required: an installed schema's slug (cab-v1, or a study kind's: docs/schema.md)",
    "name": "default: the slug",
    "description": "default: none",
}


def _help(field: forms.Field, default: object) -> str:
    """The field's help on the page, its choices and its default (none said when it has none)."""
    text = str(field.help_text or field.label or "").rstrip(".") + "."
    if isinstance(field, forms.ChoiceField):
        choices: list[tuple[str, str]] = list(getattr(field, "choices", []))
        text += f" One of {', '.join(value for value, _ in choices if value)}."
    return text if default in ("", None) else f"{text} Default: {default}."


class Command(BaseCommand):
    help = (
        "Create a study in set-up, as the admin's New study form does: the same fields, checks and messages, the "
        "same service and audit event; nothing is written when a value is refused. Every field of the form is an "
        "option; a setting left out has the form's default. Example: create_study --slug pilot --schema "
        "cab-v1 --model-slot GPT --model-slot Claude --check-threshold 0.8"
    )

    def add_arguments(self, parser):
        page = StudyForm()
        # A study kind's own setting has no initial value on the form (blank: the kind's default), so its default
        # is the setting's.
        defaults = {setting.name: setting.default for _, setting in page.kind_settings_offered()}
        for name, field in page.fields.items():
            flag = option(name)
            if name == "model_slots_text":
                parser.add_argument(flag, dest="model_slots", action="append", metavar="SLOT",
                                    help="required: a model slot under study; repeat for each, e.g. --model-slot "
                                         "GPT --model-slot Claude")
                continue
            help_text = HELP.get(name) or _help(field, defaults.get(name, page.get_initial_for_field(field, name)))
            if isinstance(field, forms.BooleanField):
                parser.add_argument(flag, dest=name, action=argparse.BooleanOptionalAction, default=None,
                                    help=help_text)
            else:
                parser.add_argument(flag, dest=name, help=help_text)

    def handle(self, *args, **options):
        fields = {SCRIPT_NAMES.get(name, name) for name in StudyForm().fields}
        given = {name: value for name, value in options.items() if name in fields and value is not None}
        try:
            study = study_create_scripted(given=given, by=None)
        except ValidationError as error:
            raise CommandError("; ".join(
                f"{message}" if name == NON_FIELD_ERRORS else f"{option(name)}: {message}"
                for name, messages in error.message_dict.items() for message in messages)) from error
        self.stdout.write(
            f"study {study.slug} created in set-up (schema {study.schema.slug}, model slots "
            f"{', '.join(study.model_slots)}): import its conversations and judgments, add people on its page"
        )
