import time
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from lc8.synthetic import PROFILES, Lc8SyntheticSpec, lc8_synthetic_build


class Command(BaseCommand):
    help = (
        "Generate a clearly labelled synthetic LongCounsel-8 study on lc8-v1: trajectories of counseling sessions "
        "(placeholder text), a reference coder's PHQ-8 labels (four trajectory types), methods' float PHQ-8 total "
        "predictions per seed (error profiles: " + ", ".join(p.name for p in PROFILES) + "; the first has the "
        "lower MAE, the second the better direction accuracy) and optionally human raters' session judgments."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--trajectories", type=int, required=True)
        parser.add_argument("--sessions", type=int, default=5, help="Sessions per trajectory.")
        parser.add_argument("--methods", type=int, default=2, help="Method coders (profiles cycle).")
        parser.add_argument("--seeds", type=int, default=3, help="Prediction seeds per method (0, 1, …).")
        parser.add_argument("--turns-per-session", type=int, default=2)
        parser.add_argument("--raters", type=int, default=0, help="Human raters who code the items of a subset.")
        parser.add_argument("--rated-trajectories", type=int, default=100,
                            help="How many trajectories (the first ones) the raters code, every session.")
        parser.add_argument("--rater-accuracy", type=float, default=0.75)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--slug", default=None)

    def handle(self, *args: Any, **options: Any) -> None:
        spec = Lc8SyntheticSpec(
            trajectories=options["trajectories"], sessions=options["sessions"], methods=options["methods"],
            seeds=options["seeds"], turns_per_session=options["turns_per_session"], raters=options["raters"],
            rated_trajectories=options["rated_trajectories"], rater_accuracy=options["rater_accuracy"],
            seed=options["seed"], slug=options["slug"],
        )
        started = time.monotonic()
        try:
            result = lc8_synthetic_build(spec)
        except ValidationError as error:  # the slug (annotation.services.study_slug_check), a generated account name
            named = error.message_dict if hasattr(error, "error_dict") else {"": error.messages}
            raise CommandError("; ".join(f"--slug: {message}" if field == "slug" else message
                                         for field, messages in named.items() for message in messages)) from error
        except ValueError as error:
            raise CommandError(str(error)) from error
        types = ", ".join(f"{k} {v}" for k, v in result.reference_types.items())
        self.stdout.write(
            f"[SYNTHETIC] LC8 study '{result.study.slug}': {result.trajectories} trajectories ({types}), "
            f"{result.sessions} sessions, {result.turns} turns, {result.reference_labels} reference labels, "
            f"{result.predictions} predictions of {len(result.methods)} methods, {result.judgments} rater judgments "
            f"in {time.monotonic() - started:.1f} s"
        )
