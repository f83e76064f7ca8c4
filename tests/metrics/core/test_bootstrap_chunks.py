"""A report's bootstrap in fixed-size chunks, each from its own seed stream: however the chunks are shared out
(one worker, two workers, any order, through bytes as between processes), the report is the same bit for bit."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from metrics.core.bootstrap import CHUNK, Bootstrap, Resampling, chunk_count, chunk_picks, counts_of, resample_picks
from metrics.core.report import ReportParams, build_report, report_finish, report_prepare
from metrics.core.synthetic import DEFAULT_SCHEMA, DEFAULT_SUBCATEGORIES, SyntheticStudy, generate

SMALL = {"single_turn_conversations": 30, "multi_turn_conversations": 8, "multi_turn_turns": 40,
         "calibration_rounds": 2, "calibration_turns": 6, "reviewers": 5, "main_coders": 4}
PARAMS = ReportParams(bootstrap=2 * CHUNK + 37, seed=13)  # two full chunks and a short one


@pytest.fixture(scope="module")
def study() -> SyntheticStudy:
    return generate(DEFAULT_SCHEMA, subcategory_attribute=DEFAULT_SUBCATEGORIES, main_overlap=0.3, seed=4, **SMALL)


def _inputs(study: SyntheticStudy) -> dict:
    return {"attributes": DEFAULT_SCHEMA, "judgments": study.judgments, "spans": study.spans,
            "response_texts": study.response_texts, "conversation_kinds": study.conversation_kinds,
            "subcategory_attribute": DEFAULT_SUBCATEGORIES, "params": PARAMS}


def _through_bytes(arrays: list[np.ndarray]) -> list[np.ndarray]:
    buffer = io.BytesIO()
    np.savez(buffer, *arrays)
    with np.load(io.BytesIO(buffer.getvalue())) as archive:
        return [archive[f"arr_{i}"] for i in range(len(arrays))]


def test_a_report_shared_out_in_chunks_is_the_single_worker_report_bit_for_bit(study: SyntheticStudy) -> None:
    single = build_report(**_inputs(study))
    coordinator = report_prepare(**_inputs(study))
    helper = report_prepare(**_inputs(study))  # another worker: its own copy of the same problem
    boot = coordinator.bootstrap
    assert boot.chunks == 3 and boot.requests
    helper_boot = Bootstrap(seed=boot.seed, resamples=boot.resamples)
    helper_boot.requests.extend(Resampling(r.statistic, tuple(_through_bytes(list(r.arrays))), r.shape)
                                for r in helper.bootstrap.requests)
    # the helper takes the last chunk first, the coordinator the others; results cross a process boundary as bytes
    chunks = {2: _through_bytes(helper_boot.chunk_samples(2)), 0: boot.chunk_samples(0), 1: boot.chunk_samples(1)}
    shared = report_finish(coordinator, [chunks[c] for c in range(boot.chunks)])
    assert json.dumps(shared, sort_keys=True) == json.dumps(single, sort_keys=True)
    assert shared["indices"]["ari_ci"] and shared["calibration"]["agreement_ci"]


def test_a_chunks_draws_depend_on_the_seed_and_its_index_only() -> None:
    assert np.array_equal(chunk_picks(9, 5 * CHUNK, 3, 1), chunk_picks(9, 2 * CHUNK, 3, 1))
    assert not np.array_equal(chunk_picks(9, 2 * CHUNK, 3, 0), chunk_picks(9, 2 * CHUNK, 3, 1))
    assert not np.array_equal(chunk_picks(9, 2 * CHUNK, 3, 0), chunk_picks(9, 2 * CHUNK, 4, 0))
    few, many = resample_picks(9, 7, 3), resample_picks(9, 3 * CHUNK + 1, 3)
    assert np.array_equal(few, many[:7]) and many.shape == (3 * CHUNK + 1, 9)
    assert chunk_count(0) == 0 and chunk_count(CHUNK) == 1 and chunk_count(CHUNK + 1) == 2


def test_chunked_counts_are_the_counts_of_the_replayed_picks() -> None:
    picks = resample_picks(6, CHUNK + 20, 8)
    boot = Bootstrap(seed=8, resamples=CHUNK + 20)
    numerators = np.arange(12, dtype=float).reshape(6, 2)
    denominators = np.ones((6, 2))
    seen: list[np.ndarray] = []
    boot.request(Resampling("ratio", (numerators, denominators)), then=seen.append)
    boot.run()
    expected = np.array([[numerators[row, c].sum() / len(row) for c in range(2)] for row in picks])
    assert np.array_equal(seen[0], expected)
    assert np.array_equal(counts_of(picks[:3], 6)[0], np.bincount(picks[0], minlength=6).astype(float))


def test_no_resamples_gives_empty_samples_and_no_chunks() -> None:
    boot = Bootstrap(seed=0, resamples=0)
    seen: list[np.ndarray] = []
    boot.request(Resampling("ratio", (np.ones((4, 3)), np.ones((4, 3)))), then=seen.append)
    boot.run()
    assert boot.chunks == 0 and seen[0].shape == (0, 3)
