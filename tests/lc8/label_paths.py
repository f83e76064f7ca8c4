"""Every path that takes an LC8 study's session labels, each as a call that sends the same rows and returns its
refusal as sorted (line, field, why): the session labels API, ``import_session_labels``, ``import_judgments`` and
the judgments import API (tests/lc8/test_label_paths.py, tests/lc8/test_unplaceable.py)."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

LINE = re.compile(r"^line (\d+): ([\w.\[\]]+): (.*)$", re.MULTILINE)


def label_paths(study: Any, rows: list[dict], api: Any, folder: Path) -> dict[str, Callable[[], list]]:
    """{path's name: a call sending ``rows`` to ``study`` that way and returning its refusal}; ``api`` is a client
    with a token of scope import."""
    text = "".join(json.dumps(r) + "\n" for r in rows)

    def command(name: str) -> list:
        path = folder / "labels.jsonl"
        path.write_text(text, encoding="utf-8")
        with pytest.raises(CommandError) as refused:
            call_command(name, str(path), "--study", study.slug, stdout=io.StringIO())
        return sorted((int(line), field, why) for line, field, why in LINE.findall(str(refused.value)))

    def api_errors(answer: Any, key: str, shift: int) -> list:
        assert answer.status_code == 400, answer.content
        return sorted((e[key] + shift, e["field"], e["message"]) for e in answer.json()["errors"])

    return {
        "the session labels API": lambda: api_errors(api.generic(
            "POST", f"/api/v1/studies/{study.slug}/session-labels/", json.dumps({"rows": rows}),
            content_type="application/json"), "index", 1),
        "import_session_labels": lambda: command("import_session_labels"),
        "import_judgments": lambda: command("import_judgments"),
        "the judgments import API": lambda: api_errors(api.generic(
            "POST", f"/api/v1/studies/{study.slug}/judgments/import/", text.encode(),
            content_type="application/x-ndjson"), "line", 0),
    }
