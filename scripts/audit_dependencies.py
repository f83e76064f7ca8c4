#!/usr/bin/env python3
"""Audit the installed environment (.venv) for known vulnerabilities with pip-audit; part of the test command.

    .venv/bin/python scripts/audit_dependencies.py

pip-audit looks every installed package up in PyPI's vulnerability data over the network. Outcomes:
- a known vulnerability not accepted in pyproject.toml ([tool.cab.pip-audit] ignore, each with its reason): the
  packages, versions, ids and fixed versions are listed and the exit status is 1;
- the vulnerability service could not be asked (no network, or a package index that does not serve the
  vulnerability data, where pip-audit answers "not found on PyPI" for every package): a clear SKIPPED line and
  exit 0, so a machine without that service still runs the tests; nothing is claimed as audited;
- otherwise how many packages were audited, and exit 0.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UNREACHABLE = ("not found on PyPI", "Connection", "connection", "timed out", "Max retries", "Name or service")


def accepted() -> dict[str, str]:
    """The vulnerability ids accepted in pyproject.toml, with their reasons."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    entries = config.get("tool", {}).get("cab", {}).get("pip-audit", {}).get("ignore", [])
    missing = [entry for entry in entries if not str(entry.get("reason", "")).strip()]
    if missing:
        sys.exit(f"audit: every accepted vulnerability needs a reason in pyproject.toml: {missing}")
    return {entry["id"]: entry["reason"] for entry in entries}


def main() -> int:
    ignored = accepted()
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "audit.json"
        command = [str(ROOT / ".venv/bin/pip-audit"), "--local", "--skip-editable", "--progress-spinner", "off",
                   "--timeout", "15", "--format", "json", "--output", str(report)]
        for vulnerability in ignored:
            command += ["--ignore-vuln", vulnerability]
        try:
            run = subprocess.run(command, capture_output=True, text=True, timeout=300)  # noqa: S603 - fixed arguments
        except subprocess.TimeoutExpired:
            print("audit: SKIPPED: the vulnerability service did not answer within 5 minutes; nothing was audited")
            return 0
        data = json.loads(report.read_text()) if report.exists() and report.stat().st_size else None
    if data is None:
        if any(sign in run.stderr for sign in UNREACHABLE):
            print(f"audit: SKIPPED: the vulnerability service could not be reached; nothing was audited "
                  f"({run.stderr.strip().splitlines()[-1][:200] if run.stderr.strip() else 'no answer'})")
            return 0
        print(f"audit: pip-audit failed (exit {run.returncode}):\n{run.stderr[-2000:]}")
        return 1
    dependencies = data.get("dependencies", [])
    audited = [d for d in dependencies if "skip_reason" not in d]
    if not audited:
        reasons = {d.get("skip_reason", "") for d in dependencies}
        print(f"audit: SKIPPED: the vulnerability service answered for none of the {len(dependencies)} installed "
              f"packages; nothing was audited (e.g. {sorted(reasons)[0][:120] if reasons else 'no packages'})")
        return 0
    found = [(d["name"], d["version"], v) for d in audited for v in d.get("vulns", [])]
    skipped = len(dependencies) - len(audited)
    said = f"{len(audited)} installed packages audited" + (f", {skipped} could not be looked up" if skipped else "")
    if ignored:
        said += f"; accepted (pyproject.toml): {', '.join(sorted(ignored))}"
    if found:
        print(f"audit: {len(found)} known vulnerabilit{'y' if len(found) == 1 else 'ies'} ({said}):")
        for name, version, vulnerability in found:
            fixes = ", ".join(vulnerability.get("fix_versions", [])) or "no fixed version yet"
            print(f"  {name} {version}: {vulnerability['id']} (fixed in {fixes})")
        print("Upgrade the package, or accept the id with its reason in pyproject.toml [tool.cab.pip-audit].")
        return 1
    print(f"audit: no known vulnerabilities ({said})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
