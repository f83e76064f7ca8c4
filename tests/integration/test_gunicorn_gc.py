"""gunicorn.conf.py keeps full garbage collections out of requests: a worker runs them after a response has been
sent, on Python's own schedule, and during a request only a long one (a large export) gets one. After a request
with a large body (a bulk ingest) it collects at once what the request left in reference cycles (DRF's request and
view refer to each other, and hold the body), instead of carrying it into the next request."""

from __future__ import annotations

import gc
import json
import runpy
import weakref
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


class _Cycle:
    def __init__(self) -> None:
        self.me = self


@pytest.fixture
def conf(tmp_path, monkeypatch):
    monkeypatch.setenv("CAB_GC_STATS", str(tmp_path))
    thresholds, callbacks = gc.get_threshold(), list(gc.callbacks)
    namespace = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    namespace["post_fork"](None, None)
    yield namespace
    gc.set_threshold(*thresholds)
    gc.callbacks[:] = callbacks


def _full_collections_pending(count: int) -> None:
    """Make cyclic garbage until the middle generation has been collected ``count`` times since the last full
    collection."""
    while gc.get_count()[2] < count:
        for _ in range(1000):
            _Cycle()


def test_full_collections_wait_for_the_end_of_the_request(conf, tmp_path):
    gc.collect()
    conf["pre_request"](None, None)
    _full_collections_pending(conf["FULL_AFTER"] + 5)  # past Python's own schedule, still in the request
    assert gc.get_count()[2] >= conf["FULL_AFTER"], "a full collection ran during the request"
    conf["post_request"](None, None, None, None)
    assert gc.get_count()[2] == 0, "the full collection ran once the response was sent"
    conf["worker_exit"](None, None)
    stats = json.loads(next(tmp_path.glob("worker-*.json")).read_text())
    assert stats["between_count"] >= 1 and stats["count"] > stats["between_count"]


def test_a_long_request_still_gets_full_collections(conf):
    """Python's own trigger stays, ten times later (CPython may still skip a full collection when few objects are
    pending, as it always does)."""
    young, middle, full = gc.get_threshold()
    assert (young, middle) == (700, 10) and full == conf["FULL_DURING_A_REQUEST_AFTER"] == 10 * conf["FULL_AFTER"]


@pytest.mark.parametrize(("length", "collected"), [("12000000", True), ("1048576", True), ("1048575", False),
                                                   ("", False), ("not a number", False)])
def test_what_a_large_request_left_in_cycles_is_collected_once_it_is_answered(conf, length, collected):
    gc.collect()
    gc.disable()  # no automatic young collection in between: only post_request's own
    try:
        conf["pre_request"](None, None)
        request = _Cycle()
        request.body = b"x" * 1000  # the body the request holds
        alive = weakref.ref(request)
        del request
        assert alive() is not None  # only a collection frees a cycle
        conf["post_request"](None, None, {"CONTENT_LENGTH": length}, None)
        assert (alive() is None) is collected
    finally:
        gc.enable()
        gc.collect()
