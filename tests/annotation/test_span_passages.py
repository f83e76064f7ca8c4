"""A span given through the judgment import (the API, CSV and JSON Lines) over text a browser and Python count
differently (tests/passages.py) is stored with the offsets given, which name the same passage, and every export
gives it back unchanged: the long format's downloads, the API's judgments and the study bundle (its responses.csv
text, read as the recompute reads it, holds the passage at the same offsets). A span that says which passage it
marks (its ``text``) and whose offsets name another (counted in UTF-16 units, in bytes, in a text with its CRLFs
made LFs) is refused, naming both, and nothing is written."""

from __future__ import annotations

import csv
import io
import json
import zipfile

import pytest

from annotation.long_format import read_rows
from annotation.models import Judgment, Span
from benchmark import conversation_ingest
from benchmark.models import ModelResponse
from common.cells import unneutralise
from metrics import runs as metric_runs
from metrics import services as metric_services
from metrics.models import MetricRun
from reports import bundle
from tests.factories import RoundFactory, attribute
from tests.passages import PASSAGES, TEXT

pytestmark = pytest.mark.django_db

IMPORT = "/api/v1/studies/cab-demo/judgments/import/"
EXPORT = "/api/v1/studies/cab-demo/exports/judgments.{fmt}"
FORMULA = "-" + TEXT  # a cell a spreadsheet would run: the CSV exports write it with a leading quote


def spans_of(text: str, slug: str, *, quoted: bool = False) -> list[dict]:
    """A span on every passage, code-point offsets into ``text``; ``quoted``: each says its passage too."""
    return [{"start": text.index(p), "end": text.index(p) + len(p), "subcategory": slug, **({"text": p} if quoted
            else {})} for p in PASSAGES]


def offsets(spans: list[dict]) -> list[dict]:
    """The spans as the exports give them: offsets and subcategory, in order."""
    return sorted(({k: s[k] for k in ("start", "end", "subcategory")} for s in spans),
                  key=lambda s: (s["start"], s["end"]))


@pytest.fixture
def coded(study, reviewer):
    """The study's calibration round (closed) and the long-format rows of the reviewer's AUR on two responses, one
    with TEXT (its spans saying their passages) and one with FORMULA, a span on every passage."""
    conversation_ingest.conversations_import(rows=[(1, {
        "dataset": "CounselChat", "conversation_id": "tricky", "kind": "single", "topic": "Anxiety",
        "complexity": "low", "turns": [{"index": 1, "client": "Hello.", "responses": [
            {"model": "GPT", "model_version": "1", "text": TEXT},
            {"model": "Claude", "model_version": "1", "text": FORMULA}]}]})])
    RoundFactory(study=study, kind="calibration", number=1, status="closed")
    slug = attribute("AUR").subcategories.first().slug
    rows = [{"study": "cab-demo", "round": "calibration-1", "reviewer": reviewer.username, "is_gold": False,
             "dataset": "CounselChat", "conversation_id": "tricky", "turn_index": 1, "model": model,
             "attribute": "AUR", "score": 1, "instance_count": len(PASSAGES),
             "spans": spans_of(text, slug, quoted=model == "GPT")}
            for model, text in (("GPT", TEXT), ("Claude", FORMULA))]
    return rows


def passages(model: str, spans: list[dict]) -> list[str]:
    text = ModelResponse.objects.get(turn__conversation__external_id="tricky", model_slot=model).text
    return [text[s["start"]:s["end"]] for s in spans]


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_a_span_over_tricky_text_is_imported_and_exported_with_the_offsets_given(fmt, coded, admin_user, researcher,
                                                                                  as_token):
    if fmt == "jsonl":
        body = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in coded)
    else:
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=list(coded[0]))
        writer.writeheader()
        writer.writerows({**row, "spans": json.dumps(row["spans"], ensure_ascii=False)} for row in coded)
        body = out.getvalue()
    answer = as_token(admin_user, scopes=["import"]).generic(
        "POST", IMPORT, body.encode(), content_type="text/csv" if fmt == "csv" else "application/x-ndjson")
    assert answer.status_code == 200, answer.json()
    given = {row["model"]: row["spans"] for row in coded}
    for model, spans in given.items():
        stored = Span.objects.filter(judgment__response__model_slot=model).order_by("start", "end")
        assert [{"start": s.start, "end": s.end, "subcategory": s.subcategory.slug} for s in stored] == offsets(spans)
        assert sorted(passages(model, spans)) == sorted(PASSAGES)

    api = as_token(researcher)
    listed = {j["model"]: j["spans"] for j in api.get("/api/v1/studies/cab-demo/judgments/").json()["results"]}
    for export_fmt in ("csv", "jsonl"):
        download = api.get(EXPORT.format(fmt=export_fmt))
        text = b"".join(download.streaming_content).decode("utf-8")
        exported = {row["model"]: row["spans"] for _, row in read_rows(io.StringIO(text, newline=""), fmt=export_fmt)}
        for model, spans in given.items():
            key = offsets(spans)
            assert listed[model] == key
            assert (json.loads(exported[model]) if isinstance(exported[model], str) else exported[model]) == key


