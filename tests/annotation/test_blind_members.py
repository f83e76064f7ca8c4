"""A study's coders code blind (docs/reference.md#roles: a reviewer sees only their own judgments, never gold, and in
a blinded study no model names), and an account that sees every study (admin, researcher: their pages show every
judgment, the gold and the model names, the coding page too) would not: such an account is refused as a reviewer or
an expert of a study on every path that adds a member, in one wording (``annotation.services.member_refusal``), and
nothing is written. Before, the study page and every judgment import (``import_judgments``, the API, ``cab import``)
made an admin a reviewer who coded with the model names and the gold in view."""

from __future__ import annotations

import io
import json

import pytest
from django.contrib.messages import get_messages
from django.core.management import CommandError, call_command
from django.urls import reverse

from access import roles
from access.checks import user_roles
from access.services import user_ensure
from annotation.models import Judgment, Study, StudyMember
from annotation.services import study_member_remove
from tests import form_fuzz
from tests.annotation.test_judgment_import import row, write_jsonl

pytestmark = pytest.mark.django_db

REFUSED = ("{name} is an account of role {role}, which sees every study's judgments, gold and model names: as "
           "{member} of a study their codings would not be blind. Code with an account of role reviewer or expert "
           "(People page)")


@pytest.mark.parametrize("account_role", [roles.ADMIN, roles.RESEARCHER])
@pytest.mark.parametrize("member_role", ["reviewer", "expert"])
def test_the_study_page_refuses_an_account_that_sees_every_study_as_a_coder(client, admin_user, study, account_role,
                                                                           member_role):
    user_ensure(username="pat", role=account_role)
    client.force_login(admin_user)
    before = form_fuzz.fingerprint()
    answer = client.post(reverse("member-add", args=[study.slug]), {"username": "pat", "role": member_role})
    assert answer.status_code == 302
    said = [m.message for m in get_messages(answer.wsgi_request)]
    member = "an expert" if member_role == "expert" else "a reviewer"
    assert said == [REFUSED.format(name="pat", role=account_role, member=member)]
    assert not StudyMember.objects.filter(study=study, user__username="pat").exists()
    assert form_fuzz.fingerprint() == before
    user_ensure(username="robin", role=roles.REVIEWER)  # a coder's account still joins, in either role
    client.post(reverse("member-add", args=[study.slug]), {"username": "robin", "role": member_role})
    assert StudyMember.objects.get(study=study, user__username="robin").role == member_role


def test_an_import_refuses_an_admins_rows_as_a_reviewers_by_their_first_line(study, demo_conversations, tmp_path):
    user_ensure(username="pat", role=roles.ADMIN)
    rows = [row(study="cab-demo", reviewer="robin"), row(study="cab-demo", reviewer="pat"),
            row(study="cab-demo", reviewer="pat", attribute="U1", model=None, instance_count=None, spans=[], score=0)]
    path = write_jsonl(tmp_path, rows)
    before = form_fuzz.fingerprint()
    with pytest.raises(CommandError) as refused:
        call_command("import_judgments", str(path), "--study", "cab-demo", stdout=io.StringIO())
    assert str(refused.value) == (f"{path}: 1 error(s), nothing was changed:\nline 2: reviewer: "
                                  + REFUSED.format(name="pat", role="admin", member="a reviewer"))
    assert form_fuzz.fingerprint() == before
    # The gold an admin recorded is the panel's, no coding of theirs: it comes in, and they are made no member.
    gold = write_jsonl(tmp_path, [row(study="cab-demo", reviewer="pat", is_gold=True, spans=[])])
    call_command("import_judgments", str(gold), "--study", "cab-demo", stdout=io.StringIO())
    assert Judgment.objects.filter(round__study=study, is_gold=True).count() == 1
    assert not StudyMember.objects.filter(study=study, user__username="pat").exists()


def test_the_import_api_answers_400_naming_the_line(study, demo_conversations, admin_user, as_token):
    user_ensure(username="pat", role=roles.RESEARCHER)
    client = as_token(admin_user, scopes=["import"])
    client.raise_request_exception = False
    body = "".join(json.dumps(r) + "\n" for r in [row(study="cab-demo", reviewer="robin"),
                                                  row(study="cab-demo", reviewer="pat", role="expert")])
    answer = client.generic("POST", "/api/v1/studies/cab-demo/judgments/import/", body.encode(),
                            content_type="application/x-ndjson")
    assert answer.status_code == 400, answer.content
    assert answer.json()["errors"] == [{"line": 2, "field": "reviewer", "message": REFUSED.format(
        name="pat", role="researcher", member="an expert")}]
    assert not Judgment.objects.filter(round__study=study).exists()
    assert not StudyMember.objects.filter(study=study, user__username__in=["pat", "robin"]).exists()


@pytest.mark.parametrize("account_role", [roles.ADMIN, roles.RESEARCHER])
def test_a_studys_coder_is_given_no_role_that_sees_every_study(client, admin_user, study, reviewer, account_role):
    """The same rule from the other side (``annotation.services.coder_of_studies_refusal``, asked by the People page's
    role change): a reviewer of an open study made an admin or a researcher would see the gold, the model names and
    everyone's judgments of the study they code blind. Before, the People page made them one; once they are taken
    off the study (their judgments stay), the role changes."""
    client.force_login(admin_user)
    before = form_fuzz.fingerprint()
    answer = client.post(reverse("account-role", args=[reviewer.pk]), {"role": account_role})
    assert answer.status_code == 302
    said = [m.message for m in get_messages(answer.wsgi_request)]
    assert said == [f"{reviewer.username} is a reviewer of cab-demo: a role that sees every study's judgments, gold "
                    "and model names would unblind their codings. Take them off those studies first (their judgments "
                    "stay), or code with another account"]
    assert roles.REVIEWER in user_roles(user=reviewer) and account_role not in user_roles(user=reviewer)
    assert form_fuzz.fingerprint() == before
    study_member_remove(member=StudyMember.objects.get(study=study, user=reviewer), by=admin_user)
    answer = client.post(reverse("account-role", args=[reviewer.pk]), {"role": account_role})
    assert [m.message for m in get_messages(answer.wsgi_request)][-1] == f"{reviewer.username} is now {account_role}."
    assert user_roles(user=reviewer) == [account_role]


def test_an_archived_studys_coder_may_be_given_any_role(client, admin_user, study, reviewer):
    """An archived study's coding is over (its judgments no longer change): its coders' roles are free."""
    Study.objects.filter(pk=study.pk).update(status=Study.Status.ARCHIVED)
    client.force_login(admin_user)
    client.post(reverse("account-role", args=[reviewer.pk]), {"role": roles.RESEARCHER})
    assert user_roles(user=reviewer) == [roles.RESEARCHER]
