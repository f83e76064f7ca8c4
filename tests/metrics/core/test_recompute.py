"""The recompute's pure side (metrics/core/recompute.py, report_file.py; docs/bundle.md#recompute): the report does
not depend on the order of the rows (a bundle's long format is in file order, the server reads by id), the report
file's canonical form is what PostgreSQL's jsonb gives back, and a bundle the recompute cannot read is refused with a
reason. The byte-for-byte recompute of a real bundle is tests/reports/test_bundle.py."""

from __future__ import annotations

import dataclasses
import json
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from metrics.core import recompute
from metrics.core.report import ReportParams, build_report
from metrics.core.report_file import canonical, report_file_text
from metrics.core.synthetic import DEFAULT_SCHEMA, DEFAULT_SUBCATEGORIES, generate


def _shuffled(table, rng):
    order = rng.permutation(len(table))
    return type(table)(**{f.name: np.asarray(getattr(table, f.name))[order] for f in dataclasses.fields(table)})


def test_the_report_does_not_depend_on_the_order_of_the_rows():
    study = generate(DEFAULT_SCHEMA, subcategory_attribute=DEFAULT_SUBCATEGORIES, main_overlap=0.4, seed=11,
                     single_turn_conversations=12, multi_turn_conversations=4, multi_turn_turns=30)
    inputs = {"attributes": DEFAULT_SCHEMA, "response_texts": study.response_texts,
              "conversation_kinds": study.conversation_kinds, "subcategory_attribute": DEFAULT_SUBCATEGORIES,
              "params": ReportParams(bootstrap=40, seed=3)}
    first = json.dumps(build_report(judgments=study.judgments, spans=study.spans, **inputs), sort_keys=True)
    rng = np.random.default_rng(5)
    again = build_report(judgments=_shuffled(study.judgments, rng), spans=_shuffled(study.spans, rng), **inputs)
    assert json.dumps(again, sort_keys=True) == first


def test_the_canonical_form_is_what_jsonb_gives_back():
    value = {"bb": -0.0, "a": [1e16, 2.5e-7, (1, 2)], "ccc": {"zz": 1, "y": True}, "é": None}
    assert list(canonical(value)) == ["a", "bb", "é", "ccc"]  # by UTF-8 length ("é" is two bytes), then bytes
    assert canonical(value)["a"] == [10_000_000_000_000_000, 2.5e-7, [1, 2]]
    assert str(canonical(value)["bb"]) == "0.0"
    assert list(canonical(value)["ccc"]) == ["y", "zz"]


def test_the_report_file_leads_with_its_run_and_refuses_a_report_file():
    text = report_file_text({"id": 3}, {"version": 1, "input": {"fingerprint": "sha256:0"}})
    assert text.startswith('{\n "run": {\n  "id": 3\n }')
    assert json.loads(text) == {"run": {"id": 3}, "version": 1, "input": {"fingerprint": "sha256:0"}}
    with pytest.raises(ValueError, match="already has a run block"):
        report_file_text({"id": 3}, {"run": {}, "version": 1})


def _zip(path: Path, files: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return path


def _run_file(**changes) -> str:
    return json.dumps({"format": recompute.FORMAT, "version": recompute.VERSION, "study": {"kind": "default"}}
                      | changes)


@pytest.mark.parametrize(("files", "reason"), [
    ({}, "has no run.json"),
    ({"run.json": "{"}, "run.json is not JSON"),
    ({"run.json": json.dumps({"format": "something-else"})}, "does not describe a cab-study-bundle"),
    ({"run.json": _run_file(version=99)}, "bundle version 99; this code reads version 1"),
    ({"run.json": _run_file()}, "has no data/judgments.csv"),
])
def test_a_bundle_that_cannot_be_read_is_refused_with_its_reason(tmp_path, capsys, files, reason):
    bundle = _zip(tmp_path / "bundle.zip", files)
    assert recompute.main([str(bundle), "-o", str(tmp_path / "out.json")]) == 2
    assert reason in capsys.readouterr().err
    assert not (tmp_path / "out.json").exists()


def test_a_file_that_is_no_zip_is_refused(tmp_path, capsys):
    (tmp_path / "bundle.zip").write_text("not a zip")
    assert recompute.main([str(tmp_path / "bundle.zip")]) == 2
    assert "not a readable zip file" in capsys.readouterr().err


def test_a_care_or_lc8_bundle_without_its_sections_rows_or_of_an_unknown_kind_is_refused(tmp_path, capsys):
    data = {"data/judgments.csv": "round\r\n", "data/responses.csv": "", "data/conversations.csv": ""}
    for kind, said in (("care", "the bundle has no data/care_sessions.csv"),
                       ("lc8", "the bundle has no data/lc8_sessions.csv"),
                       ("other", "a other study's bundle cannot be recomputed"),
                       ("this", "a this study's bundle cannot be recomputed")):
        bundle = _zip(tmp_path / f"{kind}.zip", {"run.json": _run_file(study={"kind": kind}), **data})
        assert recompute.main([str(bundle)]) == 2
        assert said in capsys.readouterr().err
    # the bundle names a module that is not a kind (``this`` prints on import): it is looked up, never run
    assert "this" not in sys.modules


def test_a_malformed_row_of_a_sections_rows_is_named_by_its_file_and_line():
    from care.core.rows import care_rows_read
    from lc8.core.rows import lc8_rows_read

    block = {"block": {}, "attributes": [], "members": []}
    sessions = "dataset,conversation_id,model,session_index,kind,crisis_type,turns\r\nD,c1,M,one,chat,,1 2\r\n"
    with pytest.raises(ValueError, match="data/care_sessions.csv line 2: session_index 'one' is not a whole number"):
        care_rows_read(block, sessions, "coder,is_gold,attribute,conversation_id,turn_index,on_response,"
                                        "session_index,score\r\n")
    lc8 = {"block": {"items": ["P1"]}, "study": "s", "schema": "x", "codes": ["P1"], "members": []}
    with pytest.raises(ValueError, match="data/lc8_labels.csv line 2: value 'high' is not a number"):
        lc8_rows_read(lc8, "dataset,conversation_id,session_index\r\n",
                      "coder,seed,session,attribute,value\r\nref,,1,P1,high\r\n",
                      "coder,is_gold,session,attribute,score\r\n")


def test_a_malformed_judgment_row_is_named_by_its_line():
    header = "round,reviewer,is_gold,dataset,conversation_id,turn_index,model,attribute,score,spans\r\n"
    good = "main,r1,false,D,c1,1,,U1,2,\r\n"
    with pytest.raises(recompute.BundleError, match="line 3: score 'two' is not a whole number"):
        recompute.bundle_tables(header + good + "main,r1,false,D,c1,1,,U1,two,\r\n")
    with pytest.raises(recompute.BundleError, match="line 2: spans is not a list"):
        recompute.bundle_tables(header + 'main,r1,false,D,c1,1,GPT,TD,2,"[{""start"": 1}]"\r\n')
    with pytest.raises(recompute.BundleError, match="no column score"):
        recompute.bundle_tables(header.replace("score,", ""))
    judgments, spans = recompute.bundle_tables(header + good + "'=x,r1,false,D,c1,,,S1,1,\r\n")
    assert judgments.round.tolist() == ["main", "=x"] and judgments.turn.tolist() == [1, 0]  # unneutralised
    assert len(spans) == 0
