"""One factory per model, and request bodies for the ingestion endpoints. Schemas come from the installed
``cab-v1`` (the data migration puts it there)."""

from __future__ import annotations

import json

import factory
from django.contrib.auth import get_user_model

from annotation import models as annotation_models
from benchmark import models as benchmark_models
from benchmark.demo import demo_records


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.django.Password("pw-for-tests")


class DatasetFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = benchmark_models.Dataset
        django_get_or_create = ("name",)

    name = "CounselChat"


class ConversationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = benchmark_models.Conversation

    dataset = factory.SubFactory(DatasetFactory)
    external_id = factory.Sequence(lambda n: f"conv-{n}")
    kind = "single"
    topic = "Anxiety"
    complexity = "medium"


class TurnFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = benchmark_models.Turn

    conversation = factory.SubFactory(ConversationFactory)
    index = 1
    client_text = "I can't sleep and I keep worrying about work."
    therapist_reference = "It sounds like worry is keeping you awake."


class ModelResponseFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = benchmark_models.ModelResponse

    turn = factory.SubFactory(TurnFactory)
    model_slot = factory.Iterator(["GPT", "Claude", "Gemini", "Llama", "Qwen"])
    model_version = "v1"
    text = "That sounds exhausting. What do you notice when the worry starts? 😊 Ça va?"


class SchemaFactory(factory.django.DjangoModelFactory):
    """The installed default schema; a study test that needs another builds one with ``schema_install``."""

    class Meta:
        model = annotation_models.Schema
        django_get_or_create = ("slug",)

    slug = "cab-v1"


class StudyFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = annotation_models.Study

    slug = factory.Sequence(lambda n: f"study-{n}")
    name = factory.LazyAttribute(lambda o: f"Study {o.slug}")
    schema = factory.SubFactory(SchemaFactory)
    model_slots = ["GPT", "Claude", "Gemini", "Llama", "Qwen"]


class StudyMemberFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = annotation_models.StudyMember

    study = factory.SubFactory(StudyFactory)
    user = factory.SubFactory(UserFactory)
    role = "reviewer"


class RoundFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = annotation_models.Round

    study = factory.SubFactory(StudyFactory)
    kind = "calibration"
    number = 1
    status = "open"


class RoundItemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = annotation_models.RoundItem

    round = factory.SubFactory(RoundFactory)
    turn = factory.SubFactory(TurnFactory)
    position = factory.Sequence(lambda n: n + 1)


class AssignmentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = annotation_models.Assignment

    round = factory.SubFactory(RoundFactory)
    coder = factory.SubFactory(UserFactory)
    turn = factory.SubFactory(TurnFactory)
    position = factory.Sequence(lambda n: n + 1)


def attribute(code: str, schema_slug: str = "cab-v1") -> annotation_models.AttributeDefinition:
    return annotation_models.AttributeDefinition.objects.get(schema__slug=schema_slug, code=code)


class JudgmentFactory(factory.django.DjangoModelFactory):
    """A response-level judgment (AUR) by default; pass ``attribute`` and unit fields for others."""

    class Meta:
        model = annotation_models.Judgment

    round = factory.SubFactory(RoundFactory)
    coder = factory.SubFactory(UserFactory)
    attribute = factory.LazyFunction(lambda: attribute("AUR"))
    response = factory.SubFactory(ModelResponseFactory)
    turn = factory.LazyAttribute(lambda o: o.response.turn if o.response else None)
    conversation = factory.LazyAttribute(lambda o: o.turn.conversation)
    score = 1


class SpanFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = annotation_models.Span

    judgment = factory.SubFactory(JudgmentFactory)
    subcategory = factory.LazyAttribute(lambda o: o.judgment.attribute.subcategories.first())
    start = 0
    end = 4


class AuditEventFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "audit.AuditEvent"

    action = "test"


class MetricRunFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "metrics.MetricRun"

    study = factory.SubFactory(StudyFactory)



def _sha256(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


class ApiTokenFactory(factory.django.DjangoModelFactory):
    """A token whose raw key is ``raw`` (pass your own to send it; only its SHA-256 is stored)."""

    class Meta:
        model = "cab.ApiToken"
        exclude = ("raw",)

    raw = factory.Sequence(lambda n: f"cab_factory-token-{n:06d}")
    name = "factory token"
    user = factory.SubFactory(UserFactory)
    key_prefix = factory.LazyAttribute(lambda o: o.raw[:12])
    key_hash = factory.LazyAttribute(lambda o: _sha256(o.raw))
    scopes = ["read"]


class IdempotencyRecordFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "cab.IdempotencyRecord"

    user = factory.SubFactory(UserFactory)
    key = factory.Sequence(lambda n: f"key-{n}")
    request_hash = "0" * 64
    status_code = 200
    response = factory.LazyFunction(dict)


# --- request bodies for the ingestion endpoints ----------------------------------------------------------------


def conversations_without_responses() -> list[dict]:
    """The demo conversations with their turns but no model responses."""
    records = demo_records()
    for record in records:
        for turn in record["turns"]:
            turn["responses"] = []
    return records


def response_items() -> list[dict]:
    """The demo responses as response-ingestion items."""
    return [
        {"dataset": record["dataset"], "conversation_id": record["conversation_id"], "turn_index": turn["index"],
         "model": response["model"], "model_version": response.get("model_version", ""), "text": response["text"]}
        for record in demo_records() for turn in record["turns"] for response in turn["responses"]
    ]


def jsonl(items) -> str:
    return "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items)