def test_the_bundle_gives_each_span_back_on_its_passage(coded, study, admin_user, as_token, settings, tmp_path):
    body = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in coded)
    answer = as_token(admin_user, scopes=["import"]).generic("POST", IMPORT, body.encode(),
                                                            content_type="application/x-ndjson")
    assert answer.status_code == 200, answer.json()
    settings.BUNDLE_DIR = str(tmp_path)
    run = metric_services.metric_run_request(study=study, by=None, bootstrap=100)
    metric_runs.metric_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == MetricRun.Status.SUCCEEDED, run.error
    with zipfile.ZipFile(io.BytesIO(bundle.bundle_file(run=run).path.read_bytes())) as archive:
        responses = list(csv.DictReader(io.StringIO(archive.read("data/responses.csv").decode(), newline="")))
        judgments = list(csv.DictReader(io.StringIO(archive.read("data/judgments.csv").decode(), newline="")))
    texts = {row["model"]: unneutralise(row["text"]) for row in responses}
    assert texts == {"GPT": TEXT, "Claude": FORMULA}
    assert len(judgments) == 2
    for row in judgments:
        spans = json.loads(unneutralise(row["spans"]))
        assert spans == offsets(next(r["spans"] for r in coded if r["model"] == row["model"]))
        assert sorted(texts[row["model"]][s["start"]:s["end"]] for s in spans) == sorted(PASSAGES)


def utf16(text: str, index: int) -> int:
    """Where a code-point offset into ``text`` is in UTF-16 units, as JavaScript's String counts."""
    return len(text[:index].encode("utf-16-le")) // 2


@pytest.mark.parametrize(("how", "place"), [
    ("UTF-16 units", lambda text, index: utf16(text, index)),
    ("UTF-8 bytes", lambda text, index: len(text[:index].encode())),
    ("CRLF made LF", lambda text, index: len(text[:index].replace("\r\n", "\n"))),
])
def test_a_span_whose_offsets_name_another_passage_than_its_text_is_refused_naming_both(how, place, coded,
                                                                                         admin_user, as_token):
    row = coded[0]
    passage = "\U0001D4B3 math"
    start = place(TEXT, TEXT.index(passage))
    row["spans"] = [{"start": start, "end": start + len(passage), "subcategory": row["spans"][0]["subcategory"],
                     "text": passage}]
    answer = as_token(admin_user, scopes=["import"]).generic(
        "POST", IMPORT, (json.dumps(row, ensure_ascii=False) + "\n").encode(), content_type="application/x-ndjson")
    assert answer.status_code == 400, how
    [error] = answer.json()["errors"]
    marked = TEXT[start:start + len(passage)]
    assert error == {"line": 1, "field": "spans[0]", "message": (
        f"AUR: span [{start}, {start + len(passage)}) marks {marked!r} in the response text, not {passage!r} "
        "(offsets count characters as code points: an emoji is one, a CRLF two)")}
    assert not Span.objects.exists() and not Judgment.objects.exists()


def test_a_span_text_that_is_no_string_is_refused(coded, admin_user, as_token):
    row = coded[0]
    row["spans"] = [{**row["spans"][0], "text": 3}]
    answer = as_token(admin_user, scopes=["import"]).generic(
        "POST", IMPORT, (json.dumps(row) + "\n").encode(), content_type="application/x-ndjson")
    assert answer.status_code == 400
    assert answer.json()["errors"] == [{"line": 1, "field": "spans[0]",
                                        "message": "text, when given, is the passage the span marks: a string"}]
