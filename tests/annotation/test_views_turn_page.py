"""The turn page's weight and cost: its HTML stays small (attribute definitions sent once, not per form), compresses
well, and is built in a fixed number of queries; clearing a score goes through the ordinary save."""

from __future__ import annotations

import gzip
import json
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.core.management import call_command
from django.urls import reverse
from django.utils.html import escape

from annotation import selectors, services
from annotation.models import Assignment, Judgment, JudgmentRevision, Round, Span
from benchmark.models import ModelResponse, Turn
from tests.annotation.test_views import fill_turn, login, parts_html, parts_url

pytestmark = pytest.mark.django_db

# Session, user, assignment, the page's rows (progress, earlier turns, responses, judgments with their spans: one
# statement, ``selectors._turn_page_rows``); the first page of a study's schema in a process also reads its
# attributes and subcategories (kept per process once the schema is frozen).
TURN_PAGE_QUERIES = 4
SCHEMA_QUERIES = 2
MAX_RAW_BYTES = 35_000
MAX_GZIP_BYTES = 8_000


@pytest.fixture(scope="module")
def demo_round_id(shared_state):
    with shared_state():
        call_command("load_demo", "--quiet")
        yield Round.objects.get(study__slug="demo", kind="calibration", number=1).pk


@pytest.fixture
def demo(db, demo_round_id):
    return Round.objects.get(pk=demo_round_id)


def test_a_filled_turn_page_is_light_and_needs_a_fixed_number_of_queries(client, demo, django_assert_num_queries):
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    login(client, "demo-reviewer")
    fill_turn(demo, reviewer, 1)
    url = reverse("turn", args=[demo.pk, 1])
    selectors.schema_attributes_forget()
    with django_assert_num_queries(TURN_PAGE_QUERIES + SCHEMA_QUERIES):
        first = client.get(url)
    with django_assert_num_queries(TURN_PAGE_QUERIES):
        page = client.get(url)
    assert page.status_code == 200
    # The page built from the kept schema is the page built from the database (the CSRF token is masked afresh).
    masked = re.compile(rb"[A-Za-z0-9]{64}")
    assert masked.sub(b"", first.content) == masked.sub(b"", page.content)
    assert page.content.count(b' data-score="1"') + page.content.count(b' data-score="0"') == 80, "every judgment"
    assert page.content.count(b'<section class="unit response-card"') == 5
    raw = len(page.content)
    compressed = len(gzip.compress(page.content))
    print(f"turn page: {raw} bytes, {compressed} gzip, {TURN_PAGE_QUERIES} queries")
    assert raw < MAX_RAW_BYTES, raw
    assert compressed < MAX_GZIP_BYTES, compressed
    # Each attribute's definition and anchors once, in the schema's parts that the page fetches (and the browser
    # keeps from page to page), not on the page and not once per form.
    definition = escape(demo.study.schema.attributes.get(code="AUR").definition).encode()
    assert page.content.count(definition) == 0
    parts = client.get(parts_url(page))
    assert parts.status_code == 200 and parts["Content-Type"].startswith("text/javascript")
    html = parts_html(parts)
    assert html.count(definition) == 1
    assert html.count(b"<template data-code=") == len(selectors.coding_page_schema(study=demo.study)[0])
    print(f"schema parts: {len(parts.content)} bytes, {len(gzip.compress(parts.content))} gzip")


def test_the_schema_parts_are_kept_by_the_browser_while_they_are_the_same_and_only_for_the_rounds_coders(
        client, demo):
    login(client, "demo-reviewer")
    url = parts_url(client.get(reverse("turn", args=[demo.pk, 1])))
    kept = client.get(url)
    assert kept["Cache-Control"] == "private, max-age=31536000, immutable"
    assert b'id="palette"' in parts_html(kept) and b'class="sub"' in parts_html(kept), "an open round: the palette"
    # Another digest (the schema changed since that page was built): the parts as they are, not kept.
    other = client.get(re.sub(r"v=\w+", "v=0123456789abcdef", url))
    assert other.status_code == 200 and other["Cache-Control"] == "private, no-cache"
    assert other.content == kept.content
    read_only = parts_html(client.get(url.replace("editable=1", "editable=0")))
    assert b'id="subcategory-names"' in read_only and b'id="palette"' not in read_only
    client.logout()
    assert client.get(url).status_code == 401, "the page's script asks for a sign-in, it is not redirected"
    login(client, "demo-admin")
    assert client.get(url).status_code == 404, "not a coder of the round"


