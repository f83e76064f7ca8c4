"""Shapes of the ingestion API. The items are validated by the ingestion modules (by hand, for speed at 10,000+ items
a request); these serializers document them and shape the answers."""

from __future__ import annotations

from drf_spectacular.utils import PolymorphicProxySerializer
from rest_framework import serializers

from benchmark.models import Conversation, Session
from benchmark.sessions import HistoryIn, TurnsIn

# The schema's ConversationKindEnum and SessionKindEnum (SPECTACULAR_SETTINGS).
CONVERSATION_KINDS = Conversation.Kind.values
SESSION_KINDS = Session.Kind.values

# A conversation is one of two shapes: its turns, or (a longitudinal history) its sessions with
# their turns (benchmark.sessions.conversation_serializer picks by the key ``sessions``).
CONVERSATIONS_IN = PolymorphicProxySerializer(component_name="Conversation", serializers=[TurnsIn, HistoryIn],
                                              resource_type_field_name=None, many=True)


class ItemsFileIn(serializers.Serializer):
    """The items as a file, for clients that send files as a form upload (``multipart/form-data``)."""

    file = serializers.FileField(help_text="UTF-8 JSON Lines, one item a line (blank lines skipped), or a JSON array "
                                           "of items")


class ResponseItemIn(serializers.Serializer):
    refuses_unknown_fields = True  # the ingestion names each unknown field as an item's error (the schema says so)

    dataset = serializers.CharField(max_length=100)
    conversation_id = serializers.CharField(max_length=200)
    turn_index = serializers.IntegerField(min_value=1, max_value=2**31 - 1)
    model = serializers.CharField(max_length=50, help_text="the model slot, e.g. GPT; one of the study's slots")
    model_version = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    text = serializers.CharField(trim_whitespace=False, help_text="stored exactly as sent (spans index into it)")


BACK_IN_QUEUES = ("coders' completed turns (in an open round) that a new response took out of the completed ones: "
                  "back in their queues, to code it")


class ResponsesIngestOut(serializers.Serializer):
    items = serializers.IntegerField()
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    unchanged = serializers.IntegerField(help_text="identical content already stored: nothing was written")
    turns_back_in_queues = serializers.IntegerField(help_text=BACK_IN_QUEUES)


class ConversationsIngestOut(serializers.Serializer):
    conversations_created = serializers.IntegerField()
    conversations_updated = serializers.IntegerField()
    conversations_unchanged = serializers.IntegerField()
    turns_created = serializers.IntegerField()
    responses_created = serializers.IntegerField()
    responses_updated = serializers.IntegerField()
    datasets_created = serializers.ListField(child=serializers.CharField())
    sessions_created = serializers.IntegerField(help_text="sessions of histories sent in the sessions form")
    sessions_updated = serializers.IntegerField(help_text="sessions whose kind, crisis type or turns changed")
    turns_back_in_queues = serializers.IntegerField(help_text=BACK_IN_QUEUES)


# --- a study's material as it reads back (GET …/conversations/, GET …/responses/) ------------------------------


class ResponseOut(serializers.Serializer):
    model = serializers.CharField(source="model_slot")
    model_version = serializers.CharField()
    text = serializers.CharField(help_text="exactly as it was sent (spans index into it)")


class TurnOut(serializers.Serializer):
    index = serializers.IntegerField()
    session_index = serializers.IntegerField(source="session.index", allow_null=True,
                                             help_text="the session the turn is in; null without sessions")
    client = serializers.CharField(source="client_text")
    therapist_reference = serializers.CharField(help_text="empty when the dataset has none")
    responses = ResponseOut(many=True, help_text="under the study's model slots, by slot")


class SessionOut(serializers.Serializer):
    index = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=Session.Kind.values)
    crisis_type = serializers.ChoiceField(choices=Session.CrisisType.values, allow_null=True)


class ConversationOut(serializers.Serializer):
    """A conversation of the study with its texts: the fields it was ingested with, its turns in order (each with its
    session, if any, and the responses of the study's model slots) and its sessions (empty unless it was sent in the
    sessions form)."""

    dataset = serializers.CharField(source="dataset.name")
    conversation_id = serializers.CharField(source="external_id")
    kind = serializers.ChoiceField(choices=Conversation.Kind.values)
    topic = serializers.CharField()
    complexity = serializers.ChoiceField(choices=Conversation.Complexity.values, allow_null=True)
    title = serializers.CharField()
    sessions = SessionOut(many=True)
    turns = TurnOut(many=True)


# What a filter may name (docs/api.md#filters-and-pages): what the study has, matched ignoring case, or a 400.
_DATASET = "a dataset of the study's conversations, matched ignoring case; another value is a 400"


class ConversationFilterIn(serializers.Serializer):
    dataset = serializers.CharField(required=False, max_length=100, help_text=_DATASET)
    conversation_id = serializers.CharField(required=False, max_length=200)
    kind = serializers.ChoiceField(choices=Conversation.Kind.values, required=False)


class ResponseItemOut(serializers.Serializer):
    """A response as it was ingested (``POST …/responses/``), with when it last changed."""

    dataset = serializers.CharField(source="turn.conversation.dataset.name")
    conversation_id = serializers.CharField(source="turn.conversation.external_id")
    turn_index = serializers.IntegerField(source="turn.index")
    model = serializers.CharField(source="model_slot")
    model_version = serializers.CharField()
    text = serializers.CharField(help_text="exactly as it was sent (spans index into it)")
    updated_at = serializers.DateTimeField()


class ResponseFilterIn(serializers.Serializer):
    dataset = serializers.CharField(required=False, max_length=100, help_text=_DATASET)
    conversation_id = serializers.CharField(required=False, max_length=200)
    turn_index = serializers.IntegerField(required=False, min_value=1, max_value=2**31 - 1)
    model = serializers.CharField(required=False, max_length=50, help_text=(
        "one of the study's model slots, matched ignoring case; another value is a 400"))
