"""The format each path writes or reads when none is given, said where a user looks: ``manage.py export_judgments``
writes JSON Lines and ``cab download judgments`` CSV (scripts rely on both: neither changes), the importers read the
format the file's name says. Each option's help states its default, which is the parser's own, and README and
docs/api.md state both export defaults. Before, neither export's help said its default (``export_judgments`` had no
help at all, ``cab download`` "judgments: the file format") and the docs named neither."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest
from django.core.management import load_command_class

from cab_cli import main as cli

ROOT = Path(__file__).resolve().parents[2]


def _manage_parser(command: str) -> argparse.ArgumentParser:
    app = {"export_judgments": "annotation", "import_judgments": "annotation", "import_session_labels": "annotation"}
    return load_command_class(app[command], command).create_parser("manage.py", command)


def _cab_parser(command: str) -> argparse.ArgumentParser:
    subparsers = next(a for a in cli.parser()._actions if isinstance(a, argparse._SubParsersAction))
    return subparsers.choices[command]


def _format_option(parser: argparse.ArgumentParser) -> argparse.Action:
    return next(action for action in parser._actions if "--format" in action.option_strings)


# (path, its parser, the format it uses when none is given: None, the file's name says it)
PATHS = [
    ("manage.py export_judgments", lambda: _manage_parser("export_judgments"), "jsonl"),
    ("cab download judgments", lambda: _cab_parser("download"), "csv"),
    ("manage.py import_judgments", lambda: _manage_parser("import_judgments"), None),
    ("manage.py import_session_labels", lambda: _manage_parser("import_session_labels"), None),
    ("cab import", lambda: _cab_parser("import"), None),
]


@pytest.mark.parametrize(("path", "parser", "default"), PATHS, ids=[p[0] for p in PATHS])
def test_each_format_option_says_its_default_in_its_help(path, parser, default):
    option = _format_option(parser())
    assert option.default == default  # the default scripts rely on
    said = "default: from the file's name" if default is None else f"default: {default}"
    assert said in (option.help or ""), f"{path}: --format's help says no default: {option.help!r}"


def test_readme_and_the_api_docs_state_each_exports_default():
    readme = (ROOT / "README.md").read_text()
    api = (ROOT / "docs" / "api.md").read_text()
    line = next(line for line in readme.splitlines() if "manage.py export_judgments" in line)
    assert re.search(r"default:? `?jsonl", line), line
    assert re.search(r"`cab download judgments`\*\* \(`--format csv\|jsonl`, default `csv`", api)
    assert re.search(r"`manage\.py export_judgments`[^.]*default `jsonl`", api)
