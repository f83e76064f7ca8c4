"""``manage.py register_coder``: a study's methods and reference coders from a shell, as the API's methods/ and
references/ endpoints register them (same service, checks, audit event); a refusal names the option and changes
nothing."""

from __future__ import annotations

import io
import json

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
    (["--study", "nope", "--method", "m"], "no study with slug 'nope'"),  # common.commands.study_missing
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


# The same coder through both paths: (name, version or description, prompt id); a method when the prompt id is not
# None, else a reference coder.
SAME_INPUT = [
    (" judge-a ", "", ""),
    ("", "v1", ""),
    ("judge-b", " v2 ", "p-7\t"),
    ("judge-c", "v\x00", ""),
    ("judge-d", "v\udcff", ""),  # a byte that is not UTF-8 on the command line, a JSON escape in the API
    ("judge-e", "", "p\ud800"),
    ("state-a", "  controlled state ", None),
    ("state-b", "state\udcff", None),
]


@pytest.mark.parametrize(("name", "version", "prompt_id"), SAME_INPUT)
def test_the_api_and_the_command_register_the_same_coder_or_refuse_it_in_the_same_words(
        study, admin_user, as_token, name, version, prompt_id):
    """The API took its fields through DRF's text field: it trimmed spaces (a version " v2 " stored as "v2", a name
    " judge-a " accepted as "judge-a", both of which the command keeps or refuses as given) and refused a blank, a
    NUL or a surrogate in its own words; a surrogate was a traceback from the command."""
    api = as_token(admin_user, scopes=["import"])
    method = prompt_id is not None
    flags = {"--method" if method else "--reference": "name", "--method-version" if method else "--description":
             "version" if method else "description", "--prompt-id": "prompt_id"}
    args = ["--study", study.slug, "--method" if method else "--reference", name,
            *(["--method-version", version, "--prompt-id", prompt_id] if method else ["--description", version])]
    body = {"name": name, **({"version": version, "prompt_id": prompt_id} if method else {"description": version})}
    url = f"/api/v1/studies/{study.slug}/{'methods' if method else 'references'}/"

    coders = StudyMember.objects.filter(study=study, role__in=[StudyMember.Role.METHOD, StudyMember.Role.REFERENCE])

    def stored() -> set[tuple[str, str, str]]:
        return set(coders.values_list("method_name", "method_version", "method_prompt_id"))

    try:
        register(*args)
    except CommandError as error:
        by_command = {flags[flag]: message for flag, message in
                      (part.split(": ", 1) for part in str(error).split("; "))}
    else:
        by_command = stored()
    coders.delete()
    answer = api.generic("POST", url, json.dumps(body), content_type="application/json")
    if answer.status_code == 400:
        by_api: object = {field: " ".join(messages) for field, messages in answer.json()["fields"].items()}
    else:
        assert answer.status_code == 200, answer.content
        by_api = stored()
    assert by_api == by_command
