"""The reviewer's pages (annotation/views.py) through Django's test client: the turn view and its endpoints — query
counts, blinding, time on task, saves. (tests/functional/test_turn_page.py drives the same page in Chromium.)"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from annotation import services
from annotation.models import Assignment, Judgment, Round, Study
from annotation.selectors import turn_view
from annotation.services import SpanInput
from benchmark.models import ModelResponse
from tests.conftest import sign_in
from tests.factories import attribute

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def demo_round_id(shared_state):
    with shared_state():
        call_command("load_demo", "--quiet")
        yield Round.objects.get(study__slug="demo", kind="calibration", number=1).pk


@pytest.fixture
def demo(db, demo_round_id):
    """The demo study's open calibration round (loaded once for the module)."""
    return Round.objects.get(pk=demo_round_id)


def login(client, username):
    assert sign_in(client, username, "cab-demo")


def parts_url(page) -> str:
    """The URL of the script that puts the schema's parts (templates, definitions, palette) into a turn page."""
    found = re.search(rb'<div id="coding-parts"></div><script src="([^"]+)">', page.content)
    assert found is not None, "the page names its schema's parts"
    return found.group(1).decode().replace("&amp;", "&")


def parts_html(script) -> bytes:
    """The HTML that the parts' script puts into the page."""
    found = re.fullmatch(rb'document.getElementById\("coding-parts"\).innerHTML = (".*");\n', script.content,
                         re.DOTALL)
    assert found is not None, script.content[:200]
    return json.loads(found.group(1)).encode()


def with_parts(client, page) -> str:
    """A turn page's HTML with its schema's parts put in, as its script puts them in the browser."""
    parts = client.get(parts_url(page))
    assert parts.status_code == 200
    return page.content.decode().replace('<div id="coding-parts"></div>',
                                         f'<div id="coding-parts">{parts_html(parts).decode()}</div>')


def fill_turn(round_, user, position):
    """Score every attribute of a turn, with a span on each response-level attribute."""
    assignment = Assignment.objects.get(round=round_, coder=user, position=position)
    for a in round_.study.schema.attributes.all():
        if a.unit == "turn":
            services.judgment_save(round=round_, by=user, attribute=a, turn=assignment.turn, score=1)
            continue
        for response in ModelResponse.objects.filter(turn=assignment.turn):
            subs = list(a.subcategories.all())
            spans = [SpanInput(0, 5, subs[0].slug), SpanInput(3, 9, subs[1].slug)] if subs else None
            services.judgment_save(round=round_, by=user, attribute=a, response=response, score=1, spans=spans,
                                   instance_count=2 if subs else None)


def test_turn_view_needs_a_fixed_number_of_queries_however_many_judgments(client, demo,
                                                                           django_assert_max_num_queries):
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    expert = get_user_model().objects.get(username="demo-expert")
    login(client, "demo-reviewer")
    url = reverse("turn", args=[demo.pk, 1])
    with django_assert_max_num_queries(11):
        assert client.get(url).status_code == 200
    fill_turn(demo, reviewer, 1)
    with django_assert_max_num_queries(11) as some:
        response = client.get(url)
    assert response.status_code == 200
    assert response.content.count(b' data-score="1"') == 80
    # Many more judgments and spans (this turn's, other turns', other coders') change nothing.
    fill_turn(demo, reviewer, 2)
    fill_turn(demo, expert, 1)
    for judgment in Judgment.objects.filter(coder=reviewer, response__isnull=False, attribute__code="TD"):
        services.judgment_save(round=demo, by=reviewer, attribute=judgment.attribute, response=judgment.response,
                               score=2, spans=[SpanInput(i, i + 2, "directive") for i in range(0, 40, 4)])
    with django_assert_max_num_queries(11) as many:
        assert client.get(url).status_code == 200
    assert len(many.captured_queries) == len(some.captured_queries)


def test_another_reviewers_turns_and_saves_are_unreachable(client, demo, other_reviewer):
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    fill_turn(demo, reviewer, 1)
    client.force_login(other_reviewer)
    for name in ("turn", "queue"):
        args = [demo.pk, 1] if name == "turn" else [demo.pk]
        assert client.get(reverse(name, args=args)).status_code == 404
    response = client.post(reverse("judgment-save", args=[demo.pk, 1]), {"attribute": "U1", "score": "0"})
    assert response.status_code == 404
    assert client.post(reverse("turn-complete", args=[demo.pk, 1])).status_code == 404
    assert Judgment.objects.filter(coder=reviewer, attribute__code="U1").get().score == 1
    assert not Judgment.objects.filter(coder=other_reviewer).exists()


def test_reviewers_and_experts_cannot_open_the_admin(client, demo):
    for username in ("demo-reviewer", "demo-expert"):
        login(client, username)
        response = client.get("/admin/annotation/judgment/")
        assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_save_endpoint_reports_bad_input_specifically_and_writes_nothing(client, demo):
    login(client, "demo-reviewer")
    url = reverse("judgment-save", args=[demo.pk, 1])
    cases = [
        ({"attribute": "U1", "score": "7"}, "U1: score 7 is outside the scale 0–2"),
        ({"attribute": "NOPE", "score": "1"}, "unknown attribute"),
        ({"attribute": "AUR", "score": "1"}, "AUR is coded once per model response"),
        ({"attribute": "U1", "score": "x"}, "is not a whole number"),
        ({"attribute": "AUR", "score": "1", "response": "999999"}, "not part of this turn"),
    ]
    for data, message in cases:
        response = client.post(url, data | {"form_id": "f", "version": "0"})
        assert response.status_code == 422, data
        assert message in response.content.decode(), (data, response.content)
    assert not Judgment.objects.filter(coder__username="demo-reviewer").exists()


