"""Outside its own package (and the settings that list it), no product module names a study kind
(docs/architecture.md#study-kinds): the shared code calls the kinds' hooks, never a kind by name. Migrations (history,
written once), the generated API client and vendored files are left out."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KIND_PACKAGES = {"care", "lc8"}
NAMES = re.compile(r"(?<![a-z0-9])(care|lc8|longcounsel)(?![a-z0-9])(?!-bench)", re.I)
LEFT_OUT = ("cab/settings.py", "cab_cli/api_client/", "static/vendor/")
SUFFIXES = {".py", ".html", ".js", ".css", ".txt"}  # code and pages; a schema document's prose is data


def product_files() -> list[Path]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    roots = [p for p in config["tool"]["importlinter"]["root_packages"] if p not in KIND_PACKAGES]
    files = [path for root in [*roots, "templates", "static"] for path in sorted((ROOT / root).rglob("*"))
             if path.is_file() and path.suffix in SUFFIXES]
    return [path for path in files if "/migrations/" not in path.as_posix()
            and not path.relative_to(ROOT).as_posix().startswith(LEFT_OUT)]


def kind_names(text: str) -> list[int]:
    return [number for number, line in enumerate(text.splitlines(), start=1) if NAMES.search(line)]


def test_the_check_sees_a_kind_named_and_leaves_other_words_alone():
    assert kind_names('from care import hooks\nif kind == "lc8":\n# LongCounsel-8 only\n# CARE studies') == [1, 2, 3, 4]
    assert kind_names("careful = carefully_scared\nCARE-Bench\n# caregiver\n") == []


def test_no_shared_module_names_a_study_kind():
    found = [f"{path.relative_to(ROOT)}:{line}" for path in product_files()
             for line in kind_names(path.read_text(encoding="utf-8", errors="replace"))]
    assert found == [], f"{len(found)} lines name a kind outside its package:\n" + "\n".join(found)
