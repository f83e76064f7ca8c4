"""A pytest plugin loaded before Django (``-p tests.isolation`` in pyproject's addopts): each pytest-xdist worker
gets a Redis database of its own, as it gets a PostgreSQL database of its own from pytest-django (``test_…_gw0``).
Otherwise two workers would share the cache (rate-limit counts, sessions) and the Celery queues, and a real worker
started by one test could take another worker's task, against the wrong database."""

from __future__ import annotations

import os
import re

_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
_url = os.environ.get("REDIS_URL", "")
if _worker.startswith("gw") and _url:
    _index = int(_worker[2:]) + 1  # the controller (and a run without xdist) keeps database 0
    os.environ["REDIS_URL"] = re.sub(r"(/\d+)?$", f"/{_index}", _url, count=1)