def test_saving_in_a_closed_round_is_refused(client, demo):
    login(client, "demo-reviewer")
    Round.objects.filter(pk=demo.pk).update(status="closed")
    response = client.post(reverse("judgment-save", args=[demo.pk, 1]), {"attribute": "U1", "score": "1"})
    assert response.status_code == 422 and "can no longer change" in response.content.decode()
    page = client.get(reverse("turn", args=[demo.pk, 1]))
    assert b"read-only" in page.content and b"Complete turn" not in page.content


def test_time_on_task_accumulates_bounded_by_the_cap_and_the_wall_clock(client, demo):
    login(client, "demo-reviewer")
    url = reverse("turn-time", args=[demo.pk, 1])
    assignment = Assignment.objects.filter(round=demo, coder__username="demo-reviewer", position=1)
    assert client.post(url, {"seconds": "100000"}).status_code == 204
    assert assignment.get().active_seconds == services.MAX_TIME_BEAT_SECONDS  # one report: two minutes at most
    for _ in range(50):  # fifty reports of two minutes each, sent in a fraction of a second
        assert client.post(url, {"seconds": "120"}).status_code == 204
    assert assignment.get().active_seconds <= services.MAX_TIME_BEAT_SECONDS + 50
    assignment.update(time_reported_at=timezone.now() - timedelta(seconds=30))
    before = assignment.get().active_seconds
    assert client.post(url, {"seconds": "100"}).status_code == 204
    assert before + 30 <= assignment.get().active_seconds <= before + 31  # thirty seconds passed, not a hundred
    assert client.post(url, {"seconds": "-50"}).status_code == 204
    assert client.post(url, {"seconds": "abc"}).status_code == 422


def test_time_on_task_is_refused_once_the_round_is_closed(client, demo):
    login(client, "demo-reviewer")
    Round.objects.filter(pk=demo.pk).update(status="closed")
    refused = client.post(reverse("turn-time", args=[demo.pk, 1]), {"seconds": "15"})
    assert refused.status_code == 409 and "no longer recorded" in refused.content.decode()
    assert Assignment.objects.get(round=demo, coder__username="demo-reviewer", position=1).active_seconds == 0


def test_responses_are_shuffled_per_reviewer_but_stable(client, demo, other_reviewer):
    login(client, "demo-reviewer")
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    shuffled = []
    # Under a few study keys: the queue's two turns share an order by chance one time in 120, under all of them
    # hardly ever.
    for n in range(4):
        Study.objects.filter(pk=demo.study_id).update(blinding_key=hashlib.sha256(f"key {n}".encode()).hexdigest())
        orders = [tuple(c.response.model_slot for c in turn_view(round_id=demo.pk, user=reviewer, position=p).cards)
                  for p in (1, 2)]
        again = [tuple(c.response.model_slot for c in turn_view(round_id=demo.pk, user=reviewer, position=p).cards)
                 for p in (1, 2)]
        assert orders == again
        shuffled.append(orders[0] != orders[1])
    assert any(shuffled)
    labels = [c.label for c in turn_view(round_id=demo.pk, user=reviewer, position=1).cards]
    assert labels == ["Response A", "Response B", "Response C", "Response D", "Response E"]


def test_instance_count_and_span_warnings_need_confirmation(client, demo):
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    fill_turn(demo, reviewer, 1)
    judgment = Judgment.objects.filter(coder=reviewer, attribute__code="AUR").first()
    judgment.instance_count = 5
    judgment.save()
    login(client, "demo-reviewer")
    url = reverse("turn-complete", args=[demo.pk, 1])
    response = client.post(url)
    assert "instance count 5 but 2 span(s)" in response.content.decode()
    assert not Assignment.objects.get(round=demo, coder=reviewer, position=1).completed_at
    response = client.post(url, {"confirm": "1"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 204 and response["HX-Redirect"].endswith("/turns/2/")
    assert Assignment.objects.get(round=demo, coder=reviewer, position=1).completed_at


def test_spans_attribute_mismatch_message_through_the_endpoint(client, demo):
    login(client, "demo-reviewer")
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    handle = turn_view(round_id=demo.pk, user=reviewer, position=1).cards[0].handle
    response = client.post(reverse("judgment-save", args=[demo.pk, 1]), {
        "attribute": "AUR", "response": handle, "score": "1", "version": "0",
        "spans": '[{"start": 0, "end": 4, "subcategory": "directive"}]'})
    assert response.status_code == 422
    assert "subcategory &#x27;directive&#x27; is not one of this attribute" in response.content.decode()
    assert not attribute("AUR").judgments.filter(coder__username="demo-reviewer").exists()
