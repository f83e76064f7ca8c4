"""Importing conversations (benchmark/services.py, ``import_conversations``): verbatim text, idempotent re-imports,
every bad row named by line and field with nothing written, judged response text never rewritten."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from benchmark.models import Conversation, ModelResponse, Turn
from tests.factories import JudgmentFactory, RoundFactory, StudyFactory

pytestmark = pytest.mark.django_db


def record(conversation_id="c1", **overrides):
    base = {
        "dataset": "CounselChat",
        "conversation_id": conversation_id,
        "kind": "single",
        "topic": "Sleep",
        "complexity": "low",
        "turns": [
            {
                "index": 1,
                "client": "  I lie awake every night.\r\nWhat can I do?  ",
                "therapist_reference": "Tell me more.",
                "responses": [
                    {"model": "GPT", "model_version": "gpt-x", "text": "  Leading spaces stay. 😊 naïve\n"},
                    {"model": "Claude", "model_version": "c-1", "text": "What keeps you awake?"},
                ],
            }
        ],
    }
    base.update(overrides)
    return base


def write(tmp_path, *records, raw_lines=()):
    path = tmp_path / "conversations.jsonl"
    lines = [json.dumps(r, ensure_ascii=False) for r in records] + list(raw_lines)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def counts():
    return Conversation.objects.count(), Turn.objects.count(), ModelResponse.objects.count()


def test_import_creates_conversations_turns_and_responses_verbatim(tmp_path, capsys):
    multi = record("m1", kind="multi", complexity=None, topic="Family Conflicts", dataset="HOPE", turns=[
        {"index": 1, "client": "first", "responses": []},
        {"index": 2, "client": "second", "therapist_reference": None, "responses": [{"model": "GPT", "text": "ok"}]},
    ])
    call_command("import_conversations", str(write(tmp_path, record(), multi)))
    assert counts() == (2, 3, 3)
    response = ModelResponse.objects.get(model_slot="GPT", turn__conversation__external_id="c1")
    assert response.text == "  Leading spaces stay. 😊 naïve\n"
    assert Turn.objects.get(conversation__external_id="c1").client_text.startswith("  I lie awake every night.\r\n")
    assert "2 conversations created" in capsys.readouterr().out


def test_reimporting_the_same_file_changes_nothing(tmp_path, capsys):
    path = write(tmp_path, record("c1"), record("c2"))
    call_command("import_conversations", str(path))
    before = list(ModelResponse.objects.values_list("id", "text", "updated_at").order_by("id"))
    call_command("import_conversations", str(path))
    assert list(ModelResponse.objects.values_list("id", "text", "updated_at").order_by("id")) == before
    assert "0 conversations created, 0 updated, 2 unchanged" in capsys.readouterr().out


@pytest.mark.parametrize(("bad", "expected"), [
    ({"topic": "Astrology"}, "line 2: topic: \"Astrology\" is not a valid choice."),
    ({"kind": "multi"}, "line 2: complexity: must be null for multi-turn conversations"),
    ({"complexity": None}, "line 2: complexity: required for single-turn conversations"),
    ({"turns": []}, "line 2: turns: This list may not be empty."),
    ({"turns": [{"index": 1, "client": "x", "responses": [{"model": "GPT"}]}]},
     "line 2: turns[0].responses[0].text: This field is required."),
    ({"turns": [{"index": 1, "client": "x",
                 "responses": [{"model": "GPT", "text": "a"}, {"model": "GPT", "text": "b"}]}]},
     "line 2: turns[0].responses: model GPT appears more than once"),
    ({"turns": [{"index": 2, "client": "x"}]}, "line 2: turns: turn indices must be 1, 2, … in order; got [2]"),
])
def test_a_bad_row_names_line_and_field_and_nothing_is_written(tmp_path, bad, expected):
    path = write(tmp_path, record("ok"), record("bad", **bad))
    with pytest.raises(CommandError) as caught:
        call_command("import_conversations", str(path))
    assert expected in str(caught.value)
    assert "nothing was changed" in str(caught.value)
    assert counts() == (0, 0, 0)


def test_broken_json_and_duplicates_are_reported_together(tmp_path):
    path = write(tmp_path, record("c1"), record("c1"), raw_lines=["{not json"])
    with pytest.raises(CommandError) as caught:
        call_command("import_conversations", str(path))
    message = str(caught.value)
    assert "line 2: conversation_id: 'c1' of CounselChat already appears on row 1" in message
    assert "line 3: line: not valid JSON" in message
    assert counts() == (0, 0, 0)


def test_unjudged_text_is_updated_by_a_reimport(tmp_path):
    call_command("import_conversations", str(write(tmp_path, record())))
    changed = record()
    changed["turns"][0]["responses"][1]["text"] = "A corrected response."
    call_command("import_conversations", str(write(tmp_path, changed)))
    assert ModelResponse.objects.get(model_slot="Claude").text == "A corrected response."


def test_new_text_for_a_judged_response_is_refused_and_nothing_changes(tmp_path):
    call_command("import_conversations", str(write(tmp_path, record(), record("c2"))))
    judged = ModelResponse.objects.get(model_slot="Claude", turn__conversation__external_id="c1")
    JudgmentFactory(round=RoundFactory(study=StudyFactory()), response=judged)
    changed_one, changed_two = record(), record("c2", topic="Grief and Loss")
    changed_one["turns"][0]["responses"][1]["text"] = "Rewritten."
    with pytest.raises(CommandError, match=r"line 1: turns\[0\]\.responses\[1\]\.text: the Claude response of turn 1 "
                                           r"already has judgments; its text cannot change"):
        call_command("import_conversations", str(write(tmp_path, changed_one, changed_two)))
    judged.refresh_from_db()
    assert judged.text == "What keeps you awake?"
    assert Conversation.objects.get(external_id="c2").topic == "Sleep"


def test_missing_file_and_non_utf8_are_clear_errors(tmp_path):
    with pytest.raises(CommandError, match="no such file"):
        call_command("import_conversations", str(tmp_path / "nope.jsonl"))
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(json.dumps(record()).replace("Sleep", "Sl\\u00e9ep").encode() + b"\xe9\n")
    with pytest.raises(CommandError, match="not UTF-8"):
        call_command("import_conversations", str(latin))
