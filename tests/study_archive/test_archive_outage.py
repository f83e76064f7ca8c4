"""An import the database's restart interrupts (its connection ended mid-import, as a restart ends every connection)
is the outage it is, never a fault of the archive's lines: ``import_study`` raised "lines 11–16 (member): refused by
the database: terminating connection …", and its user looked for what was wrong in lines 11–16. It now raises the
database's error, which the command line says in one line (manage.py, common.outage), and nothing is written."""

from __future__ import annotations

import io
from collections.abc import Callable

import pytest
from django.core.management import call_command
from django.db import DatabaseError, connection

from annotation.models import Study
from common.outage import said
from tests.common.test_outage import _ended, _own_pid

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)  # the connection is ended for real


def test_an_import_whose_connection_the_database_ends_says_the_database_cannot_be_reached(tmp_path):
    call_command("load_demo", "--quiet")
    out = io.StringIO()
    call_command("export_study", "demo", stdout=out)
    archive = tmp_path / "demo.jsonl"
    archive.write_text(out.getvalue())
    ended: list[str] = []

    def end_at_the_members(execute: Callable, sql: str, params, many, context):  # noqa: ANN001, ANN202
        if sql.startswith('INSERT INTO "annotation_studymember"') and not ended:
            ended.append(sql)
            _ended(_own_pid())
        return execute(sql, params, many, context)

    try:
        with connection.execute_wrapper(end_at_the_members), pytest.raises(DatabaseError) as raised:
            call_command("import_study", str(archive), "--as", "demo-copy", stdout=io.StringIO())
    finally:
        connection.close()
    assert ended, "the import reached the members"
    assert said(raised.value) == "the database cannot be reached", raised.value
    assert not Study.objects.filter(slug="demo-copy").exists()
