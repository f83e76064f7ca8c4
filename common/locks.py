"""Transaction-scoped named locks."""

from __future__ import annotations

import zlib

from django.db import connection


def advisory_lock(name: str) -> None:
    """Serialise writers on ``name`` until the current transaction ends (a transaction-level advisory lock)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [zlib.crc32(name.encode("utf-8")) - 2**31])
