"""gunicorn.conf.py: after a request with a large body (a bulk ingest), the worker collects at once what the request
left in reference cycles (DRF's request and view refer to each other, and hold the body), instead of carrying it
into the next request; after a small request it keeps Python's schedule."""

from __future__ import annotations

import gc
import runpy
import weakref
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


class _Request:
    """Stands for a request object in a reference cycle that holds the body."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.me = self


@pytest.fixture
def conf():
    thresholds, callbacks = gc.get_threshold(), list(gc.callbacks)
    namespace = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    namespace["post_fork"](None, None)
    yield namespace
    gc.set_threshold(*thresholds)
    gc.callbacks[:] = callbacks


@pytest.mark.parametrize(("length", "collected"), [("12000000", True), ("1048576", True), ("1048575", False),
                                                   ("", False), ("not a number", False)])
def test_what_a_large_request_left_in_cycles_is_collected_once_it_is_answered(conf, length, collected):
    gc.collect()
    gc.disable()  # no automatic young collection in between: only post_request's own
    try:
        conf["pre_request"](None, None)
        request = _Request(b"x" * 1000)
        alive = weakref.ref(request)
        del request
        assert alive() is not None  # only a collection frees a cycle
        conf["post_request"](None, None, {"CONTENT_LENGTH": length}, None)
        assert (alive() is None) is collected
    finally:
        gc.enable()
        gc.collect()
