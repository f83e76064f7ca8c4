import json
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotation import schema_document, services
from common import commands


class Command(BaseCommand):
    help = (
        "Install a schema document (docs/schema.md) from a JSON file, or update an installed one of the same slug "
        "while no study using it is open, through annotation.services.schema_install (the same checks and audit "
        "event, schema.install). The whole document is checked first; any problem is listed and nothing is "
        "written. The New study form and create_study then offer its slug."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path, help="the schema document, a JSON object")

    def handle(self, *args, file: Path, **options):
        commands.input_file(file)
        try:
            document = json.loads(file.read_text(encoding="utf-8-sig"))
        except OSError as error:
            raise CommandError(f"{file}: cannot be read ({error.strerror})") from None
        except UnicodeDecodeError:
            raise CommandError(f"{file}: is not UTF-8 text") from None
        except json.JSONDecodeError as error:
            raise CommandError(f"{file}: line {error.lineno}: not JSON: {error.msg}") from None
        try:
            with transaction.atomic():  # the schema, its attributes and subcategories, and the audit event together
                schema = services.schema_install(document=document, by=None)
        except schema_document.SchemaDocumentError as error:
            raise CommandError(f"{file}: {len(error.errors)} problem(s), nothing was installed:\n"
                               + "\n".join(error.errors)) from None
        except ValidationError as error:
            raise CommandError(f"{file}: {'; '.join(error.messages)}; nothing was installed") from None
        self.stdout.write(f"schema {schema.slug} version {schema.version} installed from {file}: "
                          f"{schema.attributes.count()} attributes")
