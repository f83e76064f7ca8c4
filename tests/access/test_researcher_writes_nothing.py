"""A researcher reads everything and writes nothing (issue 13): every URL of the project, sent POST, PUT, PATCH and
DELETE by a signed-in researcher (and, under /api/, with the researcher's bearer token and with a hand-made token
holding every scope), is refused with 403, 404 or 405 and leaves every product table as it was.

URLs come from the resolver itself, so a page added later is swept too; path parameters are filled with real ids
of a seeded study (its rounds, members, alerts, turns, runs, another account and its token, and a row of every
model the Django admin shows), so a refusal is the permission check's and not a missing object's.

The researcher's own housekeeping is the exception, each with what it may change: signing in and out, their password,
their own API tokens, and starting a metric run (the overview's button and the API's, docs/reference.md#roles: a
researcher reads dashboards, metric reports and exports, and a run is how a report is made; it changes only the run
table and the audit trail).
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from axes.models import AccessFailureLog
from django.apps import apps
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.urls.exceptions import NoReverseMatch
from django.utils import timezone
from rest_framework.test import APIClient

from access import roles
from annotation.models import AttributeDefinition, ReviewerAlert, Round, RoundItem, Study, StudyMember, WorkshopNote
from api import services as api_services
from api.models import ApiToken
from metrics.models import MetricRun
from tests.factories import ApiTokenFactory
from tests.form_fuzz import fingerprint

pytestmark = pytest.mark.django_db

METHODS = ("post", "put", "patch", "delete")
REFUSED = {403, 404, 405}

# The researcher's own session, password and tokens, and starting a metric run: (URL name -> tables that may
# change). Anything else a researcher sends must be refused.
OWN = {
    "login": set(), "logout": set(), "admin:logout": set(), "admin:password_change": set(),
    "password_reset": set(), "password_reset_confirm": set(),
    "api-tokens": {"cab_apitoken", "audit_auditevent"},
    "metric-run-start": {"metrics_metricrun", "audit_auditevent"},
    "api-metric-runs": {"metrics_metricrun", "audit_auditevent", "cab_idempotencyrecord"},
    "admin:login": set(),
    # "View on site" only redirects to the object's page, whatever the method.
    "admin:view_on_site": set(),
}
# Django's admin renders its read pages (index, app list, change list, history) for any method, and a change form
# for any method but POST, as for GET; the home page does the same. Such an answer may be 200 — never a write.
ADMIN_READS = re.compile(r"^admin:(index|app_list|\w+_changelist|\w+_history)$")


def read_for_any_method(name: str, method: str) -> bool:
    return bool(ADMIN_READS.match(name)) or name == "home" or (
        name.startswith("admin:") and name.endswith("_change") and method != "post")


@dataclass(frozen=True)
class Endpoint:
    name: str  # URL name with its namespace, or the pattern for an unnamed one
    url: str


def _walk(patterns: list, prefix: str = "", namespace: str = "") -> Iterator[tuple[str, URLPattern]]:
    for entry in patterns:
        if isinstance(entry, URLResolver):
            inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            yield from _walk(entry.url_patterns, prefix + str(entry.pattern), inner)
        else:
            yield namespace, entry


def _params(entry: URLPattern) -> list[str]:
    return list(entry.pattern.regex.groupindex)


@dataclass
class Seeded:
    study: Study
    values: dict[str, list[str]]
    objects: dict[type, str]


@pytest.fixture
def seeded(db, researcher, admin_user, reviewer) -> Seeded:
    """A small synthetic study (calibration rounds, a main round, judgments, spans), a succeeded metric run, an
    alert, another account's API token, and a row of every model."""
    call_command("generate_synthetic", "--conversations", "6", "--reviewers", "3", "--experts", "2", "--seed", "2",
                 "--calibration-turns", "2", "--slug", "sweep", stdout=io.StringIO())
    study = Study.objects.get(slug="sweep")
    round_ = Round.objects.filter(study=study, kind="calibration").order_by("number").first()
    item = RoundItem.objects.filter(round=round_).order_by("position").first()
    member = StudyMember.objects.filter(study=study).order_by("pk").first()
    alert = ReviewerAlert.objects.create(study=study, reviewer=member.user, agreement=0.5, threshold=0.8, n_items=4)
    run = MetricRun.objects.create(study=study, status="succeeded", result={"parameters": {}},
                                   finished_at=timezone.now(), parameters={"seed": 0, "bootstrap": 10})
    token, _ = api_services.api_token_create(user=admin_user, name="admin's", scopes=["read"], study=None, by=None)
    attribute = AttributeDefinition.objects.filter(schema=study.schema).order_by("pk").first()
    WorkshopNote.objects.create(round=round_, attribute=attribute, turn_id=item.turn_id, text="a note",
                                written_by=admin_user)
    Client().post(reverse("login"), {"username": "nobody", "password": "wrong"})  # sign-in attempt rows (axes)
    Client().post(reverse("login"), {"username": researcher.username, "password": "pw-for-tests"})  # access log
    AccessFailureLog.objects.create(username="nobody", ip_address="127.0.0.1", user_agent="test", http_accept="*/*",
                                    path_info="/login/")
    values = {
        "slug": [study.slug], "round_id": [str(round_.pk)], "position": ["1"], "member_id": [str(member.pk)],
        "alert_id": [str(alert.pk)], "turn_id": [str(item.turn_id)], "user_id": [str(reviewer.pk)],
        "token_id": [str(token.pk)], "run_id": [str(run.pk)], "round_name": [round_.name],
        "fmt": ["csv", "jsonl", "svg", "md"], "table": ["ari"], "page": ["risk"], "name": ["ari"],
        "uidb64": ["MQ"], "token": ["set-password"], "app_label": ["annotation"], "url": ["nope/"],
        "conversation": [item.turn.conversation.external_id],
    }
    objects: dict[type, str] = {}
    for model in apps.get_models():
        first = model._default_manager.order_by("pk").values_list("pk", flat=True).first()
        if first is not None:
            objects[model] = str(first)
    from django.contrib import admin

    assert set(admin.site._registry) <= set(objects), "every model the admin shows has a row to aim at"
    return Seeded(study=study, values=values, objects=objects)


