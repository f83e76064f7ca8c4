import logging
import time

from common.logs import OnceAMinute


def _record(msg: str) -> logging.LogRecord:
    return logging.LogRecord("cab.cache", logging.ERROR, __file__, 1, msg, None, None)


def test_a_message_repeated_within_the_period_is_held_back_and_counted_when_said_again():
    once = OnceAMinute(seconds=0.2)
    assert once.filter(_record("Exception ignored"))
    assert not once.filter(_record("Exception ignored"))
    assert not once.filter(_record("Exception ignored"))
    assert once.filter(_record("another message")), "each message has its own period"


    time.sleep(0.25)
    again = _record("Exception ignored")
    assert once.filter(again)
    assert again.getMessage().startswith("Exception ignored (2 more in the last 0 s)")
