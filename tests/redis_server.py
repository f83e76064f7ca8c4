"""A redis-server of a test's own, on a free loopback port, that the test may stop or kill and start again (empty:
it keeps nothing on disk)."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

from tests.celery_worker import wait_for


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def redis_server(port: int, folder: Path) -> Iterator[subprocess.Popen]:
    """Started and answering PING on entry; stopped on exit unless the test already stopped (or killed) it."""
    folder.mkdir(exist_ok=True)
    process = subprocess.Popen([shutil.which("redis-server") or "redis-server", "--port", str(port), "--bind",
                                "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(folder)],
                               stdout=subprocess.DEVNULL)
    try:
        try:
            wait_for(lambda: _answers(port), timeout=60)
        except TimeoutError:
            raise AssertionError("redis-server did not start") from None
        yield process
    finally:
        process.terminate()
        process.wait(timeout=10)


def _answers(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
        sock.sendall(b"PING\r\n")
        return sock.recv(16).startswith(b"+PONG")
    return False
