"""``manage.py register_coder``: a study's methods and reference coders from a shell, as the API's methods/ and
references/ endpoints register them (same service, checks, audit event); a refusal names the option and changes
nothing."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from access import roles
from access.services import user_ensure
from annotation import services
from annotation.models import Schema, StudyMember
from audit.models import AuditEvent

pytestmark = pytest.mark.django_db


@pytest.fixture
def study():
    return services.study_create(slug="coders", name="coders", schema=Schema.objects.get(slug="lc8-v1"),
                                 model_slots=["M"], by=user_ensure(username="coders-admin", role=roles.ADMIN))


def register(*args: str) -> str:
    out = io.StringIO()
    call_command("register_coder", *args, stdout=out)
    return out.getvalue()


def test_a_method_and_a_reference_are_registered_once_with_what_they_are(study):
    said = register("--study", "coders", "--method", "judge-a", "--method-version", "v2", "--prompt-id", "p-7")
    assert said.strip() == "judge-a is a method of study coders"
    assert register("--study", "coders", "--reference", "phq8-state", "--description", "controlled state").strip() \
        == "phq8-state is a reference coder of study coders"
    register("--study", "coders", "--method", "judge-a", "--method-version", "v2", "--prompt-id", "p-7")  # idempotent
    members = {m.user.username: m for m in StudyMember.objects.filter(study=study).select_related("user")
               if m.role in (StudyMember.Role.METHOD, StudyMember.Role.REFERENCE)}
    assert set(members) == {"judge-a", "phq8-state"}
    assert (members["judge-a"].role, members["judge-a"].method_version, members["judge-a"].method_prompt_id) == \
        (StudyMember.Role.METHOD, "v2", "p-7")
    assert (members["phq8-state"].role, members["phq8-state"].method_version) == \
        (StudyMember.Role.REFERENCE, "controlled state")
    assert AuditEvent.objects.filter(action="method.register", study_id=study.pk).count() == 1
    assert AuditEvent.objects.filter(action="reference.register", study_id=study.pk).count() == 1


@pytest.mark.parametrize(("args", "message"), [
    (["--study", "nope", "--method", "m"], "--study: no study 'nope'"),
    (["--study", "coders", "--method", "m", "--description", "x"], "--description: only for --reference"),
    (["--study", "coders", "--reference", "r", "--method-version", "v1"],
     "--method-version, --prompt-id: only for --method"),
    (["--study", "coders", "--method", "a-reviewer"], "--method: "),
    (["--study", "coders", "--reference", "judge-b"], "--reference: judge-b is a member of the study as method"),
])
def test_a_refusal_names_the_option_and_changes_nothing(study, args, message):
    user_ensure(username="a-reviewer", role=roles.REVIEWER)
    register("--study", "coders", "--method", "judge-b")
    before = (StudyMember.objects.count(), AuditEvent.objects.count())
    with pytest.raises(CommandError) as refused:
        register(*args)
    assert str(refused.value).startswith(message), str(refused.value)
    assert (StudyMember.objects.count(), AuditEvent.objects.count()) == before


def test_both_or_neither_kind_is_refused_by_the_parser(study):
    with pytest.raises(CommandError, match="one of the arguments --method --reference is required"):
        register("--study", "coders")
    with pytest.raises(CommandError, match="not allowed with argument"):
        register("--study", "coders", "--method", "m", "--reference", "r")


@pytest.mark.parametrize(("args", "message"), [
    (["--method", "m" * 101], "--method: at most 100 characters (it has 101)"),
    (["--method", "m", "--method-version", "v" * 101], "--method-version: at most 100 characters (it has 101)"),
    (["--method", "m", "--prompt-id", "p" * 101], "--prompt-id: at most 100 characters (it has 101)"),
    (["--method", "m", "--method-version", "v\x00"], "--method-version: must not contain a NUL character"),
    (["--method", "m\n"], "--method: letters, digits and @.+-_ only, at most 100 characters"),
    (["--reference", "r" * 150], "--reference: at most 100 characters (it has 150)"),
    (["--reference", "r", "--description", "d" * 101], "--description: at most 100 characters (it has 101)"),
])
def test_a_field_the_membership_cannot_hold_is_refused_by_its_option(study, args, message):
    before = (StudyMember.objects.count(), AuditEvent.objects.count(), get_user_model().objects.count())
    with pytest.raises(CommandError) as refused:
        register("--study", "coders", *args)
    assert str(refused.value) == message
    assert (StudyMember.objects.count(), AuditEvent.objects.count(), get_user_model().objects.count()) == before


def test_an_archived_study_takes_no_new_or_changed_coder(study):
    """Its coders stay as they were: a new method or reference, or a changed version, is refused by the command in
    words and writes nothing (no account, no membership, no event); the same registration again still answers."""
    register("--study", "coders", "--method", "judge-a", "--method-version", "v1")
    register("--study", "coders", "--reference", "phq8-state", "--description", "controlled state")
    services.study_archive(study=study, by=get_user_model().objects.get(username="coders-admin"))
    before = (list(StudyMember.objects.values_list("pk", "role", "method_version")),
              sorted(get_user_model().objects.values_list("username", flat=True)), AuditEvent.objects.count())
    for args in (("--method", "judge-b"), ("--method", "judge-a", "--method-version", "v2"),
                 ("--reference", "self-report"), ("--reference", "phq8-state", "--description", "changed")):
        with pytest.raises(CommandError, match="study 'coders' is archived: it takes no new coders and its coders "
                                               "no longer change"):
            register("--study", "coders", *args)
    assert register("--study", "coders", "--method", "judge-a", "--method-version", "v1").strip() == \
        "judge-a is a method of study coders"
    assert (list(StudyMember.objects.values_list("pk", "role", "method_version")),
            sorted(get_user_model().objects.values_list("username", flat=True)), AuditEvent.objects.count()) == before
