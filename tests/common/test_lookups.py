"""``any_of`` (common/lookups.py): the same rows as ``__in``, with one parameter for the whole list."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from benchmark.models import Dataset
from common.lookups import any_of

pytestmark = pytest.mark.django_db


def test_any_of_selects_what_in_selects_with_one_parameter():
    datasets = Dataset.objects.bulk_create(Dataset(name=f"d{n}") for n in range(30))
    wanted = [d.pk for d in datasets[::3]]
    with CaptureQueriesContext(connection) as captured:
        found = sorted(Dataset.objects.filter(any_of("pk", wanted)).values_list("pk", flat=True))
    assert found == sorted(Dataset.objects.filter(pk__in=wanted).values_list("pk", flat=True)) == sorted(wanted)
    assert "= ANY(" in captured[0]["sql"]
    assert list(Dataset.objects.filter(any_of("name", ["d1", "d2", "zz"])).order_by("name")
                .values_list("name", flat=True)) == ["d1", "d2"]
    assert not Dataset.objects.filter(any_of("pk", [])).exists()
