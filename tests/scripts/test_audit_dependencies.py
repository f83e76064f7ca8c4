"""scripts/audit_dependencies.py, the pip-audit step of the test command, on pip-audit's possible answers (its
JSON report faked here): a known vulnerability fails the command; a vulnerability service that answered for no
package is a clear SKIPPED, never "no known vulnerabilities"; accepted ids are passed on with their reasons."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts/audit_dependencies.py"


@pytest.fixture
def audit(monkeypatch):
    spec = importlib.util.spec_from_file_location("audit_dependencies", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    calls = []

    def answer(report: dict | None, stderr: str = ""):
        def run(command, **kwargs):
            calls.append(command)
            if report is not None:
                Path(command[command.index("--output") + 1]).write_text(json.dumps(report))
            return subprocess.CompletedProcess(command, 1 if stderr else 0, "", stderr)

        monkeypatch.setattr(module.subprocess, "run", run)
        return module

    answer.calls = calls
    return answer


def _package(name: str, vulns=(), skip: str | None = None) -> dict:
    entry = {"name": name, "version": "1.0", "vulns": list(vulns)}
    if skip:
        entry = {"name": name, "version": "1.0", "skip_reason": skip}
    return entry


def test_a_known_vulnerability_fails_and_is_named(audit, capsys):
    module = audit({"dependencies": [_package("django", [{"id": "GHSA-1234", "fix_versions": ["5.2.20"]}]),
                                     _package("numpy")]})
    assert module.main() == 1
    said = capsys.readouterr().out
    assert "django 1.0: GHSA-1234 (fixed in 5.2.20)" in said and "2 installed packages audited" in said


def test_no_package_looked_up_is_skipped_in_words_not_passed_as_clean(audit, capsys):
    module = audit({"dependencies": [_package("django", skip="Dependency not found on PyPI and could not be "
                                                              "audited: django (5.2.19)")]})
    assert module.main() == 0
    said = capsys.readouterr().out
    assert "SKIPPED" in said and "nothing was audited" in said and "no known vulnerabilities" not in said


def test_an_unreachable_network_is_skipped_in_words(audit, capsys):
    module = audit(None, stderr="requests.exceptions.ConnectionError: Max retries exceeded with url: /pypi/")
    assert module.main() == 0
    assert "SKIPPED: the vulnerability service could not be reached" in capsys.readouterr().out


def test_a_clean_audit_says_how_many_packages_it_audited(audit, capsys):
    module = audit({"dependencies": [_package("django"), _package("numpy")]})
    assert module.main() == 0
    assert "audit: no known vulnerabilities (2 installed packages audited)" in capsys.readouterr().out


def test_accepted_ids_are_passed_to_pip_audit(audit, monkeypatch):
    module = audit({"dependencies": [_package("django")]})
    monkeypatch.setattr(module, "accepted", lambda: {"GHSA-9999": "not reachable from our code"})
    assert module.main() == 0
    assert audit.calls[0][-2:] == ["--ignore-vuln", "GHSA-9999"]
