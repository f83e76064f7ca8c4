"""A study is created from a shell (``manage.py create_study``) and over the API (``POST /api/v1/studies/``) exactly
as the admin's New study form creates it: the same form (annotation.forms.StudyForm), checks, messages, service
and audit event. Each refusal names the field in the form's words and writes nothing."""

from __future__ import annotations

import html
import io

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.forms.models import model_to_dict
from django.urls import reverse

from annotation import services
from annotation.api_serializers import StudyIn
from annotation.forms import SCRIPT_NAMES, StudyForm, StudyScriptForm
from annotation.kinds import kinds, setting_value
from annotation.models import Schema, Study, StudyMember
from audit.models import AuditEvent
from tests import form_fuzz

pytestmark = pytest.mark.django_db

SLOTS = ["GPT", "Claude"]
# Every setting the form has, away from its default, per kind of study.
SETTINGS = {
    "care-v1": {"show_model_names": True, "show_therapist_reference": False, "check_threshold": 0.85,
                "check_min_items": 12, "experts_see_consensus": True, "method_labels": "shown",
                "quality_scope": "after_crisis"},
    "lc8-v1": {"check_threshold": 0.6, "check_min_items": 0, "method_labels": "shown", "reference_labels": "shown",
               "session_history": "hidden", "session_order": "blinded"},
}
NOT_COMPARED = {"id", "slug", "created_at"}
# Tables a request with a token writes whatever it asks (the token's last use).
TOKEN_TABLES = {"cab_apitoken", "cab_idempotencyrecord"}


def _web_post(settings: dict) -> dict:
    """What the page posts: the form's field names, checkboxes "on" or absent, numbers as text."""
    body = {}
    for name, value in settings.items():
        if isinstance(value, bool):
            if value:
                body[name] = "on"
        else:
            body[name] = str(value)
    return body


def _web_create(client, admin_user, *, slug: str, schema: str, settings: dict, shown_defaults: bool = True):
    """Create a study with the admin's New study page. ``shown_defaults``: the page's boxes as it shows them
    (the therapist reference ticked, the threshold and minimum filled in), changed by ``settings``."""
    client.force_login(admin_user)
    defaults = {"show_therapist_reference": True, "check_threshold": 0.7, "check_min_items": 20} \
        if shown_defaults else {}
    body = {"slug": slug, "name": f"Study {slug}", "description": "from a test", "model_slots_text": ", ".join(SLOTS),
            "schema": Schema.objects.get(slug=schema).pk} | _web_post(defaults | settings)
    return client.post(reverse("study-create"), body)


def _options(settings: dict) -> list[str]:
    """The command's options for the same settings."""
    argv = []
    for name, value in settings.items():
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            argv.append(flag if value else "--no-" + flag[2:])
        else:
            argv += [flag, str(value)]
    return argv


def _study(slug: str) -> dict:
    """The study's fields, its kind's own settings (``kind_settings``) among them by name."""
    study = Study.objects.select_related("schema").get(slug=slug)
    fields = {k: v for k, v in model_to_dict(study).items() if k not in NOT_COMPARED}
    return fields | fields.pop("kind_settings")


def _created_event(slug: str) -> dict:
    event = AuditEvent.objects.get(action="study.create", study_slug=slug)
    return {"actor": event.actor.username if event.actor else None, "target": event.target, "data": event.data,
            "study": event.study_id == Study.objects.get(slug=slug).pk}


def _state() -> dict:
    return {table: value for table, value in form_fuzz.fingerprint().items() if table not in TOKEN_TABLES}


