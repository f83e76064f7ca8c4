"""Study bundles (reports/bundle.py, docs/bundle.md): what a bundle holds, that it is the same bytes every time, that
datapackage.json describes every file and column, that the CSVs load (csv, pandas, Hugging Face datasets), that the
recompute without Django writes the bundle's report.json byte for byte, and that a stale study is refused."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import subprocess
import sys
import zipfile
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.test import override_settings

from annotation.models import Judgment, Study
from metrics import runs as metric_runs
from metrics import services as metric_services
from metrics.core import recompute as core_bundle
from metrics.models import MetricRun
from reports import bundle
from tests import scenarios
from tests.factories import StudyFactory

pytestmark = pytest.mark.django_db

ROOT = Path(settings.BASE_DIR)
# Imports a process that recomputes must not make: Django, DRF, Celery and every app of the project.
FORBIDDEN = ("django", "rest_framework", "celery", "cab", "calibration", "reports", "annotation", "benchmark", "api",
             "audit", "access")
WITHOUT_DJANGO = (
    "import sys\n"
    "class Refuse:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    f"        if name.split('.')[0] in {FORBIDDEN!r}:\n"
    "            raise ImportError(f'the recompute imported {name}')\n"
    "sys.meta_path.insert(0, Refuse())\n"
    "import runpy\n"
    "runpy.run_module('metrics.core.recompute', run_name='__main__', alter_sys=True)\n"
)


@pytest.fixture(scope="module")
def bundle_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bundles")
    with override_settings(BUNDLE_DIR=str(folder)):
        yield folder


@pytest.fixture(scope="module")
def built_ids(shared_state, bundle_dir):
    """The synthetic calibrated study (spans, gold, experts, a main round) and its succeeded run, bundled once."""
    with shared_state():
        study = scenarios.synthetic_calibrated_study()
        run = MetricRun.objects.get(study=study, status=MetricRun.Status.SUCCEEDED)
        built = bundle.bundle_file(run=run)
        yield study.pk, run.pk, built.path.read_bytes()


@pytest.fixture
def built(db, built_ids, bundle_dir):
    study_id, run_id, data = built_ids
    return Study.objects.get(pk=study_id), MetricRun.objects.get(pk=run_id), data


def members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def csv_rows(data: bytes) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(data.decode("utf-8"), newline="")))


# --- contents -----------------------------------------------------------------------------------------------------


def test_the_bundle_holds_the_data_the_report_its_figures_and_tables(built, researcher, as_token):
    study, run, data = built
    files = members(data)
    for name in ("README.md", "datapackage.json", "run.json", "report.json", "report.html", "data/judgments.csv",
                 "data/gold.csv", "data/conversations.csv", "data/turns.csv",
                 "data/responses.csv", "figures/reliability/agreement.svg", "figures/reliability/agreement.png",
                 "tables/reliability/reviewers.csv", "tables/risk/ari.csv"):
        assert name in files, name
    # report.json is the report download's file, byte for byte
    download = as_token(researcher).get(f"/api/v1/studies/{study.slug}/exports/report.json?run={run.pk}")
    assert files["report.json"] == download.content
    document = json.loads(files["report.json"])
    assert document["run"]["id"] == run.pk and list(document)[0] == "run"
    # the judgments are the long-format export, the gold its gold rows
    judgments = csv_rows(files["data/judgments.csv"])
    assert len(judgments) == Judgment.objects.filter(round__study=study, score__isnull=False).count()
    gold = csv_rows(files["data/gold.csv"])
    assert gold and gold == [row for row in judgments if row["is_gold"] == "true"]
    # every figure of every dashboard page, as SVG and PNG, and every block's numbers as CSV
    svgs = {name for name in files if name.startswith("figures/") and name.endswith(".svg")}
    assert {name.replace(".svg", ".png") for name in svgs} <= set(files)
    assert {name.replace("figures/", "tables/").replace(".svg", ".csv") for name in svgs} <= set(files)
    assert files["figures/reliability/agreement.png"].startswith(b"\x89PNG")
    # drawn as the dashboard's downloads are: codes named, the run and its input in the file's metadata
    ari = files["figures/risk/ari.svg"].decode()
    assert "Directiveness (D)" in ari and f"CAB metric run {run.pk}, finished" in ari
    assert json.loads(files["report.json"])["input"]["fingerprint"] in ari
    assert f"CAB metric run {run.pk}".encode() in files["figures/risk/ari.png"]
    # the printable report: every page, the figures inline, print styles, the run
    html = files["report.html"].decode()
    for title in ("Reliability", "User input", "Atrophy risk", "Coupling", "Trajectories", "Span evidence"):
        assert f">{title}</h2>" in html
    assert html.count("<svg") == len(svgs) and "@media print" in html
    assert "What the codes on this page mean" in html and 'data-key="exact"' in html  # the pages' names and keys
    # a table without rows is left out: a study without histories has no sessions.csv
    assert "data/sessions.csv" not in files
    assert all(len(csv_rows(files[name])) > 0 for name in files if name.endswith(".csv"))
    assert document["input"]["fingerprint"] in html and f"Run</dt><dd>{run.pk} " in html


def test_run_json_states_the_run_the_software_the_parameters_and_the_fingerprint(built):
    _, run, data = built
    files = members(data)
    described = json.loads(files["run.json"])
    report = json.loads(files["report.json"])
    assert described["format"] == "cab-study-bundle" and described["version"] == 1
    assert described["run"] == report["run"] and described["run"]["finished_at"] is not None
    assert described["software"] == report["software"] and set(described["software"]) == {"version", "commit"}
    assert described["parameters"] == report["parameters"] and described["parameters"]["bootstrap"] == 100
    assert described["study"]["kind"] == "default"
    assert [a["code"] for a in described["attributes"]] == [a["code"] for a in report["attributes"]]


def test_the_same_run_gives_the_same_bytes(built, bundle_dir):
    _, run, data = built
    again = io.BytesIO()
    bundle.bundle_write(run=run, out=again)
    assert again.getvalue() == data
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    assert names == sorted(names)
    assert {info.date_time for info in zipfile.ZipFile(io.BytesIO(data)).infolist()} == {bundle.EPOCH}


def test_every_span_resolves_in_its_response(built):
    files = members(built[2])
    texts = {(r["dataset"], r["conversation_id"], r["turn_index"], r["model"]): r["text"]
             for r in csv_rows(files["data/responses.csv"])}
    spans = 0
    for row in csv_rows(files["data/judgments.csv"]):
        for span in json.loads(row["spans"] or "[]"):
            text = texts[(row["dataset"], row["conversation_id"], row["turn_index"], row["model"])]
            assert 0 <= span["start"] < span["end"] <= len(text)
            spans += 1
    assert spans > 0


# --- datapackage.json and the CSVs --------------------------------------------------------------------------------


def _parses(value: str, kind: str) -> bool:
    if value == "":
        return True
    if kind == "integer":
        return value.lstrip("-").isdigit()
    if kind == "number":
        try:
            float(value)
        except ValueError:
            return False
        return True
    if kind == "boolean":
        return value in ("true", "false")
    return True


def test_datapackage_describes_every_file_and_every_column_with_its_type(built):
    files = members(built[2])
    package = json.loads(files["datapackage.json"])
    assert package["profile"] == "tabular-data-package"
    resources = {resource["path"]: resource for resource in package["resources"]}
    assert set(resources) == set(files) - {"datapackage.json"}
    assert len({resource["name"] for resource in package["resources"]}) == len(resources)
    tabular = 0
    for path, resource in resources.items():
        assert resource["bytes"] == len(files[path])
        assert resource["hash"] == "sha256:" + hashlib.sha256(files[path]).hexdigest()
        if not path.endswith(".csv"):
            continue
        tabular += 1
        fields = resource["schema"]["fields"]
        reader = csv.reader(io.StringIO(files[path].decode("utf-8"), newline=""))
        assert next(reader) == [field["name"] for field in fields], path
        for row in reader:
            assert len(row) == len(fields), path
            for value, field in zip(row, fields, strict=True):
                assert _parses(value, field["type"]), (path, field["name"], value)
    assert tabular >= 20


def test_pandas_reads_every_csv_as_it_is(built, tmp_path):
    import pandas as pd

    files = members(built[2])
    for path in (name for name in files if name.endswith(".csv")):
        frame = pd.read_csv(io.BytesIO(files[path]), keep_default_na=False, na_values=[""])
        header = next(csv.reader(io.StringIO(files[path].decode("utf-8"))))
        assert list(frame.columns) == header, path
        assert len(frame) == len(csv_rows(files[path])), path
    judgments = pd.read_csv(io.BytesIO(files["data/judgments.csv"]))
    assert judgments["is_gold"].dtype == bool and judgments["score"].notna().all()


def test_hugging_face_datasets_loads_every_csv(built, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the CSV loader is part of the package: nothing is fetched
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    import datasets

    with zipfile.ZipFile(io.BytesIO(built[2])) as archive:
        archive.extractall(tmp_path / "bundle")
    csvs = sorted((tmp_path / "bundle").rglob("*.csv"))
    assert len(csvs) >= 20
    for path in csvs:
        rows = len(csv_rows(path.read_bytes()))
        loaded = datasets.load_dataset("csv", data_files=str(path), split="train",
                                       cache_dir=str(tmp_path / "hf-cache"))
        assert loaded.num_rows == rows, path
        assert loaded.column_names == next(csv.reader(io.StringIO(path.read_text(encoding="utf-8")))), path


# --- the recompute -----------------------------------------------------------------------------------------------


def test_the_recompute_without_django_writes_the_bundles_report_json_byte_for_byte(built, tmp_path):
    path = tmp_path / "bundle.zip"
    path.write_bytes(built[2])
    out = tmp_path / "recomputed.json"
    environment = {name: value for name, value in os.environ.items() if name != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run([sys.executable, "-c", WITHOUT_DJANGO, str(path), "-o", str(out)], cwd=ROOT,
                          capture_output=True, text=True, env=environment, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    assert "byte for byte the bundle's report.json" in done.stderr
    assert out.read_bytes() == members(built[2])["report.json"]


def test_the_recompute_reads_an_unzipped_bundle_and_says_when_the_report_differs(built, tmp_path):
    with zipfile.ZipFile(io.BytesIO(built[2])) as archive:
        archive.extractall(tmp_path)
    report = json.loads((tmp_path / "report.json").read_text())
    assert core_bundle.main([str(tmp_path), "-o", str(tmp_path / "again.json")]) == 0
    (tmp_path / "report.json").write_text(json.dumps({**report, "warnings": ["edited"]}, indent=1))
    assert core_bundle.main([str(tmp_path), "-o", str(tmp_path / "again.json")]) == 1


def test_a_bundle_whose_highlighted_responses_are_missing_is_refused_with_the_reason(built, tmp_path, capsys):
    """A study without model responses has no data/responses.csv, and the recompute needs none; a bundle whose
    judgments highlight responses it does not hold is refused, never recomputed with the highlights' texts empty."""
    with zipfile.ZipFile(io.BytesIO(built[2])) as archive:
        archive.extractall(tmp_path)
    assert "start" in (tmp_path / "data" / "judgments.csv").read_text(), "the bundle's judgments have highlights"
    (tmp_path / "data" / "responses.csv").unlink()
    assert core_bundle.main([str(tmp_path), "-o", str(tmp_path / "again.json")]) == 2
    said = capsys.readouterr().err
    assert "the bundle has no data/responses.csv, and" in said and "responses have highlights" in said


