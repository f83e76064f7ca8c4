"""Every URL of the project, for every kind of caller (docs/reference.md#roles, docs/api.md#authentication): an
anonymous visitor, a reviewer of the study, a reviewer of another study, an expert of the study, a researcher and
an admin, each sending GET and an empty POST; and the API's tokens, one scope at a time and limited to another study.

URLs come from the resolver (tests/access/test_researcher_writes_nothing.py's sweep, the same seeded study and
fillings), so a page added later is swept too; the coding pages take the round and position of an assignment of the
study's reviewer, so that their 404 for everyone else is the check's and not a missing object's. What each caller
may reach is written here from the docs, not read from the views' decorators. No answer is ever a 500.
"""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.management import call_command
from django.db import transaction
from django.test import Client
from rest_framework.test import APIClient

from annotation.models import Assignment, Study
from api import services as api_services
from tests.access import test_researcher_writes_nothing as sweep
from tests.access.test_researcher_writes_nothing import Endpoint, changed, endpoints, state

pytestmark = pytest.mark.django_db
seeded = sweep.seeded  # the researcher sweep's study: a fixture of this module too

# Open to anyone: signing in and out, setting a password, the liveness probe, a schema's highlight colours, the API's
# own description, and the API's JSON 404 for a path nobody claims.
PUBLIC = {"login", "logout", "password_reset", "password_reset_done", "password_reset_confirm",
          "password_reset_complete", "healthz", "schema-spans-css", "api-schema", "api-docs", "^api/v1/",
          "admin:login", "admin:logout"}
# Called by the coding page's scripts: without a session a 401, which the page turns into a sign-in dialog.
SCRIPTS = {"coding-parts", "judgment-save", "turn-complete", "turn-time", "turn-note"}
CODING = {"queue", "turn", *SCRIPTS}
# A study's material as its members see it through the API: a reviewer's own, another study's reviewer nothing.
MEMBER_API = {"api-study", "api-rounds", "api-assignments", "api-judgments"}
# Every signed-in account: the home page and their own API tokens.
EVERYONE = {"home", "api-tokens", "api-studies"}
REFUSED = {403, 404, 405}
# docs/api.md#authentication: the scope each write needs (every GET needs read).
WRITE_SCOPES = {"api-studies": "setup", "api-conversations": "ingest", "api-conversations-upload": "ingest",
                "api-responses": "ingest", "api-responses-upload": "ingest", "api-judgments-import": "import",
                "api-methods": "import", "api-references": "import", "api-session-labels": "import",
                "api-metric-runs": "metrics"}
SCOPES = ("read", "ingest", "import", "metrics", "setup")
# Writes only: a GET there is refused whatever the scope (403: no scope covers it; DRF checks before the method).
WRITE_ONLY = {"api-judgments-import", "api-conversations-upload", "api-responses-upload"}


@pytest.fixture
def swept(seeded) -> list[Endpoint]:
    """The sweep's URLs, the coding pages aimed at the first assignment of the study's reviewer in an open round, and
    a second study (its own reviewers, experts and rounds) beside it."""
    call_command("generate_synthetic", "--conversations", "3", "--reviewers", "2", "--experts", "2", "--seed", "3",
                 "--calibration-turns", "2", "--slug", "sweepb", stdout=io.StringIO())
    mine = (Assignment.objects.filter(coder__username="sweep-r01", round__study=seeded.study, round__status="open")
            .order_by("round_id", "position").first())
    assert mine is not None, "the study's reviewer has work in an open round"
    found = []
    for endpoint in endpoints(seeded):
        url = endpoint.url
        if endpoint.name in CODING:
            url = url.replace(f"/rounds/{seeded.values['round_id'][0]}/", f"/rounds/{mine.round_id}/", 1)
            url = url.replace("/turns/1/", f"/turns/{mine.position}/", 1)
        found.append(Endpoint(endpoint.name, url))
    return found