# --- the command --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("schema", ["care-v1", "lc8-v1"])
def test_the_command_creates_the_study_the_form_creates(client, admin_user, schema):
    assert _web_create(client, admin_user, slug="web", schema=schema, settings=SETTINGS[schema]).status_code == 302
    call_command("create_study", "--slug", "cli", "--name", "Study web", "--description", "from a test",
                 "--schema", schema, *[arg for slot in SLOTS for arg in ("--model-slot", slot)],
                 *_options(SETTINGS[schema]))
    made = _study("cli")
    assert made == _study("web")
    assert made["schema"] == Schema.objects.get(slug=schema).pk and made["model_slots"] == SLOTS
    assert {k: made[k] for k in SETTINGS[schema]} == SETTINGS[schema]
    assert made["status"] == "setup" and made["is_synthetic"] is False
    assert not StudyMember.objects.exists()  # neither path adds anyone
    # The same event, by the signed-in admin on the page and by nobody from the shell.
    assert _created_event("web") == {"actor": admin_user.username, "target": "study:web", "data": {}, "study": True}
    assert _created_event("cli") == {"actor": None, "target": "study:cli", "data": {}, "study": True}


def test_a_setting_left_out_is_the_one_the_page_starts_with(client, admin_user, capsys):
    assert _web_create(client, admin_user, slug="web", schema="lc8-v1", settings={}).status_code == 302
    call_command("create_study", "--slug", "cli", "--schema", "lc8-v1", "--model-slot", "GPT",
                 "--model-slot", "Claude", "--name", "Study web", "--description", "from a test")
    assert "study cli created in set-up (schema lc8-v1, model slots GPT, Claude)" in capsys.readouterr().out
    assert _study("cli") == _study("web")
    call_command("create_study", "--slug", "bare", "--schema", "cab-v1", "--model-slot", "GPT")
    assert Study.objects.get(slug="bare").name == "bare"  # the name is the slug unless given


# (options, the command's message, the page's field and value for the same mistake, or None where a page cannot
# make it: its model slots are one comma-separated text)
BAD = [
    (["--slug", "bad slug!"], "--slug: Enter a valid “slug” consisting of letters, numbers, underscores or hyphens.",
     {"slug": "bad slug!"}),
    (["--slug", "new"], "--slug: 'new' is reserved; choose another", {"slug": "new"}),
    (["--slug", "x" * 81], "--slug: Ensure this value has at most 80 characters (it has 81).", {"slug": "x" * 81}),
    (["--schema", "nope-v1"], "--schema: no schema 'nope-v1'; the installed schemas are cab-v1, care-v1, lc8-v1",
     {"schema": "nope-v1"}),
    (["--model-slot", "GPT", "--model-slot", "GPT"], "--model-slot: each model slot once",
     {"model_slots_text": "GPT, GPT"}),
    (["--model-slot", "x" * 51], "--model-slot: at most 50 characters a slot", {"model_slots_text": "x" * 51}),
    (["--model-slot", "GPT, Claude"], "--model-slot: one model slot an item: a slot has no comma", None),
    (["--check-threshold", "3"], "--check-threshold: a share between 0 and 1", {"check_threshold": "3"}),
    (["--check-threshold", "often"], "--check-threshold: Enter a number.", {"check_threshold": "often"}),
    (["--check-threshold", "nan"], "--check-threshold: Enter a number.", {"check_threshold": "nan"}),
    (["--check-min-items", "-1"], "--check-min-items: Ensure this value is greater than or equal to 0.",
     {"check_min_items": "-1"}),
    (["--check-min-items", "2.5"], "--check-min-items: Enter a whole number.", {"check_min_items": "2.5"}),
    (["--session-order", "random"],
     "--session-order: Select a valid choice. random is not one of the available choices.",
     {"session_order": "random"}),
    (["--method-labels", "sometimes"],
     "--method-labels: Select a valid choice. sometimes is not one of the available choices.",
     {"method_labels": "sometimes"}),
    (["--quality-scope", "everything"],
     "--quality-scope: Select a valid choice. everything is not one of the available choices.",
     {"quality_scope": "everything"}),
    # a study kind's own setting for a study of another kind: the service's refusal (annotation.kinds)
    (["--schema", "lc8-v1", "--quality-scope", "after_crisis"],
     "--quality-scope: a setting of CARE studies only; schema lc8-v1 is not a CARE schema", None),
]
GOOD = {"--slug": "good", "--schema": "care-v1", "--model-slot": "GPT"}


