from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from annotation import services
from common import progress

HEADER = "study\tround\tcoder\tposition\tcodes missing"


class Command(BaseCommand):
    help = (
        "List the completed turns of open rounds that are short of what completing them wants, by the check "
        "Complete turn makes (a score cleared under 0.2.0, whose saves kept such a turn completed, or a response "
        "added before migration 0023), each by study, round, coder and position; with --fix, send them back to "
        "their coders' queues in one transaction, recorded in the audit trail (round.turns_short_requeue, one "
        "event per round). Without --fix nothing changes. Items compared with gold in feedback and items of coders "
        "taken off their study are left as they are, and counted; so are closed rounds' items, which --closed "
        "checks and lists too (never sent back: reopen the round first). The step after migrating from 0.2.0 "
        "(README, Upgrading)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--fix", action="store_true",
                            help="take the turns listed out of the completed ones (default: list them, change nothing)")
        parser.add_argument("--closed", action="store_true",
                            help="check the completed turns of closed rounds too and list those short apart; they "
                                 "stay completed even with --fix (reopen the round, then run this again)")

    def handle(self, *args, fix: bool, closed: bool, **options):
        # The total is one count query, spent only when the bar is shown.
        total = services.turns_short_completed(closed=closed) if progress.shown() else None
        with progress.bar(desc="checking completed turns", total=total, unit="turn") as shown:
            found = services.turns_short_find(closed=closed, each=lambda: shown.update(1))
        self._list(found.short)
        if found.closed_short:
            self.stdout.write("Short in closed rounds, left as they are even with --fix (a closed round's record "
                              "stays what it was; reopen the round, then run this again):")
            self._list(found.closed_short)
        self.stdout.write(self._checked(found, closed=closed))
        if found.refused:
            self.stdout.write("Refused by the check, not checked, left as they are:")
            for turn in found.refused:
                self.stdout.write(f"{turn.study}\t{turn.round}\t{turn.coder}\t{turn.position}\t{turn.reason}")
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

    def _list(self, turns: list[services.ShortTurn]) -> None:
        if turns:
            self.stdout.write(HEADER)
        for turn in turns:
            self.stdout.write(f"{turn.study}\t{turn.round}\t{turn.coder}\t{turn.position}\t{turn.missing}")

    @staticmethod
    def _checked(found: services.ShortTurns, *, closed: bool) -> str:
        """What was checked, and what was not, each with why."""
        left = []
        if found.feedback_locked:
            left.append(f"{found.feedback_locked} compared with gold in feedback (their codes no longer change)")
        if found.not_members:
            left.append(f"{found.not_members} of coders taken off their study")
        if found.refused:
            left.append(f"{len(found.refused)} the check refused (listed below, each with why)")
        if found.closed_unchecked:
            left.append(f"{found.closed_unchecked} of closed rounds (--closed checks them too; a closed round's turns "
                        "go back to their queues only once it is reopened)")
        checked = f"{found.checked} completed turn(s) of open rounds checked"
        if closed:
            checked += (f", and {found.closed_checked} of closed rounds ({len(found.closed_short)} short: listed "
                        "apart, left as they are)")
        if left:
            checked += f"; not checked, left as they are: {', '.join(left)}"
        return checked + "."
