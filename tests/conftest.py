"""Fixtures shared across the apps' tests: the personas, fast password hashing, API clients with bearer tokens,
the ``cab-demo`` study and its ingestion, and ``shared_state`` for data built once per module."""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator

import pytest
from django.conf import settings
from django.db import transaction
from django.test import override_settings
from rest_framework.test import APIClient

from access import roles
from access.checks import token_scopes_allowed
from access.services import user_ensure
from api import services as api_services
from benchmark import conversation_ingest
from benchmark.demo import demo_records
from tests.factories import StudyFactory, StudyMemberFactory, conversations_without_responses

pytest_plugins = ["tests.browser"]


def pytest_report_header(config):
    database = settings.DATABASES["default"]
    where = f"{database.get('HOST') or ''}:{database.get('PORT') or ''}"
    broker = settings.CELERY_BROKER_URL if not settings.CELERY_TASK_ALWAYS_EAGER else "in-process (eager)"
    return [f"database: PostgreSQL ({database['ENGINE']}) at {where}", f"celery broker: {broker}"]


# --- what the migrations wrote, back after a transactional test ------------------------------------------------
# A transactional test (``transaction=True``, ``live_server``) ends by emptying every table, the migrations' own rows
# (the default schemas, the role groups and their permissions) included. Run alone, pytest-django orders those tests
# after all others, so nothing notices; under pytest-xdist each worker gets whole files in turn, and the next file's
# tests would find no `cab-v1`. So the database as migrated is serialized once per worker, and put back before the
# first non-transactional test that follows a transactional one.

_flushed = False  # a transactional test has emptied the tables since they were last put back