def endpoints(seeded: Seeded) -> list[Endpoint]:
    """Every URL pattern of the project as one concrete URL (the first filling of its parameters that reverses)."""
    found = []
    for namespace, entry in _walk(get_resolver().url_patterns):
        params = _params(entry)
        model_admin = getattr(entry.callback, "model_admin", None)
        if not entry.name:
            # The API's JSON 404 for any other /api/v1/ path and the admin's catch-all: a path nobody claims.
            found.append(Endpoint(str(entry.pattern), "/api/v1/nobody-here/" if "api" in str(entry.pattern)
                                  else "/admin/annotation/nothing-here/"))
            continue
        name = f"{namespace}{entry.name}"
        model = model_admin.model if model_admin else next(
            (m for m in seeded.objects if entry.name.startswith(f"{m._meta.app_label}_{m._meta.model_name}_")), None)
        choices = {p: ([seeded.objects.get(model, "1")] if p in ("object_id", "id") and model
                       else ["1"] if p in ("object_id", "content_type_id")
                       # a parameter added since this test was written: a guess, so the URL is still swept
                       else seeded.values.get(p, ["1", "x"])) for p in params}
        url = None
        for attempt in _fillings(choices):
            try:
                url = reverse(name, kwargs=attempt)
                break
            except NoReverseMatch:
                continue
        assert url is not None, f"no filling of {name} {params} reverses"
        found.append(Endpoint(name, url))
    return found


def _fillings(choices: dict[str, list[str]]) -> Iterator[dict[str, str]]:
    if not choices:
        yield {}
        return
    first, *rest = choices
    for value in choices[first]:
        for tail in _fillings({k: choices[k] for k in rest}):
            yield {first: value, **tail}


def _auth_fingerprint() -> str:
    """Accounts, roles and permissions (not last_login, which signing in updates)."""
    with connection.cursor() as cursor:
        cursor.execute("""
            SELECT md5(coalesce(string_agg(x, '|' ORDER BY x), '')) FROM (
              SELECT concat_ws(',', 'u', id, password, username, is_active, is_staff, is_superuser, email) AS x
                FROM auth_user
              UNION ALL SELECT concat_ws(',', 'ug', user_id, group_id) FROM auth_user_groups
              UNION ALL SELECT concat_ws(',', 'up', user_id, permission_id) FROM auth_user_user_permissions
              UNION ALL SELECT concat_ws(',', 'gp', group_id, permission_id) FROM auth_group_permissions
              UNION ALL SELECT concat_ws(',', 'g', id, name) FROM auth_group) t""")
        return cursor.fetchone()[0]


def _token_fingerprint() -> str:
    """API tokens without ``last_used_at``, which every use of a token updates."""
    with connection.cursor() as cursor:
        cursor.execute(f"""
            SELECT md5(coalesce(string_agg(concat_ws(',', id, name, user_id, key_prefix, key_hash, study_id,
                                                     scopes::text, expires_at, revoked_at), '|' ORDER BY id), ''))
              FROM {connection.ops.quote_name(ApiToken._meta.db_table)}""")  # noqa: S608 - the model's table
        return cursor.fetchone()[0]


def state() -> dict[str, object]:
    return {**fingerprint(), ApiToken._meta.db_table: _token_fingerprint(), "auth": _auth_fingerprint()}


def changed(before: dict, after: dict) -> set[str]:
    return {table for table in before if before[table] != after.get(table)}


def _signed_in(client, researcher: User) -> None:
    if "_auth_user_id" not in client.session:
        client.force_login(researcher)


