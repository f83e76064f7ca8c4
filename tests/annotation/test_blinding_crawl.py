"""What a reviewer or an expert can reach, crawled: signed in as each coder of a rich installation (the demo study
walked through to an open main round, with calibration-1 closed and calibration-2 open with gold recorded; the CARE
demo with its judge's labels blinded; the LC8 demo with its session order blinded and its methods' and reference's
labels blinded; no study shows model names), every page, fragment, script, download and API answer the coder's
session or bearer token reaches by links and by the URLs of other coders' items, other rounds and other studies is
searched for what the coder must not learn: a model slot or version, a response's or judgment's id, another coder's
username, alias, comment or flag, an open round's gold, a method's or reference coder's name, and in a study whose
session order is blinded the history's id and title."""

from __future__ import annotations

import html
import re
from collections import deque
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlparse

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from rest_framework.test import APIClient

from access import roles
from access.checks import token_scopes_allowed
from access.services import user_ensure
from annotation import services as annotation_services
from annotation.models import Assignment, Judgment, Round, Study, StudyMember
from annotation.selectors import response_handle
from api import services as api_services
from benchmark import conversation_ingest
from benchmark.models import Conversation, ModelResponse
from calibration import selectors as calibration_selectors
from calibration import services as calibration_services
from tests.scenarios import as_true, code_round, demo_walked_through, misses_flags

pytestmark = pytest.mark.django_db

RESPONSE_IDS_FROM = 7_000_000  # ids no count, position or version on a page comes near
JUDGMENT_IDS_FROM = 8_000_000
CODERS = ("demo-reviewer", "demo-expert", "demo-expert-2", "demo-panel-1", "demo-panel-2")
GOLD_NOTE = "gold-note-of-the-open-round"
MAX_ANSWERS = 3000
POST_ONLY = ("/save", "/time", "/note", "/complete", "/record", "/accept-unanimous", "/open", "/close", "/reopen",
             "/revoke", "/resolve", "/retain", "/start", "/remove", "/add", "/sample", "/refs", "/blinding-key")


def _ids_from(model, start: int) -> None:
    table = model._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute("SELECT setval(pg_get_serial_sequence(%s, 'id'), %s)", [table, start])


def extra_records(study: Study) -> list[dict]:
    return [{"dataset": "PAIR", "conversation_id": f"crawl-{n}", "kind": "single", "topic": "Anxiety",
             "complexity": "low", "turns": [{"index": 1, "client": f"client text {n}",
                                             "responses": [{"model": slot, "text": f"answer {i} to {n}, in words."}
                                                           for i, slot in enumerate(study.model_slots)]}]}
            for n in range(6)]


def comment_of(username: str) -> str:
    return f"comment-by-{username}-for-the-admins"


@pytest.fixture(scope="module")
def built(shared_state):
    with shared_state():
        _ids_from(ModelResponse, RESPONSE_IDS_FROM)
        _ids_from(Judgment, JUDGMENT_IDS_FROM)
        call_command("load_demo", "--quiet", "--care", "--lc8")
        study = demo_walked_through()
        admin = get_user_model().objects.get(username="demo-admin")
        # calibration-2 (on turns added for it): open, coded by the panel and the expert, with gold recorded (and
        # its note) while open
        conversation_ingest.conversations_import(rows=enumerate(extra_records(study), start=1), study=study, by=admin)
        annotation_services.study_member_add(study=study, user=user_ensure(username="demo-expert-2", role=roles.EXPERT),
                                             role=StudyMember.Role.EXPERT, by=admin)
        Study.objects.filter(pk=study.pk).update(experts_see_consensus=True)
        second = annotation_services.round_ensure(study=study, kind=Round.Kind.CALIBRATION, number=2, by=admin)
        calibration_services.calibration_set_sample(round=second, by=admin, n=3, seed=2)
        calibration_services.calibration_round_open(round=second, by=admin)
        users = get_user_model().objects.filter(username__in=["demo-expert", "demo-expert-2", "demo-panel-1",
                                                             "demo-panel-2"])
        for coder, deviation in zip(users.order_by("username"), (as_true, misses_flags, misses_flags, as_true),
                                    strict=True):
            code_round(second, coder, deviation)
        item = calibration_selectors.consensus_items(round=second)[0]
        calibration_services.gold_record(round=second, by=admin, attribute=item.attribute, turn=item.turn,
                                         response=item.response, score=0, agreed_by=[users.get(username="demo-expert")],
                                         note=GOLD_NOTE)
        for assignment in Assignment.objects.select_related("coder"):
            Assignment.objects.filter(pk=assignment.pk).update(comment=comment_of(assignment.coder.username),
                                                               flags=["discuss"])
        Study.objects.update(description="")  # the demo's descriptions name its accounts: the admin's own words
        lc8 = Study.objects.get(slug="lc8-demo")
        Study.objects.filter(pk=lc8.pk).update(session_order=Study.SessionOrder.BLINDED,
                                               session_history=Study.SessionHistory.HIDDEN)
        del admin, study
        yield


