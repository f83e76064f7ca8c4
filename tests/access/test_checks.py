"""access/checks.py: who sees every study, who is a study admin, and refusals as PermissionDenied (a 403 on the
pages, never a validation error and never a login redirect for someone who is signed in)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from django.urls import reverse

from access import roles
from access.checks import is_study_admin, require_staff, require_study_admin, user_roles, user_sees_all_studies
from annotation.models import Assignment, Round, RoundItem, Study
from audit.models import AuditEvent
from tests.factories import RoundFactory, RoundItemFactory, StudyFactory, StudyMemberFactory, UserFactory

pytestmark = pytest.mark.django_db



@pytest.fixture
def anonymous():
    return AnonymousUser()


@pytest.fixture
def superuser(db):
    return UserFactory(username="root", is_superuser=True, is_staff=True)


@pytest.fixture
def people(reviewer, expert, admin_user, researcher, outsider, anonymous, superuser):
    return {"reviewer": reviewer, "expert": expert, "admin": admin_user, "researcher": researcher,
            "outsider": outsider, "anonymous": anonymous, "superuser": superuser}


def test_user_roles_are_the_role_groups_in_role_order(people):
    assert {name: user_roles(user=user) for name, user in people.items()} == {
        "reviewer": [roles.REVIEWER], "expert": [roles.EXPERT], "admin": [roles.ADMIN],
        "researcher": [roles.RESEARCHER], "outsider": [], "anonymous": [], "superuser": [],
    }


def test_admins_researchers_and_superusers_see_every_study_and_no_one_else(people):
    assert {name for name, user in people.items() if user_sees_all_studies(user=user)} == {
        "admin", "researcher", "superuser"}


def test_only_admins_and_superusers_are_study_admins(people):
    assert {name for name, user in people.items() if is_study_admin(user)} == {"admin", "superuser"}


@pytest.mark.parametrize("name", ["reviewer", "expert", "researcher", "outsider", "anonymous"])
def test_require_study_admin_refuses_everyone_else_with_permission_denied(people, name):
    with pytest.raises(PermissionDenied, match="Only study admins can do this."):
        require_study_admin(people[name])


@pytest.mark.parametrize("name", ["admin", "superuser"])
def test_require_study_admin_lets_admins_through(people, name):
    assert require_study_admin(people[name]) is None


@pytest.mark.parametrize("name", ["reviewer", "expert", "outsider", "anonymous"])
def test_require_staff_refuses_coders_and_strangers_with_permission_denied(people, name):
    with pytest.raises(PermissionDenied, match="Only admins and researchers can do this."):
        require_staff(people[name])


@pytest.mark.parametrize("name", ["admin", "researcher", "superuser"])
def test_require_staff_lets_admins_and_researchers_through(people, name):
    assert require_staff(people[name]) is None


def test_a_user_with_two_roles_has_both_and_the_stronger_rights(reviewer):
    from access.services import user_ensure

    both = user_ensure(username=reviewer.username, role=roles.RESEARCHER)
    assert user_roles(user=both) == [roles.REVIEWER, roles.RESEARCHER]
    assert user_sees_all_studies(user=both) and not is_study_admin(both)


# --- the calibration admin pages answer a refusal with 403 -------------------------------------------------------


@pytest.fixture
def draft_round(reviewer, expert):
    """A draft calibration round with a one-turn set, ready to open (so only the permission can stop it)."""
    study = StudyFactory(slug="checks")
    StudyMemberFactory(study=study, user=reviewer, role="reviewer")
    StudyMemberFactory(study=study, user=expert, role="expert")
    round_ = RoundFactory(study=study, kind="calibration", number=1, status="draft")
    RoundItemFactory(round=round_, position=1)
    return round_


def _open(client, round_):
    return client.post(reverse("round-open", args=[round_.study.slug, round_.pk]))


@pytest.mark.parametrize("persona", ["reviewer", "expert", "researcher", "outsider"])
def test_a_signed_in_non_admin_posting_a_round_action_gets_403_and_nothing_changes(client, draft_round, people,
                                                                                    persona):
    client.force_login(people[persona])
    response = _open(client, draft_round)
    assert response.status_code == 403
    draft_round.refresh_from_db()
    assert draft_round.status == Round.Status.DRAFT
    assert not Assignment.objects.filter(round=draft_round).exists()
    assert not AuditEvent.objects.filter(action="round.open").exists()


def test_a_non_admin_posting_an_invalid_form_is_refused_before_the_form_is_read(client, draft_round, reviewer):
    client.force_login(reviewer)
    url = reverse("round-reopen", args=[draft_round.study.slug, draft_round.pk])
    assert client.post(url, {}).status_code == 403  # not 422, not a redirect with "say why…"
    url = reverse("round-sample", args=[draft_round.study.slug, draft_round.pk])
    assert client.post(url, {"n": "not a number"}).status_code == 403
    assert list(RoundItem.objects.filter(round=draft_round).values_list("position", flat=True)) == [1]


def test_a_non_admin_using_the_wrong_method_is_still_a_403(client, draft_round, reviewer):
    client.force_login(reviewer)
    assert client.get(reverse("round-open", args=[draft_round.study.slug, draft_round.pk])).status_code == 403


def test_an_anonymous_visitor_is_sent_to_the_login_page(client, draft_round):
    response = _open(client, draft_round)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))
    draft_round.refresh_from_db()
    assert draft_round.status == Round.Status.DRAFT


def test_the_admin_opens_the_round_through_the_same_url(client, draft_round, admin_user):
    client.force_login(admin_user)
    response = _open(client, draft_round)
    assert response.status_code == 302
    assert response["Location"] == reverse("study-dashboard", args=[draft_round.study.slug])
    draft_round.refresh_from_db()
    assert draft_round.status == Round.Status.OPEN
    assert Assignment.objects.filter(round=draft_round).count() == 2  # the reviewer's and the expert's
    assert Study.objects.get(pk=draft_round.study_id).status == Study.Status.OPEN
