"""``manage.py import_judgments`` on hostile files (CSV and JSON Lines): every column of a valid row set to values
that are wrong in type or size (2^31 and 10^20 counts, NUL in ids, fields over 128 KiB, nested JSON in spans), and
files that are not the format at all (empty, not JSON, not UTF-8, nested 100,000 deep). Each is a CommandError
that names the line and the field, never a traceback, and the database is as it was."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from django.core.management import CommandError, call_command

from annotation import long_format
from annotation.models import Study
from tests import form_fuzz
from tests.form_fuzz import JSON_HOSTILE, OVER_128_KIB, nested

pytestmark = pytest.mark.django_db

LINE_AND_FIELD = re.compile(r"^(line|row) \d+: [\w.\[\]]+: ", re.MULTILINE)

SPANS_HOSTILE = [nested(100_000), '[{"start": 0, "end": Infinity, "subcategory": "x"}]',
                 '[{"start": 0, "end": 1e999, "subcategory": "x"}]', '[{"start": NaN, "end": 1, "subcategory": "x"}]',
                 [{"start": 0, "end": 2**31, "subcategory": "x"}], [{"start": {"a": [1]}, "end": 1}], {"a": 1}]


@pytest.fixture(scope="module")
def demo_row(shared_state):
    """A long-format row of the demo study with spans, as exported."""
    with shared_state():
        call_command("load_demo", "--quiet")
        rows = long_format.judgment_rows(study=Study.objects.get(slug="demo"))
        yield next(row for row in rows if row["spans"])


def hostile_rows(row: dict) -> list[tuple[str, dict]]:
    cases = []
    for index, column in enumerate(long_format.COLUMNS):
        values = [OVER_128_KIB, "a\x00b", *(JSON_HOSTILE[(3 * index + k) % len(JSON_HOSTILE)] for k in range(3))]
        if column == "spans":
            values += SPANS_HOSTILE
        for value in values:
            if value == row[column] or (column == "instance_count" and value is None) \
                    or (column == "model" and value in (None, "")) or (column == "spans" and value in ([], None, "")):
                continue  # the same as the row, or an allowed empty value
            cases.append((f"{column}={str(value)[:12]!r}", row | {column: value}))
    return cases


def _csv(rows: list[dict]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(long_format.COLUMNS)
    for row in rows:
        writer.writerow([json.dumps(row[c]) if isinstance(row[c], list | dict) else row[c]
                         for c in long_format.COLUMNS])
    return out.getvalue().encode()


def _jsonl(rows: list[dict]) -> bytes:
    return "".join(r if isinstance(r, str) else json.dumps(r) + "\n" for r in rows).encode()


def _files(row: dict) -> list[tuple[str, str, bytes]]:
    """(what is wrong, format, content): each hostile row in both formats, after a valid row (so it is line 2 or
    3), and whole files that are not the format."""
    files = []
    for label, bad in hostile_rows(row):
        files.append((label, "jsonl", _jsonl([row, bad])))
        column = label.split("=")[0]
        if not (column in long_format.TEXT_COLUMNS and isinstance(bad[column], int | float)):
            files.append((label, "csv", _csv([row, bad])))  # (in CSV a number is text, a valid name: not hostile)
    for fmt in ("csv", "jsonl"):
        files += [
            ("empty file", fmt, b""), ("not the format", fmt, b"hello, world\n"),
            ("invalid UTF-8", fmt, _jsonl([row]) + b'{"study": "\xff\xfe"}\n'),
            ("UTF-16", fmt, _jsonl([row]).decode().encode("utf-16")), ("a NUL byte", fmt, b"\x00\n"),
            ("nested 100,000 deep", fmt, nested(100_000).encode()),
        ]
    files += [("a JSON list", "jsonl", b"[1, 2]\n"), ("a JSON number", "jsonl", str(2**31).encode()),
              ("Infinity", "jsonl", json.dumps(row).replace(f'"score": {row["score"]}', '"score": Infinity').encode()),
              ("CSV header only", "csv", _csv([])), ("CSV field over 128 KiB", "csv",
                                                      _csv([row]) + b'"' + b"x" * (128 * 1024 + 10) + b'"\n')]
    return files


def test_every_hostile_file_is_a_command_error_naming_line_and_field(demo_row, tmp_path):
    failures = []
    for label, fmt, content in _files(demo_row):
        path = tmp_path / f"judgments.{fmt}"
        path.write_bytes(content)
        before = form_fuzz.fingerprint()
        try:
            call_command("import_judgments", str(path), "--study", "demo", "--create-study", stdout=io.StringIO())
        except CommandError as error:
            if not LINE_AND_FIELD.search(str(error)):
                failures.append(f"{fmt} {label}: the message names no line and field: {str(error)[:300]}")
        except Exception as error:  # noqa: BLE001 - a traceback is what this test looks for
            failures.append(f"{fmt} {label}: {type(error).__name__}: {str(error)[:200]}")
        else:
            failures.append(f"{fmt} {label}: accepted")
        if form_fuzz.fingerprint() != before:
            failures.append(f"{fmt} {label}: the database changed")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_a_file_that_begins_with_a_utf8_bom_reads_as_without_it(demo_row, tmp_path, fmt):
    """As the import API reads it (utf-8-sig); before, "line 1: header: missing column(s) study" (CSV) or "not valid
    JSON" (JSON Lines)."""
    content = _csv([demo_row]) if fmt == "csv" else _jsonl([demo_row])
    said = []
    for name, data in (("plain", content), ("bom", "\ufeff".encode() + content)):
        path = tmp_path / f"{name}.{fmt}"
        path.write_bytes(data)
        out = io.StringIO()
        call_command("import_judgments", str(path), "--study", "demo", "--create-study", stdout=out)
        said.append(out.getvalue().replace(str(path), "FILE"))
    assert said[0] == said[1] and "1 unchanged" in said[0]


SLUG_REFUSED = form_fuzz.REFUSED_SLUGS


@pytest.mark.parametrize(("slug", "message"), SLUG_REFUSED)
def test_a_study_the_import_would_create_under_a_slug_no_study_may_have_is_refused(tmp_path, slug, message):
    """The study the import creates has the New study form's slug rules (annotation.services.study_slug_check):
    never a DataError, never a study nobody can open (/studies/new/ is the create page)."""
    row = {"study": slug, "round": "main", "reviewer": "r1", "is_gold": False, "dataset": "D", "conversation_id": "c",
           "turn_index": 1, "model": "", "attribute": "crisis", "score": 1, "instance_count": None, "spans": []}
    path = tmp_path / "judgments.jsonl"
    path.write_bytes(_jsonl([row]))
    before = form_fuzz.fingerprint()
    with pytest.raises(CommandError) as refused:
        call_command("import_judgments", str(path), "--study", slug, "--create-study", stdout=io.StringIO())
    assert str(refused.value) == (f"{path}: 1 error(s), nothing was changed:\nline 1: study: no study {slug!r}, "
                                  f"and the import cannot create it: {message}")
    assert form_fuzz.fingerprint() == before
    assert not Study.objects.filter(slug=slug).exists()