def fields(instance) -> dict:
    return {f.attname: getattr(instance, f.attname) for f in instance._meta.concrete_fields
            if f.attname not in instance.get_deferred_fields()}


@pytest.mark.parametrize("position", [1, 2])
def test_the_pages_one_statement_reads_what_the_querysets_it_replaced_read(demo, position):
    """Position 2 is turn 2 of a multi-turn conversation: it has an earlier turn. The panel's and the expert's
    judgments of the same turn, and gold, are not the reviewer's; the demo study codes five of the turn's model
    slots."""
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    fill_turn(demo, reviewer, position)
    assignment = Assignment.objects.select_related("round__study", "turn").get(round=demo, coder=reviewer,
                                                                               position=position)
    turn, study = assignment.turn, assignment.round.study
    # A gold value recorded by the reviewer themself is still not one of their judgments.
    services.gold_save(round=demo, by=reviewer, attribute=study.schema.attributes.get(code="U1"), turn=turn,
                       response=None, score=2)
    rows = selectors._turn_page_rows(assignment=assignment, study=study, turn=turn)

    earlier = list(Turn.objects.filter(conversation_id=turn.conversation_id, index__lt=turn.index).order_by("index"))
    assert [fields(t) for t in rows.earlier] == [fields(t) for t in earlier] and (position == 1) == (not earlier)
    responses = selectors.study_responses(study=study, turn_ids=[turn.pk])[turn.pk]
    assert [fields(r) for r in rows.responses] == [fields(r) for r in responses] and len(responses) == 5
    judgments = Judgment.objects.filter(round=demo, coder=reviewer, is_gold=False, turn=turn)
    shown = ("pk", "coder_id", "attribute_id", "response_id", "score", "instance_count", "version")
    assert sorted(tuple(getattr(j, f) for f in shown) for j in rows.judgments) == sorted(
        tuple(getattr(j, f) for f in shown) for j in judgments) and len(rows.judgments) == 80
    spans: dict[int, list[str]] = {}
    for judgment_id, start, end, slug in Span.objects.filter(judgment__in=judgments).order_by(
            "judgment_id", "start", "end").values_list("judgment_id", "start", "end", "subcategory__slug"):
        spans.setdefault(judgment_id, []).append(f"{start} {end} {slug}")
    assert dict(rows.spans) == spans and all(len(s) == 2 for s in spans.values())
    assert rows.progress == selectors.turn_progress(assignment=assignment, conversation_id=turn.conversation_id)


def test_the_turn_page_shows_no_template_comment(client, demo):
    login(client, "demo-reviewer")
    page = client.get(reverse("turn", args=[demo.pk, 1]))
    assert page.status_code == 200
    assert b"{#" not in page.content and b"#}" not in page.content


def test_pages_are_sent_compressed_to_browsers_that_accept_it(client, demo):
    login(client, "demo-reviewer")
    page = client.get(reverse("turn", args=[demo.pk, 1]), headers={"accept-encoding": "gzip"})
    assert page["Content-Encoding"] == "gzip"
    assert b"response-card" in gzip.decompress(page.content)


def test_a_save_without_a_session_answers_401_for_the_page_to_ask_for_a_sign_in(client, demo):
    for name in ("judgment-save", "turn-complete"):
        response = client.post(reverse(name, args=[demo.pk, 1]), {"attribute": "U1", "score": "1"})
        assert response.status_code == 401, name
    assert not Judgment.objects.filter(coder__username="demo-reviewer").exists()


