"""A download of a study's judgments is made by more than one database connection
(``EXPORT_CONNECTIONS``): helpers make the next slices' lines while one slice's are handed on. These tests run outside
a test transaction (helpers are separate connections: they see committed data only), and check that the file is the
same bytes whatever the number of connections, that every line comes from the moment the download started, that an
abandoned or failed download leaves no connection or thread behind, and that the download goes on alone when no
helper connection can be had."""

from __future__ import annotations

import io
import threading
import time

import pytest
from django.core.management import call_command
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.test import override_settings

from annotation import long_format, long_format_sql
from annotation.models import Judgment, Study
from tests.annotation.test_long_format_sql import AWKWARD, awkward_study, python_file

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@pytest.fixture
def helpers_made(monkeypatch) -> list[int]:
    """How many helper connections each export opened (the real function, its result recorded)."""
    made: list[int] = []
    real = long_format_sql._helper_connections

    def recorded(snapshot, count):
        result = real(snapshot, count)
        made.append(len(result))
        return result

    monkeypatch.setattr(long_format_sql, "_helper_connections", recorded)
    return made


def exported(study: Study, fmt: str, connections_: int) -> str:
    with override_settings(EXPORT_CONNECTIONS=connections_):
        return "".join(long_format.WRITERS[fmt](study=study))


def backends(expected: int | None = None) -> int:
    """Server processes connected to the test database; with ``expected``, waiting up to 5 s for that many (a
    closed connection's server process ends a moment after the client closed it)."""
    deadline = time.monotonic() + 5
    while True:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
            count = cursor.fetchone()[0]
        if expected is None or count == expected or time.monotonic() > deadline:
            return count
        time.sleep(0.05)


def export_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("export-slices")]


@pytest.mark.parametrize("command, arguments", [
    ("generate_synthetic", ["--conversations", "8", "--reviewers", "3", "--experts", "2", "--calibration-rounds",
                            "2", "--calibration-turns", "2", "--coders-per-turn", "2", "--span-rate", "0.6"]),
    ("generate_care_synthetic", ["--histories", "4"]),
    ("generate_lc8_synthetic", ["--trajectories", "3", "--raters", "2", "--rated-trajectories", "2"]),
])
def test_the_file_is_the_same_bytes_with_one_two_or_three_connections(command, arguments, helpers_made):
    call_command(command, *arguments, "--slug", "gen", stdout=io.StringIO())
    study = Study.objects.get(slug="gen")
    for fmt in long_format.FORMATS:
        expected = python_file(study, fmt)
        assert expected.count("\n") > 20
        for count in (1, 2, 3):
            assert exported(study, fmt, count) == expected, (fmt, count)
    slices = len(list(long_format_sql._plan(study, "csv")))
    assert slices >= 2
    # per format: none asked for with one connection, then up to 1 and 2 helpers (at most the slices after the first)
    assert helpers_made == [min(1, slices - 1), min(2, slices - 1)] * 2


def test_every_line_comes_from_the_moment_the_download_started(monkeypatch):
    """Scores changed and committed by another request after the download's transaction began, and before its
    helpers connected, do not reach the file: the helpers read the download's own snapshot, not a later one."""
    study = awkward_study(AWKWARD[:8])
    before = python_file(study, "jsonl")
    last_round = study.rounds.order_by("kind", "number").last()
    ids = list(Judgment.objects.filter(round=last_round, is_gold=False, score__isnull=False)
               .values_list("id", flat=True))
    assert len(ids) >= 2
    real, made = long_format_sql._helper_connections, []

    def change_then_connect(snapshot, count):
        def change() -> None:  # another request's write, on its own connection, committed
            try:
                Judgment.objects.filter(id__in=ids).update(score=0, instance_count=99)
            finally:
                connections[DEFAULT_DB_ALIAS].close()

        writer = threading.Thread(target=change)
        writer.start()
        writer.join()
        made.append(real(snapshot, count))
        return made[-1]

    monkeypatch.setattr(long_format_sql, "_helper_connections", change_then_connect)
    assert exported(study, "jsonl", 2) == before
    assert len(made) == 1 and len(made[0]) == 1
    assert python_file(study, "jsonl") != before  # the change was real: a new download has it


def test_an_abandoned_download_leaves_no_connection_or_thread_behind(helpers_made):
    call_command("generate_synthetic", "--conversations", "6", "--reviewers", "3", "--calibration-turns", "1",
                 "--slug", "gen", stdout=io.StringIO())
    study = Study.objects.get(slug="gen")
    idle = backends()
    with override_settings(EXPORT_CONNECTIONS=3):
        blocks = long_format.WRITERS["jsonl"](study=study)
        next(blocks)
        assert backends(idle + 2) == idle + 2 and export_threads()
        blocks.close()
    assert helpers_made == [2]
    assert backends(idle) == idle and not export_threads()


@pytest.mark.parametrize("lookup", ["cab_export_conversation", "cab_export_coder"])
def test_a_line_that_cannot_be_made_stops_a_download_with_helpers(lookup, monkeypatch, helpers_made):
    """A lookup losing its rows on whichever connection makes a slice makes NULL lines: the download raises (it
    never leaves a judgment out), and its helpers are closed."""
    study = awkward_study(AWKWARD[:8])
    fill = long_format_sql._fill

    def losing_rows(cursor, name, rows, **kwargs):
        return fill(cursor, name, [] if name == lookup else rows, **kwargs)

    monkeypatch.setattr(long_format_sql, "_fill", losing_rows)
    idle = backends()
    for fmt in long_format.FORMATS:
        with pytest.raises(long_format_sql.ExportIncompleteError):
            exported(study, fmt, 2)
    assert helpers_made == [1, 1]
    assert backends(idle) == idle and not export_threads()


def test_the_download_goes_on_alone_when_no_helper_connection_can_be_had(monkeypatch, caplog):
    """A helper is an optimisation: when the server refuses it (here: nothing listens where it connects), the
    download is made on its own connection, whole."""
    study = awkward_study(AWKWARD[:8])
    create = connections.create_connection

    def unreachable(alias):
        db = create(alias)
        db.settings_dict = {**db.settings_dict, "HOST": "127.0.0.1", "PORT": "9"}  # discard: nothing listens
        return db

    monkeypatch.setattr(long_format_sql.connections, "create_connection", unreachable)
    for fmt in long_format.FORMATS:
        assert exported(study, fmt, 2) == python_file(study, fmt)
    assert "a helper connection could not be opened" in caplog.text
