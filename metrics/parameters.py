"""The parameters a person may choose for a metric run, with their ranges: one place, used by the API's input
serializer, the run service and the ``metrics_report`` command."""

from __future__ import annotations

from dataclasses import dataclass

SEED_MIN, SEED_MAX = 0, 2**32 - 1
BOOTSTRAP_MIN, BOOTSTRAP_MAX = 1, 100_000
DEFAULT_SEED = 0
DEFAULT_BOOTSTRAP = 1000


@dataclass(frozen=True)
class RunParameters:
    seed: int = DEFAULT_SEED
    bootstrap: int = DEFAULT_BOOTSTRAP

    def problems(self) -> dict[str, str]:
        """{parameter: what is wrong}; empty when every value is in its range."""
        problems = {}
        if not (isinstance(self.seed, int) and SEED_MIN <= self.seed <= SEED_MAX):
            problems["seed"] = f"must be a whole number from {SEED_MIN} to {SEED_MAX}"
        if not (isinstance(self.bootstrap, int) and BOOTSTRAP_MIN <= self.bootstrap <= BOOTSTRAP_MAX):
            problems["bootstrap"] = f"must be a whole number from {BOOTSTRAP_MIN} to {BOOTSTRAP_MAX}"
        return problems