def test_an_empty_score_clears_it_through_the_ordinary_save(client, demo):
    login(client, "demo-reviewer")
    url = reverse("judgment-save", args=[demo.pk, 1])
    assert client.post(url, {"attribute": "U1", "score": "2", "version": "0"}).status_code == 200
    cleared = client.post(url, {"attribute": "U1", "score": "", "version": "1"})
    assert cleared.status_code == 200 and b'data-state="saved"' in cleared.content
    judgment = Judgment.objects.get(coder__username="demo-reviewer", attribute__code="U1")
    assert judgment.score is None and judgment.version == 2


def test_a_save_by_someone_no_longer_in_the_study_is_refused_in_place_not_forbidden(client, demo, monkeypatch):
    """403 makes the page ask for a sign-in; losing membership between the lookup and the save is a refusal."""
    login(client, "demo-reviewer")

    def removed_meanwhile(**_):
        raise PermissionDenied("you are not a member of this study (any more): nothing was saved")

    monkeypatch.setattr(services, "judgment_save", removed_meanwhile)
    response = client.post(reverse("judgment-save", args=[demo.pk, 1]), {"attribute": "U1", "score": "1"})
    assert response.status_code == 422
    assert b'data-state="refused"' in response.content and b"not a member" in response.content


# Session, user, assignment; the round (shared lock) with the judgment (row lock); its
# spans; the update with its history row. The schema and the turn's responses are read once per process and kept.
# A calibration round (this test's) also reads whether a reopening locked the item, in a statement after the
# round's lock: 7 (6 in the main round).
AUTOSAVE_QUERIES = 7


def test_an_autosave_needs_a_fixed_number_of_queries_and_keeps_its_history(client, demo, django_assert_num_queries):
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    login(client, "demo-reviewer")
    fill_turn(demo, reviewer, 1)
    assignment = Assignment.objects.select_related("turn").get(round=demo, coder=reviewer, position=1)
    response = ModelResponse.objects.filter(turn=assignment.turn).order_by("pk").first()
    judgment = Judgment.objects.get(round=demo, coder=reviewer, response=response, attribute__code="TD")
    subs = [s.slug for s in judgment.attribute.subcategories.all()]
    spans = json.dumps([{"start": 0, "end": 5, "subcategory": subs[0]}, {"start": 3, "end": 9, "subcategory": subs[1]}])
    handle = selectors.response_handle(study=demo.study, coder_id=reviewer.pk, turn_id=assignment.turn_id,
                                       response_id=response.pk)
    url = reverse("judgment-save", args=[demo.pk, 1])

    def save(score, version):
        return client.post(url, {"attribute": "TD", "response": handle, "score": str(score), "spans": spans,
                                 "instance_count": "2", "version": str(version)})

    assert save(2, 1).status_code == 200  # the schema and the turn's responses are kept from here on
    # Inside the test's transaction the service's own transaction is a savepoint: SAVEPOINT and RELEASE are two
    # statements more here (BEGIN and COMMIT in production are not counted).
    with django_assert_num_queries(AUTOSAVE_QUERIES + 2):
        answer = save(0, 2)
    assert answer.status_code == 200 and b'data-version="3"' in answer.content
    judgment.refresh_from_db()
    assert (judgment.score, judgment.version, judgment.instance_count) == (0, 3, 2)
    assert sorted(judgment.spans.values_list("start", "end", "subcategory__slug")) == [(0, 5, subs[0]), (3, 9, subs[1])]
    history = list(JudgmentRevision.objects.filter(judgment=judgment).order_by("version")
                   .values_list("version", "changed_by__username", "source", "before__score", "after__score"))
    assert history == [(1, "demo-reviewer", "autosave", None, 1), (2, "demo-reviewer", "autosave", 1, 2),
                       (3, "demo-reviewer", "autosave", 2, 0)]
    after = JudgmentRevision.objects.get(judgment=judgment, version=3).after
    assert after == {"score": 0, "instance_count": 2, "note": "", "spans": [[0, 5, subs[0]], [3, 9, subs[1]]]}
    # A stale tab's save is refused and changes nothing.
    stale = save(1, 2)
    assert stale.status_code == 409
    judgment.refresh_from_db()
    assert (judgment.score, judgment.version) == (0, 3)
