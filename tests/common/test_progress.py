"""The long commands show their progress on standard error when it is a terminal (forced here with CAB_PROGRESS=1)
and nothing at all when it is not, so pipes, logs and CI get only the commands' own lines (issue 33 item 5)."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from annotation.models import Study

pytestmark = pytest.mark.django_db


def _run(capsys, monkeypatch, shown: str | None, *args: str) -> tuple[str, str]:
    if shown is None:
        monkeypatch.delenv("CAB_PROGRESS", raising=False)
    else:
        monkeypatch.setenv("CAB_PROGRESS", shown)
    capsys.readouterr()
    call_command(*args)
    said = capsys.readouterr()
    return said.out, said.err


def test_generate_synthetic_and_metrics_report_show_a_bar_on_a_terminal_and_nothing_otherwise(capsys, monkeypatch):
    out, err = _run(capsys, monkeypatch, "1", "generate_synthetic", "--conversations", "3", "--reviewers", "2",
                    "--experts", "1", "--calibration-turns", "1", "--slug", "bar-syn")
    assert "[SYNTHETIC] study 'bar-syn'" in out
    assert "generating bar-syn" in err and "saving judgments" in err and "stage" in err
    out, err = _run(capsys, monkeypatch, "1", "metrics_report", "--study", "bar-syn", "--bootstrap", "5")
    assert json.loads(out)["version"] == 1
    assert "report of bar-syn" in err and "%" in err
    for shown in (None, "0"):  # not a terminal (pytest's capture), or turned off
        out, err = _run(capsys, monkeypatch, shown, "metrics_report", "--study", "bar-syn", "--bootstrap", "5")
        assert "report of" not in err and "%|" not in err
        assert json.loads(out)["version"] == 1


def test_the_exports_and_imports_show_how_far_they_are(capsys, monkeypatch, tmp_path):
    call_command("generate_synthetic", "--conversations", "3", "--reviewers", "2", "--experts", "1",
                 "--calibration-turns", "1", "--slug", "bar-io", stdout=io.StringIO())
    out, err = _run(capsys, monkeypatch, "1", "export_judgments", "--study", "bar-io", "--format", "csv")
    lines = out.count("\n") - 1
    assert lines > 0 and f"0/{lines}" in err and "judgment" in err  # the total, counted for the bar
    archive = tmp_path / "bar-io.jsonl.gz"
    _, err = _run(capsys, monkeypatch, "1", "export_study", "bar-io", "--output", str(archive))
    assert "exporting bar-io" in err and "record" in err
    out, err = _run(capsys, monkeypatch, "1", "import_study", str(archive), "--as", "bar-io-2")
    assert "imported" in out and "importing bar-io.jsonl.gz" in err
    assert Study.objects.filter(slug="bar-io-2").exists()
    out, err = _run(capsys, monkeypatch, None, "export_judgments", "--study", "bar-io", "--format", "csv")
    assert err == "", "no bar and nothing else on a standard error that is not a terminal"
