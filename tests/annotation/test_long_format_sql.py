"""The judgments' lines of an export are written by the database (``annotation.long_format_sql``): they must be the
Python writer's bytes exactly, for any name a study can hold, and a line that cannot be made stops the export
rather than leaving a judgment out."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.db import transaction
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from annotation import long_format, long_format_sql
from annotation.models import Study
from common.cells import csv_stream, jsonl_stream
from tests.factories import (
    ConversationFactory,
    DatasetFactory,
    JudgmentFactory,
    ModelResponseFactory,
    RoundFactory,
    SpanFactory,
    StudyFactory,
    TurnFactory,
    UserFactory,
    attribute,
)

pytestmark = pytest.mark.django_db


def python_file(study: Study, fmt: str) -> str:
    """The file as the Python writer makes it (the format's definition)."""
    if fmt == "csv":
        columns = long_format.columns_for(study)
        return "".join(csv_stream(columns, long_format._csv_rows(long_format.file_tuples(study=study), len(columns))))
    return "".join(jsonl_stream(long_format.file_tuples(study=study), keys=long_format.FILE_KEYS))


def exported(study: Study, fmt: str) -> str:
    return "".join(long_format.WRITERS[fmt](study=study))


# Names a spreadsheet would run, quotes, separators, line breaks, backslashes (COPY and JSON escapes), non-ASCII;
# never NUL or a lone surrogate (PostgreSQL cannot store them; the importers refuse them).
NAME = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=10)
AWKWARD = ["=SUM(A1)", "+1", "-x", "@at", "'quoted", "\tTab", "\rCR", 'say "hi", then', "back\\slash\\n",
           "line\nbreak", "é😊 ünï", "B", "a"]


def awkward_study(names: list[str]) -> Study:
    """Two rounds (one with gold rows) of turn- and response-level judgments, with instance counts and spans, on
    conversations, datasets, coders and models named from ``names``."""
    study = StudyFactory(slug="awk")
    rounds = [RoundFactory(study=study, kind="calibration", number=1), RoundFactory(study=study, kind="main", number=1)]
    datasets = [DatasetFactory(name=names[0][:100]), DatasetFactory(name=names[1][:100] + "·2")]
    coders = [UserFactory(username=names[2][:150]), UserFactory(username=names[3][:140] + "·2")]
    slots = [names[4][:50], names[5][:45] + "·2"]
    aur, td, u1 = attribute("AUR"), attribute("TD"), attribute("U1")
    for n, external in enumerate([names[6][:200], names[7][:190] + "·2", names[0][:190] + "·3"]):
        conversation = ConversationFactory(dataset=datasets[n % 2], external_id=external)
        turn = TurnFactory(conversation=conversation)
        for slot in slots:
            response = ModelResponseFactory(turn=turn, model_slot=slot)
            for k, coder in enumerate(coders):
                round_ = rounds[(n + k) % 2]
                judgment = JudgmentFactory(round=round_, coder=coder, response=response, attribute=aur, score=k + 1,
                                           instance_count=n if k else None)
                if (n + k) % 2:
                    SpanFactory(judgment=judgment, start=5, end=9, subcategory=aur.subcategories.last())
                    SpanFactory(judgment=judgment, start=1, end=3)
                    SpanFactory(judgment=judgment, start=1, end=3, subcategory=aur.subcategories.last())
            JudgmentFactory(round=rounds[0], coder=coders[n % 2], is_gold=True, response=response, attribute=td,
                            score=n % 3)
        for coder in coders:
            JudgmentFactory(round=rounds[1], coder=coder, response=None, turn=turn, attribute=u1, score=n % 2)
    return study


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(names=st.lists(NAME, min_size=8, max_size=8))
@example(names=AWKWARD[:8])
@example(names=AWKWARD[5:])
def test_the_databases_lines_are_the_python_writers_bytes_for_any_names(names):
    with transaction.atomic():
        study = awkward_study(names)
        for fmt in long_format.FORMATS:
            assert exported(study, fmt) == python_file(study, fmt)
        transaction.set_rollback(True)


def test_the_awkward_study_has_every_kind_of_row():
    """The study above is worth comparing: gold rows, turn-level rows, instance counts, several spans per
    judgment, and names that need CSV quoting and JSON escapes."""
    study = awkward_study(AWKWARD[:8])
    rows = list(long_format.judgment_rows(study=study))
    assert any(r["is_gold"] for r in rows) and any(r["model"] is None for r in rows)
    assert any(r["instance_count"] for r in rows) and any(len(r["spans"]) == 3 for r in rows)
    text = exported(study, "csv")
    assert '"say ""hi"", then' in text and "'=SUM(A1)" in text and "\r\n" in text
    assert '\\"hi\\"' in exported(study, "jsonl")


@pytest.mark.parametrize("command, arguments", [
    ("generate_care_synthetic", ["--histories", "4"]),
    ("generate_lc8_synthetic", ["--trajectories", "3", "--raters", "2", "--rated-trajectories", "2"]),
    ("generate_synthetic", ["--conversations", "8", "--reviewers", "3", "--experts", "2", "--calibration-rounds",
                            "2", "--calibration-turns", "2", "--coders-per-turn", "2", "--span-rate", "0.6"]),
])
def test_longitudinal_and_session_rated_studies_export_the_same_bytes(command, arguments):
    """Session rows (session_index), the session labels after the judgments (LC8, seed column), methods and
    experts' roles."""
    call_command(command, *arguments, "--slug", "gen", stdout=io.StringIO())
    study = Study.objects.get(slug="gen")
    for fmt in long_format.FORMATS:
        text = exported(study, fmt)
        assert text == python_file(study, fmt)
        assert text.count("\n") > 20


@pytest.mark.parametrize("lookup", ["cab_export_conversation", "cab_export_model", "cab_export_attribute",
                                    "cab_export_subcategory", "cab_export_coder"])
def test_a_judgment_whose_line_cannot_be_made_stops_the_export(monkeypatch, lookup):
    """A cell missing from a lookup (here: the lookup loses its first row, or all of them for the schema's
    subcategories, most of which no span uses) makes a NULL line; the export raises rather than leave the judgment
    out of the file."""
    study = awkward_study(AWKWARD[:8])
    fill = long_format_sql._fill

    def losing_a_row(cursor, name, rows, **kwargs):
        if name == lookup:
            rows = [] if name == "cab_export_subcategory" else rows[1:]
        return fill(cursor, name, rows, **kwargs)

    monkeypatch.setattr(long_format_sql, "_fill", losing_a_row)
    for fmt in long_format.FORMATS:
        with pytest.raises(long_format_sql.ExportIncompleteError):
            exported(study, fmt)


def test_an_export_reads_its_first_lines_before_the_last_slice_is_sorted():
    """The file streams slice by slice: the first block arrives from the first slice alone."""
    study = awkward_study(AWKWARD[:8])
    with transaction.atomic():
        blocks = long_format_sql.judgment_lines(study=study, fmt="jsonl", columns=len(long_format.FILE_KEYS))
        first = next(blocks)
        assert '"round": "calibration-1"' in first and '"round": "main-1"' not in first
        blocks.close()
