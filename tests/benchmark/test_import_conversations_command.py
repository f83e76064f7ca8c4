"""``manage.py import_conversations`` on hostile files (tests/form_fuzz.py): every field of a valid record set to
values wrong in type or size (2^31 and 10^20 numbers, NUL in ids, fields over 128 KiB, nested JSON), and files that
are not JSON Lines at all (empty, not JSON, not UTF-8, nested 100,000 deep). Each is a CommandError that names the
line and the field, never a traceback, and the database is as it was."""

from __future__ import annotations

import io
import re

import pytest
from django.core.management import CommandError, call_command

from tests import form_fuzz

pytestmark = pytest.mark.django_db

LINE_AND_FIELD = re.compile(r"^line \d+: [\w.\[\]]+: ", re.MULTILINE)
# Long texts are material, not attacks: a client message, reference or response has no length limit.
LONG_TEXT_ALLOWED = {f"{path}={form_fuzz.OVER_128_KIB[:12]!r}"
                     for path in ("turns.0.client", "turns.0.therapist_reference", "turns.0.responses.0.text")}


def test_every_hostile_file_is_a_command_error_naming_line_and_field(tmp_path):
    failures = []
    path = tmp_path / "conversations.jsonl"
    for label, content in form_fuzz.hostile_conversation_files():
        if label in LONG_TEXT_ALLOWED:
            continue
        path.write_bytes(content)
        before = form_fuzz.fingerprint()
        try:
            call_command("import_conversations", str(path), stdout=io.StringIO())
        except CommandError as error:
            if not LINE_AND_FIELD.search(str(error)):
                failures.append(f"{label}: the message names no line and field: {str(error)[:300]}")
        except Exception as error:  # noqa: BLE001 - a traceback is what this test looks for
            failures.append(f"{label}: {type(error).__name__}: {str(error)[:200]}")
        else:
            failures.append(f"{label}: accepted")
        if form_fuzz.fingerprint() != before:
            failures.append(f"{label}: the database changed")
    assert not failures, "\n".join(failures)


def test_a_file_that_begins_with_a_utf8_bom_imports_as_without_it(tmp_path):
    """As the upload page and the API read it (utf-8-sig); before, "line 1: line: not valid JSON (Unexpected UTF-8
    BOM …)"."""
    from benchmark.demo import demo_records
    from benchmark.models import Conversation
    from tests.factories import jsonl

    path = tmp_path / "conversations.jsonl"
    path.write_bytes("\ufeff".encode() + jsonl(demo_records()).encode())
    out = io.StringIO()
    call_command("import_conversations", str(path), stdout=out)
    assert f"{len(demo_records())} conversations created" in out.getvalue()
    assert Conversation.objects.count() == len(demo_records())
    path.write_bytes(jsonl(demo_records()).encode())
    out = io.StringIO()
    call_command("import_conversations", str(path), stdout=out)  # the same file without the mark: the same rows
    assert f"0 conversations created, 0 updated, {len(demo_records())} unchanged" in out.getvalue()
