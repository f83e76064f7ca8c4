"""Shapes of the ingestion API. The items are validated by the services (by hand, for speed at 10,000+ items
a request); these serializers document them and shape the answers."""

from __future__ import annotations

from drf_spectacular.utils import PolymorphicProxySerializer
from rest_framework import serializers

from benchmark.models import Conversation
from benchmark.sessions import HistoryIn, TurnsIn

CONVERSATION_KINDS = Conversation.Kind.values  # the schema's ConversationKindEnum (SPECTACULAR_SETTINGS)

# A conversation is one of two shapes: its turns, or (a longitudinal history: CARE, LongCounsel-8) its sessions with
# their turns (benchmark.sessions.conversation_serializer picks by the key ``sessions``).
CONVERSATIONS_IN = PolymorphicProxySerializer(component_name="Conversation", serializers=[TurnsIn, HistoryIn],
                                              resource_type_field_name=None, many=True)


class ItemsFileIn(serializers.Serializer):
    """The items as a file, for clients that send files as a form upload (``multipart/form-data``)."""

    file = serializers.FileField(help_text="UTF-8 JSON Lines, one item a line (blank lines skipped), or a JSON array "
                                           "of items")


class ResponseItemIn(serializers.Serializer):
    dataset = serializers.CharField(max_length=100)
    conversation_id = serializers.CharField(max_length=200)
    turn_index = serializers.IntegerField(min_value=1, max_value=2**31 - 1)
    model = serializers.CharField(max_length=50, help_text="the model slot, e.g. GPT; one of the study's slots")
    model_version = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    text = serializers.CharField(trim_whitespace=False, help_text="stored exactly as sent (spans index into it)")


class ResponsesIngestOut(serializers.Serializer):
    items = serializers.IntegerField()
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    unchanged = serializers.IntegerField(help_text="identical content already stored: nothing was written")


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
