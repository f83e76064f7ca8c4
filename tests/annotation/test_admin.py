"""The Django admin's annotation pages: what they refuse to change by hand (annotation/admin.py)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import ReviewerAlert
from tests.factories import StudyFactory
from tests.form_fuzz import fingerprint

pytestmark = pytest.mark.django_db


def test_an_alert_is_neither_added_nor_resolved_by_hand(client, admin_user, reviewer):
    """Alerts are raised by the check items and resolved on the study's page (annotation.services.alert_resolve,
    audited); before, an add form posted empty answered 500 (the alert's figures are read-only there)."""
    alert = ReviewerAlert.objects.create(study=StudyFactory(), reviewer=reviewer, agreement=0.5, threshold=0.7,
                                         n_items=4)
    client.force_login(admin_user)
    before = fingerprint()
    assert client.post(reverse("admin:annotation_revieweralert_add")).status_code == 403
    change = reverse("admin:annotation_revieweralert_change", args=[alert.pk])
    assert client.post(change, {"resolved_at_0": "2026-01-01", "resolved_at_1": "12:00:00"}).status_code == 403
    assert fingerprint() == before
    assert client.get(change).status_code == 200  # still shown, read-only
