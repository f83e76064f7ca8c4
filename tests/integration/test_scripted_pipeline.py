"""Issue 29's done-when: a CARE study and an LC8 study built from files by the README's commands alone
(``create_study``, ``register_coder``, ``import_conversations``, ``import_judgments``, ``import_session_labels``,
``metrics_report``), each command a ``manage.py`` process on the default configuration (no DATABASE_URL: the
embedded PostgreSQL in a var/ of its own), give the ``care`` / ``lc8`` section of the same study sent over the REST
API (study, coders, conversations, session labels and judgments posted with an admin's token, the metric run
started over the API and computed by a real worker), key for key, and neither section is empty."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from access import roles
from access.services import user_ensure
from api import services as api_services
from cab.embedded_db.server import Server
from care.core import section as care_section
from care.demo import CARE_DEMO_SLOT
from lc8.core import section as lc8_section
from lc8.synthetic import SLOT as LC8_SLOT
from metrics.models import MetricRun
from tests.celery_worker import celery_worker, wait_for
from tests.integration.test_default_configuration import NOT_DEFAULT, _manage
from tests.metrics.test_section_inputs import CARE_CODERS, LC8_CODERS, _care_files, _lc8_files

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

SEED, BOOTSTRAP = 7, 20


@pytest.fixture(scope="module")
def worker(django_db_setup):
    """One real worker for both kinds (started once the test database exists: it is the worker's database)."""
    with celery_worker() as process:
        yield process


@pytest.fixture(scope="module")
def commands(tmp_path_factory):
    """``manage.py`` on the default configuration (one var/ for both kinds' studies); its embedded PostgreSQL held
    for the module (not one start per command) and removed afterwards."""
    tmp_path = tmp_path_factory.mktemp("default")
    env = {key: value for key, value in os.environ.items() if key not in NOT_DEFAULT}
    env |= {"CAB_VAR_DIR": str(tmp_path / "var"), "PYTHONUNBUFFERED": "1"}
    server = Server(tmp_path / "var" / "postgres")

    def manage(*args: str) -> str:
        done = _manage(env, *args)
        assert done.returncode == 0, f"manage.py {' '.join(args)}:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
        return done.stdout

    manage("migrate", "--no-input")  # the README's run command migrates before anything else
    server.attach()
    try:
        yield manage
    finally:
        server.detach()
        server.remove()


def _coders(kind: str) -> list[dict]:
    """What each kind's study registers (the same coders as tests/metrics/test_section_inputs.py)."""
    return CARE_CODERS if kind == "care" else LC8_CODERS


def _files(kind: str, folder: Path, slug: str) -> dict[str, Path]:
    if kind == "care":
        history, codes = _care_files(folder, slug=slug, dataset="CARE-pipeline")
        return {"conversations": history, "judgments": codes}
    trajectories, labels, codes = _lc8_files(folder, slug=slug, dataset="LC8-pipeline")
    return {"conversations": trajectories, "session_labels": labels, "judgments": codes}


def _by_commands(manage, kind: str, schema: str, slot: str, files: dict[str, Path]) -> dict:
    said = manage("create_study", "--slug", kind, "--schema", schema, "--model-slot", slot)
    assert f"study {kind} created" in said
    for coder in _coders(kind):
        args = (["--method", coder["method"], "--method-version", coder["version"],
                 "--prompt-id", coder.get("prompt_id", "")] if "method" in coder
                else ["--reference", coder["reference"]])
        manage("register_coder", "--study", kind, *args)
    manage("import_conversations", str(files["conversations"]))
    if "session_labels" in files:
        manage("import_session_labels", str(files["session_labels"]), "--study", kind)
    manage("import_judgments", str(files["judgments"]), "--study", kind)
    return json.loads(manage("metrics_report", "--study", kind, "--seed", str(SEED), "--bootstrap", str(BOOTSTRAP)))


def _by_api(kind: str, schema: str, slot: str, files: dict[str, Path]) -> dict:
    admin = user_ensure(username="pipeline-admin", role=roles.ADMIN)
    _, key = api_services.api_token_create(user=admin, name="pipeline", by=None,
                                           scopes=["setup", "ingest", "import", "read", "metrics"])
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")

    def post(path: str, **kwargs):
        answer = api.post(f"/api/v1/{path}", **kwargs)
        assert answer.status_code in (200, 201, 202), f"{path}: {answer.status_code} {answer.content[:2000]!r}"
        return answer.json()

    post("studies/", data={"slug": kind, "schema": schema, "model_slots": [slot]}, format="json")
    for coder in _coders(kind):
        if "method" in coder:
            post(f"studies/{kind}/methods/", data={"name": coder["method"], "version": coder["version"],
                                                   "prompt_id": coder.get("prompt_id", "")}, format="json")
        else:
            post(f"studies/{kind}/references/", data={"name": coder["reference"]}, format="json")
    post(f"studies/{kind}/conversations/", data=files["conversations"].read_bytes(),
         content_type="application/x-ndjson")
    if "session_labels" in files:
        rows = [json.loads(line) for line in files["session_labels"].read_text(encoding="utf-8").splitlines()]
        post(f"studies/{kind}/session-labels/", data={"rows": rows}, format="json")
    post(f"studies/{kind}/judgments/import/", data=files["judgments"].read_bytes(),
         content_type="application/x-ndjson")
    run = post(f"studies/{kind}/metric-runs/", data={"seed": SEED, "bootstrap": BOOTSTRAP}, format="json")
    wait_for(lambda: MetricRun.objects.get(pk=run["id"]).status in ("succeeded", "failed"), timeout=240)
    result = api.get(f"/api/v1/metric-runs/{run['id']}/result/")
    assert result.status_code == 200, result.content[:2000]
    return result.json()


@pytest.mark.slow(30)
@pytest.mark.parametrize(("kind", "schema", "slot"), [("care", "care-v1", CARE_DEMO_SLOT),
                                                      ("lc8", "lc8-v1", LC8_SLOT)])
def test_the_readme_commands_and_the_api_build_the_same_study(kind, schema, slot, commands, worker, tmp_path):
    folder = tmp_path / "files"
    folder.mkdir()
    files = _files(kind, folder, kind)
    scripted = _by_commands(commands, kind, schema, slot, files)
    sent = _by_api(kind, schema, slot, files)
    assert sent[kind] == scripted[kind]
    assert sent["input"] == scripted["input"]  # the main section reads the same judgments
    # The demos' files hold one CARE history and a few LC8 trajectories: the one warning is the kind's intervals over
    # fewer than 10 of them (docs/metrics.md, "Too few clusters"), never a section left empty nor a judgment left out;
    # the CARE demo's reference (its human coder) codes turns only, so its two quality sessions, without a
    # checklist of the reference, are left out of the session quality, which the warning says first.
    assert sent["warnings"] == scripted["warnings"]
    few = {"care": care_section._few_histories(scripted[kind].get("validation")),
           "lc8": lc8_section._few_trajectories(scripted[kind])}[kind]
    if kind == "care":
        assert scripted[kind]["input"]["no_checklist"] == {slot: 2}
        few = f"{care_section._no_checklist({slot: 2}, scripted[kind]['reference'])} {few}"
    assert few is not None and scripted["warnings"] == [{"section": kind, "message": few}]
    section = scripted[kind]
    if kind == "care":  # not empty: the history's thirteen turns have states; judge and human are compared
        assert len(section["states"]["care-demo-1"]) == 13
        assert section["input"]["used"] == section["input"]["judgments"] == 198
    else:  # eight reference trajectories, the two methods and the rater measured
        assert sum(section["reference_types"].values()) == 8
        assert len(section["coders"]) == 3
        assert section["input"]["labels_used"] == section["input"]["labels"] == 40 * 8 + 40 * 6
