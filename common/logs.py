"""Logging helpers that need no app."""

from __future__ import annotations

import logging
import re
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


# PostgreSQL's DETAIL of a constraint's refusal names the values of the row or the key it refused: the text of a
# conversation, a response or a comment (what people wrote) when the row holds it. Nothing people wrote goes into a
# log or onto a page that shows an error (docs/architecture.md#conventions): the values are left out, the rest
# kept.
_ROW_VALUES = re.compile(r"^(DETAIL:\s+)(Failing row contains|Key) \(.*$", re.MULTILINE)
LEFT_OUT = "(values left out: they may be what people wrote)"


def without_row_values(text: str) -> str:
    """``text`` (an error's message, a traceback) without the row or key values of a database refusal."""
    return _ROW_VALUES.sub(rf"\1\2 {LEFT_OUT}", text)


class WithoutRowValues(logging.Filter):
    """Leaves the row and key values of a database refusal out of a record's message and traceback
    (``without_row_values``): a 500's traceback carries the database error's message, DETAIL included."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = without_row_values(record.exc_text)
        message = record.getMessage()
        if (cleaned := without_row_values(message)) != message:
            record.msg, record.args = cleaned, None
        return True
