from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from annotation import services


class Command(BaseCommand):
    help = (
        "List the completed turns of open rounds that are short of what completing them wants, by the check "
        "Complete turn makes (a score cleared under 0.2.0, whose saves kept such a turn completed, or a response "
        "added before migration 0023), each by study, round, coder and position; with --fix, send them back to "
        "their coders' queues in one transaction, recorded in the audit trail (round.turns_short_requeue, one "
        "event per round). Without --fix nothing changes. Items compared with gold in feedback and items of coders "
        "taken off their study are left as they are, and counted. The step after migrating from 0.2.0 (README, "
        "Upgrading)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--fix", action="store_true",
                            help="take the turns listed out of the completed ones (default: list them, change nothing)")

    def handle(self, *args, fix: bool, **options):
        found = services.turns_short_find()
        if found.short:
            self.stdout.write("study\tround\tcoder\tposition\tcodes missing")
        for turn in found.short:
            self.stdout.write(f"{turn.study}\t{turn.round}\t{turn.coder}\t{turn.position}\t{turn.missing}")
        left = []
        if found.feedback_locked:
            left.append(f"{found.feedback_locked} compared with gold in feedback (their codes no longer change)")
        if found.not_members:
            left.append(f"{found.not_members} of coders taken off their study")
        checked = f"{found.checked} completed turn(s) of open rounds checked"
        if left:
            checked += f"; not checked, left as they are: {', '.join(left)}"
        self.stdout.write(checked + ".")
        if not fix:
            self.stdout.write(f"{len(found.short)} completed turn(s) are short of what completing them wants. Dry run: "
                              "nothing changed" + ("; run with --fix to send them back to their coders' queues."
                                                   if found.short else "."))
            return
        try:
            requeued = services.turns_short_requeue(found=found.short, by=None)
        except ValidationError as error:
            raise CommandError("; ".join(error.messages)) from error
        kept = len(found.short) - len(requeued)
        self.stdout.write(f"{len(requeued)} completed turn(s) went back to their coders' queues (audit event "
                          "round.turns_short_requeue)"
                          + (f"; {kept} changed meanwhile (completed again with every code, their round closed or "
                             "their coder taken off): left as they are." if kept else "."))
