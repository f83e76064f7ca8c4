"""Shared by the HTML form fuzz tests (tests/{access,annotation,calibration}/test_forms_fuzz.py and others):
hostile field values for form posts, drawn by Hypothesis, and a cheap fingerprint of every table the product
writes, so that "a refused request changed nothing" is checked on the database itself.

The API is fuzzed from its OpenAPI schema by schemathesis (tests/api/fuzz.py); the HTML endpoints have no schema,
so each test names its fields and Hypothesis fills them: missing, hostile, valid, or repeated."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Sequence

import pytest
from django.apps import apps
from django.contrib.messages import constants as message_levels
from django.contrib.messages import get_messages
from django.core.management import CommandError, call_command
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# Tables the product writes (sessions, sign-in attempts and the like are not its data).
_APPS = ("annotation", "benchmark", "audit", "metrics", "api")

HOSTILE_SCALARS = [
    "", " ", "0", "-1", "1", "2", "7", "+5", " 3 ", "2147483647", "2147483648", "-2147483648", "-2147483649",
    "4294967296", "9223372036854775807", "9223372036854775808", str(10**20), "-" + str(10**20), "1" * 5000,
    "1.5", "1e3", "1e309", "-0", "0x10", "1_000", "١٢", "Infinity", "-Infinity", "NaN", "nan", "true", "false",
    "null", "None", "on", "\x00", "1\x00", "a\x00b", "x" * 300, "x" * 140_000, "é" * 70_000, "<script>", "' OR 1=1 --",
    "../../etc/passwd", "[]", "{}", '{"a": [1, {"b": null}]}', "[" * 2000 + "]" * 2000, "\ud7ff", "\u202e",
    "calibration-1", "main", "GPT",
]

# Where an integer column or a form's whole-number field ends: drawn often for number fields (``numbers()``).
INT_EDGES = ["2147483647", "2147483648", "-2147483648", "-2147483649", "9223372036854775808", str(10**20), "-1",
             "1.5", "1e3", "Infinity", "NaN", "\x00", ""]


def numbers() -> st.SearchStrategy[str]:
    return st.sampled_from(INT_EDGES)


JSON_NUMBERS = [0, 1, 5, -1, 2**31 - 1, 2**31, -(2**31) - 1, 2**63, 10**20, -(10**20), 1.0, 1.5, 1e308, True, False,
                None, "1", "Infinity", "NaN", [], {}, [1], {"start": 1}]


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def span_lists(subcategories: Sequence[str]) -> st.SearchStrategy[str]:
    """The autosave's ``spans`` field: JSON lists of span objects with hostile offsets and subcategories, deep
    nesting, bare numbers ``Infinity``/``NaN`` (Python's json reads them), repeats and lists too long."""
    subcategory = st.sampled_from([*subcategories, "", "\x00", "x" * 500, None, 1, ["a"]]) if subcategories \
        else st.sampled_from(["", "nope", None])
    number = st.sampled_from(JSON_NUMBERS) | st.integers(min_value=-3, max_value=80)
    span = st.fixed_dictionaries({"start": number, "end": number, "subcategory": subcategory})
    spans = st.lists(span, max_size=6).map(json.dumps)
    first = subcategories[0] if subcategories else "x"
    special = st.sampled_from([
        '[{"start": 0, "end": Infinity, "subcategory": "' + first + '"}]',
        '[{"start": NaN, "end": 3, "subcategory": "x"}]', '[{"start": -Infinity, "end": 1e999}]',
        nested(100_000), '[{"start": 0, "end": 1, "subcategory": ' + nested(50_000) + "}]",
        json.dumps([{"start": 0, "end": 1, "subcategory": subcategories[0] if subcategories else "x"}] * 201),
        json.dumps([{"start": 0, "end": 2, "subcategory": subcategories[0] if subcategories else "x"}] * 2),
        "[1, 2, 3]", '{"start": 0}', "not json", "\x00", '[{"start": 0, "end": 1, "subcategory": "a", "x": {}}]',
    ])
    return st.one_of(spans, special, st.sampled_from(HOSTILE_SCALARS))


def field_values(valid: Sequence[str] = (), extra: st.SearchStrategy[str] | None = None) -> st.SearchStrategy:
    """One form field: left out (None), one value, or the field repeated; values hostile or (often) valid, and
    ``extra`` ones as often as all the others together."""
    value = st.sampled_from(HOSTILE_SCALARS) | st.text(max_size=30)
    if valid:
        value = st.sampled_from(list(valid)) | value
    branches = [st.none(), value, st.lists(value, min_size=2, max_size=3)]
    return st.one_of(*branches, *([extra] * len(branches) if extra is not None else []))


def form_posts(valid: Sequence[dict] | st.SearchStrategy[dict],
               hostile: dict[str, st.SearchStrategy]) -> st.SearchStrategy[dict]:
    """A POST body: a valid one, with up to three of its fields replaced by hostile values (each may be left out
    or repeated) and sometimes a field nobody asked for. Starting from valid bodies takes the fuzz past the
    form's first refusal, to the rules and the database."""
    base = st.sampled_from(list(valid)) if isinstance(valid, Sequence) else valid
    names = sorted(hostile)
    changes = st.lists(st.sampled_from(names), max_size=3, unique=True).flatmap(
        lambda chosen: st.fixed_dictionaries({name: hostile[name] for name in chosen}))
    stray = st.dictionaries(st.sampled_from(["id", "pk", "coder", "by", "status", "is_gold", "csrfmiddlewaretoken"]),
                            st.sampled_from(HOSTILE_SCALARS), max_size=2)

    def merge(parts: tuple[dict, dict, dict]) -> dict:
        body, changed, extra = parts
        merged = {**extra, **body, **changed}
        return {name: value for name, value in merged.items() if value is not None}

    return st.tuples(base, changes, stray).map(merge)


def fingerprint() -> dict[str, tuple[int, str]]:
    """Row count and a hash of every row of every table the product writes (one query)."""
    tables = sorted({model._meta.db_table for config in apps.get_app_configs() if config.name in _APPS
                     for model in config.get_models(include_auto_created=True)})
    quote = connection.ops.quote_name
    sql = " UNION ALL ".join(  # table names come from the models
        f"SELECT '{table}', count(*), md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) "  # noqa: S608
        f"FROM {quote(table)} t" for table in tables)
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return {name: (count, digest) for name, count, digest in cursor.fetchall()}


def command_refusal(command: str, *args: str) -> str:
    """Run a management command that must refuse: the message of its CommandError, once it is checked that the
    command wrote nothing (``fingerprint``)."""
    before = fingerprint()
    with pytest.raises(CommandError) as refused:
        call_command(command, *args, stdout=io.StringIO())
    assert fingerprint() == before
    return str(refused.value)


# Slugs no study may have, and the words of their refusal (annotation.services.study_slug_check).
REFUSED_SLUGS = [
    ("s" * 81, "Ensure this value has at most 80 characters (it has 81)."),
    ("new", "'new' is reserved; choose another"),
    ("bad slug", "Enter a valid “slug” consisting of letters, numbers, underscores or hyphens."),
    ("a/b", "Enter a valid “slug” consisting of letters, numbers, underscores or hyphens."),
]


def said(response) -> tuple[list[str], list[str]]:
    """The (success, error) messages a redirecting admin action added for the next page."""
    # Only this request's (messages not yet shown on a page are kept for the next one: never followed here).
    stored = list(get_messages(response.wsgi_request)._queued_messages)
    return ([m.message for m in stored if m.level == message_levels.SUCCESS],
            [m.message for m in stored if m.level == message_levels.ERROR])


def sweep(post: Callable[[dict], object], valid: dict, fields: Sequence[str], *,
          accepted: Callable[[object], bool], values: Sequence[str] = tuple(INT_EDGES)) -> dict[int | str, int]:
    """Every one of ``values`` in every one of ``fields`` of a valid body, one at a time (where the random draws
    of ``drive`` would rarely land): the same checks as ``drive``."""
    statuses: dict[int | str, int] = {}
    for name in fields:
        for value in values:
            body = {**valid, name: value}
            before = fingerprint()
            response = post(body)
            status = response.status_code  # type: ignore[attr-defined]
            statuses[status] = statuses.get(status, 0) + 1
            assert status < 500, (status, body)
            if not accepted(response):
                assert fingerprint() == before, f"refused with {status} but the database changed: {body!r}"
    return statuses


def drive(
    post: Callable[[dict], object],
    bodies: st.SearchStrategy[dict],
    *,
    accepted: Callable[[object], bool],
    examples: int = 40,
) -> dict[int, int]:
    """Post ``examples`` generated bodies; every answer must be below 500, and every answer ``accepted`` does not
    call a success must leave the database as it was. Returns how many answers had each status, and how many
    were "accepted" and "refused"."""
    statuses: dict[int | str, int] = {}

    @given(body=bodies)
    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    def one(body: dict) -> None:
        before = fingerprint()
        response = post(body)
        status = response.status_code  # type: ignore[attr-defined]
        statuses[status] = statuses.get(status, 0) + 1
        assert status < 500, (status, body)
        if accepted(response):
            statuses["accepted"] = statuses.get("accepted", 0) + 1
        else:
            statuses["refused"] = statuses.get("refused", 0) + 1
            assert fingerprint() == before, f"refused with {status} but the database changed: {body!r}"

    one()
    print("fuzz:", statuses)  # shown with -s: how far the examples got
    return statuses


# --- conversation files (the upload page and ``import_conversations``) --------------------------------------------

OVER_128_KIB = "x" * (128 * 1024 + 1)
JSON_HOSTILE = [2**31, -(2**31) - 1, 10**20, -1, 0, 1.5, 1e308, None, True, "", "a\x00b", "\x00", [], {}, [[[[]]]],
                {"a": {"b": {}}}]
# Where a conversation record (docs/reference.md#conversations-json-lines) can be made wrong: a path of keys and list
# indexes.
RECORD_PATHS = [("dataset",), ("conversation_id",), ("kind",), ("topic",), ("complexity",), ("title",), ("turns",),
                ("turns", 0, "index"), ("turns", 0, "client"), ("turns", 0, "therapist_reference"),
                ("turns", 0, "responses"), ("turns", 0, "responses", 0, "model"),
                ("turns", 0, "responses", 0, "model_version"), ("turns", 0, "responses", 0, "text")]


def conversation_record(conversation_id: str = "fuzz-1") -> dict:
    """A valid single-turn record with one response per demo model slot."""
    return {"dataset": "Fuzz", "conversation_id": conversation_id, "kind": "single", "topic": "Sleep",
            "complexity": "low", "title": "Fuzz", "turns": [{"index": 1, "client": "I cannot sleep.",
                                                             "therapist_reference": "Tell me more.",
                                                             "responses": [{"model": "GPT", "model_version": "v1",
                                                                            "text": "That sounds hard."}]}]}


def _set(record: dict, path: tuple, value: object) -> dict:
    target: object = record
    for key in path[:-1]:
        target = target[key]  # type: ignore[index]
    target[path[-1]] = value  # type: ignore[index]
    return record


def hostile_conversation_files() -> list[tuple[str, bytes]]:
    """(what is wrong, file content): every record path set to every hostile JSON value, and files that are not
    JSON Lines at all."""
    files = []
    for index, path in enumerate(RECORD_PATHS):
        # Each path gets a field over 128 KiB and three other hostile values, in turn (each value on 2-3 paths).
        for value in [OVER_128_KIB, *(JSON_HOSTILE[(3 * index + k) % len(JSON_HOSTILE)] for k in range(3))]:
            label = f"{'.'.join(map(str, path))}={str(value)[:12]!r}"
            files.append((label, (json.dumps(_set(conversation_record(), path, value)) + "\n").encode()))
    nul_id = json.dumps(conversation_record("fuzz\x00id")).encode()
    files += [
        ("empty file", b""), ("blank lines", b"\n\n  \n"), ("not JSON", b"hello, world\n"),
        ("invalid UTF-8", b'{"dataset": "\xff\xfe\xfa"}\n'),
        ("UTF-16", json.dumps(conversation_record()).encode("utf-16")),
        ("a JSON list", b"[1, 2, 3]\n"), ("a JSON number", str(2**31).encode()), ("nested 100,000 deep",
                                                                                    nested(100_000).encode()),
        ("nested in a field", json.dumps(conversation_record()).replace('"Sleep"', nested(100_000)).encode()),
        ("NUL in an id", nul_id), ("a NUL byte", b"\x00\n"), ("Infinity", b'{"dataset": Infinity}\n'),
        ("second line broken", json.dumps(conversation_record()).encode() + b"\n{broken\n"),
        ("duplicate conversation", (json.dumps(conversation_record()) + "\n").encode() * 2),
    ]
    return files
