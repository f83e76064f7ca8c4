"""The production static files storage (cab.static_storage): collectstatic hashes every file, and the coding
page's JavaScript modules (static/js/turn/, care.js, lc8.js) name each other by their hashed names, so a page loads
each module once, under the URL its template names."""

import json
import re
from pathlib import Path, PurePosixPath

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import override_settings

IMPORT = re.compile(r"""(?:\bfrom\s*|\bimport\s*)["'](\.{1,2}/[^"']+)["']""")


@pytest.mark.slow(15)
def test_collectstatic_rewrites_the_imports_of_our_modules_to_their_hashed_names(tmp_path: Path) -> None:
    storages = settings.STORAGES | {"staticfiles": {"BACKEND": "cab.static_storage.StaticFilesStorage"}}
    with override_settings(STORAGES=storages, STATIC_ROOT=tmp_path):
        call_command("collectstatic", "--no-input", "-v", "0")
    hashed = json.loads((tmp_path / "staticfiles.json").read_text())["paths"]
    entries = ["js/turn/main.js", "js/care/coding.js", "js/lc8/rating.js"]
    seen: set[str] = set()
    todo = [hashed[name] for name in entries]
    while todo:  # every module the pages reach, through the hashed names alone
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for target in IMPORT.findall((tmp_path / name).read_text()):
            resolved = str(PurePosixPath(name).parent / target).replace("/./", "/")
            resolved = re.sub(r"[^/]+/\.\./", "", resolved)
            assert resolved in hashed.values(), f"{name} imports {target}, which is not a hashed file"
            todo.append(resolved)
    modules = {name for name in hashed if name.startswith("js/turn/")}
    assert {hashed[name] for name in modules} <= seen, "a module of js/turn/ that no page reaches"
    assert len(modules) >= 5
