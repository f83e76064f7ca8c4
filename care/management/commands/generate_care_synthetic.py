import time
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.models import Study
from care.synthetic import CareSyntheticSpec, care_synthetic_generate


class Command(BaseCommand):
    help = (
        "Generate a clearly labelled synthetic CARE study on care-v1: histories of chat, crisis and callback "
        "sessions (placeholder text), an LLM judge registered as a method and human reviewers, each with labels "
        "of controllable accuracy, all written through the real importers."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--histories", type=int, required=True)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--models", type=int, default=2, help="Assistant model slots (histories round-robin).")
        parser.add_argument("--humans", type=int, default=2, help="Human reviewers who code beside the judge.")
        parser.add_argument("--judge-accuracy", type=float, default=0.8)
        parser.add_argument("--human-accuracy", type=float, default=0.88)
        parser.add_argument("--control-share", type=float, default=0.1, help="Share of histories without a crisis.")
        parser.add_argument("--method-labels", choices=Study.MethodLabels.values, default=Study.MethodLabels.BLINDED)
        parser.add_argument("--slug", default=None)

    def handle(self, *args: Any, **options: Any) -> None:
        checks = {
            "histories": options["histories"] >= 1, "models": options["models"] >= 1, "humans": options["humans"] >= 0,
            "judge-accuracy": 0 <= options["judge_accuracy"] <= 1,
            "human-accuracy": 0 <= options["human_accuracy"] <= 1,
            "control-share": 0 <= options["control_share"] <= 1,
        }
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            raise CommandError(f"out of range: --{', --'.join(bad)}")
        spec = CareSyntheticSpec(
            histories=options["histories"], seed=options["seed"], models=options["models"], humans=options["humans"],
            judge_accuracy=options["judge_accuracy"], human_accuracy=options["human_accuracy"],
            control_share=options["control_share"], method_labels=options["method_labels"], slug=options["slug"],
        )
        started = time.monotonic()
        try:
            result = care_synthetic_generate(spec)
        except ValidationError as error:  # the slug (annotation.services.study_slug_check), a generated account name
            named = error.message_dict if hasattr(error, "error_dict") else {"": error.messages}
            raise CommandError("; ".join(f"--slug: {message}" if field == "slug" else message
                                         for field, messages in named.items() for message in messages)) from error
        except ValueError as error:
            raise CommandError(str(error)) from error
        self.stdout.write(
            f"[SYNTHETIC] CARE study '{result.study.slug}': {result.histories} histories, {result.sessions} sessions, "
            f"{result.turns} turns, {result.judgments} judgments in {time.monotonic() - started:.1f} s"
        )
