import contextlib
import io
import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest

from common.logs import OnceAMinute, WithoutRowValues, without_row_values


@contextlib.contextmanager
def _handler_writing_to(handler: Any, stream: io.StringIO) -> Iterator[None]:
    """The log handler writing to ``stream`` for the block, swapped without flushing the stream it had (which
    ``setStream`` does): a test before may have left it a stream its capture closed (an in-process ``manage.py``'s
    logging set up on pytest's captured standard error), and flushing that fails."""
    previous, handler.stream = handler.stream, stream
    try:
        yield
    finally:
        handler.stream = previous


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


def _refusal_of(row: str) -> Exception:
    """The real error PostgreSQL gives for a row its check constraint refuses (DETAIL: Failing row contains …)."""
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("CREATE TEMP TABLE said (text text CHECK (length(text) < 5)) ON COMMIT DROP")
        try:
            with transaction.atomic():
                cursor.execute("INSERT INTO said VALUES (%s)", [row])
        except Exception as error:  # noqa: BLE001 - the error is what the test looks at
            return error
    raise AssertionError("the row was not refused")


@pytest.mark.django_db
def test_a_database_refusal_logged_with_its_traceback_leaves_out_the_rows_text():
    """A 500's traceback is logged with the database error's message, whose DETAIL names the refused row's values:
    what a client wrote, when the row holds it. The project's log handler leaves the values out, and keeps the
    rest (the constraint, the traceback)."""

    error = _refusal_of("I have not slept since my brother died")
    assert "I have not slept" in str(error)  # what PostgreSQL says
    (handler,) = [h for h in logging.getLogger().handlers if any(isinstance(f, WithoutRowValues) for f in h.filters)]
    written = io.StringIO()
    with _handler_writing_to(handler, written):
        try:
            raise error
        except Exception:
            logging.getLogger("django.request").exception("Internal Server Error: %s", "/rounds/1/turns/2/save")
        logging.getLogger("cab.test").warning("refused: %s", error)
    text = written.getvalue()
    assert "I have not slept" not in text, text
    refusals = text.count('violates check constraint "said_text_check"')  # psycopg's and Django's, and the warning's
    assert refusals == 3, text
    assert text.count("DETAIL:  Failing row contains (values left out: they may be what people wrote)") == refusals
    assert "Internal Server Error: /rounds/1/turns/2/save" in text and "Traceback (most recent call last)" in text


def test_without_row_values_leaves_out_a_keys_values_to_the_errors_next_field_and_nothing_else():
    """Without the error, a value's end is not known: a key's values may span lines, so they are left out up to the
    error's next field (or the traceback's next part), which stays."""
    said = ('duplicate key value violates unique constraint "k"\nDETAIL:  Key (text)=(my secret\nover lines) already '
            "exists.\nHINT:  the next field stays")
    assert without_row_values(said) == ('duplicate key value violates unique constraint "k"\nDETAIL:  Key (values '
                                        "left out: they may be what people wrote)\nHINT:  the next field stays")