def test_a_stale_bundle_is_refused_when_the_judgments_changed_since_the_run(built, bundle_dir, researcher,
                                                                             as_token):
    study, run, _ = built
    judgment = Judgment.objects.filter(round__study=study, is_gold=False, score=0).first()
    Judgment.objects.filter(pk=judgment.pk).update(score=1)
    with pytest.raises(bundle.BundleRefusedError, match="changed since run"):
        bundle.bundle_write(run=run, out=io.BytesIO())
    # the bundle already built for the run is still the run's (its judgments as the run read them)
    response = as_token(researcher).get(f"/api/v1/metric-runs/{run.pk}/bundle.zip")
    assert response.status_code == 200
    for cached in bundle_dir.iterdir():
        cached.rename(cached.with_name("moved-" + cached.name))
    try:
        response = as_token(researcher).get(f"/api/v1/metric-runs/{run.pk}/bundle.zip")
        assert response.status_code == 409 and "start a new metric run" in response.json()["detail"]
    finally:
        for moved in bundle_dir.iterdir():
            moved.rename(moved.with_name(moved.name.removeprefix("moved-")))


def test_the_recompute_uses_the_thresholds_of_the_studys_schema(bundle_dir, tmp_path):
    """A schema's trajectory and coupling thresholds (docs/schema.md) travel in ``run.json``'s parameters, so the
    recompute classes and flags as the run did: ``rising`` flat, Alpha's (U1, AUR) cell significant, both the
    opposite under the defaults (``scenarios.thresholds_study``)."""
    study = scenarios.thresholds_study(slug="bundled", indices={
        "trajectories": {"flat_slope": 0.1}, "coupling": {"min_abs_rho": 0.4, "max_q": 0.7}})
    run = metric_services.metric_run_request(study=study, by=None, bootstrap=10, seed=1)
    assert metric_runs.metric_run_execute(run_id=run.pk)
    path = bundle.bundle_file(run=MetricRun.objects.get(pk=run.pk)).path
    parameters = json.loads(members(path.read_bytes())["run.json"])["parameters"]
    assert (parameters["slope_flat_threshold"], parameters["coupling_min_abs_rho"],
            parameters["coupling_max_q"]) == (0.1, 0.4, 0.7)
    assert core_bundle.main([str(path), "-o", str(tmp_path / "again.json")]) == 0, "byte for byte the run's report"
    again = json.loads((tmp_path / "again.json").read_text(encoding="utf-8"))
    assert again["indices"]["trajectories"]["uiri_conversations"]["bundled"]["rising"]["class"] == "flat"
    assert again["indices"]["coupling"]["raw"]["Alpha"]["U1"]["AUR"]["significant"] is True


