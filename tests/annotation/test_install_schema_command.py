"""``manage.py install_schema FILE``: the shell's way to install a schema document (README: other codings need "a
new schema file, not new code"; docs/schema.md), through ``schema_install``: all or nothing, every problem listed,
a frozen schema refused."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from annotation import schema_document
from annotation.models import AttributeDefinition, Schema
from audit.models import AuditEvent

pytestmark = pytest.mark.django_db


def _cab_v1() -> dict:
    return json.loads(schema_document.builtin_path("cab-v1").read_text(encoding="utf-8"))


def _document(**changes) -> dict:
    return _cab_v1() | {"slug": "pilot-v1", "name": "Pilot"} | changes


def _counts() -> tuple[int, int, int]:
    return Schema.objects.count(), AttributeDefinition.objects.count(), AuditEvent.objects.count()


def test_a_schema_file_is_installed_and_offered_to_new_studies(tmp_path, capsys):
    path = tmp_path / "pilot-v1.json"
    path.write_text(json.dumps(_document()), encoding="utf-8")
    call_command("install_schema", str(path))
    assert "schema pilot-v1 version 1 installed" in capsys.readouterr().out
    installed = Schema.objects.get(slug="pilot-v1")
    assert installed.attributes.count() == Schema.objects.get(slug="cab-v1").attributes.count()
    assert AuditEvent.objects.filter(action="schema.install", target="schema:pilot-v1").exists()
    call_command("create_study", "--slug", "pilot", "--schema", "pilot-v1", "--model-slot", "GPT")


@pytest.mark.parametrize(("text", "said"), [
    ("{not json", "line 1: not JSON"),
    (json.dumps(["a", "list"]), "document: must be a JSON object"),
    (json.dumps(_document(attributes=[])), "problem(s), nothing was installed"),
])
def test_a_bad_file_is_refused_with_its_problems_and_nothing_is_written(tmp_path, text, said):
    path = tmp_path / "bad.json"
    path.write_text(text, encoding="utf-8")
    before = _counts()
    with pytest.raises(CommandError, match=said.replace("(", r"\(").replace(")", r"\)")):
        call_command("install_schema", str(path))
    assert _counts() == before


def _attribute_changed(**changes) -> list[dict]:
    """cab-v1's attributes, the first one with ``changes``."""
    attributes = _cab_v1()["attributes"]
    return [attributes[0] | changes, *attributes[1:]]


@pytest.mark.parametrize(("changes", "said"), [
    ({"clusters": None}, "schema.clusters: must be a list of objects"),
    ({"indices": {"uiri": {"attributes": None}}}, "indices.uiri.attributes: must be a list of attribute codes"),
    ({"attributes": _attribute_changed(cluster=["D"])}, ".cluster: must be a cluster code"),
    ({"attributes": _attribute_changed(subcategories=5)}, ".subcategories: must be a list of objects"),
    ({"attributes": _attribute_changed(bucket={"0": None, "1": 1, "2": 2})},
     ".bucket: bucket values must be scale values"),
])
def test_a_value_of_the_wrong_type_is_listed_as_a_problem_not_a_traceback(tmp_path, changes, said):
    """A value of the wrong type where the document wants a list, a code or a scale value: listed with the others,
    nothing written, where the check itself raised (TypeError, ValueError) and the command ended in a traceback."""
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_document(**changes)), encoding="utf-8")
    before = _counts()
    with pytest.raises(CommandError, match="nothing was installed") as refused:
        call_command("install_schema", str(path))
    assert said in str(refused.value)
    assert _counts() == before


def test_a_schema_a_study_has_opened_is_refused(tmp_path, round_):
    """``round_`` is an open round of a study on cab-v1: its schema is frozen."""
    path = tmp_path / "cab-v1.json"
    path.write_text(json.dumps(_cab_v1() | {"name": "renamed"}),
                    encoding="utf-8")
    before = _counts()
    with pytest.raises(CommandError, match="schema cab-v1 is frozen: a study using it is open; nothing was installed"):
        call_command("install_schema", str(path))
    assert _counts() == before and Schema.objects.get(slug="cab-v1").name != "renamed"
