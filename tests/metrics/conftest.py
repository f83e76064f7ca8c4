"""Fixtures for the metrics tests: a succeeded metric run of ``cab-demo`` with a small report."""

from __future__ import annotations

import pytest

from tests.factories import MetricRunFactory

REPORT = {  # the shape of a report, with a model name that looks like a formula
    "version": 1,
    "calibration": {"reviewers": {}},
    "indices": {
        "uiri": {"mean": 0.4, "bands": {"low": 0.5, "medium": 0.3, "high": 0.2}, "by_dataset": {}},
        "flags": {"GPT": {"F1": 0.1, "F2": 0.0}, "-Claude": {"F1": 0.2, "F2": 0.05}},
        "ari": {"GPT": {"D": 0.2, "E": 0.1, "R": 0.3, "F": 0.1, "ARI": 0.18, "n_responses": 40}},
        "attribute_risk": {"GPT": {"AUR": 0.5}},
        "fingerprint": {"GPT": {"AUR": 1.2}},
    },
}


@pytest.fixture
def succeeded_run(study):
    return MetricRunFactory(study=study, status="succeeded", result=REPORT, progress=1.0,
                            finished_at="2026-01-02T00:00:00Z")
