"""One consistent snapshot for a read of several statements (an export, a metric run's inputs).

Outside a transaction every statement sees the database as it is when it starts, so a read of several statements
can mix moments: a judgment saved between two of them is in one and not the other (its spans without it, a coder's
membership from after their judgments were read). Inside ``one_snapshot()`` every statement sees the database as
the first one did (PostgreSQL's REPEATABLE READ, which never refuses a read). Already in a transaction (a test, a
caller's own), the caller's is used, as it is."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from django.db import connection, transaction


@contextlib.contextmanager
def one_snapshot() -> Iterator[bool]:
    """A transaction of its own at REPEATABLE READ for the block, or the caller's; yields whether it is its own (so
    that a caller can set what only its own transaction may, such as statement settings)."""
    if not connection.get_autocommit():
        yield False
        return
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        yield True
