"""What the database's errors answer (common.outage), on the test's real PostgreSQL: a connection the server ended
is an outage (503, one WARNING line, no traceback), a deadlock, a serialization failure or a lock not granted in
time is a busy database (503 that says so), and a cancelled statement (a statement timeout) is no outage (the
ordinary 500, its traceback logged)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator

import pytest
from django.contrib.sessions.models import Session
from django.db import DatabaseError, connection, transaction
from django.test import Client

from annotation.models import Study
from common.outage import busy, read_after_commit, unreachable
from tests.factories import StudyFactory
from tests.races import HeldLock

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)  # connections of their own


def _error_of(work: Callable[[], object]) -> DatabaseError:
    with pytest.raises(DatabaseError) as raised:
        work()
    return raised.value


def _statement(sql: str) -> Callable[[], None]:
    def run() -> None:
        with connection.cursor() as cursor:
            cursor.execute(sql)

    return run


@pytest.fixture
def own_connection_settings() -> Iterator[Callable[[str], None]]:
    """``SET`` something on the test's connection (the one its requests use), undone after the test."""

    def set_(sql: str) -> None:
        _statement(sql)()

    yield set_
    connection.close()


def _ended(pid: int) -> None:
    """End the server process ``pid`` from another connection, as a restart of PostgreSQL ends every connection."""

    def end() -> None:
        try:
            _statement(f"SELECT pg_terminate_backend({pid})")()
        finally:
            connection.close()

    thread = threading.Thread(target=end)
    thread.start()
    thread.join(10)


def _own_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def _table_locked(table: str) -> HeldLock:
    """Another connection holds ``table`` locked (ACCESS EXCLUSIVE) until the block ends: a statement of the test's
    connection on it waits."""
    return HeldLock(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")


def test_a_connection_the_server_ended_is_unreachable():
    pid = _own_pid()
    _ended(pid)
    error = _error_of(_statement("SELECT 1"))
    connection.close()
    assert (unreachable(error), busy(error)) == ("database", False)


def test_a_deadlock_is_a_busy_database_not_an_outage():
    """Two transactions update two rows in opposite orders: PostgreSQL rolls one back (40P01)."""
    first, second = StudyFactory(), StudyFactory()
    table = Study._meta.db_table
    both_hold, errors = threading.Barrier(2, timeout=10), []

    def update(one: int, other: int) -> None:
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(f"UPDATE {table} SET name = name WHERE id = %s", [one])  # noqa: S608
                both_hold.wait()
                cursor.execute(f"UPDATE {table} SET name = name WHERE id = %s", [other])  # noqa: S608
        except DatabaseError as error:
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=update, args=pair) for pair in ((first.pk, second.pk), (second.pk, first.pk))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    (error,) = errors
    assert error.__cause__.sqlstate == "40P01", error
    assert (unreachable(error), busy(error)) == (None, True)


def test_a_serialization_failure_is_a_busy_database():
    study = StudyFactory()
    table = Study._meta.db_table
    read, written = threading.Event(), threading.Event()

    def write() -> None:
        read.wait(10)
        try:
            _statement(f"UPDATE {table} SET name = 'changed' WHERE id = {study.pk}")()  # noqa: S608
        finally:
            written.set()
            connection.close()

    writer = threading.Thread(target=write)
    writer.start()

    def read_then_write() -> None:
        with transaction.atomic():
            _statement("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")()
            _statement(f"SELECT name FROM {table} WHERE id = {study.pk}")()  # noqa: S608
            read.set()
            written.wait(10)
            _statement(f"UPDATE {table} SET name = 'mine' WHERE id = {study.pk}")()  # noqa: S608

    error = _error_of(read_then_write)
    writer.join(10)
    assert error.__cause__.sqlstate == "40001", error
    assert (unreachable(error), busy(error)) == (None, True)


def test_a_statement_timeout_is_neither_an_outage_nor_busy(own_connection_settings):
    own_connection_settings("SET statement_timeout = '300ms'")
    error = _error_of(_statement("SELECT pg_sleep(5)"))
    assert error.__cause__.sqlstate == "57014", error
    assert (unreachable(error), busy(error)) == (None, False)


@pytest.fixture
def page(admin_user, settings) -> Client:
    """A signed-in browser whose requests run on the test's connection; the pages' own 500 and 503."""
    settings.DEBUG = False
    client = Client(raise_request_exception=False)
    client.force_login(admin_user)
    return client


def _logged(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [record for record in caplog.records if record.levelno >= logging.WARNING]


def test_an_outage_is_one_warning_line_without_a_traceback(page, caplog):
    """Before, each 503 of an outage logged Django's ERROR "Service Unavailable" with the whole traceback."""
    _ended(_own_pid())
    answer = page.get("/studies/?q=some+user+text")
    connection.close()
    assert answer.status_code == 503 and answer["Retry-After"] == "10"
    (record,) = _logged(caplog)
    assert (record.levelname, record.name, record.exc_info) == ("WARNING", "common.outage", None)
    assert record.getMessage() == "503 GET /studies/: the database cannot be reached (OperationalError)"
    assert "Traceback" not in caplog.text and "some user text" not in caplog.text


def test_a_lock_not_granted_in_time_answers_busy_503_in_one_warning_line(page, caplog, own_connection_settings):
    own_connection_settings("SET lock_timeout = '300ms'")
    with _table_locked(Session._meta.db_table):
        answer = page.get("/")
    assert answer.status_code == 503 and answer["Retry-After"] == "10"
    assert b"busy with another request" in answer.content and b"Nothing was changed" in answer.content
    (record,) = _logged(caplog)
    assert record.getMessage() == ("503 GET /: the database was busy with another request at the same time "
                                   "(OperationalError)")
    assert record.exc_info is None


def test_a_statement_timeout_is_the_ordinary_500_with_its_traceback(page, caplog, own_connection_settings):
    own_connection_settings("SET statement_timeout = '300ms'")
    with _table_locked(Session._meta.db_table):
        answer = page.get("/")
    assert answer.status_code == 500
    logged = _logged(caplog)
    assert logged and all((r.levelname, r.name) == ("ERROR", "django.request") and r.exc_info for r in logged)
    assert "QueryCanceled" in caplog.text


@pytest.mark.parametrize(("setting", "left_out"), [("lock_timeout", True), ("statement_timeout", False)])
def test_a_read_after_the_commit_is_left_out_for_a_busy_database_not_for_a_cancelled_statement(
        own_connection_settings, setting, left_out):
    own_connection_settings(f"SET {setting} = '300ms'")
    with _table_locked(Study._meta.db_table):
        if left_out:
            assert read_after_commit(lambda: list(Study.objects.all()), otherwise="left out") == "left out"
        else:
            with pytest.raises(DatabaseError, match="statement timeout"):
                read_after_commit(lambda: list(Study.objects.all()), otherwise="left out")
