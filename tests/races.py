"""Two writers at once on real PostgreSQL connections, for the tests that provoke a lost race
(tests/*/test_services_races.py), and a lock held by another connection for as long as a test needs it
(``HeldLock``).

``meet_at(target, name)`` patches the function a service calls *after* its check and before its write so that
each caller waits there for the other: without a lock both pass the check before either writes (the race happens
every time); with the lock the second caller waits for the lock before its check, the first gives up waiting after
``WAIT`` seconds and goes on, and the second then checks against what the first wrote."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

from django.db import close_old_connections, connection, connections, transaction

WAIT = 2.0  # seconds the first writer waits for the second before going on alone


@contextlib.contextmanager
def meet_at(target: Any, name: str, parties: int = 2) -> Iterator[threading.Barrier]:
    barrier = threading.Barrier(parties)
    original = getattr(target, name)

    def waiting(*args: Any, **kwargs: Any) -> Any:
        with contextlib.suppress(threading.BrokenBarrierError):
            barrier.wait(timeout=WAIT)
        return original(*args, **kwargs)

    with mock.patch.object(target, name, waiting):
        yield barrier


def together(*calls: Callable[[], Any]) -> list[Any]:
    """Run each call in its own thread (its own database connection); the value or the exception of each."""
    results: list[Any] = [None] * len(calls)

    def run(index: int, call: Callable[[], Any]) -> None:
        close_old_connections()
        try:
            results[index] = call()
        except Exception as error:  # noqa: BLE001 - handed back to the test
            results[index] = error
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


class HeldLock:
    """Another connection runs ``sql`` (a statement that takes a lock: ``SELECT … FOR UPDATE``, ``LOCK TABLE``) in a
    transaction and holds what it took until the block ends: a statement of the test's connection that needs it
    waits (or, under a ``lock_timeout``, fails as a busy database does)."""

    def __init__(self, sql: str, params: tuple[Any, ...] = ()) -> None:
        self.sql, self.params = sql, params
        self.locked, self.release = threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self.hold)

    def hold(self) -> None:
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(self.sql, self.params)
                self.locked.set()
                self.release.wait(30)
        finally:
            connection.close()

    def __enter__(self) -> HeldLock:
        self.thread.start()
        assert self.locked.wait(10)
        return self

    def __exit__(self, *_: object) -> None:
        self.release.set()
        self.thread.join(30)