def _transactional(item: pytest.Item) -> bool:
    marker = item.get_closest_marker("django_db")
    if marker is not None and (marker.kwargs.get("transaction") or marker.kwargs.get("reset_sequences")):
        return True
    fixtures = getattr(item, "fixturenames", ())
    return "transactional_db" in fixtures or "live_server" in fixtures


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's, and the rows the migrations wrote serialized right after (pytest-django already did when
    some collected test asks for ``serialized_rollback``)."""
    from django.db import connection

    if not hasattr(connection, "_test_serialized_contents"):
        with django_db_blocker.unblock():
            connection._test_serialized_contents = connection.creation.serialize_db_to_string()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    """Files with a test marked ``slow(seconds)`` first, the longest first, each file's tests in the order they had:
    pytest-xdist hands each worker whole files in this order (``--no-loadscope-reorder``), so the minutes-long ones
    start at once and the workers finish together."""
    seconds: dict = {}
    for item in items:
        for mark in item.iter_markers("slow"):
            seconds[item.path] = max(seconds.get(item.path, 0), mark.args[0] if mark.args else 60)
    items.sort(key=lambda item: -seconds.get(item.path, 0))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    yield
    global _flushed
    _flushed = _flushed or _transactional(item)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    global _flushed
    uses_database = "django_db_setup" in getattr(item, "fixturenames", ()) or item.get_closest_marker("django_db")
    if not _flushed or not uses_database or _transactional(item):
        return
    from django.core.management import call_command
    from django.db import connection
    from pytest_django.plugin import blocking_manager_key

    with item.config.stash[blocking_manager_key].unblock():
        # Sequences untouched (flush's default resets them): the rows come back with their own ids, below them.
        call_command("flush", verbosity=0, interactive=False, inhibit_post_migrate=True, reset_sequences=False)
        connection.creation.deserialize_db_from_string(connection._test_serialized_contents)
    _flushed = False


@pytest.fixture(scope="session", autouse=True)
def fast_password_hashing():
    """Personas and demo accounts get passwords; the production hash (deliberately slow) would cost more than most
    tests do. Session-wide, so data built once per module (``shared_state``) is hashed fast too."""
    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield


@pytest.fixture(scope="session")
def shared_state(django_db_setup, django_db_blocker):
    """For a module-scoped fixture that builds data once: ``with shared_state(): build; yield primary keys``.

    The data is written inside a transaction that is rolled back after the module's last test; each test runs in
    its own savepoint inside it (pytest-django's ``db``), so what a test changes is undone before the next. Only
    for tests without ``transaction=True`` or ``live_server`` (those need committed data). Yield primary keys,
    not model instances, so that no test sees another's in-memory changes."""

    @contextlib.contextmanager
    def build() -> Iterator[None]:
        with django_db_blocker.unblock(), transaction.atomic():
            yield
            transaction.set_rollback(True)

    return build


# --- personas --------------------------------------------------------------------------------------------------


def _persona(username: str, role: str):
    return user_ensure(username=username, role=role, password="pw-for-tests")


@pytest.fixture
def reviewer(db):
    return _persona("reviewer", roles.REVIEWER)


@pytest.fixture
def other_reviewer(db):
    return _persona("other-reviewer", roles.REVIEWER)


@pytest.fixture
def expert(db):
    return _persona("expert", roles.EXPERT)


@pytest.fixture
def admin_user(db):
    return _persona("study-admin", roles.ADMIN)


@pytest.fixture
def researcher(db):
    return _persona("researcher", roles.RESEARCHER)


@pytest.fixture
def outsider(db):
    from tests.factories import UserFactory

    return UserFactory(username="outsider")


# --- the API: clients and bearer tokens -------------------------------------------------------------------------


@pytest.fixture
def api():
    """An API client with no credentials."""
    return APIClient()


@pytest.fixture
def token_for():
    """token_for(user, scopes=…, study=…, expires_at=…) -> raw bearer token. By default the token has every scope
    the user's role allows; scopes beyond the role are refused by the service, so a test of the API's own
    defence against such a token (one made before that rule, or by hand) builds it with ``ApiTokenFactory``."""

    def make(user, scopes=None, study=None, expires_at=None):
        _, raw = api_services.api_token_create(user=user, name="test", scopes=scopes or token_scopes_allowed(user),
                                               study=study, expires_at=expires_at, by=None)
        return raw

    return make


@pytest.fixture
def as_token(token_for):
    """as_token(user, **token options) -> an APIClient sending that user's bearer token. ``legacy=True`` makes the
    token by hand with exactly the given scopes, even beyond what the role allows (tokens made before the service
    enforced that, or written into the database): the API must still refuse what the role does not allow."""

    def make(user, *, legacy=False, **options):
        api = APIClient()
        if legacy:
            from tests.factories import ApiTokenFactory

            raw = f"cab_legacy-{secrets.token_hex(8)}"
            ApiTokenFactory(raw=raw, user=user, scopes=list(options.get("scopes", ["read"])),
                            study=options.get("study"))
        else:
            raw = token_for(user, **options)
        api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
        return api

    return make


# --- a study ---------------------------------------------------------------------------------------------------


@pytest.fixture
def study(db, reviewer, other_reviewer):
    """``cab-demo``, with the reviewer and the other reviewer as members."""
    study = StudyFactory(slug="cab-demo", name="Demo study")
    StudyMemberFactory(study=study, user=reviewer, role="reviewer")
    StudyMemberFactory(study=study, user=other_reviewer, role="reviewer")
    return study


@pytest.fixture
def other_study(db):
    return StudyFactory(slug="other-study", name="Other study")


@pytest.fixture
def demo_conversations(db):
    conversation_ingest.conversations_import(rows=enumerate(demo_records()))


# --- ingestion --------------------------------------------------------------------------------------------------


@pytest.fixture
def ingester(admin_user, as_token, study):
    """An admin's client with an ingestion token limited to ``cab-demo``."""
    return as_token(admin_user, scopes=["ingest"], study=study)


@pytest.fixture
def turns_only(ingester):
    """The demo conversations and turns of ``cab-demo``, without model responses."""
    response = ingester.post("/api/v1/studies/cab-demo/conversations/", conversations_without_responses(),
                             format="json")
    assert response.status_code == 200


def sign_in(client, username: str, password: str) -> bool:
    """Sign in through the real sign-in form (django-axes counts every attempt; Django's ``Client.login`` would
    bypass the request it needs). True when the session now has an account."""
    client.post("/login/", {"username": username, "password": password})
    return "_auth_user_id" in client.session
