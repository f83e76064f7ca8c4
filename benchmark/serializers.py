"""Input shapes of the interchange formats (docs/reference.md#interchange-formats). They validate shape and internal
consistency only; what the data means for the database is decided in ``benchmark.conversation_ingest``."""

from __future__ import annotations

import json

from rest_framework import serializers

from benchmark.models import TOPICS, Conversation


class Text(serializers.CharField):
    """Text only: DRF's CharField would read the number 12 or 1.5 as the name "12" or "1.5"."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class Choice(serializers.ChoiceField):
    """A choice whose refusal names the allowed values, so a file's author can fix the line without the manual."""

    default_error_messages = {"invalid_choice": "{input} is not a valid choice; allowed: {allowed}."}

    def fail(self, key, **kwargs):
        if key == "invalid_choice":
            kwargs["input"] = json.dumps(kwargs["input"], ensure_ascii=False)[:200]
            kwargs["allowed"] = ", ".join(json.dumps(value, ensure_ascii=False) for value in self.choices)
        super().fail(key, **kwargs)


class ResponseIn(serializers.Serializer):
    model = Text(max_length=50)
    model_version = Text(max_length=200, allow_blank=True, required=False, default="")
    # Span offsets index into this exact text: never trim or normalise it.
    text = Text(trim_whitespace=False)


class TurnIn(serializers.Serializer):
    index = serializers.IntegerField(min_value=1, help_text="1-based, through the whole conversation: 1, 2, … in "
                                                           "order (across the sessions of a history)")
    client = Text(trim_whitespace=False, help_text="what the client says; stored exactly as sent")
    therapist_reference = Text(
        trim_whitespace=False, allow_blank=True, allow_null=True, required=False, default="",
        help_text="a human therapist's reply, when the dataset has one (null or empty: none)",
    )
    responses = ResponseIn(many=True, required=False, default=list,
                           help_text="the models' responses to this turn, one per model slot of the study")

    def validate(self, attrs):
        models = [response["model"] for response in attrs["responses"]]
        duplicates = sorted({m for m in models if models.count(m) > 1})
        if duplicates:
            raise serializers.ValidationError({"responses": f"model {', '.join(duplicates)} appears more than once"})
        attrs["therapist_reference"] = attrs.get("therapist_reference") or ""
        return attrs


class ConversationIn(serializers.Serializer):
    """A conversation record in the ``turns`` form (docs/reference.md#conversations-json-lines)."""

    dataset = Text(max_length=100, help_text="the source corpus, e.g. CounselChat (created on first use)")
    conversation_id = Text(max_length=200, help_text="the conversation's id in its dataset")
    kind = Choice(
        choices=Conversation.Kind.values,
        help_text="single: exactly one turn, and a complexity; multi: several turns (the turns form) or a history "
                  "of chat, crisis and callback sessions (the sessions form); longitudinal: a "
                  "trajectory of counseling sessions, in the sessions form only")
    topic = Choice(choices=TOPICS)
    complexity = Choice(
        choices=Conversation.Complexity.values, allow_null=True, required=False, default=None,
        help_text="required for a single-turn conversation (kind single); must be null or left out for multi and "
                  "longitudinal ones (their complexity is their number of turns)",
    )
    title = Text(max_length=200, allow_blank=True, required=False, default="")
    turns = TurnIn(many=True, allow_empty=False, help_text="indices 1, 2, … in order; exactly one for kind single")

    def validate(self, attrs):
        indices = [turn["index"] for turn in attrs["turns"]]
        if indices != list(range(1, len(indices) + 1)):
            raise serializers.ValidationError({"turns": f"turn indices must be 1, 2, … in order; got {indices}"})
        if attrs["kind"] == Conversation.Kind.MULTI and attrs.get("complexity") is not None:
            raise serializers.ValidationError(
                {"complexity": "must be null for multi-turn conversations (their complexity is the number of turns)"}
            )
        if attrs["kind"] == Conversation.Kind.SINGLE:
            if len(indices) != 1:
                raise serializers.ValidationError(
                    {"turns": f"a single-turn conversation has 1 turn, not {len(indices)}"}
                )
            if attrs.get("complexity") is None:
                raise serializers.ValidationError({"complexity": "required for single-turn conversations"})
        return attrs


def conversation_example(*, model_slots: list[str]) -> str:
    """One line of a conversations file in the ``turns`` form, with a response under each of the given model slots:
    the record the upload page shows (docs/reference.md#conversations-json-lines)."""
    record = {
        "dataset": "CounselChat", "conversation_id": "example-1", "kind": Conversation.Kind.SINGLE, "topic": TOPICS[1],
        "complexity": Conversation.Complexity.LOW, "title": "",
        "turns": [{"index": 1, "client": "I can't sleep before exams. What should I do?", "therapist_reference": "",
                   "responses": [{"model": slot, "model_version": "", "text": f"{slot}'s reply."}
                                 for slot in model_slots or ["GPT"]]}],
    }
    return json.dumps(record, ensure_ascii=False)