def _argv(bad: list[str]) -> list[str]:
    given = dict(zip(bad[::2], bad[1::2], strict=True))
    argv = [arg for flag, value in GOOD.items() if flag not in given for arg in (flag, value)]
    return argv + bad


@pytest.mark.parametrize(("bad", "message", "page"), BAD, ids=[message.split(":")[0] + "-" + str(i)
                                                              for i, (_, message, _) in enumerate(BAD)])
def test_the_command_refuses_what_the_form_refuses_in_its_words_and_writes_nothing(client, admin_user, bad, message,
                                                                                   page):
    before = _state()
    with pytest.raises(CommandError) as refused:
        call_command("create_study", *_argv(bad))
    assert str(refused.value) == message
    assert _state() == before
    if page is not None:  # the page says the same of the same value
        client.force_login(admin_user)
        body = {"slug": "good", "name": "Good", "schema": Schema.objects.get(slug="care-v1").pk,
                "model_slots_text": "GPT", "check_threshold": "0.7", "check_min_items": "20"} | page
        answer = client.post(reverse("study-create"), body)
        assert answer.status_code == 200
        assert html.escape(message.split(": ", 1)[1]) in answer.content.decode()
        assert _state() == before


def test_the_command_refuses_a_slug_in_use_and_names_every_missing_field(client, admin_user):
    call_command("create_study", "--slug", "taken", "--schema", "care-v1", "--model-slot", "GPT")
    before = _state()
    with pytest.raises(CommandError, match=r"^--slug: Study with this Slug already exists\.$"):
        call_command("create_study", "--slug", "taken", "--schema", "lc8-v1", "--model-slot", "GPT")
    assert _web_create(client, admin_user, slug="taken", schema="lc8-v1", settings={}).content.decode().count(
        "Study with this Slug already exists.") == 1
    with pytest.raises(CommandError) as refused:
        call_command("create_study")
    assert str(refused.value) == ("--slug: This field is required.; --name: This field is required.; "
                                  "--schema: This field is required.; --model-slot: This field is required.")
    assert _state() == before


def test_a_slug_taken_after_the_checks_is_refused_by_the_service_in_the_forms_words(admin_user):
    """Two creations of one slug at once: both pass the form's uniqueness check, the second insert fails; the
    service answers with the form's message on the slug, nothing written, never an integrity error."""
    form = StudyScriptForm({"slug": "raced", "schema": "care-v1", "model_slots": ["GPT"]})
    assert form.is_valid(), form.errors
    services.study_create(slug="raced", name="First", schema=Schema.objects.get(slug="cab-v1"), model_slots=["A"],
                          by=None)
    before = _state()
    assert form.create(by=admin_user) is None
    assert form.errors == {"slug": ["Study with this Slug already exists."]}
    assert form.errors.as_data()["slug"][0].code == "unique"
    assert _state() == before



@pytest.mark.parametrize(("slug", "message"), [*form_fuzz.REFUSED_SLUGS, ("", "This field cannot be blank.")])
def test_the_service_refuses_the_slugs_the_form_refuses_whoever_calls_it(slug, message):
    """The form's slug rules are the service's (services.study_slug_check): a caller that skips the form (the
    judgments import, the archive's importer, the generators) cannot make a study nobody can open."""
    before = _state()
    with pytest.raises(ValidationError) as refused:
        services.study_create(slug=slug, name="x", schema=Schema.objects.get(slug="cab-v1"), model_slots=["A"],
                              by=None)
    assert refused.value.message_dict == {"slug": [message]}
    assert _state() == before

def test_every_field_of_the_form_is_an_option_and_a_field_of_the_api():
    fields = {SCRIPT_NAMES.get(name, name) for name in StudyForm().fields}
    assert set(StudyIn().fields) == fields
    assert {"check_threshold", "method_labels", "reference_labels", "session_history", "session_order",
            "quality_scope"} <= fields
    from annotation.management.commands.create_study import Command

    parser = Command().create_parser("manage.py", "create_study")
    dests = {action.dest for action in parser._actions}
    assert fields <= dests