# --- the download ------------------------------------------------------------------------------------------------


def _body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def test_the_api_download_resumes_with_ranges_against_a_strong_etag(built, researcher, as_token):
    _, run, data = built
    api = as_token(researcher, scopes=["read"])
    url = f"/api/v1/metric-runs/{run.pk}/bundle.zip"
    whole = api.get(url)
    assert whole.status_code == 200 and _body(whole) == data
    etag = whole["ETag"]
    assert etag == f'"sha256-{hashlib.sha256(data).hexdigest()}"' and whole["Accept-Ranges"] == "bytes"
    assert whole["Content-Type"] == "application/zip" and whole["Content-Length"] == str(len(data))
    assert whole["Content-Disposition"] == f'attachment; filename="syn-run{run.pk}-bundle.zip"'
    size = len(data)
    for header, first, last in (("bytes=1000-", 1000, size - 1), ("bytes=5-9", 5, 9), ("bytes=-20", size - 20,
                                size - 1), (f"bytes=10-{size + 50}", 10, size - 1)):
        part = api.get(url, HTTP_RANGE=header)
        assert part.status_code == 206, header
        assert part["Content-Range"] == f"bytes {first}-{last}/{size}"
        assert _body(part) == data[first:last + 1]
        assert part["ETag"] == etag
    resumed = api.get(url, HTTP_RANGE="bytes=100-", HTTP_IF_RANGE=etag)
    assert resumed.status_code == 206 and _body(resumed) == data[100:]
    changed = api.get(url, HTTP_RANGE="bytes=100-", HTTP_IF_RANGE='"another-file"')
    assert changed.status_code == 200 and _body(changed) == data
    beyond = api.get(url, HTTP_RANGE=f"bytes={size}-")
    assert beyond.status_code == 416 and beyond["Content-Range"] == f"bytes */{size}"
    assert "outside the file" in beyond.json()["detail"]
    for ignored in ("bytes=0-1,5-6", "lines=1-2", "bytes=9-3", "nonsense"):
        assert api.get(url, HTTP_RANGE=ignored).status_code == 200, ignored


