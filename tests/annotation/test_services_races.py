"""Two admins changing a study's set-up at once (annotation/services.py): on real PostgreSQL connections
(tests/races.py) two reviewers added at once get different aliases; a settings page opened before another
admin's save keeps that save (a stale page, as its ``shown`` values)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from access import roles
from access.services import user_ensure
from annotation import services
from annotation.models import Study, StudyMember
from tests.factories import StudyFactory
from tests.form_fuzz import said
from tests.races import meet_at, together


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_two_reviewers_added_at_once_get_different_aliases():
    admin = user_ensure(username="study-admin", role=roles.ADMIN)
    study = StudyFactory(slug="race")
    people = [user_ensure(username=name, role=roles.REVIEWER) for name in ("rev-1", "rev-2")]

    def add(user):
        return lambda: services.study_member_add(study=Study.objects.get(pk=study.pk), user=user,
                                                 role=StudyMember.Role.REVIEWER, by=admin)

    with meet_at(type(StudyMember.objects), "get_or_create"):
        results = together(add(people[0]), add(people[1]))
    assert all(isinstance(r, StudyMember) for r in results), results
    assert sorted(StudyMember.objects.filter(study=study).values_list("alias", flat=True)) == ["R1", "R2"]


SETTINGS = {"name": "Study", "description": "", "show_model_names": "", "show_therapist_reference": "on",
            "check_threshold": "0.7", "check_min_items": "3", "experts_see_consensus": ""}


@pytest.fixture
def settings_page(db, admin_user):
    """(client, url, the hidden ``shown`` value of the page as an admin opened it)."""
    study = StudyFactory(slug="settings-race", name="Study", description="", show_model_names=False,
                         show_therapist_reference=True, check_threshold=0.7, check_min_items=3,
                         experts_see_consensus=False)
    client = Client()
    client.force_login(admin_user)
    url = reverse("study-settings", args=[study.slug])
    form = client.get(url).context["form"]
    return client, url, form["shown"].value()


def test_a_settings_page_opened_before_another_admins_save_keeps_that_save(settings_page, admin_user):
    client, url, shown = settings_page
    services.study_settings_update(study=Study.objects.get(), by=admin_user, name="Renamed by the other admin")

    response = client.post(url, SETTINGS | {"description": "mine", "shown": shown})
    assert response.status_code == 302, said(response)
    study = Study.objects.get()
    assert (study.name, study.description) == ("Renamed by the other admin", "mine")


def test_the_same_setting_changed_by_two_admins_is_refused_for_the_second(settings_page, admin_user):
    client, url, shown = settings_page
    services.study_settings_update(study=Study.objects.get(), by=admin_user, check_threshold=0.9)

    response = client.post(url, SETTINGS | {"check_threshold": "0.5", "description": "mine", "shown": shown})
    assert response.status_code == 200
    assert any("changed meanwhile; reload" in m.message for m in response.context["messages"])
    study = Study.objects.get()
    assert (study.check_threshold, study.description) == (0.9, "")
