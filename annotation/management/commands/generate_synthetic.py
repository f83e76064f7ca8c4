import time

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from annotation.synthetic import SYNTHETIC_STAGES, SyntheticSpec, synthetic_generate
from common.progress import stages


class Command(BaseCommand):
    help = (
        "Generate a clearly labelled synthetic study (conversations, calibration rounds with gold, main-round "
        "judgments with controllable agreement). Paper scale: --conversations 1576 --responses 42230."
    )

    def add_arguments(self, parser):
        parser.add_argument("--conversations", type=int, required=True)
        parser.add_argument("--models", type=int, default=5)
        parser.add_argument("--reviewers", type=int, default=7)
        parser.add_argument("--experts", type=int, default=2)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--responses", type=int, default=None, help="Total model responses (exact).")
        parser.add_argument("--multi-share", type=float, default=0.2, help="Share of multi-turn conversations.")
        parser.add_argument("--agreement", type=float, default=0.8, help="Mean chance a reviewer matches gold.")
        parser.add_argument("--calibration-rounds", type=int, default=2)
        parser.add_argument("--calibration-turns", type=int, default=10)
        parser.add_argument("--coders-per-turn", type=int, default=1, help="Main-round coders per turn.")
        parser.add_argument("--panel-size", type=int, default=6)
        parser.add_argument("--span-rate", type=float, default=0.3)
        parser.add_argument("--slug", default=None)

    def handle(self, *args, **options):
        checks = {
            "conversations": options["conversations"] >= 1, "models": options["models"] >= 1,
            "reviewers": options["reviewers"] >= 1, "experts": options["experts"] >= 0,
            "multi-share": 0 <= options["multi_share"] <= 1, "agreement": 0 <= options["agreement"] <= 1,
            "span-rate": 0 <= options["span_rate"] <= 1, "coders-per-turn": options["coders_per_turn"] >= 1,
        }
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            raise CommandError(f"out of range: --{', --'.join(bad)}")
        if options["responses"] is not None and options["responses"] < 1:
            raise CommandError("--responses must be at least 1")
        spec = SyntheticSpec(
            conversations=options["conversations"], models=options["models"], reviewers=options["reviewers"],
            experts=options["experts"], seed=options["seed"], responses=options["responses"],
            multi_share=options["multi_share"], agreement=options["agreement"],
            calibration_rounds=options["calibration_rounds"], calibration_turns=options["calibration_turns"],
            coders_per_turn=options["coders_per_turn"], panel_size=options["panel_size"],
            span_rate=options["span_rate"], slug=options["slug"],
        )
        started = time.monotonic()
        try:
            with stages(f"generating {spec.slug or 'synthetic-' + str(spec.seed)}", SYNTHETIC_STAGES) as stage:
                result = synthetic_generate(spec, progress=stage)
        except ValidationError as error:  # the slug (annotation.services.study_slug_check), a generated account name
            named = error.message_dict if hasattr(error, "error_dict") else {"": error.messages}
            raise CommandError("; ".join(f"--slug: {message}" if field == "slug" else message
                                         for field, messages in named.items() for message in messages)) from error
        except ValueError as error:
            raise CommandError(str(error)) from error
        self.stdout.write(
            f"[SYNTHETIC] study '{result.study.slug}': {result.conversations} conversations, {result.turns} turns, "
            f"{result.responses} responses, {result.judgments} judgments, {result.spans} spans "
            f"in {time.monotonic() - started:.1f} s"
        )
