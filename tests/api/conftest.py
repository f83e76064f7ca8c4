"""Fixtures for the API tests: a study with the demo conversations, and bearer tokens for the personas."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from annotation import services as annotation_services
from api import services as api_services
from benchmark import services as benchmark_services
from benchmark.demo import demo_records
from tests.factories import StudyFactory, StudyMemberFactory

ALL_SCOPES = ("ingest", "import", "read", "metrics")


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """The personas log in with a password; a slow hash would cost more than the API calls these tests make."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def api():
    """An API client with no credentials."""
    return APIClient()


@pytest.fixture
def token_for():
    """token_for(user, scopes=…, study=…, expires_at=…) -> raw bearer token."""

    def make(user, scopes=ALL_SCOPES, study=None, expires_at=None):
        _, raw = api_services.api_token_create(user=user, name="test", scopes=scopes, study=study,
                                               expires_at=expires_at, by=None)
        return raw

    return make


@pytest.fixture
def as_token(token_for):
    """as_token(user, **token options) -> an APIClient sending that user's bearer token."""

    def make(user, **options):
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Bearer {token_for(user, **options)}")
        return api

    return make


@pytest.fixture
def study(db, reviewer, other_reviewer):
    study = StudyFactory(slug="cab-demo", name="Demo study")
    StudyMemberFactory(study=study, user=reviewer, role="reviewer")
    StudyMemberFactory(study=study, user=other_reviewer, role="reviewer")
    return study


@pytest.fixture
def other_study(db):
    return StudyFactory(slug="other-study", name="Other study")


@pytest.fixture
def demo_conversations(db):
    benchmark_services.conversations_import(rows=enumerate(demo_records()))


def conversations_without_responses() -> list[dict]:
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


@pytest.fixture
def main_round(study):
    return annotation_services.round_ensure(study=study, kind="main", by=None)
