"""The product's one version string: the installed package's (``[project] version`` in pyproject.toml), which the
API schema states and CHANGELOG.md lists; and the commit it was built from, which every metrics report states
beside the version (docs/metrics.md#provenance)."""

from __future__ import annotations

import os
import re
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


def _commit(root: Path) -> str:
    """The checkout's commit (40 hex digits), read from .git without running git; CAB_COMMIT where there is no .git
    (the image is built without it and passes the commit as a build argument); "" when neither says."""
    given = os.environ.get("CAB_COMMIT", "").strip()
    if given:
        return given
    git = root / ".git"
    try:
        if git.is_file():  # a worktree: "gitdir: <path>"
            git = Path(git.read_text().split(":", 1)[1].strip())
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref: "):
            return head if re.fullmatch(r"[0-9a-f]{40}", head) else ""
        ref = head[5:]
        common = Path((git / "commondir").read_text().strip()) if (git / "commondir").is_file() else Path(".")
        common = common if common.is_absolute() else git / common
        for folder in (git, common):
            if (folder / ref).is_file():
                return (folder / ref).read_text().strip()
            packed = folder / "packed-refs"
            if packed.is_file():
                for line in packed.read_text().splitlines():
                    if line.endswith(" " + ref):
                        return line.split()[0]
    except (OSError, IndexError):
        pass
    return ""


COMMIT = _commit(Path(__file__).resolve().parent.parent)