@pytest.mark.slow(30)
def test_every_write_a_researcher_sends_is_refused_and_changes_nothing(client, seeded, researcher):
    client.force_login(researcher)
    client.raise_request_exception = False  # a server error is one more finding, listed with the others
    bearer = APIClient(raise_request_exception=False)
    _, raw = api_services.api_token_create(user=researcher, name="sweep", scopes=["read", "metrics"], study=None,
                                           by=None)
    bearer.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    # A token written by hand with every scope (made before scopes followed the role): the role still decides.
    every_scope = APIClient(raise_request_exception=False)
    ApiTokenFactory(raw="cab_legacyswp-0123456789abcdef", user=researcher,
                    scopes=["ingest", "import", "read", "metrics", "setup"])
    every_scope.credentials(HTTP_AUTHORIZATION="Bearer cab_legacyswp-0123456789abcdef")

    swept = endpoints(seeded)
    assert len(swept) > 60 and any(e.name.startswith("admin:") for e in swept)
    problems: list[str] = []
    counts: dict[int, int] = {}
    for endpoint in swept:
        allowed = OWN.get(endpoint.name)
        senders = [("session", client)]
        if endpoint.url.startswith("/api/"):
            senders += [("token", bearer), ("every-scope token", every_scope)]
        _signed_in(client, researcher)
        before = state()  # once per URL: the database is read ~400 times instead of ~2,000
        answers = []
        for who, sender in senders:
            for method in METHODS:
                _signed_in(client, researcher)
                status = getattr(sender, method)(endpoint.url).status_code
                counts[status] = counts.get(status, 0) + 1
                answers.append(f"{method.upper()} ({who}) {status}")
                where = f"{method.upper()} {endpoint.url} ({endpoint.name}, {who}) -> {status}"
                if status >= 500:
                    problems.append(f"{where}: server error")
                elif allowed is None and status not in REFUSED and not (
                        status == 200 and read_for_any_method(endpoint.name, method)):
                    problems.append(f"{where}: not refused")
        if endpoint.name.endswith("_changelist"):
            # The change list's bulk actions (delete): a researcher is offered none, and one sent anyway is ignored.
            pk = next((pk for m, pk in seeded.objects.items()
                       if endpoint.name == f"admin:{m._meta.app_label}_{m._meta.model_name}_changelist"), "1")
            client.post(endpoint.url, {"action": "delete_selected", "_selected_action": [pk], "post": "yes",
                                       "index": "0"})
            answers.append("POST delete_selected")
        _signed_in(client, researcher)
        written = changed(before, state()) - (allowed or set())
        if written:
            problems.append(f"{endpoint.url} ({endpoint.name}; {', '.join(answers)}): changed {sorted(written)}")
    print("statuses:", dict(sorted(counts.items())))
    print("\n".join(problems))
    assert problems == []


def test_the_sweep_reaches_every_app_and_the_admin_with_real_ids(seeded):
    urls = {e.name: e.url for e in endpoints(seeded)}
    for name in ("round-open", "gold-record", "judgment-save", "member-remove", "account-role", "alert-resolve",
                 "api-conversations", "api-judgments-import", "api-metric-run", "reports-page", "panel-retain",
                 "api-token-revoke", "admin:annotation_study_change", "admin:auth_user_delete"):
        assert name in urls, name
    assert urls["alert-resolve"].endswith(f"/alerts/{seeded.values['alert_id'][0]}/resolve")
    study_pk = Study.objects.get(slug="sweep").pk
    assert urls["admin:annotation_study_change"] == f"/admin/annotation/study/{study_pk}/change/"


def test_the_sweep_would_catch_a_view_that_writes_for_a_researcher(client, seeded, researcher, settings):
    """The check itself: a view that lets a researcher close a round is reported (status and changed tables)."""
    from calibration import views as calibration_views

    round_ = Round.objects.get(pk=seeded.values["round_id"][0])

    def careless(request, slug, round_id):
        Round.objects.filter(pk=round_id).update(status="closed" if round_.status != "closed" else "open")
        from django.http import HttpResponse

        return HttpResponse("done")

    original = calibration_views.round_close
    entry = next(e for _, e in _walk(get_resolver().url_patterns) if e.name == "round-close")
    entry.callback = careless
    try:
        client.force_login(researcher)
        url = reverse("round-close", args=["sweep", round_.pk])
        before = state()
        response = client.post(url)
        assert response.status_code == 200 and changed(before, state()) == {"annotation_round"}
    finally:
        entry.callback = original
    assert client.post(url).status_code in REFUSED


def test_own_housekeeping_is_allowed_and_scoped(client, seeded, researcher, admin_user):
    """The exceptions write only the researcher's own rows: a token of theirs, a run; never another's token."""
    client.force_login(researcher)
    other = ApiToken.objects.filter(user=admin_user).get()
    assert client.post(reverse("api-token-revoke", args=[other.pk])).status_code == 404
    assert ApiToken.objects.get(pk=other.pk).revoked_at is None
    before = MetricRun.objects.count()
    client.post(reverse("metric-run-start", args=["sweep"]), {"bootstrap": "20", "seed": "1", "top_k": "2"})
    run = MetricRun.objects.latest("pk")
    assert MetricRun.objects.count() == before + 1 and run.requested_by == researcher


def test_a_researcher_has_no_write_permission_but_starting_a_run():
    assert [p for p in roles.ROLE_PERMISSIONS[roles.RESEARCHER] if not p[1].startswith("view_")] == [
        ("metrics", "add_metricrun")]
    assert roles.TOKEN_SCOPES[roles.RESEARCHER] == ("read", "metrics")