@dataclass
class Found:
    url: str
    status: int
    secret: str
    excerpt: str


@dataclass
class Crawl:
    seen: set[str] = field(default_factory=set)
    answered: set[str] = field(default_factory=set)  # with 200
    found: list[Found] = field(default_factory=list)


LINK = re.compile(r'''(?:href|src|action|hx-get|data-[a-z-]*url)=["']([^"'#]+)''')


def links(text: str) -> list[str]:
    return [html.unescape(m) for m in LINK.findall(text)]


def secrets_for(username: str) -> dict[str, re.Pattern]:
    """What ``username`` must not see, each as a pattern."""
    patterns: dict[str, re.Pattern] = {}
    texts = " ".join(ModelResponse.objects.values_list("text", flat=True))
    for study in Study.objects.filter(show_model_names=False):
        for slot in study.model_slots if len(study.model_slots) > 1 else ():  # one slot: its name is a role
            if not re.search(rf"\b{re.escape(slot)}\b", texts):
                patterns[f"model slot {slot}"] = re.compile(rf"\b{re.escape(slot)}\b")
        for version in (ModelResponse.objects.filter(turn__conversation__study=study).exclude(model_version="")
                        .values_list("model_version", flat=True).distinct()):
            patterns[f"model version {version}"] = re.compile(re.escape(version))
    patterns["response id"] = re.compile(r"(?<![\w.])7\d{6}(?![\w.])")
    patterns["judgment id"] = re.compile(r"(?<![\w.])8\d{6}(?![\w.])")
    for other in get_user_model().objects.exclude(username=username).values_list("username", flat=True):
        patterns[f"username {other}"] = re.compile(rf"(?<![\w-]){re.escape(other)}(?![\w-])")
        patterns[f"comment of {other}"] = re.compile(re.escape(comment_of(other)))
    for member in StudyMember.objects.exclude(user__username=username).exclude(alias=""):
        patterns[f"alias {member.alias} of {member.user.username}"] = re.compile(rf"\b{re.escape(member.alias)}\b")
    for member in StudyMember.objects.filter(role=StudyMember.Role.METHOD):
        patterns[f"method {member.method_name}"] = re.compile(re.escape(member.method_name))
    patterns["open round's gold note"] = re.compile(GOLD_NOTE)
    for conversation in Conversation.objects.filter(study__session_order=Study.SessionOrder.BLINDED):
        patterns[f"blinded history {conversation.external_id}"] = re.compile(
            rf"(?<![\w-]){re.escape(conversation.external_id)}(?![\w-])")
        if conversation.title:
            patterns[f"blinded history title {conversation.title}"] = re.compile(re.escape(conversation.title))
    return patterns


def allowed_on(path: str, username: str) -> set[str]:
    """What a page may show this coder by design: the gold panel's names on a closed calibration round's consensus
    screen, which the study lets its experts read (calibration.selectors.consensus_access)."""
    found = re.fullmatch(r"/rounds/(\d+)/consensus/", path)
    if found is None:
        return set()
    round_ = Round.objects.select_related("study").get(pk=found.group(1))
    experts = StudyMember.objects.filter(study=round_.study, role=StudyMember.Role.EXPERT)
    if round_.status != Round.Status.CLOSED or not experts.filter(user__username=username).exists():
        return set()
    return {f"username {name}" for name in experts.values_list("user__username", flat=True)}