@pytest.mark.django_db
def test_each_options_help_says_the_default_a_study_created_without_it_has():
    """``--quality-scope`` said "Default: None." where a CARE study created without it has ``episode_sessions``."""
    from annotation.management.commands.create_study import Command

    parser = Command().create_parser("manage.py", "create_study")
    helps = {action.dest: " ".join(action.help.split()) for action in parser._actions if action.help}
    assert not [dest for dest, text in helps.items() if "Default: None" in text]
    said = 0
    for kind in kinds().values():
        schema = Schema.objects.filter(definition__has_key=kind.slug).order_by("slug").first()
        for setting in kind.settings:
            if setting.name not in helps:
                continue  # a coder setting: chosen on the settings page only
            slug = f"defaults-{setting.name}".replace("_", "-")
            call_command("create_study", "--slug", slug, "--schema", schema.slug, "--model-slot", "GPT",
                         stdout=io.StringIO())
            stored = setting_value(Study.objects.get(slug=slug), setting)
            assert helps[setting.name].endswith(f"Default: {stored}."), helps[setting.name]
            said += 1
    assert said, "no kind setting is an option"


# --- the API ------------------------------------------------------------------------------------------------------

URL = "/api/v1/studies/"


def _body(schema: str, slug: str = "api", **settings) -> dict:
    return {"slug": slug, "name": "Study web", "description": "from a test", "schema": schema,
            "model_slots": SLOTS} | settings


@pytest.mark.parametrize("schema", ["care-v1", "lc8-v1"])
def test_an_admin_token_creates_the_study_the_form_creates(client, admin_user, as_token, schema):
    assert _web_create(client, admin_user, slug="web", schema=schema, settings=SETTINGS[schema]).status_code == 302
    api = as_token(admin_user, scopes=["setup", "read"])
    answer = api.post(URL, _body(schema, **SETTINGS[schema]), format="json")
    assert answer.status_code == 201, answer.json()
    assert answer["Location"] == "/api/v1/studies/api/"
    assert answer.json() == {"slug": "api", "name": "Study web", "description": "from a test", "status": "setup",
                             "schema": schema, "schema_version": Schema.objects.get(slug=schema).version,
                             "model_slots": SLOTS, "is_synthetic": False, "rounds": []}
    assert _study("api") == _study("web")
    assert _created_event("api") == {"actor": admin_user.username, "target": "study:api", "data": {}, "study": True}
    assert not StudyMember.objects.exists()
    assert api.get(answer["Location"]).json()["slug"] == "api"


API_BAD = [
    ({"slug": "bad slug!"}, 400, "slug",
     "Enter a valid “slug” consisting of letters, numbers, underscores or hyphens."),
    ({"slug": "new"}, 400, "slug", "'new' is reserved; choose another"),
    ({"schema": "nope-v1"}, 400, "schema", "no schema 'nope-v1'; the installed schemas are cab-v1, care-v1, lc8-v1"),
    ({"model_slots": ["GPT", "GPT"]}, 400, "model_slots", "each model slot once"),
    ({"model_slots": []}, 400, "model_slots", "This field is required."),
    ({"model_slots": ["GPT,Claude"]}, 400, "model_slots", "one model slot an item: a slot has no comma"),
    ({"check_threshold": 3}, 400, "check_threshold", "a share between 0 and 1"),
    ({"check_threshold": "0.5"}, 400, "check_threshold", "must be a JSON number, not str"),
    ({"check_min_items": -1}, 400, "check_min_items", "Ensure this value is greater than or equal to 0."),
    ({"check_min_items": 1.5}, 400, "check_min_items", "Enter a whole number."),
    ({"show_model_names": "yes"}, 400, "show_model_names", "must be true or false, not str"),
    ({"session_order": "random"}, 400, "session_order",
     "Select a valid choice. random is not one of the available choices."),
    ({"name": "x" * 201}, 400, "name", "Ensure this value has at most 200 characters (it has 201)."),
    ({"quality_scope": "everything"}, 400, "quality_scope",
     "Select a valid choice. everything is not one of the available choices."),
    ({"schema": "cab-v1", "quality_scope": "after_crisis"}, 400, "quality_scope",
     "a setting of CARE studies only; schema cab-v1 is not a CARE schema"),
    ({"colour": "red"}, 400, "colour", "unknown field; fields are slug, name, description, schema, model_slots, "
                                       "show_model_names, show_therapist_reference, check_threshold, "
                                       "check_min_items, experts_see_consensus, method_labels, reference_labels, "
                                       "session_history, session_order, quality_scope"),
    ({"slug": "taken"}, 409, "slug", "Study with this Slug already exists."),
]


