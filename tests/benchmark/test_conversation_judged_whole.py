"""A custom schema's conversation-level judgment (an attribute of unit ``conversation``; cab-v1 has none) is given on
the conversation's whole transcript, as a session's code is on its session's: once a conversation has one, no turn
joins it, no reply is added to one of its turns and no reply's text changes, on every path through the study (the
conversations API and its ``upload/``, the responses API and its ``upload/``, which ``cab ingest`` sends), each
refused by item and field with nothing written (benchmark.material_rules). Before, only its turns' own text was
frozen: a third turn, a second model's reply or a reply's new text were taken, and the judgment stayed, of a
transcript its coder never saw. A conversation judged turn by turn takes them as before. A study archive's import
restores no such judgment onto a copy here that holds more than the archive."""

from __future__ import annotations

import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from annotation.models import AttributeDefinition, Study
from benchmark import conversation_ingest
from benchmark.models import Conversation, ModelResponse, Turn
from tests.annotation.test_import_conversation_level import _schema_with_a_conversation_attribute
from tests.factories import JudgmentFactory, RoundFactory, StudyFactory, UserFactory
from tests.study_archive.test_archive import export, table_counts, truncate_everything_archived, write

pytestmark = pytest.mark.django_db

LABEL = "Arcs/a1"
WHY = "(a conversation-level judgment is given on the whole transcript)"


def _record(turns: int = 2, **texts: str) -> dict:
    return {"dataset": "Arcs", "conversation_id": "a1", "kind": "multi", "topic": "Anxiety", "turns": [
        {"index": i, "client": f"Client {i}.", "responses": [{"model": "GPT", "text": texts.get(f"t{i}", f"GPT {i}.")}]}
        for i in range(1, turns + 1)]}


@pytest.fixture
def judged(admin_user, as_token):
    """A study of a schema with a conversation-level attribute (ARC), its two-turn conversation judged on ARC alone
    in a closed round; the API as an ingest token of the study."""
    schema = _schema_with_a_conversation_attribute()
    study = StudyFactory(slug="arcs", schema=schema, model_slots=["GPT", "Claude"])
    conversation_ingest.conversations_ingest(items=[_record()], study=study, model_slots=["GPT", "Claude"])
    main = RoundFactory(study=study, kind="main", number=1, status="closed")
    JudgmentFactory(round=main, coder=UserFactory(username="arc-coder"), response=None, turn=None,
                    attribute=AttributeDefinition.objects.get(schema=schema, code="ARC"),
                    conversation=Conversation.objects.get(external_id="a1"), score=1)
    return study, as_token(admin_user, scopes=["ingest"], study=study)


def _answer(answer) -> list[tuple[int, str, str]] | None:
    if answer.status_code == 200:
        return None
    assert answer.status_code == 409, answer.content
    return [(e["index"] + 1, e["field"], e["message"]) for e in answer.json()["errors"]]


def _paths(study, api) -> dict:
    base = f"/api/v1/studies/{study.slug}"

    def upload(url, lines):
        return _answer(api.post(url, {"file": SimpleUploadedFile("f.jsonl", "\n".join(
            json.dumps(line) for line in lines).encode())}, format="multipart"))

    return {
        "conversations": {
            "the API": lambda record: _answer(api.post(f"{base}/conversations/", [record], format="json")),
            "the API, a file": lambda record: upload(f"{base}/conversations/upload/", [record])},
        "responses": {
            "the API": lambda items: _answer(api.post(f"{base}/responses/", items, format="json")),
            "the API, a file (cab ingest responses)": lambda items: upload(f"{base}/responses/upload/", items)},
    }


def _unchanged() -> None:
    assert list(Turn.objects.values_list("index", flat=True).order_by("index")) == [1, 2]
    assert sorted(ModelResponse.objects.values_list("model_slot", "text")) == [("GPT", "GPT 1."), ("GPT", "GPT 2.")]


def test_a_turn_joining_a_conversation_judged_whole_is_refused_on_every_path(judged):
    study, api = judged
    for path, send in _paths(study, api)["conversations"].items():
        assert send(_record(turns=3)) == [(1, "turns[2]", f"{LABEL} has a conversation-level judgment, given on its "
                                                           "whole transcript; no turn can join it")], path
        _unchanged()


def test_a_reply_added_to_or_changed_in_a_conversation_judged_whole_is_refused_on_every_path(judged):
    study, api = judged
    added = (f"turn 1 of {LABEL} is in the transcript its conversation-level judgment was given on {WHY}; no reply "
             "can be added to it")
    changed = (f"turn 2 of {LABEL} is in the transcript its conversation-level judgment was given on {WHY}; its GPT "
               "reply's text cannot change")
    record = _record(t2="Other words.")
    record["turns"][0]["responses"].append({"model": "Claude", "text": "Claude 1."})
    paths = _paths(study, api)
    for path, send in paths["conversations"].items():
        assert send(record) == [(1, "turns[0].responses[1]", added), (1, "turns[1].responses[0].text", changed)], path
        _unchanged()
    reply = {"dataset": "Arcs", "conversation_id": "a1", "model": "Claude", "turn_index": 1, "text": "Claude 1."}
    new_text = {**reply, "model": "GPT", "turn_index": 2, "text": "Other words."}
    for path, send in paths["responses"].items():
        assert send([reply, new_text]) == [(1, "model", added), (2, "text", changed)], path
        _unchanged()


def test_a_conversation_judged_turn_by_turn_still_takes_a_turn_and_a_reply(judged):
    """The rule of every study: a turn's judgment freezes its text and its earlier turns', not what comes after."""
    study, api = judged
    other = _record() | {"conversation_id": "b1"}
    conversation_ingest.conversations_ingest(items=[other], study=study, model_slots=["GPT", "Claude"])
    JudgmentFactory(round=study.rounds.get(), coder=UserFactory(username="u1-coder"), response=None,
                    turn=Turn.objects.get(conversation__external_id="b1", index=2),
                    attribute=AttributeDefinition.objects.get(schema=study.schema, code="U1"), score=1)
    grown = _record(turns=3) | {"conversation_id": "b1"}
    grown["turns"][1]["responses"].append({"model": "Claude", "text": "Claude 2."})
    assert _paths(study, api)["conversations"]["the API"](grown) is None
    assert Turn.objects.filter(conversation__external_id="b1").count() == 3


def test_an_archive_restores_no_conversation_level_judgment_onto_a_copy_that_holds_more(judged, tmp_path):
    """``import_study`` reuses a conversation stored here when it holds every archived turn and reply; holding a turn
    more, its conversation-level judgment is refused by its line, nothing written (as a session's code is:
    docs/sessions.md). Before, it was restored onto the longer transcript."""
    study, _ = judged
    text = export(study.slug)
    truncate_everything_archived()
    conversation_ingest.conversations_import(rows=[(1, _record(turns=3))])
    before = table_counts()
    with pytest.raises(CommandError, match=(
            r"line \d+ \(judgment\): Arcs/a1 is judged as a whole in the archive on its transcript as archived, but "
            "this installation's copy of it holds turn 3, which the archive lacks: the judgment would be of a "
            "transcript its coder never saw")):
        call_command("import_study", str(write(tmp_path, text)), stdout=io.StringIO())
    assert table_counts() == before and not Study.objects.filter(slug=study.slug).exists()
