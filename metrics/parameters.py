"""The parameters a person may choose for a metric run, with their ranges and the words of a refusal: one place, used
by the reports overview's form, the API's input serializer, the run service and the ``metrics_report`` command."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SEED_MIN, SEED_MAX = 0, 2**32 - 1
BOOTSTRAP_MIN, BOOTSTRAP_MAX = 1, 100_000
DEFAULT_SEED = 0
DEFAULT_BOOTSTRAP = 1000
TOP_K_MIN, TOP_K_MAX = 1, 50
DEFAULT_TOP_K = 6  # docs/metrics.md#panel-selection: the admin retains the top k of the last calibration round


RANGES = {"seed": (SEED_MIN, SEED_MAX), "bootstrap": (BOOTSTRAP_MIN, BOOTSTRAP_MAX), "top_k": (TOP_K_MIN, TOP_K_MAX)}


def problem(name: str) -> str:
    """What is wrong with a value of the parameter ``name`` that is out of its range or no whole number: the words
    of every path (the reports overview's form, the API, the run service, ``metrics_report``)."""
    low, high = RANGES[name]
    return f"must be a whole number from {low} to {high}"


def error_messages(name: str) -> dict[str, Any]:
    """A form's or a serializer's integer field's refusals (Django's and DRF's keys) in ``problem``'s words."""
    return dict.fromkeys(("required", "invalid", "min_value", "max_value", "max_string_length"), problem(name))


@dataclass(frozen=True)
class RunParameters:
    seed: int = DEFAULT_SEED
    bootstrap: int = DEFAULT_BOOTSTRAP
    top_k: int = DEFAULT_TOP_K

    def problems(self) -> dict[str, str]:
        """{parameter: what is wrong}; empty when every value is in its range."""
        return {name: problem(name) for name, (low, high) in RANGES.items()
                if not (isinstance(value := getattr(self, name), int) and low <= value <= high)}

    @property
    def stability_ks(self) -> tuple[int, ...]:
        """The k of the bootstrap selection-stability shares: the panel size and the two below it (4, 5, 6 by
        default, as docs/metrics.md#bootstrap-selection-stability reports)."""
        return tuple(k for k in (self.top_k - 2, self.top_k - 1, self.top_k) if k >= 1)