@pytest.mark.parametrize(("change", "status", "field", "message"), API_BAD,
                         ids=[f"{field}-{i}" for i, (_, _, field, _) in enumerate(API_BAD)])
def test_the_api_refuses_what_the_form_refuses_naming_the_field_and_writes_nothing(admin_user, as_token, change,
                                                                                   status, field, message):
    services.study_create(slug="taken", name="Taken", schema=Schema.objects.get(slug="cab-v1"), model_slots=["A"],
                          by=None)
    api = as_token(admin_user, scopes=["setup"])
    before = _state()
    answer = api.post(URL, _body("care-v1") | change, format="json")
    assert answer.status_code == status, answer.json()
    assert answer.json()["fields"][field] == [message]
    assert message in answer.json()["detail"]
    assert _state() == before


def test_the_api_refuses_a_body_that_is_not_a_study(admin_user, as_token):
    api = as_token(admin_user, scopes=["setup"])
    before = _state()
    for body, content_type in (("[]", "application/json"), ("{", "application/json"),
                               ("slug=x", "application/x-www-form-urlencoded")):
        answer = api.post(URL, body, content_type=content_type)
        assert answer.status_code in (400, 415), (body[:20], answer.status_code)
        assert answer.json()["detail"]
    missing = api.post(URL, {}, format="json").json()["fields"]
    assert missing == {name: ["This field is required."] for name in ("slug", "schema", "model_slots")}
    assert _state() == before


def test_only_an_admins_setup_token_for_no_one_study_creates_a_study(admin_user, researcher, reviewer, study,
                                                                    as_token):
    refusals = {
        "researcher": as_token(researcher),  # read, metrics: all a researcher may hold
        "researcher, setup by hand": as_token(researcher, legacy=True, scopes=["setup", "read"]),
        "reviewer, setup by hand": as_token(reviewer, legacy=True, scopes=["setup"]),
        "admin without setup": as_token(admin_user, scopes=["ingest", "import", "read", "metrics"]),
        # refused when made since (api.services.SETUP_WITH_STUDY): one made before, or by hand
        "admin, one study": as_token(admin_user, legacy=True, scopes=["setup"], study=study),
    }
    before = _state()
    for who, api in refusals.items():
        answer = api.post(URL, _body("care-v1"), format="json")
        assert answer.status_code == 403, (who, answer.json())
    assert _state() == before
    assert as_token(admin_user).post(URL, _body("care-v1"), format="json").status_code == 201  # every scope it may


def test_the_setup_scope_is_an_admins_only(admin_user, researcher):
    with pytest.raises(CommandError, match="role allows only read, metrics; not setup"):
        call_command("create_api_token", "--user", researcher.username, "--scope", "setup")
    call_command("create_api_token", "--user", admin_user.username, "--scope", "setup")


@pytest.mark.parametrize("page", ["new", "settings"])
def test_each_blinding_setting_names_the_labels_it_blinds(client, admin_user, page):
    """The reference labels' choices say what they blind: the reference labels, not "a method's labels" (the two
    settings once shared one set of choices, the automated coders' words)."""
    client.force_login(admin_user)
    if page == "new":
        url = reverse("study-create")
    else:
        assert _web_create(client, admin_user, slug="lc8", schema="lc8-v1", settings={}).status_code == 302
        url = reverse("study-settings", args=["lc8"])
    form = client.get(url).context["form"]
    for name in ("method_labels", "reference_labels"):
        said = [str(label) for value, label in form.fields[name].choices if value]
        assert said and not any("method" in label for label in said), (name, said)
