from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction

from annotation import demo, selectors
from annotation.kinds import StudyKind, kinds
from annotation.models import Study


class Command(BaseCommand):
    help = ("Load the Appendix D examples into a demo study with one demo account per role and calibration-1 coded "
            "by an illustrative panel, leaving gold, the panel and the main round to the admin (idempotent).")

    def add_arguments(self, parser):
        parser.add_argument("--quiet", action="store_true", help="Do not print the logins.")
        parser.add_argument("--url", help="Where the product is served, for the closing line (scripts/run passes the "
                                          "address it serves; without it the line points to the address the server "
                                          "prints, which this command cannot know).")
        for kind in _with_demo():  # --<kind>: each kind's demo study
            parser.add_argument(f"--{kind.slug}", action="store_true", help=kind.demo.option_help)  # type: ignore[union-attr]

    def handle(self, *args, quiet: bool, url: str | None = None, **options):
        chosen = [kind for kind in _with_demo() if options.get(kind.slug)]
        # A demo study found loaded is left as it is (its admin may have taken it further): say what it holds now.
        slugs = [demo.DEMO_STUDY, *(kind.demo.study for kind in chosen if kind.demo is not None)]
        present = set(Study.objects.filter(slug__in=slugs).values_list("slug", flat=True))
        try:
            with transaction.atomic():  # all or nothing
                result = demo.demo_load(kinds=chosen)
        except ImproperlyConfigured as refused:  # in production: said in a line, not a traceback
            raise CommandError(f"{refused}; the demo runs on ./scripts/run (README, 'Quick start')") from None
        if quiet:
            return
        if demo.DEMO_STUDY in present:
            self.stdout.write(self.style.SUCCESS(
                f"Demo study '{result.study.name}' already present, left as it is: "
                f"{selectors.study_state_said(study=result.study)}."
            ))
            self.stdout.write(f"To start the walk-through again, {_start_afresh()} and run ./scripts/run (README, "
                              "'Walk-through on the demo study').")
        else:
            self.stdout.write(self.style.SUCCESS(
                f"Demo study '{result.study.name}' created: {result.conversations} conversations, {result.responses} "
                "model responses."
            ))
            self.stdout.write(
                "calibration-1 is open, coded by the illustrative panel (demo-panel-1…3, generated codings) and "
                "demo-expert; gold, closing, the panel and the main round are left to demo-admin: follow the README, "
                "'Walk-through on the demo study'."
            )
        for kind in chosen:
            if kind.demo is not None:
                self._said(kind.demo.study, present, kind.demo.said, label=kind.demo.label)
        self.stdout.write("Demo logins (username / password):")
        for role, username in result.logins.items():
            self.stdout.write(f"  {role:<10}  {username} / {demo.DEMO_PASSWORD}")
        where = url or "the address ./scripts/run (or manage.py runserver) prints"
        self.stdout.write(f"Open {where} (the study: /studies/{result.study.slug}/; the Django admin: /admin/)")

    def _said(self, slug: str, present: set[str], created: str, *, label: str) -> None:
        if slug in present:
            state = selectors.study_state_said(study=Study.objects.get(slug=slug))
            self.stdout.write(f"{label} demo study '{slug}' (/studies/{slug}/) already present, left as it is: "
                              f"{state}.")
        else:
            self.stdout.write(f"{label} demo study '{slug}' (/studies/{slug}/) created: {created}")


def _start_afresh() -> str:
    """How to empty this installation's database: the embedded server's folder (``CAB_VAR_DIR``'s ``postgres``,
    cab.embedded_db) is deleted; a PostgreSQL of its own (``DATABASE_URL``) is the operator's to drop and create."""
    embedded = connection.settings_dict.get("EMBEDDED_ROOT")
    if embedded:
        return f"stop the server, delete {embedded}"
    return f"stop the server, drop and create the database {connection.settings_dict['NAME']} (DATABASE_URL)"


def _with_demo() -> list[StudyKind]:
    return [kind for kind in kinds().values() if kind.demo is not None]
