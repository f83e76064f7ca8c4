"""The benchmark material in the Django admin (benchmark/admin.py): shown, and what names it is not changed."""

from __future__ import annotations

import pytest
from django.urls import reverse

from benchmark.models import Dataset
from tests.factories import ConversationFactory

pytestmark = pytest.mark.django_db


def test_a_dataset_holding_conversations_keeps_its_name_and_an_empty_one_may_be_renamed(client, admin_user):
    """Ingestion finds a dataset by its name, and the exports, the histories and a run's fingerprint carry it: a
    dataset renamed in the admin had its next ingest of the same conversations make copies under the old name.
    Its description stays editable, and so does the name of a dataset that holds nothing yet."""
    dataset = ConversationFactory().dataset
    name = dataset.name
    empty = Dataset.objects.create(name="to-be-named")
    client.force_login(admin_user)
    client.post(reverse("admin:benchmark_dataset_change", args=[dataset.pk]),
                {"name": "renamed", "description": "what it is"})
    client.post(reverse("admin:benchmark_dataset_change", args=[empty.pk]), {"name": "named", "description": ""})
    dataset.refresh_from_db()
    empty.refresh_from_db()
    assert (dataset.name, dataset.description) == (name, "what it is")
    assert empty.name == "named"
