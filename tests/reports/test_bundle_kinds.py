"""The study bundles of CARE and LongCounsel-8 studies (docs/bundle.md#what-each-kind-gets): the histories' sessions,
the kind's own dashboard page drawn and tabulated, the LC8 session labels in the long format; their recompute says it
cannot write their section yet instead of writing another report."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.test import override_settings

from access import roles
from access.services import user_ensure
from annotation.care_demo import care_demo_load
from annotation.lc8_demo import lc8_demo_load
from metrics import runs, services
from metrics.core import recompute
from reports import bundle

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


@pytest.mark.parametrize(("load", "slug", "page"), [(care_demo_load, "care-demo", "care"),
                                                    (lc8_demo_load, "lc8-demo", "lc8")])
def test_a_care_or_lc8_bundle_has_its_sessions_and_its_page_and_its_recompute_says_why_not(
        load, slug, page, tmp_path, capsys):
    load(**_people())
    from annotation.models import Study

    files = _bundled(Study.objects.get(slug=slug))
    assert json.loads(files["run.json"])["study"]["kind"] == page
    assert files["data/sessions.csv"].count(b"\n") > 1
    assert any(name.startswith(f"tables/{page}/") for name in files), sorted(files)
    report = json.loads(files["report.json"])
    assert page in report
    assert "session_index" in files["data/judgments.csv"].decode().splitlines()[0]
    package = json.loads(files["datapackage.json"])
    assert {r["path"] for r in package["resources"]} == set(files) - {"datapackage.json"}
    path = tmp_path / "bundle.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    assert recompute.main([str(path), "-o", str(tmp_path / "out.json")]) == 2
    assert f"a {page} study's bundle cannot be recomputed yet" in capsys.readouterr().err
