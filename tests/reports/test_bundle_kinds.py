"""The study bundles of CARE and LongCounsel-8 studies (docs/bundle.md#what-each-kind-gets): the histories' sessions,
the kind's own dashboard page drawn and tabulated, the LC8 session labels in the long format, and the rows each
kind's section reads, from which the recompute (without Django) writes the bundle's report.json byte for byte."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile

import pytest
from django.test import override_settings

from access import roles
from access.services import user_ensure
from annotation.models import SessionLabel, StudyMember
from benchmark import conversation_ingest
from benchmark.models import Session
from care.demo import care_demo_load
from lc8.demo import LC8_DEMO_REFERENCE, lc8_demo_items, lc8_demo_load, lc8_demo_records
from lc8.synthetic import lc8_attributes
from metrics import runs, services
from metrics.core import recompute
from reports import bundle, kind_pages
from tests.care.test_inputs import demo_twin_add
from tests.reports.test_bundle import ROOT, WITHOUT_DJANGO

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def bundle_dir(tmp_path):
    with override_settings(BUNDLE_DIR=str(tmp_path / "bundles")):
        yield


def _people():
    return {"admin": user_ensure(username="demo-admin", role=roles.ADMIN),
            "reviewer": user_ensure(username="demo-reviewer", role=roles.REVIEWER),
            "expert": user_ensure(username="demo-expert", role=roles.EXPERT)}


def _bundled(study) -> dict[str, bytes]:
    run = services.metric_run_request(study=study, by=None, bootstrap=20)
    runs.metric_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    data = bundle.bundle_file(run=run).path.read_bytes()
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _recompute_without_django(files: dict[str, bytes], tmp_path) -> tuple[subprocess.CompletedProcess, bytes]:
    path = tmp_path / "bundle.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    out = tmp_path / "recomputed.json"
    environment = {name: value for name, value in os.environ.items() if name != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run([sys.executable, "-c", WITHOUT_DJANGO, str(path), "-o", str(out)], cwd=ROOT,
                          capture_output=True, text=True, env=environment, timeout=600, check=False)
    return done, out.read_bytes() if out.is_file() else b""


def _care_demo_and_its_twin(**people):
    """The CARE demo and its history's twin in another dataset under the same id (tests/care/test_inputs.py)."""
    demo_twin_add(care_demo_load(**people).study)


def _lc8_demo_and_a_twin(**people):
    """The LC8 demo and its first trajectory's twin in another dataset under the same id, whose reference items
    are those of the demo's second trajectory."""
    study = lc8_demo_load(**people).study
    conversation_ingest.conversations_import(rows=[(1, lc8_demo_records()[0] | {"dataset": "LC8-demo-twin"})],
                                             study=study, is_synthetic=True)
    reference = StudyMember.objects.get(study=study, user__username=LC8_DEMO_REFERENCE)
    items, _total = lc8_attributes(study.schema)
    sessions = Session.objects.filter(conversation__dataset__name="LC8-demo-twin").order_by("index")
    SessionLabel.objects.bulk_create(
        SessionLabel(study=study, coder=reference, session=session, attribute=attribute, value=float(value))
        for session, values in zip(sessions, lc8_demo_items()[1], strict=True)
        for attribute, value in zip(items, values, strict=True))


def _lc8_without_responses(**_people):
    """The LC8 test study (tests/lc8/test_inputs.py): sessions rated and labelled, no model response at all, so its
    bundle has no data/responses.csv (a table without rows is left out)."""
    from tests.lc8.test_inputs import build_lc8_study

    build_lc8_study("lc8-no-responses")


KIND_FILES = {"care": ("data/care_sessions.csv", "data/care_judgments.csv"),
              "lc8": ("data/lc8_sessions.csv", "data/lc8_labels.csv", "data/lc8_judgments.csv")}