def test_reviewers_get_403_and_other_studies_tokens_cannot_reach_the_bundle(built, reviewer, researcher, as_token,
                                                                            other_study):
    _, run, _ = built
    url = f"/api/v1/metric-runs/{run.pk}/bundle.zip"
    assert as_token(reviewer).get(url).status_code == 403
    assert as_token(researcher, scopes=["read"], study=other_study).get(url).status_code == 403
    assert as_token(researcher, scopes=["metrics"]).get(url).status_code == 403
    assert as_token(researcher).get("/api/v1/metric-runs/999999/bundle.zip").status_code == 404


def test_a_run_that_has_not_succeeded_has_no_bundle(built, researcher, as_token):
    study, _, _ = built
    queued = MetricRun.objects.create(study=study, parameters={"seed": 0, "bootstrap": 10, "top_k": 6})
    response = as_token(researcher).get(f"/api/v1/metric-runs/{queued.pk}/bundle.zip")
    assert response.status_code == 409 and "only a succeeded run has a bundle" in response.json()["detail"]


def test_the_exports_page_links_the_bundle_and_the_browser_download_is_the_same_file(built, client, researcher,
                                                                                   reviewer):
    study, run, data = built
    client.force_login(researcher)
    link = f"/studies/{study.slug}/reports/runs/{run.pk}/bundle.zip"
    assert link in client.get("/exports/").content.decode()
    assert link in client.get(f"/studies/{study.slug}/reports/").content.decode()
    download = client.get(link)
    assert download.status_code == 200 and _body(download) == data
    assert client.get(link, HTTP_RANGE="bytes=0-99").status_code == 206
    client.force_login(reviewer)
    assert client.get(link).status_code == 403


