"""Importing conversations (benchmark/conversation_ingest.py, ``import_conversations``): verbatim text, idempotent
re-imports, every bad row named by line and field with nothing written; study isolation (no study's material
changes through another study, nor through the command, which has none) and frozen text (what reviewers coded
against never changes), benchmark/material_rules.py, through every ingestion path. The database's side of the
freeze is in test_models.py."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from benchmark import conversation_ingest, material_rules, response_ingest
from benchmark.models import Conversation, ModelResponse, Turn
from common.errors import RowErrors
from tests.factories import (
    AssignmentFactory,
    JudgmentFactory,
    RoundFactory,
    RoundItemFactory,
    StudyFactory,
    attribute,
)

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
    ({"topic": "Astrology"}, 'line 2: topic: "Astrology" is not a valid choice; allowed: "Depression", "Anxiety",'),
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


def test_the_command_cannot_change_material_a_study_judged_and_nothing_changes(tmp_path):
    call_command("import_conversations", str(write(tmp_path, record(), record("c2"))))
    judged = ModelResponse.objects.get(model_slot="Claude", turn__conversation__external_id="c1")
    JudgmentFactory(round=RoundFactory(study=StudyFactory()), response=judged)
    changed_one, changed_two = record(), record("c2", topic="Grief and Loss")
    changed_one["turns"][0]["responses"][1]["text"] = "Rewritten."
    changed_one["turns"][0]["client"] = "Rewritten client text."
    before = material()
    with pytest.raises(CommandError) as caught:
        call_command("import_conversations", str(write(tmp_path, changed_one, changed_two)))
    assert str(caught.value).endswith("1 error(s), nothing was changed:\nline 1: conversation_id: CounselChat/c1 "
                                      "belongs to a study: only that study's ingestion may change it, not an import "
                                      "without a study")
    assert material() == before


def test_the_command_cannot_change_material_ingested_through_a_study(tmp_path):
    study = StudyFactory()
    conversation_ingest.conversations_ingest(items=[record()], study=study)
    before = material()
    with pytest.raises(CommandError, match="CounselChat/c1 belongs to a study"):
        call_command("import_conversations", str(write(tmp_path, record(title="Renamed by the command"))))
    assert material() == before


# --- through a study: study isolation and frozen text (the API's side is in tests/annotation/test_apis.py) -------


def material():
    """Every stored conversation, turn and response, column by column."""
    return [list(model.objects.order_by("pk").values_list()) for model in (Conversation, Turn, ModelResponse)]


def multi(conversation_id="m1", **overrides):
    return record(conversation_id, kind="multi", complexity=None, turns=[
        {"index": i, "client": f"client {i}", "therapist_reference": f"reference {i}",
         "responses": [{"model": "GPT", "text": f"response {i}"}]} for i in (1, 2, 3)
    ], **overrides)


def test_a_study_owns_what_it_creates_and_claims_what_it_changes_first():
    study, other = StudyFactory(), StudyFactory()
    conversation_ingest.conversations_import(rows=enumerate([record("library")], start=1))
    conversation_ingest.conversations_ingest(items=[record("mine")], study=study)
    assert dict(Conversation.objects.values_list("external_id", "study")) == {"library": None, "mine": study.pk}
    conversation_ingest.conversations_ingest(items=[record("library", title="Named")], study=other)
    assert Conversation.objects.get(external_id="library").study == other


def test_a_study_cannot_change_another_studys_material_through_any_service(tmp_path):
    owner, other = StudyFactory(), StudyFactory()
    conversation_ingest.conversations_ingest(items=[record()], study=owner)
    changed = record(title="Renamed")
    lines = write(tmp_path, changed).read_text(encoding="utf-8").splitlines(keepends=True)
    response = {"dataset": "CounselChat", "conversation_id": "c1", "turn_index": 1, "model": "GPT", "text": "New."}
    before = material()
    for attempt in (lambda: conversation_ingest.conversations_ingest(items=[changed], study=other),
                    lambda: conversation_ingest.conversations_upload(stream=lines, study=other),
                    lambda: conversation_ingest.conversations_upload(stream=lines),
                    lambda: response_ingest.responses_ingest(items=[response], study=other)):
        with pytest.raises(material_rules.MaterialConflict) as caught:
            attempt()
        assert [(e.field, e.message.split(" belongs to")[0]) for e in caught.value.errors] == [
            ("conversation_id", "CounselChat/c1")]
    assert material() == before


def test_used_material_is_frozen_for_every_other_study_whoever_owns_it():
    owner, user = StudyFactory(), StudyFactory()
    conversation_ingest.conversations_ingest(items=[record()], study=owner)
    RoundItemFactory(round=RoundFactory(study=user, status="draft"), turn=Turn.objects.get())
    for study in (owner, None):
        with pytest.raises(material_rules.MaterialConflict, match="belongs to"):
            conversation_ingest.conversations_import(rows=enumerate([record(title="Renamed")], start=1), study=study)
    assert Conversation.objects.get().title == ""


@pytest.mark.parametrize(("judged_index", "frozen"), [(1, [1]), (2, [1, 2]), (3, [1, 2, 3])])
def test_a_judged_turn_and_the_earlier_turns_it_shows_are_frozen(judged_index, frozen):
    study = StudyFactory()
    conversation_ingest.conversations_ingest(items=[multi()], study=study)
    JudgmentFactory(round=RoundFactory(study=study, status="closed"), response=None, attribute=attribute("U1"),
                    turn=Turn.objects.get(index=judged_index))
    changed = multi()
    for turn in changed["turns"]:
        turn["client"] += " (edited)"
    with pytest.raises(material_rules.MaterialConflict) as caught:
        conversation_ingest.conversations_ingest(items=[changed], study=study)
    assert [e.field for e in caught.value.errors] == [f"turns[{i - 1}].client" for i in frozen]
    for turn in changed["turns"]:
        turn["client"] = turn["client"] if turn["index"] > judged_index else turn["client"].removesuffix(" (edited)")
    conversation_ingest.conversations_ingest(items=[changed], study=study)  # later turns nobody coded may still change
    assert list(Turn.objects.order_by("index").values_list("client_text", flat=True)) == [
        f"client {i}" + ("" if i <= judged_index else " (edited)") for i in (1, 2, 3)]


def test_turns_in_an_open_round_are_frozen_with_the_earlier_turns_and_the_conversation():
    study = StudyFactory()
    conversation_ingest.conversations_ingest(items=[multi()], study=study)
    round_ = RoundFactory(study=study, status="open")
    AssignmentFactory(round=round_, turn=Turn.objects.get(index=2))
    changed = multi(topic="Grief and Loss")
    changed["turns"][0]["client"] = "edited"
    changed["turns"][2]["client"] = "edited"
    changed["turns"][1]["responses"][0]["text"] = "edited"
    with pytest.raises(material_rules.MaterialConflict) as caught:
        conversation_ingest.conversations_ingest(items=[changed], study=study)
    assert [(e.field, e.message) for e in caught.value.errors] == [
        ("topic", "CounselChat/m1 is in an open round; its topic cannot change"),
        ("turns[0].client", "turn 1 of CounselChat/m1 is in an open round (itself, or as context of a later turn); "
                            "its client text cannot change"),
        ("turns[1].responses[0].text", "the GPT response of turn 2 of CounselChat/m1 is in an open round; its text "
                                       "cannot change until the round closes"),
    ]
    round_.status = "closed"
    round_.save()
    conversation_ingest.conversations_ingest(items=[changed], study=study)
    assert Conversation.objects.get().topic == "Grief and Loss"


def test_a_new_model_version_of_a_judged_response_is_not_a_text_change():
    study = StudyFactory()
    conversation_ingest.conversations_ingest(items=[record()], study=study)
    JudgmentFactory(round=RoundFactory(study=study), response=ModelResponse.objects.get(model_slot="GPT"))
    changed = record()
    changed["turns"][0]["responses"][0]["model_version"] = "gpt-x-2"
    assert conversation_ingest.conversations_ingest(items=[changed], study=study).responses_updated == 1


def test_missing_file_and_non_utf8_are_clear_errors(tmp_path):
    with pytest.raises(CommandError, match="no such file"):
        call_command("import_conversations", str(tmp_path / "nope.jsonl"))
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(json.dumps(record()).replace("Sleep", "Sl\\u00e9ep").encode() + b"\xe9\n")
    with pytest.raises(CommandError, match="not UTF-8"):
        call_command("import_conversations", str(latin))


# --- bulk response ingestion: the set-based path (fast validation, one COPY) -----------------------------------


def response_item(turn_index=1, model="GPT", text="A reply.", **overrides):
    item = {"dataset": "CounselChat", "conversation_id": "c1", "turn_index": turn_index, "model": model,
            "model_version": "v1", "text": text}
    item.update(overrides)
    return item


@pytest.mark.parametrize("text", ["back\\slash \\N and \\.", "tab\there", "line\nbreak\r\nand \rcr",
                                  "  spaces kept  ", "😊 naïve — ça", "\\", "\t", "'=SUM(A1)", "{\"json\": [1]}"])
def test_ingested_response_text_is_stored_exactly_as_sent(text):
    study = StudyFactory(model_slots=["GPT", "Claude", "Gemini"])
    conversation_ingest.conversations_ingest(items=[record(turns=[{"index": 1, "client": "Hi.", "responses": []}])],
                                             study=study)
    summary = response_ingest.responses_ingest(
        items=[response_item(text=text), response_item(model="Claude", text="x")], study=study,
        model_slots=study.model_slots)
    assert (summary.created, summary.unchanged) == (2, 0)
    stored = ModelResponse.objects.get(model_slot="GPT")
    assert (stored.text, stored.model_version, stored.created_at is not None) == (text, "v1", True)
    again = response_ingest.responses_ingest(items=[response_item(text=text)], study=study,
                                             model_slots=study.model_slots)
    assert (again.created, again.unchanged) == (0, 1)


def test_items_off_the_fast_path_are_cleaned_and_checked_the_same_way():
    study = StudyFactory(model_slots=["GPT", "Claude", "Gemini"])
    turns = [{"index": 1, "client": "Hi.", "responses": []}, {"index": 2, "client": "More.", "responses": []}]
    conversation_ingest.conversations_ingest(items=[record(kind="multi", complexity=None, turns=turns)], study=study)
    items = [response_item(turn_index="2", model=" GPT "),  # a number as text, padding: the careful path
             response_item(model="Claude", dataset=" CounselChat ", model_version=" v2 "),
             {k: v for k, v in response_item(model="Gemini").items() if k != "model_version"}]
    summary = response_ingest.responses_ingest(items=items, study=study, model_slots=study.model_slots)
    assert summary.created == 3
    assert set(ModelResponse.objects.values_list("turn__index", "model_slot", "model_version")) == {
        (2, "GPT", "v1"), (1, "Claude", "v2"), (1, "Gemini", "")}
    bad = [response_item(model="Llama"), response_item(text=""), response_item(turn_index=True),
           response_item(text="nul\x00"), response_item(extra=1), response_item(model="Claude"),
           response_item(model="Claude")]
    with pytest.raises(RowErrors) as caught:
        response_ingest.responses_ingest(items=bad, study=study, model_slots=study.model_slots)
    assert [(e.row, e.field) for e in caught.value.errors] == [
        (0, "model"), (1, "text"), (2, "turn_index"), (3, "text"), (4, "extra"), (6, "model")]
    assert "already appears as item 5" in caught.value.errors[-1].message
    assert ModelResponse.objects.count() == 3