@pytest.mark.parametrize(("load", "slug", "kind", "rows", "used", "histories"), [
    (care_demo_load, "care-demo", "care", "data/care_judgments.csv", "used", ("histories", 1)),
    (lc8_demo_load, "lc8-demo", "lc8", "data/lc8_labels.csv", "labels_used", ("trajectories", 8)),
    # two histories (trajectories) of one conversation id in two datasets: named DATASET/ID in the rows too
    (_care_demo_and_its_twin, "care-demo", "care", "data/care_judgments.csv", "used", ("histories", 2)),
    (_lc8_demo_and_a_twin, "lc8-demo", "lc8", "data/lc8_labels.csv", "labels_used", ("trajectories", 9)),
    # no model response: the bundle has no data/responses.csv, and the recompute needs none
    (_lc8_without_responses, "lc8-no-responses", "lc8", "data/lc8_labels.csv", "labels_used", ("trajectories", 4))])
def test_a_care_or_lc8_bundles_recompute_without_django_writes_its_report_json_byte_for_byte(
        load, slug, kind, rows, used, histories, tmp_path):
    load(**_people())
    from annotation.models import Study

    files = _bundled(Study.objects.get(slug=slug))
    report = json.loads(files["report.json"])
    assert "unavailable" not in report[kind]
    assert report[kind]["input"][used] > 0  # the section has something to recompute
    assert report[kind]["input"][histories[0]] == histories[1]
    assert json.loads(files["run.json"])[kind]["block"]
    package = {r["path"]: r for r in json.loads(files["datapackage.json"])["resources"]}
    for path in KIND_FILES[kind]:
        header = files[path].decode().splitlines()[0].split(",")
        assert [f["name"] for f in package[path]["schema"]["fields"]] == header
        assert all(f["description"] for f in package[path]["schema"]["fields"])
    done, recomputed = _recompute_without_django(files, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "byte for byte the bundle's report.json" in done.stderr
    assert recomputed == files["report.json"]

    # the section is computed from the bundle's rows: without them, another report (the test can fail)
    header = files[rows].split(b"\n")[0] + b"\n"
    done, recomputed = _recompute_without_django({**files, rows: header}, tmp_path)
    assert done.returncode == 1, done.stderr
    assert json.loads(recomputed)[kind] != report[kind]


@pytest.mark.parametrize(("load", "slug", "page"), [(care_demo_load, "care-demo", "care"),
                                                    (lc8_demo_load, "lc8-demo", "lc8")])
def test_a_care_or_lc8_bundle_has_its_sessions_and_its_page(load, slug, page):
    load(**_people())
    from annotation.models import Study

    study = Study.objects.get(slug=slug)
    files = _bundled(study)
    assert json.loads(files["run.json"])["study"]["kind"] == page
    assert files["data/sessions.csv"].count(b"\n") > 1
    assert any(name.startswith(f"tables/{page}/") for name in files), sorted(files)
    if page == "care":  # the per-history table too: the demo's one history under its model slot
        per_history = files["tables/care/care-alignment-by-history.csv"].decode().splitlines()
        assert per_history[0].startswith("history,model,AR,PR,LR,advice_frequency,n_action,n_ready")
        assert [line.split(",")[:2] for line in per_history[1:]] == [["care-demo-1", "Assistant"]]
    # the pages of the study's kind only (reports.kind_pages): no figure or table of a cab-v1 page it has not
    drawn = {name.split("/")[1] for name in files if name.startswith(("figures/", "tables/"))}
    assert drawn <= {p.slug for p in kind_pages.pages_of(study)}, sorted(drawn)
    report = json.loads(files["report.json"])
    assert page in report
    assert "session_index" in files["data/judgments.csv"].decode().splitlines()[0]
    package = json.loads(files["datapackage.json"])
    assert {r["path"] for r in package["resources"]} == set(files) - {"datapackage.json"}


def test_a_bundle_without_its_kinds_rows_is_refused_with_the_reason(tmp_path, capsys):
    lc8_demo_load(**_people())
    from annotation.models import Study

    files = _bundled(Study.objects.get(slug="lc8-demo"))
    del files["data/lc8_labels.csv"]
    path = tmp_path / "bundle.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    assert recompute.main([str(path), "-o", str(tmp_path / "out.json")]) == 2
    assert "the bundle has no data/lc8_labels.csv" in capsys.readouterr().err


@pytest.mark.parametrize(("load", "slug"), [(care_demo_load, "care-demo"), (lc8_demo_load, "lc8-demo")])
def test_a_bundle_is_refused_when_its_sections_rows_changed_since_the_run(load, slug):
    load(**_people())
    from annotation.models import SessionLabel, Study

    study = Study.objects.get(slug=slug)
    run = services.metric_run_request(study=study, by=None, bootstrap=20)
    runs.metric_run_execute(run_id=run.pk)
    run.refresh_from_db()
    bundle.bundle_write(run=run, out=io.BytesIO())  # fresh: written
    if slug == "lc8-demo":  # a label, which no judgment row of the long format's fingerprint covers
        label = SessionLabel.objects.filter(study=study).order_by("pk").first()
        SessionLabel.objects.filter(pk=label.pk).update(value=label.value + 1)
    else:  # a session's kind, which no judgment row covers
        from annotation.selectors import conversations_of_study
        from benchmark.models import Session

        session = Session.objects.filter(conversation__in=conversations_of_study(study=study)).order_by("pk").first()
        Session.objects.filter(pk=session.pk).update(kind="callback" if session.kind != "callback" else "chat")
    with pytest.raises(bundle.BundleRefusedError, match="changed since run"):
        bundle.bundle_write(run=run, out=io.BytesIO())


def test_an_lc8_bundle_and_its_recompute_agree_with_the_report_after_a_member_is_taken_off(tmp_path, admin_user):
    """The rater taken off keeps their role (``FormerStudyMember``), so nothing the lc8 section reads changes: the
    run made before still bundles, a run made after has the same section with the rater a reviewer, and its
    bundle's recompute writes its report.json byte for byte."""
    from annotation.models import Study
    from annotation.services import study_member_remove
    from tests.lc8.test_inputs import RATER, build_lc8_study

    build_lc8_study("lc8-taken-off")
    study = Study.objects.get(slug="lc8-taken-off")
    before = services.metric_run_request(study=study, by=None, bootstrap=20)
    runs.metric_run_execute(run_id=before.pk)
    before.refresh_from_db()
    study_member_remove(member=StudyMember.objects.get(study=study, user__username=RATER), by=admin_user)
    bundle.bundle_write(run=before, out=io.BytesIO())  # the rows it read are the same: not "changed since run"
    files = _bundled(study)
    report = json.loads(files["report.json"])
    assert report["lc8"] == before.result["lc8"]
    assert report["lc8"]["roles"][RATER] == "reviewer"
    assert [RATER, "reviewer"] in json.loads(files["run.json"])["lc8"]["members"]
    done, recomputed = _recompute_without_django(files, tmp_path)
    assert done.returncode == 0, done.stderr
    assert recomputed == files["report.json"]


def test_an_lc8_bundle_with_a_methods_negative_prediction_recomputes_and_its_labels_load_as_numbers(tmp_path):
    """A method's labels are used as stored, unrounded and unclipped (docs/lc8-metrics.md), so a prediction may be
    below 0: ``data/lc8_labels.csv`` carries it as a number (as the judgments export carries a label), not as text
    that a spreadsheet's formula guard turned into ``'-1.5``, which the recompute refused ("is not a number") and
    pandas read as text."""
    import csv

    import pandas as pd

    from annotation.models import Study

    lc8_demo_load(**_people())
    study = Study.objects.get(slug="lc8-demo")
    label = (SessionLabel.objects.filter(study=study, coder__role=StudyMember.Role.METHOD).order_by("pk").first())
    SessionLabel.objects.filter(pk=label.pk).update(value=-1.5)
    files = _bundled(study)
    labels = list(csv.DictReader(io.StringIO(files["data/lc8_labels.csv"].decode("utf-8"))))
    assert "-1.5" in [row["value"] for row in labels]
    assert pd.read_csv(io.BytesIO(files["data/lc8_labels.csv"]))["value"].dtype.kind == "f"
    done, recomputed = _recompute_without_django(files, tmp_path)
    assert done.returncode == 0, done.stderr
    assert recomputed == files["report.json"]