def test_a_workers_own_log_handlers_leave_the_row_values_out_too():
    """A Celery worker replaces Django's log handlers with its own when it starts (``app.log.setup``, as ``celery
    worker`` does): they carry the same filter, so a task's failure logged with its traceback leaves the values
    out."""
    import subprocess
    import sys

    script = ("import logging, django; django.setup()\n"
              "from cab.celery import app\n"
              "app.log.setup(loglevel='INFO')\n"
              "logging.getLogger('celery.app.trace').warning('DETAIL:  Failing row contains (my words).')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env=__import__("os").environ | {"DJANGO_SETTINGS_MODULE": "cab.settings"})
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert "my words" not in said and "Failing row contains (values left out" in said, said


MARKER = "my-sister-does-not-know-I-cut"  # what a client wrote: it must reach no log


def _refusals(marker: str) -> list[Exception]:
    """The real errors PostgreSQL gives, each quoting what a client wrote somewhere else than a one-line DETAIL: a
    row and a key over several lines, a COPY's line (CONTEXT), a value cast on the server (a data exception's
    message, the statement's excerpt: Django binds values on the client) and a JSON document's token."""
    from django.db import connection, transaction

    said = []
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("CREATE TEMP TABLE said (text text CHECK (length(text) < 5), k text UNIQUE) ON COMMIT DROP")
        cursor.execute("INSERT INTO said VALUES ('a', %s)", [f"I wrote\n{marker}"])
        for sql, params in [("INSERT INTO said VALUES (%s)", [f"first line\nthen {marker}\nand more"]),
                            ("INSERT INTO said VALUES ('b', %s)", [f"I wrote\n{marker}"]),
                            ("SELECT %s::int", [marker]),
                            ("SELECT %s::jsonb", [f'{{"said": {marker}}}'])]:
            try:
                with transaction.atomic():
                    cursor.execute(sql, params)
            except Exception as error:  # noqa: BLE001 - the error is what the test looks at
                said.append(error)
        try:
            with transaction.atomic(), cursor.copy("COPY said (text) FROM STDIN") as copy:
                copy.write_row([f"a response: {marker}"])
        except Exception as error:  # noqa: BLE001
            said.append(error)
    assert len(said) == 5 and all(marker in str(error) for error in said), said  # what PostgreSQL says
    return said


@pytest.mark.django_db
def test_what_a_database_refusal_quotes_over_several_lines_or_outside_its_detail_reaches_no_log():
    """A refused row's text over several lines, a COPY's line in the CONTEXT, a statement's excerpt and a data
    exception's message: none reaches the log, as a 500's traceback (``django.request``) nor as a message naming
    the error; what the error was (its class, its constraint) stays."""

    errors = _refusals(MARKER)
    (handler,) = [h for h in logging.getLogger().handlers if any(isinstance(f, WithoutRowValues) for f in h.filters)]
    written = io.StringIO()
    with _handler_writing_to(handler, written):
        for error in errors:
            try:
                raise error
            except Exception:
                logging.getLogger("django.request").exception("Internal Server Error: %s", "/api/v1/responses/")
            logging.getLogger("cab.test").warning("refused: %s", error)
            logging.getLogger("cab.test").warning(error)
    text = written.getvalue()
    assert MARKER not in text, text
    assert text.count("Internal Server Error: /api/v1/responses/") == text.count("refused: ") == len(errors), text
    assert text.count("WARNING cab.test ") == 2 * len(errors), text
    for kept in ('violates check constraint "said_text_check"', 'violates unique constraint "said_k_key"',
                 "django.db.utils.DataError: a data exception (SQLSTATE 22P02)", "CONTEXT:  (values left out"):
        assert kept in text, kept


@pytest.mark.django_db
def test_a_value_that_looks_like_the_errors_next_field_is_left_out_whole_when_the_error_is_logged():
    """What a client wrote may look like an error's next field (a line "HINT:  …"), where the lines' shapes would end
    the value: an error logged as a record's message or argument, or with its traceback, is replaced whole."""

    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("CREATE TEMP TABLE said (text text CHECK (length(text) < 5)) ON COMMIT DROP")
        try:
            with transaction.atomic():
                cursor.execute("INSERT INTO said VALUES (%s)", [f"I said\nHINT:  {MARKER}"])
        except Exception as refused:  # noqa: BLE001 - the error is what the test looks at
            error = refused
    assert f"\nHINT:  {MARKER}" in str(error)
    (handler,) = [h for h in logging.getLogger().handlers if any(isinstance(f, WithoutRowValues) for f in h.filters)]
    written = io.StringIO()
    with _handler_writing_to(handler, written):
        logging.getLogger("cab.test").warning(error)
        logging.getLogger("cab.test").warning("refused: %s", error)
        try:
            raise error
        except Exception:
            logging.getLogger("django.request").exception("Internal Server Error: %s", "/api/v1/conversations/")
    text = written.getvalue()
    assert MARKER not in text, text
    assert text.count('violates check constraint "said_text_check"') == 4, text  # the two, psycopg's and Django's


@pytest.mark.django_db
def test_a_text_without_its_error_leaves_out_a_value_over_several_lines_a_copys_line_and_a_statements_excerpt():
    """A metric run's stored error is a text (``without_row_values``): given the error it replaces the error's own
    text; without it, the lines' shapes."""
    for error in _refusals(MARKER):
        text = f"{type(error).__name__}: {error}\n"
        assert MARKER not in without_row_values(text, error)
        assert MARKER not in without_row_values(text), without_row_values(text)


@pytest.mark.parametrize("debug", ["1", "0"])
def test_djangos_own_loggers_say_a_refusal_once_and_without_the_rows_text(debug):
    """Django sets up its own handlers before the project's ``LOGGING`` (a console one for its ``django`` loggers
    when DEBUG is on, as it is outside DJANGO_ENV=production, and the admins' mail): a 500 logged by
    ``django.request`` went out through them too, before the project's handler, and so with the row's text."""
    import os
    import subprocess
    import sys

    script = ("import logging, django; django.setup()\n"
              "logging.getLogger('django.request').error("
              "'Internal Server Error: /rounds/1/turns/2/save\\nDETAIL:  Failing row contains (my words).')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env=os.environ | {"DJANGO_SETTINGS_MODULE": "cab.settings", "DEBUG": debug})
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert "my words" not in said, said
    assert said.count("Internal Server Error: /rounds/1/turns/2/save") == 1, said


@pytest.mark.django_db
def test_a_task_failing_on_a_database_refusal_is_logged_without_the_rows_text():
    """Celery logs a failed task's exception by its repr ("Task … raised unexpected: IntegrityError('…')"), where
    the DETAIL is no line of its own, and its traceback; the task here is given what a client wrote and fails on
    inserting it, run through Celery's own trace (in-process, as the embedded mode runs every task)."""

    from django.db import connection, transaction

    from cab.celery import app

    @app.task(name="tests.common.refuse")
    def refuse(text: str) -> None:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("CREATE TEMP TABLE said (text text CHECK (length(text) < 5)) ON COMMIT DROP")
            cursor.execute("INSERT INTO said VALUES (%s)", [text])

    (handler,) = [h for h in logging.getLogger().handlers if any(isinstance(f, WithoutRowValues) for f in h.filters)]
    written = io.StringIO()
    with _handler_writing_to(handler, written):
        result = refuse.apply(args=[f"a reply\n{MARKER}"])
    text = written.getvalue()
    assert result.failed(), text
    assert "tests.common.refuse" in text and 'violates check constraint "said_text_check"' in text, text
    assert MARKER not in text, text


def test_an_error_the_database_never_answered_keeps_its_reason_in_the_log():
    """A connection refused, broken or timed out, or any error psycopg raises itself, has no SQLSTATE and no message
    of the server's (``diag``): it quotes no row. Its text was replaced whole by the server's message it does not
    have, an empty one: a 500's traceback said "OperationalError: " and a failed metric run's reason (its ``error``)
    the same, the cause (refused, timed out, the connection closed) gone."""
    import socket

    import psycopg

    with socket.socket() as closed:  # a port nothing listens on: the connection is refused
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    try:
        psycopg.connect(f"host=127.0.0.1 port={port} connect_timeout=5")
    except psycopg.OperationalError as refused:
        error = refused
    assert error.sqlstate is None and error.diag.message_primary is None
    said = str(error)
    assert "Connection refused" in said
    assert without_row_values(f"OperationalError: {error}", error) == f"OperationalError: {said}"
    (handler,) = [h for h in logging.getLogger().handlers if any(isinstance(f, WithoutRowValues) for f in h.filters)]
    written = io.StringIO()
    with _handler_writing_to(handler, written):
        try:
            raise error
        except psycopg.OperationalError:
            logging.getLogger("cab.test").exception("the database: %s", error)
    logged = written.getvalue()
    assert logged.count("Connection refused") == 2, logged  # the message and the traceback's last line
