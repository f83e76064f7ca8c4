"""Logging helpers that need no app."""

from __future__ import annotations

import logging
import time


class OnceAMinute(logging.Filter):
    """Lets through the first record of each message per minute (per process): an outage that every request meets
    is said once a minute, with the number of records held back since, instead of once per request."""

    def __init__(self, name: str = "", seconds: float = 60.0) -> None:
        super().__init__(name)
        self.seconds = seconds
        self._last: dict[str, tuple[float, int]] = {}  # message -> (when it was last let through, held back since)

    def filter(self, record: logging.LogRecord) -> bool:
        key, now = str(record.msg), time.monotonic()
        said_at, held = self._last.get(key, (float("-inf"), 0))
        if now - said_at < self.seconds:
            self._last[key] = (said_at, held + 1)
            return False
        self._last[key] = (now, 0)
        if held:
            record.msg = f"{key} ({held} more in the last {now - said_at:.0f} s)"
        return True
