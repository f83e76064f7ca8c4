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
