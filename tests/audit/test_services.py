from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction

from annotation import services
from annotation.models import Schema, Study
from audit.models import AuditEvent
from audit.services import audit_record

pytestmark = pytest.mark.django_db


def test_an_event_keeps_the_actor_the_study_and_the_data(admin_user):
    study = services.study_create(slug="s1", name="S1", schema=Schema.objects.get(slug="cab-v1"),
                                  model_slots=["GPT"], by=admin_user)
    event = AuditEvent.objects.get(action="study.create")
    assert (event.actor, event.study_id, event.study_slug, event.target) == (admin_user, study.pk, "s1", "study:s1")


def test_deleting_a_study_keeps_its_history(admin_user):
    study = services.study_create(slug="gone", name="Gone", schema=Schema.objects.get(slug="cab-v1"),
                                  model_slots=["GPT"], by=admin_user)
    services.round_ensure(study=study, kind="calibration", number=1, by=admin_user)
    Study.objects.filter(pk=study.pk).delete()
    assert sorted(AuditEvent.objects.filter(study_slug="gone").values_list("action", flat=True)) == [
        "round.create", "study.create"]


def test_an_anonymous_or_system_actor_is_recorded_as_none():
    event = audit_record(by=None, action="check.alert", target="user:x", agreement=0.5)
    assert event.actor is None and event.data == {"agreement": 0.5}


def test_postgresql_refuses_to_change_or_delete_history(admin_user):
    assert connection.vendor == "postgresql", "the suite runs on PostgreSQL (scripts/test)"
    event = audit_record(by=admin_user, action="study.create", target="study:x")
    for attempt in (lambda: AuditEvent.objects.filter(pk=event.pk).update(action="forged"),
                    lambda: AuditEvent.objects.filter(pk=event.pk).delete()):
        with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
            attempt()
    event.refresh_from_db()
    assert event.action == "study.create"
