"""``manage.py export_judgments`` that fails halfway (the database ends its connection, as a restart does, after the
first slices' rows were written) says so on standard error, with the rows written, and raises (exit status 1): before,
standard output behind a shell's redirect was left a cut file, looking whole, with nothing said of it but the
database's error. ``--output FILE`` writes beside FILE and renames when the export is whole
(``common.command_files.written_whole``): a failed export leaves no file of that name, and one already there as it
was. The connection is ended for real (``pg_terminate_backend`` from another connection) when the export opens its
third slice, on its own connection: no mocks."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import DatabaseError, connection

from access import roles
from access.services import user_ensure
from annotation import long_format
from tests.common.test_outage import _ended
from tests.factories import JudgmentFactory, RoundFactory, StudyFactory

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)  # the connection is ended for real

CODERS = 4
PER_CODER = 3


@pytest.fixture
def study():
    study = StudyFactory(slug="stopped")
    round_ = RoundFactory(study=study, kind="main", number=1, status="closed")
    for k in range(CODERS):  # a slice of the file per coder
        coder = user_ensure(username=f"coder-{k}", role=roles.REVIEWER)
        for _ in range(PER_CODER):
            JudgmentFactory(round=round_, coder=coder)
    return study


@contextlib.contextmanager
def _ended_at_a_later_slice() -> Iterator[list[str]]:
    """End the export's own connection as it opens its second slice on that connection (the file's second or third,
    with a helper connection making the one between): the first slices' rows are written by then."""
    opened: list[str] = []

    def watch(execute: Callable, sql: str, params, many, context):  # noqa: ANN001, ANN202
        if sql.startswith("DROP TABLE IF EXISTS cab_export_slice"):
            opened.append(sql)
            if len(opened) == 2:
                _ended(connection.connection.info.backend_pid)
        return execute(sql, params, many, context)

    try:
        with connection.execute_wrapper(watch):
            yield opened
    finally:
        connection.close()


def _rows(text: str, fmt: str) -> int:
    return text.count("\r\n") - 1 if fmt == "csv" else text.count("\n")


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_an_export_to_standard_output_that_stops_halfway_says_its_output_is_incomplete(study, tmp_path, fmt):
    whole = _rows("".join(long_format.WRITERS[fmt](study=study)), fmt)
    assert whole == CODERS * PER_CODER
    err = io.StringIO()
    path = tmp_path / f"judgments.{fmt}"
    with path.open("w", encoding="utf-8", newline="") as redirected, _ended_at_a_later_slice() as opened, \
            pytest.raises(DatabaseError):
        call_command("export_judgments", "--study", "stopped", "--format", fmt, stdout=redirected, stderr=err)
    assert len(opened) == 2, opened
    written = _rows(path.read_bytes().decode("utf-8"), fmt)  # as written: "\r\n" ends a CSV row
    assert 0 < written < whole, (path.read_bytes()[:500], err.getvalue())
    said = err.getvalue()
    assert f"the export of study 'stopped' stopped after {written} row(s): the database cannot be reached" in said
    assert f"The output is INCOMPLETE (its first {written} row(s) only): do not use it" in said, said


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_an_export_to_a_file_that_stops_halfway_leaves_no_file_of_that_name(study, tmp_path, fmt):
    target = tmp_path / f"judgments.{fmt}"
    target.write_text("the file of an earlier export\n", encoding="utf-8")
    err = io.StringIO()
    with _ended_at_a_later_slice() as opened, pytest.raises(DatabaseError):
        call_command("export_judgments", "--study", "stopped", "--format", fmt, "--output", str(target),
                     stdout=io.StringIO(), stderr=err)
    assert len(opened) == 2, opened
    assert target.read_text(encoding="utf-8") == "the file of an earlier export\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name]  # no cut file beside it either
    said = err.getvalue()
    assert f"export_judgments: {target} was not written: the export of study 'stopped' stopped after " in said, said
    assert "No file of that name was left (one already there is as it was)" in said, said
    # The same export, the database answering: the download's bytes, under that name, with a new file's permissions.
    out = io.StringIO()
    call_command("export_judgments", "--study", "stopped", "--format", fmt, "--output", str(target), stdout=out)
    assert target.read_bytes() == "".join(long_format.WRITERS[fmt](study=study)).encode()
    assert out.getvalue() == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name]
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask


def test_an_output_into_a_folder_that_does_not_exist_is_a_usage_error(study, tmp_path):
    from django.core.management import CommandError

    with pytest.raises(CommandError) as refused:
        call_command("export_judgments", "--study", "stopped", "--output", str(tmp_path / "nope" / "j.jsonl"))
    assert (str(refused.value), refused.value.returncode) == (f"{Path(tmp_path / 'nope')}: no such folder", 2)


def test_an_output_of_dash_is_standard_output(study, tmp_path, monkeypatch):
    """``-o -`` is standard output, as ``export_study``'s: never a file named ``-``."""
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    call_command("export_judgments", "--study", "stopped", "--output", "-", stdout=out)
    assert out.getvalue() == "".join(long_format.WRITERS["jsonl"](study=study))
    assert not (tmp_path / "-").exists()