def _send(sender: User | APIClient | None, method: str, url: str, *, writes: bool = False) -> tuple[int, str, set[str]]:
    """Status, Location and the tables written, for an account's session (signed in afresh: the sweep signs out),
    an API client, or nobody; whatever the request wrote is rolled back after."""
    cache.clear()  # rate limits are not what is tested
    client = sender if isinstance(sender, APIClient) else Client(raise_request_exception=False)
    if isinstance(sender, User):
        client.force_login(sender)
    with transaction.atomic():
        before = state() if writes else {}
        response = getattr(client, method)(url)
        written = changed(before, state()) if writes else set()
        transaction.set_rollback(True)
    return response.status_code, response.get("Location", ""), written


def _django_admin(endpoint: Endpoint) -> bool:
    return endpoint.url.startswith("/admin/")


def _to_sign_in(status: int, location: str, endpoint: Endpoint) -> bool:
    return status == 302 and location.startswith("/admin/login/" if _django_admin(endpoint) else "/login/")


@pytest.mark.slow(40)
def test_an_anonymous_visitor_is_sent_to_sign_in_or_refused(swept):
    problems = []
    for endpoint in swept:
        for method in ("get", "post"):
            status, location, _ = _send(None, method, endpoint.url)
            where = f"{method.upper()} {endpoint.url} ({endpoint.name}) -> {status} {location}"
            if status >= 500:
                problems.append(f"{where}: server error")
            elif endpoint.name in PUBLIC:
                continue
            elif endpoint.url.startswith("/api/") or endpoint.name in SCRIPTS:
                if status != 401:
                    problems.append(f"{where}: not 401")
            elif not _to_sign_in(status, location, endpoint) and status != 405:
                problems.append(f"{where}: not sent to sign in")
    print("\n".join(problems))
    assert problems == []


@pytest.mark.slow(60)
@pytest.mark.parametrize("who", ["sweep-r01", "sweepb-r01", "sweep-e1"])
def test_a_coder_reaches_their_own_work_only_and_writes_nothing_by_an_empty_post(swept, who):
    """Reviewers and experts: the Django admin sends them to its sign-in, staff and admin pages refuse them, the
    study's coding pages and its API reads are their own study's only (another study's reviewer gets 404 where its
    reviewer gets 200), and an empty POST anywhere writes nothing."""
    client = User.objects.get(username=who)
    problems = []
    for endpoint in swept:
        for method in ("get", "post"):
            status, location, written = _send(client, method, endpoint.url,
                                              writes=method == "post" and not _django_admin(endpoint))
            where = f"{method.upper()} {endpoint.url} ({endpoint.name}) -> {status} {location}"
            if written and endpoint.name not in {"login", "logout", "password_reset", "password_reset_confirm"}:
                problems.append(f"{where}: wrote {sorted(written)}")
            problem = _coder_problem(endpoint, method, status, location, who)
            if problem:
                problems.append(f"{where}: {problem}")
    print("\n".join(problems))
    assert problems == []


def _coder_problem(endpoint: Endpoint, method: str, status: int, location: str, who: str) -> str:
    name, member = endpoint.name, who.startswith("sweep-")
    if status >= 500:
        return "server error"
    if name in PUBLIC or name in EVERYONE:
        return ""
    if _django_admin(endpoint):
        return "" if _to_sign_in(status, location, endpoint) else "the Django admin let a coder in"
    if who == "sweep-r01" and method == "get" and name in {"queue", "turn", "feedback", *MEMBER_API}:
        return "" if status == 200 else "the study's reviewer is refused their own work"
    if who == "sweep-r01" and name in CODING:
        return ""  # their own work: an empty save, note or completion is refused in words (and writes nothing)
    if member and method == "get" and name in MEMBER_API | CODING:
        return "" if status in {200, 404, 405} else "a member's read refused"
    if status not in REFUSED:
        return "not refused"
    if not member and status == 403 and name in CODING | MEMBER_API | {"feedback"}:
        return "another study's reviewer should not learn that it exists (404)"
    return ""


def test_another_studys_reviewer_lists_only_their_own_studies(client, swept):
    client.force_login(User.objects.get(username="sweepb-r01"))
    assert [s["slug"] for s in client.get("/api/v1/studies/").json()] == ["sweepb"]
    assert "sweep/" not in client.get("/").content.decode()


