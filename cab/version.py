"""The product's one version string: the installed package's (``[project] version`` in pyproject.toml), which the
API schema states and CHANGELOG.md lists."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

DISTRIBUTION = "cab-annotate"


def _version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # a checkout run without being installed: its own pyproject.toml
        pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
        return str(tomllib.loads(pyproject.read_text())["project"]["version"])


VERSION = _version()
