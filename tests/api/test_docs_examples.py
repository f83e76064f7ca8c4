"""The Python examples in docs/api.md run as written, against a live server."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmark.models import ModelResponse
from tests.factories import StudyFactory

DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def examples() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_ingestion_and_export_examples_run_as_written(live_server, admin_user, token_for, monkeypatch, tmp_path,
                                                          capsys):
    StudyFactory(slug="demo")
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
    assert "0 main-round judgments of GPT responses" in out