@pytest.mark.slow(40)
@pytest.mark.parametrize("scope", SCOPES)
def test_each_scope_reaches_its_endpoints_only(swept, admin_user, scope):
    """An admin's token holding one scope: refused (403) exactly where docs/api.md says another scope is needed."""
    _, raw = api_services.api_token_create(user=admin_user, name=scope, scopes=[scope], study=None, by=None)
    api = APIClient(raise_request_exception=False)
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    problems = []
    for endpoint in swept:
        if not endpoint.url.startswith("/api/v1/") or endpoint.name == "^api/v1/":
            continue
        for method in ("get", "post"):
            needed = WRITE_SCOPES.get(endpoint.name) if method == "post" else (
                None if endpoint.name in WRITE_ONLY else "read")
            status, _, _ = _send(api, method, endpoint.url)
            where = f"{method.upper()} {endpoint.url} ({endpoint.name}) with {scope!r} -> {status}"
            if status >= 500 or status == 401:
                problems.append(f"{where}: server error or not signed in")
            elif needed == scope and status == 403:
                problems.append(f"{where}: refused its own scope")
            elif needed != scope and status not in {403, 405}:
                problems.append(f"{where}: reached without {needed!r}")
    print("\n".join(problems))
    assert problems == []


@pytest.mark.slow(20)
def test_a_token_limited_to_a_study_reaches_no_other(swept, admin_user):
    _, raw = api_services.api_token_create(user=admin_user, name="b only", scopes=list(SCOPES)[:4],
                                           study=Study.objects.get(slug="sweepb"), by=None)
    api = APIClient(raise_request_exception=False)
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert api.get("/api/v1/studies/sweepb/").status_code == 200
    assert [s["slug"] for s in api.get("/api/v1/studies/").json()] == ["sweepb"]
    problems = []
    for endpoint in swept:
        if not endpoint.url.startswith("/api/v1/") or endpoint.name in {"^api/v1/", "api-studies"}:
            continue
        for method in ("get", "post"):
            status, _, written = _send(api, method, endpoint.url, writes=method == "post")
            if status not in REFUSED or written:
                problems.append(f"{method.upper()} {endpoint.url} ({endpoint.name}) -> {status}, wrote {written}")
    print("\n".join(problems))
    assert problems == []


@pytest.mark.slow(40)
@pytest.mark.parametrize("who", ["researcher", "admin"])
def test_staff_get_no_server_error_and_coding_pages_are_not_theirs(swept, researcher, admin_user, who):
    """Admins and researchers: no 500 for a GET or an empty POST anywhere, the Django admin included (each rolled
    back); the coding pages and a reviewer's feedback are a coder's own, 404 for them. (What a researcher's writes
    may change: tests/access/test_researcher_writes_nothing.py.)"""
    user = researcher if who == "researcher" else admin_user
    problems = []
    for endpoint in swept:
        for method in ("get", "post"):
            status, location, _ = _send(user, method, endpoint.url)
            where = f"{method.upper()} {endpoint.url} ({endpoint.name}) -> {status} {location}"
            if status >= 500:
                problems.append(f"{where}: server error")
            elif endpoint.name in CODING | {"feedback"} and status not in {404, 405}:
                problems.append(f"{where}: not 404")
    print("\n".join(problems))
    assert problems == []


@pytest.mark.slow(40)
def test_every_page_an_admin_gets_answers_head_as_get(swept, admin_user):
    """A ``HEAD`` (a link checker, an uptime monitor, ``curl -I``) of every page an admin's ``GET`` reaches is
    answered as the ``GET`` is, without the body: it was a 405 on the pages that took ``GET`` alone (the exports
    page, the reports, the People page, …), where the downloads already answered it."""
    problems = []
    for endpoint in swept:
        if _django_admin(endpoint):
            continue
        cache.clear()
        client = Client(raise_request_exception=False)
        client.force_login(admin_user)
        with transaction.atomic():
            got = client.get(endpoint.url)
            head = client.head(endpoint.url)
            transaction.set_rollback(True)
        if got.status_code != 200:
            continue
        where = f"HEAD {endpoint.url} ({endpoint.name}) -> {head.status_code}"
        if head.status_code != 200:
            problems.append(f"{where}, GET 200")
        elif head.get("Content-Type") != got.get("Content-Type"):
            problems.append(f"{where}: {head.get('Content-Type')} where GET gives {got.get('Content-Type')}")
    print("\n".join(problems))
    assert problems == []
