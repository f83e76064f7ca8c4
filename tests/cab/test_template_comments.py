"""Django's ``{# #}`` comment ends on its line: one that runs over two lines is not a comment, and its text is printed
wherever it stands in a rendered part (the turn page printed one at the foot of every reviewer's page). Every
template's comment over several lines is a ``{% comment %}`` block."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_no_template_has_a_hash_comment_over_two_lines():
    templates = [path for path in ROOT.glob("**/templates/**/*.html") if ".venv" not in path.parts]
    assert len(templates) > 20
    open_comments = [f"{path.relative_to(ROOT)}:{number}" for path in templates
                     for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
                     if "{#" in line and "#}" not in line[line.index("{#"):]]
    assert open_comments == []