# --- the command ---------------------------------------------------------------------------------------------------


def test_export_bundle_writes_the_runs_bundle(built, tmp_path):
    study, run, data = built
    out = tmp_path / "bundle.zip"
    call_command("export_bundle", study.slug, str(out), "--run", str(run.pk), stderr=io.StringIO())
    assert out.read_bytes() == data
    call_command("export_bundle", study.slug, str(tmp_path / "newest.zip"), stderr=io.StringIO())
    assert (tmp_path / "newest.zip").read_bytes() == data
    with pytest.raises(CommandError, match="no succeeded metric run 999999"):
        call_command("export_bundle", study.slug, str(out), "--run", "999999")
    with pytest.raises(CommandError, match="no study with slug 'nope'"):
        call_command("export_bundle", "nope", str(out))


def test_export_bundle_into_a_folder_names_the_file_as_the_download_does(built, client, researcher, tmp_path):
    """``export_bundle STUDY FOLDER`` crashed on copying the zip onto a folder (IsADirectoryError, a traceback): it
    now writes it there under the name the download gives it (its Content-Disposition), as ``cab download bundle -o
    FOLDER`` does."""
    study, run, data = built
    client.force_login(researcher)
    answer = client.get(f"/studies/{study.slug}/reports/runs/{run.pk}/bundle.zip")
    served = answer["Content-Disposition"].split("filename=", 1)[1].strip('"')
    folder = tmp_path / "bundles"
    folder.mkdir()
    call_command("export_bundle", study.slug, str(folder), "--run", str(run.pk), stderr=io.StringIO())
    assert [p.name for p in folder.iterdir()] == [served] and (folder / served).read_bytes() == data
    with pytest.raises(CommandError, match="nowhere: no such folder"):
        call_command("export_bundle", study.slug, str(tmp_path / "nowhere" / "b.zip"), stderr=io.StringIO())


def test_export_bundle_into_a_folder_not_made_yet_is_refused_and_writes_nothing(built, tmp_path):
    """``export_bundle STUDY OUT/``, a name ending in "/" (a folder) that is not one yet, wrote the zip as a file named
    OUT, where the next export into OUT/ then wrote over it: refused now, nothing written."""
    study, run, _ = built
    with pytest.raises(CommandError, match=r"downloads/ is not a folder"):
        call_command("export_bundle", study.slug, f"{tmp_path / 'downloads'}/", "--run", str(run.pk),
                     stderr=io.StringIO())
    assert list(tmp_path.iterdir()) == []


