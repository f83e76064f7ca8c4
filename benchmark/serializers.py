"""Input shapes of the interchange formats (docs/reference.md#interchange-formats). They validate shape and internal
consistency only; what the data means for the database is decided in ``benchmark.services``."""

from __future__ import annotations

from rest_framework import serializers

from benchmark.models import TOPICS, Conversation


class Text(serializers.CharField):
    """Text only: DRF's CharField would read the number 12 or 1.5 as the name "12" or "1.5"."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


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
    kind = serializers.ChoiceField(
        choices=Conversation.Kind.values,
        help_text="single: exactly one turn, and a complexity; multi: several turns (the turns form) or a history "
                  "of chat, crisis and callback sessions (the sessions form); longitudinal: a LongCounsel-8 "
                  "trajectory of counseling sessions, in the sessions form only")
    topic = serializers.ChoiceField(choices=TOPICS)
    complexity = serializers.ChoiceField(
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
