from django.core.management.base import BaseCommand

from annotation import demo


class Command(BaseCommand):
    help = "Load the Appendix D examples into a demo study with one demo account per role (idempotent)."

    def add_arguments(self, parser):
        parser.add_argument("--quiet", action="store_true", help="Do not print the logins.")

    def handle(self, *args, quiet: bool, **options):
        result = demo.demo_load()
        if quiet:
            return
        self.stdout.write(self.style.SUCCESS(
            f"Demo study '{result.study.name}': {result.conversations} conversations, {result.responses} model "
            "responses."
        ))
        self.stdout.write("Demo logins (username / password):")
        for role, username in result.logins.items():
            self.stdout.write(f"  {role:<10}  {username} / {demo.DEMO_PASSWORD}")
        self.stdout.write("Open http://127.0.0.1:8000/ (admin: http://127.0.0.1:8000/admin/)")