def seeds() -> list[str]:
    urls = ["/", "/api-tokens/", "/exports/", "/api/v1/studies/", "/people/"]
    for study in Study.objects.all():
        s = study.slug
        urls += [f"/studies/{s}/", f"/studies/{s}/reports/", f"/studies/{s}/data/", f"/studies/{s}/settings/",
                 f"/studies/{s}/panel/", f"/exports/{s}/judgments.csv", f"/exports/{s}/items.csv",
                 f"/exports/{s}/report.json", f"/api/v1/studies/{s}/", f"/api/v1/studies/{s}/rounds/",
                 f"/api/v1/studies/{s}/judgments/", f"/api/v1/studies/{s}/methods/",
                 f"/api/v1/studies/{s}/references/", f"/api/v1/studies/{s}/session-labels/",
                 f"/api/v1/studies/{s}/metric-runs/", f"/api/v1/studies/{s}/exports/judgments.csv",
                 f"/api/v1/studies/{s}/exports/report.json", f"/studies/{s}/reports/runs"]
        for round_ in Round.objects.filter(study=study):
            r = round_.pk
            urls += [f"/rounds/{r}/", f"/rounds/{r}/consensus/", f"/rounds/{r}/workshop/", f"/rounds/{r}/feedback/",
                     f"/rounds/{r}/memo.md", f"/rounds/{r}/memo.csv",
                     f"/api/v1/studies/{s}/rounds/{round_.name}/assignments/"]
            positions = set(Assignment.objects.filter(round=round_).values_list("position", flat=True))
            urls += [f"/rounds/{r}/turns/{p}/" for p in sorted(positions)]
            for turn in set(Assignment.objects.filter(round=round_).values_list("turn_id", flat=True)):
                urls.append(f"/rounds/{r}/items/{turn}/history/")
    return urls


def crawl(client, username: str, start: list[str]) -> Crawl:
    patterns = secrets_for(username)
    result = Crawl()
    queue = deque(start)
    while queue and len(result.seen) < MAX_ANSWERS:
        url = queue.popleft()
        parsed = urlparse(url)
        if parsed.netloc or parsed.scheme not in ("", "http") or not parsed.path.startswith("/"):
            continue
        if (parsed.path.startswith(("/static/", "/logout", "/admin/logout")) or url in result.seen
                or parsed.path.endswith(POST_ONLY)):
            continue
        result.seen.add(url)
        answer = client.get(url)
        body = b"".join(answer.streaming_content) if answer.streaming else answer.content
        text = body.decode(errors="replace")
        head = " ".join(f"{k}: {v}" for k, v in answer.items())
        if answer.status_code == 200:
            result.answered.add(url)
        allowed = allowed_on(parsed.path, username)
        for name, pattern in patterns.items():
            if name in allowed:
                continue
            for where in (text, head):
                hit = pattern.search(where)
                if hit:
                    result.found.append(Found(url, answer.status_code, name,
                                              where[max(0, hit.start() - 80):hit.end() + 80]))
        if answer.status_code in (301, 302) and answer.get("Location"):
            queue.append(urljoin(url, answer["Location"]))
        if "html" in answer.get("Content-Type", "") or "javascript" in answer.get("Content-Type", ""):
            queue.extend(urljoin(url, link) for link in links(text))
        if "json" in answer.get("Content-Type", ""):
            queue.extend(urljoin(url, link) for link in re.findall(r'"(https?://testserver[^"]+|/[^"\s]+)"', text))
    return result


def refusals(client, user) -> list[Found]:
    """The save's refusals of what is not the coder's to name: another coder's handle of a response of the turn,
    the response's id, and a score far out of range, on each of the coder's open turn-level items."""
    patterns = secrets_for(user.get_username())
    found = []
    for assignment in Assignment.objects.filter(coder=user, round__status=Round.Status.OPEN,
                                                turn__session__isnull=True).select_related("round__study", "turn"):
        study, turn = assignment.round.study, assignment.turn
        attribute = study.schema.attributes.filter(unit="response").first()
        other = Assignment.objects.filter(turn=turn).exclude(coder=user).first()
        if attribute is None or other is None:
            continue
        response = turn.responses.first()
        foreign = response_handle(study=study, coder_id=other.coder_id, turn_id=turn.pk, response_id=response.pk)
        url = f"/rounds/{assignment.round_id}/turns/{assignment.position}/save"
        for named in (foreign, str(response.pk)):
            for score in ("1", "99"):
                answer = client.post(url, {"attribute": attribute.code, "response": named, "score": score})
                text = answer.content.decode()
                found += [Found(url, answer.status_code, name, text[:200]) for name, pattern in patterns.items()
                          if pattern.search(text)]
    return found


@pytest.mark.parametrize("username", CODERS)
def test_nothing_a_coder_reaches_holds_what_they_are_blinded_to(client, built, username):
    user = get_user_model().objects.get(username=username)
    client.force_login(user)
    result = crawl(client, username, seeds())
    _, raw = api_services.api_token_create(user=user, name="crawl", scopes=token_scopes_allowed(user), study=None,
                                           expires_at=None, by=None)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    api_result = crawl(api, username, [u for u in seeds() if u.startswith("/api/")])
    own = {f"/rounds/{a.round_id}/turns/{a.position}/" for a in Assignment.objects.filter(coder=user)}
    assert own and own <= result.answered, "the crawl reached every page of the coder's own queues"
    found = result.found + api_result.found + refusals(client, user)
    assert not found
