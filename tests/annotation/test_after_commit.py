"""A coding page's request whose work is committed answers with it, however the database is afterwards: the
database ends the request's connection right after the commit (``pg_terminate_backend``, as a restart does), and the
answer is never the 503 that says "Nothing was changed" (common.outage): a reviewer told so would do it again."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection, transaction
from django.test import Client
from django.urls import reverse

from annotation.models import Assignment, Round, Study, StudyMember
from tests.annotation.test_views import fill_turn
from tests.common.test_outage import _ended, _own_pid
from tests.factories import StudyFactory

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)  # the connection is ended for real


@contextlib.contextmanager
def _ended_after_the_commit_of(statement: str) -> Iterator[list[str]]:
    """End the test's connection (the one its requests use) once the transaction that ran a statement starting
    with ``statement`` has committed. Yields the statements seen, to check it was."""
    seen: list[str] = []

    def watch(execute: Callable, sql: str, params, many, context):  # noqa: ANN001, ANN202
        result = execute(sql, params, many, context)
        if sql.startswith(statement) and not seen:
            seen.append(sql)
            transaction.on_commit(lambda: _ended(_own_pid()))
        return result

    try:
        with connection.execute_wrapper(watch):
            yield seen
    finally:
        connection.close()


@pytest.fixture
def demo_round(settings) -> Round:
    settings.DEBUG = False  # the pages' own 500 and 503
    call_command("load_demo", "--quiet")
    return Round.objects.get(study__slug="demo", kind="calibration", number=1)


@pytest.mark.parametrize("htmx", [True, False])
def test_a_turn_completed_as_the_database_drops_goes_on_to_the_next_turn(demo_round, htmx):
    """Before, the view read the next turn's position after the commit: 503 "Nothing was changed" for a turn that
    was completed."""
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    fill_turn(demo_round, reviewer, 1)
    page = Client(raise_request_exception=False)
    page.force_login(reviewer)
    headers = {"HX-Request": "true"} if htmx else {}
    with _ended_after_the_commit_of('UPDATE "annotation_assignment" SET "completed_at"') as seen:
        answer = page.post(reverse("turn-complete", args=[demo_round.pk, 1]), headers=headers)
    assert seen, "the completion was committed"
    assert answer.status_code == (204 if htmx else 302), (answer.status_code, answer.content[-300:])
    assert (answer["HX-Redirect"] if htmx else answer["Location"]) == reverse("turn", args=[demo_round.pk, 2])
    assert Assignment.objects.get(round=demo_round, coder=reviewer, position=1).completed_at is not None


def test_a_study_created_through_the_api_as_the_database_drops_answers_201_with_it(admin_user, as_token, settings):
    """Before, the answer's list of the new study's rounds was read after the commit: 503 "Nothing was changed",
    and the client's same request again was refused, the slug being in use (409)."""
    settings.DEBUG = False
    api = as_token(admin_user, scopes=["setup"])
    api.raise_request_exception = False  # the API's own 503
    with _ended_after_the_commit_of('INSERT INTO "annotation_study"') as seen:
        answer = api.post("/api/v1/studies/", {"slug": "made", "schema": "cab-v1", "model_slots": ["GPT"]},
                          format="json")
    assert seen, "the study was committed"
    assert answer.status_code == 201, (answer.status_code, answer.content[-300:])
    assert (answer.json()["slug"], answer.json()["rounds"], answer["Location"]) == ("made", [], "/api/v1/studies/made/")
    assert Study.objects.filter(slug="made").exists()


_CODERS = "/api/v1/studies/coded/"


@pytest.mark.parametrize(("kind", "before", "sent", "statement"), [
    ("methods", None, {"name": "judge", "version": "v1", "prompt_id": "p1"}, 'INSERT INTO "annotation_studymember"'),
    ("methods", {"name": "judge", "version": "v1", "prompt_id": "p1"},
     {"name": "judge", "version": "v2", "prompt_id": "p1"}, 'UPDATE "annotation_studymember"'),
    ("methods", {"name": "judge", "version": "v1", "prompt_id": "p1"},
     {"name": "judge", "version": "v1", "prompt_id": "p1"}, 'SELECT "annotation_studymember"'),
    ("references", None, {"name": "phq", "description": "the controlled state"},
     'INSERT INTO "annotation_studymember"'),
    ("references", {"name": "phq", "description": "old"}, {"name": "phq", "description": "the controlled state"},
     'UPDATE "annotation_studymember"'),
    ("references", {"name": "phq", "description": "the controlled state"},
     {"name": "phq", "description": "the controlled state"}, 'SELECT "annotation_studymember"'),
])
def test_a_coder_registered_as_the_database_drops_answers_200_with_it(admin_user, as_token, settings, kind, before,
                                                                      sent, statement):
    """Before, the answer read the coder's account after the commit (a registration that found or changed the
    membership): 503 "Nothing was changed" for a coder that was registered."""
    settings.DEBUG = False
    study = StudyFactory(slug="coded")
    api = as_token(admin_user, scopes=["read", "import"], study=study)
    api.raise_request_exception = False  # the API's own 503
    if before is not None:
        assert api.post(f"{_CODERS}{kind}/", before, format="json").status_code == 200
    with _ended_after_the_commit_of(statement) as seen:
        answer = api.post(f"{_CODERS}{kind}/", sent, format="json")
    assert seen, "the registration was committed"
    assert answer.status_code == 200, (answer.status_code, answer.content[-300:])
    assert answer.json() == sent
    member = StudyMember.objects.get(study=study, user__username=sent["name"])
    assert member.method_version == sent.get("version", sent.get("description"))
