"""Reproducible installs (issue 33 item 3): the lock files pin every package the run and test commands install, at
the versions pyproject.toml asks for, each with the hashes of its files, and what this environment has installed
is exactly the test lock (scripts/bootstrap.sh installs from it; the test command runs in what it installed)."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# What bootstrap.sh puts beside the locked packages: the installer itself, the venv's own seed, this project.
NOT_LOCKED = {"uv", "setuptools", "cab-annotate"}


def _name(raw: str) -> str:
    return re.sub(r"[-_.]+", "-", raw).lower()


def locked(which: str) -> dict[str, str]:
    text = (ROOT / "requirements" / f"{which}.lock").read_text()
    pins = dict(re.findall(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", text, re.MULTILINE))
    return {_name(name): version for name, version in pins.items()}


def _declared(requirements: list[str]) -> dict[str, str]:
    found = {}
    for requirement in requirements:
        name, version = re.fullmatch(r"([A-Za-z0-9._-]+)(?:\[[^]]*\])?==(\S+)", requirement.strip()).groups()
        found[_name(name)] = version
    return found


@pytest.mark.parametrize("which", ["base", "test"])
def test_every_pin_of_pyproject_is_in_the_lock_at_its_version_with_hashes(which):
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = _declared(project["dependencies"] + (project["optional-dependencies"]["test"] if which == "test"
                                                     else []))
    pins = locked(which)
    assert {name: pins.get(name) for name in declared} == declared, "older than pyproject.toml: run scripts/lock"
    text = (ROOT / "requirements" / f"{which}.lock").read_text()
    blocks = re.split(r"\n(?=[A-Za-z0-9])", text.split("\n", 2)[2])
    assert all("--hash=sha256:" in block for block in blocks if "==" in block), "every pin carries its hashes"


def test_the_test_lock_holds_the_base_lock():
    base, test = locked("base"), locked("test")
    assert {name: test.get(name) for name in base} == base


def test_what_is_installed_is_exactly_the_test_lock():
    installed = {_name(d.metadata["Name"]): d.version for d in metadata.distributions()}
    installed = {name: version for name, version in installed.items() if name not in NOT_LOCKED}
    pins = locked("test")
    missing = {name: version for name, version in pins.items() if installed.get(name) != version}
    extra = {name: version for name, version in installed.items() if name not in pins}
    assert not missing and not extra, f"not as locked: {missing}; installed but not locked: {extra}"
