"""The parameters a person may choose for a metric run, with their ranges: one place, used by the API's input
serializer, the run service and the ``metrics_report`` command."""

from __future__ import annotations

from dataclasses import dataclass

SEED_MIN, SEED_MAX = 0, 2**32 - 1
BOOTSTRAP_MIN, BOOTSTRAP_MAX = 1, 100_000
DEFAULT_SEED = 0
DEFAULT_BOOTSTRAP = 1000
TOP_K_MIN, TOP_K_MAX = 1, 50
DEFAULT_TOP_K = 6  # docs/metrics.md#panel-selection: the admin retains the top k of the last calibration round


@dataclass(frozen=True)
class RunParameters:
    seed: int = DEFAULT_SEED
    bootstrap: int = DEFAULT_BOOTSTRAP
    top_k: int = DEFAULT_TOP_K

    def problems(self) -> dict[str, str]:
        """{parameter: what is wrong}; empty when every value is in its range."""
        problems = {}
        if not (isinstance(self.seed, int) and SEED_MIN <= self.seed <= SEED_MAX):
            problems["seed"] = f"must be a whole number from {SEED_MIN} to {SEED_MAX}"
        if not (isinstance(self.bootstrap, int) and BOOTSTRAP_MIN <= self.bootstrap <= BOOTSTRAP_MAX):
            problems["bootstrap"] = f"must be a whole number from {BOOTSTRAP_MIN} to {BOOTSTRAP_MAX}"
        if not (isinstance(self.top_k, int) and TOP_K_MIN <= self.top_k <= TOP_K_MAX):
            problems["top_k"] = f"must be a whole number from {TOP_K_MIN} to {TOP_K_MAX}"
        return problems

    @property
    def stability_ks(self) -> tuple[int, ...]:
        """The k of the bootstrap selection-stability shares: the panel size and the two below it (4, 5, 6 by
        default, as docs/metrics.md#bootstrap-selection-stability reports)."""
        return tuple(k for k in (self.top_k - 2, self.top_k - 1, self.top_k) if k >= 1)
