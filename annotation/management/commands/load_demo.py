from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from access import roles
from annotation import care_demo, demo, lc8_demo, selectors
from annotation.models import Study


class Command(BaseCommand):
    help = ("Load the Appendix D examples into a demo study with one demo account per role and calibration-1 coded "
            "by an illustrative panel, leaving gold, the panel and the main round to the admin (idempotent).")

    def add_arguments(self, parser):
        parser.add_argument("--quiet", action="store_true", help="Do not print the logins.")
        parser.add_argument("--url", default="http://127.0.0.1:8000/",
                            help="Where the product is served, for the closing line (scripts/run passes the address "
                                 "it serves; default %(default)s, runserver's).")
        parser.add_argument("--care", action="store_true",
                            help="Also load the CARE demo study (care-demo: one synthetic history of sessions on "
                                 "care-v1, with an illustrative LLM judge's labels).")
        parser.add_argument("--lc8", action="store_true",
                            help="Also load the LongCounsel-8 demo study (lc8-demo: eight synthetic trajectories of "
                                 "five counseling sessions on lc8-v1, reference PHQ-8 labels and two illustrative "
                                 "methods' predictions).")

    def handle(self, *args, quiet: bool, care: bool = False, lc8: bool = False,
               url: str = "http://127.0.0.1:8000/", **options):
        # A demo study found loaded is left as it is (its admin may have taken it further): say what it holds now.
        present = set(Study.objects.filter(slug__in=[demo.DEMO_STUDY, care_demo.CARE_DEMO_STUDY,
                                                     lc8_demo.LC8_DEMO_STUDY]).values_list("slug", flat=True))
        with transaction.atomic():  # all or nothing
            result = demo.demo_load(care=care)
            if lc8:
                users = {role: get_user_model().objects.get(username=result.logins[role])
                         for role in (roles.ADMIN, roles.REVIEWER, roles.EXPERT)}
                lc8_demo.lc8_demo_load(admin=users[roles.ADMIN], reviewer=users[roles.REVIEWER],
                                       expert=users[roles.EXPERT])
        if quiet:
            return
        if demo.DEMO_STUDY in present:
            self.stdout.write(self.style.SUCCESS(
                f"Demo study '{result.study.name}' already present, left as it is: "
                f"{selectors.study_state_said(study=result.study)}."
            ))
            self.stdout.write("To start the walk-through again, stop the server, delete var/postgres and run "
                              "./scripts/run (README, 'Walk-through on the demo study').")
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
        if care:
            self._said(care_demo.CARE_DEMO_STUDY, present, "one SYNTHETIC history of five sessions (a crisis and a "
                       "callback) on care-v1, with the labels of demo-care-judge (a method).", label="CARE")
        if lc8:
            self._said(lc8_demo.LC8_DEMO_STUDY, present, "eight SYNTHETIC trajectories of five counseling sessions on "
                       "lc8-v1 with reference PHQ-8 labels and two illustrative methods; demo-reviewer and demo-expert "
                       "have the sessions to rate.", label="LC8")
        self.stdout.write("Demo logins (username / password):")
        for role, username in result.logins.items():
            self.stdout.write(f"  {role:<10}  {username} / {demo.DEMO_PASSWORD}")
        self.stdout.write(f"Open {url} (the study: /studies/{result.study.slug}/; the Django admin: /admin/)")

    def _said(self, slug: str, present: set[str], created: str, *, label: str) -> None:
        if slug in present:
            state = selectors.study_state_said(study=Study.objects.get(slug=slug))
            self.stdout.write(f"{label} demo study '{slug}' (/studies/{slug}/) already present, left as it is: "
                              f"{state}.")
        else:
            self.stdout.write(f"{label} demo study '{slug}' (/studies/{slug}/) created: {created}")