@pytest.mark.django_db
def test_export_bundle_without_a_run_names_the_paths_that_start_one(tmp_path):
    """It sent the user to ``metrics_report``, which prints a report and stores no run: following it, the command
    refused again."""
    study = StudyFactory(slug="no-runs")
    call_command("metrics_report", "--study", study.slug, "--bootstrap", "10", stdout=io.StringIO(),
                 stderr=io.StringIO())
    assert not MetricRun.objects.filter(study=study).exists()
    with pytest.raises(CommandError) as refused:
        call_command("export_bundle", study.slug, str(tmp_path / "bundle.zip"))
    assert str(refused.value) == (
        "study no-runs has no succeeded metric run: start one on the study's reports overview "
        "(/studies/no-runs/reports/), with cab run or POST /api/v1/studies/no-runs/metric-runs/ (metrics_report "
        "stores none)")


def test_the_schema_documents_the_bundle_download_with_its_ranges(client):
    schema = client.get("/api/schema/?format=json").json()
    operation = schema["paths"]["/api/v1/metric-runs/{run_id}/bundle.zip"]["get"]
    assert operation["operationId"] == "metric_runs_bundle_retrieve" and operation["x-required-scope"] == "read"
    assert "admins and researchers only" in operation["description"]
    answers = operation["responses"]
    assert {"200", "206", "401", "403", "404", "409", "416", "429"} <= set(answers)
    for code in ("200", "206"):
        assert set(answers[code]["content"]) == {"application/zip", "application/octet-stream"}
        assert answers[code]["content"]["application/zip"]["schema"] == {"type": "string", "format": "binary"}
        assert {"ETag", "Accept-Ranges", "Content-Disposition"} <= set(answers[code]["headers"])
    assert "Content-Range" in answers["206"]["headers"] and "Content-Range" in answers["416"]["headers"]
    headers = {p["name"] for p in operation["parameters"] if p["in"] == "header"}
    assert headers == {"Range", "If-Range"}


def test_the_bundle_download_states_its_run_and_digest_in_headers_on_the_api_and_the_page(built, client, researcher,
                                                                                        as_token):
    """docs/metrics.md#provenance: the bundle says it all inside (run.json, report.json); its answer says it too, so
    the researcher CLI keeps it beside the file."""
    import base64

    from common.provenance import compact

    study, run, data = built
    client.force_login(researcher)
    expected = {"CAB-Run": str(run.pk), "CAB-Run-Finished": run.finished_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "CAB-Parameters": compact(run.result["parameters"]), "CAB-Software": compact(run.result["software"]),
                "CAB-Input-Fingerprint": run.result["input"]["fingerprint"],
                "Repr-Digest": f"sha-256=:{base64.b64encode(hashlib.sha256(data).digest()).decode()}:"}
    for answer in (as_token(researcher).get(f"/api/v1/metric-runs/{run.pk}/bundle.zip"),
                   client.get(f"/studies/{study.slug}/reports/runs/{run.pk}/bundle.zip"),
                   client.get(f"/studies/{study.slug}/reports/runs/{run.pk}/bundle.zip", HTTP_RANGE="bytes=0-9")):
        assert answer.status_code in (200, 206)
        assert {name: answer.get(name) for name in expected} == expected


def test_another_run_with_the_same_id_and_input_never_gets_the_first_ones_file(built, bundle_dir):
    """A database set up again numbers its runs from 1 again: its run 1 on the same judgments (same fingerprint) is
    another run, with its own times, and gets a bundle of its own, never the kept file of the first (whose
    report.json would state the other run's times)."""
    _, run, data = built
    first = bundle.bundle_file(run=run)
    assert first.path.read_bytes() == data  # the kept file, as long as the run is the same
    later = run.finished_at + timedelta(days=3)
    MetricRun.objects.filter(pk=run.pk).update(created_at=run.created_at + timedelta(days=3), finished_at=later)
    other = bundle.bundle_file(run=MetricRun.objects.get(pk=run.pk))
    assert other.path != first.path and first.path.is_file()
    report = json.loads(members(other.path.read_bytes())["report.json"])
    assert report["run"]["id"] == run.pk and report["run"]["finished_at"] == later.isoformat()
    other.path.unlink()
