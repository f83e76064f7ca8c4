"""A study's kind (docs/architecture.md#study-kinds): ``annotation.kinds.kind_of`` answers it for a schema, a study
and an attribute, and it is the one module that reads a schema definition's kind block (``care``, ``lc8``); the
validator (``annotation/schema_document.py``) reads the raw document before a schema exists."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

from annotation import kinds
from annotation.kinds import DEFAULT, StudyKind, block_of, kind_of, register_kind
from annotation.models import Schema
from care.kind import CARE
from lc8.kind import LC8
from tests.factories import StudyFactory, attribute

ROOT = Path(__file__).resolve().parents[2]
# The one home of the rule, and the validator of the blocks' shape.
ALLOWED = {"annotation/kinds.py", "annotation/schema_document.py"}
KEYS = {"care", "lc8"}


@pytest.mark.django_db
def test_a_default_study_is_of_the_default_kind_with_no_block():
    study = StudyFactory()  # cab-v1
    assert kind_of(study) == DEFAULT
    assert kind_of(study.schema) == DEFAULT
    assert (kind_of(study).slug, kind_of(study).name, kind_of(study).block) == ("default", "default", None)
    assert kind_of(study).is_default
    assert block_of(study, CARE) is None and block_of(study, LC8) is None


@pytest.mark.django_db
def test_care_v1_is_a_care_schema_with_its_care_block():
    schema = Schema.objects.get(slug="care-v1")
    kind = kind_of(schema)
    assert kind == CARE and kind != LC8 and not kind.is_default
    assert (kind.slug, kind.name) == ("care", "CARE")
    assert kind.block == schema.definition["care"]
    assert kind_of(StudyFactory(schema=schema)) == CARE
    assert block_of(schema, CARE) == schema.definition["care"]
    assert block_of(schema, LC8) is None


@pytest.mark.django_db
def test_lc8_v1_is_a_longcounsel_8_schema_with_its_lc8_block():
    schema = Schema.objects.get(slug="lc8-v1")
    kind = kind_of(schema)
    assert kind == LC8
    assert (kind.slug, kind.name) == ("lc8", "LongCounsel-8")
    assert kind.block == schema.definition["lc8"]
    assert kind_of(StudyFactory(schema=schema)).block == schema.definition["lc8"]
    total = schema.definition["lc8"]["total"]
    assert kind_of(attribute(total, "lc8-v1")) == LC8  # an attribute, through its schema
    assert block_of(schema, CARE) is None


def test_a_block_that_is_not_an_object_makes_no_kind():
    assert kind_of(Schema(slug="x", definition={"care": "yes", "lc8": []})) == DEFAULT
    assert kind_of(Schema(slug="x", definition=None)) == DEFAULT
    both = Schema(slug="x", definition={"lc8": {"items": []}, "care": {"marker": "m"}})
    assert kind_of(both) == CARE and kind_of(both).block == {"marker": "m"}  # tried in the registry's (slug) order


def test_the_registry_lists_the_known_kinds_and_refuses_a_slug_twice(monkeypatch):
    assert list(kinds.kinds()) == ["default", "care", "lc8", "toy"]  # toy: the tests' third kind (tests/toykind)
    assert kinds.kinds()["lc8"] == LC8 and kinds.kinds()["lc8"].block is None
    # registered with their hooks when Django started (care.hooks, lc8.hooks)
    assert kinds.kinds()["lc8"].session_rated and not kinds.kinds()["care"].session_rated
    assert kinds.kinds()["care"].demo is not None and DEFAULT.demo is None
    with pytest.raises(ValueError, match="already registered"):
        register_kind(StudyKind(slug="care", name="CARE again"))
    monkeypatch.setattr(kinds, "_KINDS", dict(kinds._KINDS))
    monkeypatch.setattr(kinds, "_ORDERED", kinds._ORDERED)  # put back after the test, as _KINDS is
    added = register_kind(StudyKind(slug="other", name="Another kind"))
    assert added == StudyKind(slug="other", name="Another kind")
    assert kind_of(Schema(slug="x", definition={"other": {"role": "a"}})) == added
    assert kind_of(Schema(slug="x", definition={"other": {"role": "a"}})).block == {"role": "a"}


# --- one home: no other module reads a schema definition's kind block -------------------------------------------


def _key_reads(tree: ast.AST) -> list[tuple[ast.expr, ast.expr]]:
    """(receiver, node) of each read of a kind key: ``x["care"]``, ``x.get("lc8")``, ``"care" in x``."""
    found: list[tuple[ast.expr, ast.expr]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and node.slice.value in KEYS:
            found.append((node.value, node))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args
              and node.func.attr in ("get", "pop", "setdefault", "__getitem__")
              and isinstance(node.args[0], ast.Constant) and node.args[0].value in KEYS):
            found.append((node.func.value, node))
        elif (isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant) and node.left.value in KEYS
              and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops)):
            found.append((node.comparators[0], node))
    return found


def _mentions_definition(tree: ast.AST) -> bool:
    return any((isinstance(n, ast.Attribute) and n.attr == "definition") or (isinstance(n, ast.Name) and
               n.id == "definition") for n in ast.walk(tree))


def kind_block_reads(source: str) -> list[int]:
    """The lines that read a ``care`` or ``lc8`` key of a schema definition: on a receiver that names
    ``definition``, or anywhere in a function (or module body) that reads a ``definition``."""
    tree = ast.parse(source)
    scopes: list[ast.AST] = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    top = ast.Module(body=[s for s in tree.body if not isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef |
                                                                   ast.ClassDef)], type_ignores=[])
    lines = set()
    for receiver, node in _key_reads(tree):
        if _mentions_definition(receiver):
            lines.add(node.lineno)
    for scope in [*scopes, top]:
        if _mentions_definition(scope):
            lines.update(node.lineno for _, node in _key_reads(scope))
    return sorted(lines)


@pytest.mark.parametrize("source", [
    'def f(study):\n    return study.schema.definition.get("lc8")\n',
    'def f(schema):\n    return (schema.definition or {})["care"]\n',
    'def f(schema):\n    definition = schema.definition\n    return "care" in definition\n',
    'def f(schema):\n    doc = schema.definition or {}\n    block = doc.get("lc8")\n    return block\n',
    'block = SCHEMA.definition.get("care")\n',
])
def test_the_check_sees_a_read_of_a_kind_block(source):
    assert kind_block_reads(source) != []


@pytest.mark.parametrize("source", [
    'def f(report):\n    return (report or {}).get("care") or {}\n',
    'def f(schema):\n    return schema.definition.get("groups", [])\n',
    'def f(study):\n    return kind_of(study) == LC8\n',
])
def test_the_check_leaves_other_reads_alone(source):
    assert kind_block_reads(source) == []


def test_no_module_but_annotation_kinds_reads_a_schemas_kind_block():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    offenders = []
    for package in config["tool"]["importlinter"]["root_packages"]:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            if name in ALLOWED or "/migrations/" in name:
                continue
            offenders += [f"{name}:{line}" for line in kind_block_reads(path.read_text(encoding="utf-8"))]
    assert offenders == [], "ask annotation.kinds.kind_of (or block_of) for a study's kind: " + ", ".join(offenders)
