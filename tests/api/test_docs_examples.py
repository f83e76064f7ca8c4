"""The Python and curl examples in docs/api.md run as written, against a live server."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from annotation import long_format
from annotation.models import Judgment, Study
from benchmark.models import Conversation, ModelResponse
from tests.api.test_generated_client import judgments_csv
from tests.factories import (
    JudgmentFactory,
    RoundFactory,
    StudyFactory,
    conversations_without_responses,
    jsonl,
    response_items,
)

DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def examples() -> list[str]:
    """The Python examples but the generated client's (its calls are tests/api/test_generated_client.py's)."""
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    return [block for block in blocks if "cab_api_client" not in block]


def cli_example() -> str:
    """The CLI's example, but its first line (which sets CAB_URL and CAB_STUDY for a reader's own server)."""
    block = next(block for block in re.findall(r"```sh\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
                 if "cab studies" in block)
    return "\n".join(line for line in block.splitlines() if not line.startswith("export "))


def curl_examples() -> list[str]:
    return [block for block in re.findall(r"```sh\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
            if "curl " in block]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_ingestion_and_export_examples_run_as_written(live_server, admin_user, token_for, monkeypatch, tmp_path,
                                                          capsys):
    RoundFactory(study=StudyFactory(slug="demo"), kind="calibration", number=1)  # the demo's round, which it filters
    monkeypatch.setenv("CAB_URL", live_server.url)
    monkeypatch.setenv("CAB_TOKEN", token_for(admin_user, scopes=["ingest", "read"]))
    monkeypatch.chdir(tmp_path)
    ingest, export = examples()
    exec(compile(ingest, "docs/api.md (ingestion example)", "exec"), {})  # noqa: S102 - our own documentation
    assert ModelResponse.objects.count() == 20
    exec(compile(ingest, "docs/api.md (ingestion example)", "exec"), {})  # noqa: S102 - run twice: idempotent
    exec(compile(export, "docs/api.md (export example)", "exec"), {})  # noqa: S102
    assert ModelResponse.objects.count() == 20
    out = capsys.readouterr().out
    assert "'conversations_created': 4" in out and "'conversations_unchanged': 4" in out
    assert out.count("'created': 20") == 2 and out.count("first answer to this Idempotency-Key, replayed") == 1
    assert (tmp_path / "demo-judgments.csv").read_text().startswith("study,round,reviewer,is_gold,")
    assert "0 calibration-1 judgments of GPT responses" in out


def _coded(study_slug: str, reviewer) -> int:
    """Judgments of the ingested responses, for the export and import examples to carry; how many."""
    round_ = RoundFactory(study=Study.objects.get(slug=study_slug), kind="calibration", number=1, status="open")
    for number, response in enumerate(ModelResponse.objects.order_by("pk")):
        JudgmentFactory(round=round_, coder=reviewer, response=response, score=number % 3)
    return Judgment.objects.count()


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_curl_examples_run_as_written(live_server, admin_user, reviewer, token_for, tmp_path):
    StudyFactory(slug="demo")
    (tmp_path / "conversations.jsonl").write_text(jsonl(conversations_without_responses()), encoding="utf-8")
    (tmp_path / "responses.jsonl").write_text(jsonl(response_items()), encoding="utf-8")
    env = {**os.environ, "CAB_URL": live_server.url, "CAB_STUDY": "demo",
           "CAB_TOKEN": token_for(admin_user, scopes=["ingest", "import", "read"])}
    ingest, read_back, export, import_ = curl_examples()[:4]
    said = []
    for block in (ingest, read_back, None, export, import_):
        if block is None:
            coded = _coded("demo", reviewer)  # the study codes its material: what the export and import carry
            continue
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, f"{block}\n{done.stdout}\n{done.stderr}"
        said += [json.loads(line) for line in done.stdout.replace("}{", "}\n{").splitlines() if line.strip()]
    assert Conversation.objects.count() == 4 and ModelResponse.objects.count() == len(response_items())
    assert said[0]["conversations_created"] == 4 and said[1]["created"] == len(response_items())
    assert said[2]["results"][0]["conversation_id"] == "appendix-d-1" and said[3]["results"][0]["model"] == "GPT"
    # the judgments page: calibration-1's of GPT responses
    assert len(said[4]["results"]) == ModelResponse.objects.filter(model_slot="GPT").count() > 0
    assert (tmp_path / "demo-judgments.csv").read_text().count("\n") == coded + 1
    assert [answer["judgments_unchanged"] for answer in said[5:]] == [coded, coded]  # as the body, as a form


@pytest.mark.slow(15)
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_cli_example_and_its_curl_twin_run_as_written(live_server, admin_user, token_for, tmp_path, settings):
    """The researcher CLI's example (the installed ``cab``) and the same steps with curl, each on a study of its own:
    ingest, import, a metric run, the judgments and the report downloaded."""
    settings.CELERY_TASK_ALWAYS_EAGER = True  # the run is computed in the live server's thread
    content, rows = judgments_csv()
    token = token_for(admin_user, scopes=["ingest", "import", "read", "metrics"])
    for name, block in (("cli", cli_example()), ("curl", curl_examples()[4])):
        slug, folder = f"demo-{name}", tmp_path / name
        folder.mkdir()
        StudyFactory(slug=slug)
        (folder / "conversations.jsonl").write_text(jsonl(conversations_without_responses()), encoding="utf-8")
        (folder / "responses.jsonl").write_text(jsonl(response_items()), encoding="utf-8")
        (folder / "judgments.csv").write_bytes(content.replace(b"\ncab-demo,", f"\n{slug},".encode()))
        env = {**os.environ, "CAB_URL": live_server.url, "CAB_STUDY": slug, "CAB_TOKEN": token, "CAB_PROGRESS": "0",
               "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=folder, env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, f"{name}\n{block}\n{done.stdout}\n{done.stderr}"
        study = Study.objects.get(slug=slug)
        assert Judgment.objects.filter(round__study=study).count() == rows, name
        exported = "".join(long_format.WRITERS["csv"](study=study)).encode()
        assert (folder / "demo-judgments.csv").read_bytes() == exported, name
        with zipfile.ZipFile(folder / "demo-bundle.zip") as bundle:
            assert bundle.read("report.json") == (folder / "demo-report.json").read_bytes(), name
        report = json.loads((folder / "demo-report.json").read_text())
        assert (report["study"]["slug"], report["input"]["judgments"], report["run"]["parameters"]["bootstrap"]) == (
            slug, rows, 200), name
