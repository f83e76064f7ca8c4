from __future__ import annotations

import pytest
from django.conf import settings

from access import roles
from access.services import user_ensure

pytest_plugins = ["tests.browser"]


def pytest_report_header(config):
    database = settings.DATABASES["default"]
    engine = database["ENGINE"].rsplit(".", 1)[-1]
    where = f"{database.get('HOST') or ''}:{database.get('PORT') or ''}" if engine != "sqlite3" else database["NAME"]
    broker = settings.CELERY_BROKER_URL if not settings.CELERY_TASK_ALWAYS_EAGER else "in-process (eager)"
    return [f"database: {engine} at {where}", f"celery broker: {broker}"]


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
