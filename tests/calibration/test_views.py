"""The calibration protocol's pages (calibration/views.py): admins only, forms call the services, errors are shown —
on a synthetic study with two closed calibration rounds and a metric run, built once for the module.
(tests/functional/test_calibration_pages.py drives the workshop and panel pages in Chromium.)"""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.urls import reverse
from django.utils.html import escape

from annotation.models import Assignment, Judgment, Round, Span, Study, StudyMember, WorkshopNote
from annotation.services import judgments_purge, study_member_remove
from audit.models import AuditEvent
from benchmark.models import ModelResponse
from calibration import selectors as calibration_selectors
from calibration import services as calibration_services
from calibration.views import PAGE_SIZE
from tests import scenarios
from tests.factories import AssignmentFactory, SpanFactory, attribute

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def synthetic_study_id(shared_state):
    with shared_state():
        yield scenarios.synthetic_calibrated_study().pk


@pytest.fixture
def synthetic(db, synthetic_study_id):
    """``syn`` (tests/scenarios.py): two closed calibration rounds, a main round, a metric run, no panel yet."""
    return Study.objects.get(pk=synthetic_study_id)


def test_calibration_pages_are_for_study_admins_only(client, synthetic, reviewer, researcher):
    round_ = synthetic.rounds.get(kind="calibration", number=1)
    urls = [reverse("study-dashboard", args=["syn"]), reverse("panel", args=["syn"]),
            reverse("consensus", args=[round_.pk]), reverse("workshop", args=[round_.pk]),
            reverse("memo", args=[round_.pk, "md"])]
    for user in (reviewer, researcher):
        client.force_login(user)
        for url in urls:
            assert client.get(url).status_code == 403, (user, url)
        response = client.post(reverse("round-create", args=["syn"]), {"number": "3"})
        assert response.status_code == 403
    assert not Round.objects.filter(study=synthetic, number=3).exists()


def test_study_dashboard_lists_the_rounds_and_time_on_task(client, synthetic, admin_user):
    client.force_login(admin_user)
    assignment = Assignment.objects.filter(round__study=synthetic, round__kind="main").first()
    Assignment.objects.filter(pk=assignment.pk).update(active_seconds=150, completed_at="2026-01-01T00:00Z")
    dashboard = client.get(reverse("study-dashboard", args=["syn"])).content.decode()
    assert "calibration-2" in dashboard
    assert f"<td>main</td><td>{assignment.coder.username}</td>" in dashboard and "<td>2.5</td>" in dashboard


def test_workshop_page_shows_differences_from_gold_with_the_reviewers_spans(client, synthetic, admin_user):
    client.force_login(admin_user)
    round_ = synthetic.rounds.get(kind="calibration", number=1)
    workshop = client.get(reverse("workshop", args=[round_.pk]) + "?attribute=AUR")
    assert workshop.status_code == 200 and b"AUR" in workshop.content and b"differ from gold" in workshop.content
    assert b'class="seg hl hl-' in workshop.content, "reviewers' spans are overlaid on the response text"


def test_a_workshop_note_is_saved_and_appears_in_the_memo(client, synthetic, admin_user):
    client.force_login(admin_user)
    round_ = synthetic.rounds.get(kind="calibration", number=1)
    item = Judgment.objects.filter(round=round_, is_gold=True, attribute__code="AUR").first()
    response = client.post(reverse("workshop-note", args=[round_.pk]), {
        "attribute": "AUR", "turn": item.turn_id, "response": item.response_id, "text": "Anchor 1 = hedged."},
        HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and WorkshopNote.objects.get(round=round_).text == "Anchor 1 = hedged."
    assert f"Note saved on AUR · {item.turn}." in response.content.decode(), "htmx gets the outcome beside the note"
    memo = client.get(reverse("memo", args=[round_.pk, "md"]))
    assert memo["Content-Disposition"].startswith("attachment") and "Anchor 1 = hedged." in memo.content.decode()
    assert b"Anchor 1 = hedged." in client.get(reverse("memo", args=[round_.pk, "html"])).content


def test_two_admins_editing_one_workshop_note_never_replace_each_others_words(client, synthetic, admin_user):
    client.force_login(admin_user)
    round_ = synthetic.rounds.get(kind="calibration", number=1)
    item = Judgment.objects.filter(round=round_, is_gold=True, attribute__code="AUR").first()
    url = reverse("workshop-note", args=[round_.pk])
    note = {"attribute": "AUR", "turn": item.turn_id, "response": item.response_id}
    page = client.get(reverse("workshop", args=[round_.pk]) + "?attribute=AUR").content.decode()
    assert '<span class="note-state"><input type="hidden" name="shown" value="">' in page
    # Admin A saves on a page that showed no note: the answer carries the stored text for A's next save.
    first = client.post(url, {**note, "text": "A: hedge is 1", "shown": ""}, HTTP_HX_REQUEST="true")
    assert first.status_code == 200 and 'name="shown" value="A: hedge is 1"' in first.content.decode()
    # Admin B's page was opened before A saved: B's save is refused and A's words stay.
    stale = client.post(url, {**note, "text": "B: hedge is 2", "shown": ""}, HTTP_HX_REQUEST="true")
    assert stale.status_code == 422 and "changed meanwhile; reload" in stale.content.decode()
    assert 'name="shown" value=""' in stale.content.decode()  # B's form still compares with what B saw
    assert WorkshopNote.objects.get(round=round_).text == "A: hedge is 1"
    # A edits again from the answer's value; removing compares too.
    assert client.post(url, {**note, "text": "A: hedge is 1 (agreed)", "shown": "A: hedge is 1"},
                       HTTP_HX_REQUEST="true").status_code == 200
    assert client.post(url, {**note, "text": "", "shown": "A: hedge is 1"}, HTTP_HX_REQUEST="true").status_code == 422
    assert WorkshopNote.objects.get(round=round_).text == "A: hedge is 1 (agreed)"


def test_panel_page_ranks_every_reviewer_with_the_bootstrap_top_k(client, synthetic, admin_user):
    client.force_login(admin_user)
    panel = client.get(reverse("panel", args=["syn"]))
    assert panel.status_code == 200 and b"Top-4 / 5 / 6" in panel.content
    ranking = [line for line in panel.content.decode().splitlines() if 'name="retain"' in line]
    assert len(ranking) == 7


def test_retaining_anything_but_the_top_k_needs_a_reason_shown_on_the_page(client, synthetic, admin_user):
    client.force_login(admin_user)
    response = client.post(reverse("panel-retain", args=["syn"]), {"retain": ["syn-r01"], "k": "3"}, follow=True)
    assert "give the reason" in response.content.decode()
    assert not StudyMember.objects.filter(study=synthetic, retained=True).exists(), "nothing changes"
    state = response.context["change"].state
    response = client.post(reverse("panel-retain", args=["syn"]), {
        "retain": ["syn-r01"], "k": "3", "confirm": "1", "state": state, "reason": "only one reviewer is available"},
        follow=True)
    assert "Retained panel saved" in response.content.decode()
    assert AuditEvent.objects.filter(study_slug="syn", action="panel.retain", data__overridden=True).exists()


def test_consensus_page_records_gold_and_reports_bad_values(client, admin_user, expert):
    call_command("load_demo", "--quiet")
    round_ = Round.objects.get(study__slug="demo", kind="calibration")
    client.force_login(admin_user)
    page = client.get(reverse("consensus", args=[round_.pk]) + "?show=all")
    assert page.status_code == 200 and b"demo-expert" in page.content
    turn = round_.items.first().turn
    url = reverse("gold-record", args=[round_.pk])
    response = client.post(url, {"attribute": "U1", "turn": turn.pk, "score": "9", "agreed": ["demo-expert"]},
                           follow=True)
    assert "U1: score 9 is outside the scale 0–2" in response.content.decode()
    client.post(url, {"attribute": "U1", "turn": turn.pk, "score": "2", "agreed": ["demo-expert"], "note": "clear"})
    gold = Judgment.objects.get(round=round_, is_gold=True, attribute__code="U1", turn=turn)
    assert gold.score == 2 and gold.note == "clear" and [u.username for u in gold.agreed_by.all()] == ["demo-expert"]



def test_the_consensus_page_keeps_an_expert_taken_off_and_names_them_as_agreeing(client, admin_user):
    """Their column stays, marked, and "who agreed" may name them: their codings count for the round's gold. Having
    left, they agreed to their own score only: another value naming them is refused, the page says why
    (docs/reference.md#gold)."""
    call_command("load_demo", "--quiet")
    round_ = Round.objects.get(study__slug="demo", kind="calibration")
    study_member_remove(
        member=StudyMember.objects.get(study=round_.study, user__username="demo-expert"), by=admin_user)
    client.force_login(admin_user)
    page = client.get(reverse("consensus", args=[round_.pk]) + "?show=all").content.decode()
    assert re.search(r"<th>demo-expert <span [^>]*>\(taken off\)</span></th>", page)
    turn = round_.items.first().turn
    own = Judgment.objects.get(round=round_, is_gold=False, coder__username="demo-expert", attribute__code="U1",
                               turn=turn).score
    other = (own + 1) % 3
    refused = client.post(reverse("gold-record", args=[round_.pk]), {
        "attribute": "U1", "turn": turn.pk, "score": str(other), "agreed": ["demo-expert"], "version": "0"},
        follow=True).content.decode()
    assert f"demo-expert, taken off the study since, scored {own}, not {other}" in refused
    assert not Judgment.objects.filter(round=round_, is_gold=True, attribute__code="U1", turn=turn).exists()
    client.post(reverse("gold-record", args=[round_.pk]),
                {"attribute": "U1", "turn": turn.pk, "score": str(own), "agreed": ["demo-expert"], "version": "0"})
    gold = Judgment.objects.get(round=round_, is_gold=True, attribute__code="U1", turn=turn)
    assert [u.username for u in gold.agreed_by.all()] == ["demo-expert"]


def test_the_consensus_page_flags_gold_whose_who_agreed_no_longer_holds_and_shows_each_experts_score(
        client, admin_user):
    """"Who agreed" is checked when gold is recorded (docs/reference.md#gold), but a change afterwards can leave it
    stale: an expert who agreed to a value they did not code, taken off the study since (they agreed to their own
    score only), or a name recorded before the rule (here: a reviewer, written as an older version could). Before,
    the page showed such gold like any other, and its form offered the experts without their scores, so recording
    it again was refused without the admin seeing why. Now each such item says what no longer holds, the page counts
    them and lists them under their own filter, and the form shows each expert's own score."""
    call_command("load_demo", "--quiet")
    round_ = Round.objects.get(study__slug="demo", kind="calibration")
    turn = round_.items.order_by("position").first().turn
    expert = StudyMember.objects.get(study=round_.study, user__username="demo-expert")
    own = Judgment.objects.get(round=round_, is_gold=False, coder=expert.user, attribute__code="U1", turn=turn).score
    other = (own + 1) % 3
    gold = calibration_services.gold_record(round=round_, by=admin_user, attribute=attribute("U1"), turn=turn,
                                            response=None, score=other, agreed_by=[expert.user])
    client.force_login(admin_user)
    url = reverse("consensus", args=[round_.pk])
    page = client.get(url + "?show=all").content.decode()
    assert "stale-agreement" not in page
    assert re.search(rf'value="demo-expert" checked> demo-expert <span class="muted">\(coded {own}\)</span>', page)

    study_member_remove(member=expert, by=admin_user)
    reviewer = StudyMember.objects.filter(study=round_.study, role="reviewer").first().user
    gold.agreed_by.add(reviewer)  # as an older version could record it
    page = client.get(url + "?show=stale").content.decode()
    said = (f"demo-expert, taken off the study since, scored {own}, not {other}; {reviewer.username} is not an "
            "expert of the study (now or before)")
    assert f"\"Who agreed\" no longer holds: {said}. Record the gold again" in page
    assert 'on 1 the recorded "who agreed" no longer holds' in page
    assert page.count('class="gold-form"') == 1
    # the name the panel does not hold stays in the form, checked, so that recording again says why, not drops it
    assert re.search(rf'value="{reviewer.username}" checked> {reviewer.username} <span class="muted">\(not '
                     r'scored\)</span>', page)
    refused = client.post(reverse("gold-record", args=[round_.pk]), {
        "attribute": "U1", "turn": turn.pk, "score": str(other), "agreed": ["demo-expert"],
        "version": str(gold.version)}, follow=True).content.decode()
    assert f"demo-expert, taken off the study since, scored {own}, not {other}" in refused
    unticked = client.post(reverse("gold-record", args=[round_.pk]), {  # the form as shown: every name ticked
        "attribute": "U1", "turn": turn.pk, "score": str(other), "agreed": [reviewer.username],
        "version": str(gold.version)}, follow=True).content.decode()
    assert (f"who agreed: {reviewer.username} is not an expert of the study (now or before): untick them"
            in unticked), unticked[-3000:]
    assert Judgment.objects.get(pk=gold.pk).version == gold.version
    client.post(reverse("gold-record", args=[round_.pk]),
                {"attribute": "U1", "turn": turn.pk, "score": str(other), "version": str(gold.version)})
    assert "stale-agreement" not in client.get(url + "?show=all").content.decode()
    assert client.get(url + "?show=stale").content.decode().count('class="gold-form"') == 0


def test_gold_on_a_model_the_study_does_not_code_is_refused_by_the_page_and_the_service(client, admin_user):
    """A turn may have responses of models the study does not code (its model slots): the coders never see them,
    so no gold value or workshop note is recorded on one; the page says why and nothing is written."""
    call_command("load_demo", "--quiet")
    round_ = Round.objects.get(study__slug="demo", kind="calibration")
    turn = round_.items.first().turn
    other = ModelResponse.objects.create(turn=turn, model_slot="Mistral", text="A response nobody codes.")
    client.force_login(admin_user)
    before = (list(Judgment.objects.filter(is_gold=True).values_list("pk", "score", "version")),
              WorkshopNote.objects.count())
    response = client.post(reverse("gold-record", args=[round_.pk]),
                           {"attribute": "AUR", "turn": turn.pk, "response": other.pk, "score": "1"}, follow=True)
    assert "the study does not code model &#x27;Mistral&#x27;" in response.content.decode()
    with pytest.raises(ValidationError, match="the study does not code model 'Mistral'"):
        calibration_services.gold_record(round=round_, by=admin_user, attribute=attribute("AUR"), turn=turn,
                                         response=other, score=1, reason="a closed round's gold needs one")
    assert (list(Judgment.objects.filter(is_gold=True).values_list("pk", "score", "version")),
            WorkshopNote.objects.count()) == before

def test_reviewer_feedback_page_shows_own_agreement_only_after_close(client, synthetic):
    user = get_user_model().objects.get(username="syn-r01")
    client.force_login(user)
    round_2 = synthetic.rounds.get(kind="calibration", number=2)
    page = client.get(reverse("feedback", args=[round_2.pk])).content.decode()
    assert "Agreement with gold over" in page and "Change since calibration-1" in page
    assert "syn-r02" not in page, "other reviewers are never named"


def test_feedback_of_a_reviewer_who_scored_nothing_says_so_not_that_every_item_matched_gold(client, synthetic,
                                                                                             reviewer):
    """A reviewer who coded none of a closed round's items (added after it, or never started, as demo-reviewer in the
    README's walk-through) is told there is nothing to compare; before, the page showed an agreement over 0 items
    and 'None — every item matched gold.'"""
    StudyMember.objects.create(study=synthetic, user=reviewer, role="reviewer", alias="R99")
    round_1 = synthetic.rounds.get(kind="calibration", number=1)
    assert not Judgment.objects.filter(round=round_1, coder=reviewer).exists()
    client.force_login(reviewer)
    page = client.get(reverse("feedback", args=[round_1.pk])).content.decode()
    assert "You scored none of calibration-1's items that have gold: there is nothing to compare." in page
    assert "every item matched gold" not in page and "Agreement with gold over" not in page


def test_a_closed_main_round_with_gold_shows_its_reviewers_no_feedback(client, synthetic):
    """A main round's gold (a judgments import may put some there) is not its reviewers' to see: after a reopening
    nothing would stop them coding to it (the feedback lock is a calibration round's). Before, the page showed it."""
    user = get_user_model().objects.get(username="syn-r01")
    main = synthetic.rounds.get(kind="main")
    mine = Judgment.objects.filter(round=main, coder=user, score__isnull=False).first()
    assert mine is not None
    Judgment.objects.create(round=main, coder=synthetic.members.filter(role="expert").first().user, is_gold=True,
                            attribute=mine.attribute, conversation=mine.conversation, turn=mine.turn,
                            response=mine.response, session=mine.session, score=mine.score)
    Round.objects.filter(pk=main.pk).update(status=Round.Status.CLOSED)
    client.force_login(user)
    page = client.get(reverse("feedback", args=[main.pk])).content.decode()
    assert "feedback is given on calibration rounds only" in page and "Agreement with gold" not in page


def test_dashboard_forms_answer_bad_input_specifically_and_change_nothing(client, synthetic, admin_user):
    client.force_login(admin_user)
    draft = Round.objects.create(study=synthetic, kind="calibration", number=3)
    closed = synthetic.rounds.get(number=1, kind="calibration")
    cases = [
        ("round-sample", draft, {"n": "ten"}, "set size: Enter a whole number."),
        ("round-sample", draft, {"n": "9000"}, "were asked for"),
        ("round-refs", draft, {"refs": "nonsense\nSynthetic single-turn/nope#1"},
         "is not DATASET/CONVERSATION_ID#TURN"),
        ("round-open", draft, {}, "has no calibration set yet"),
        ("round-reopen", closed, {"reason": ""}, "say why the round is reopened"),
    ]
    for name, round_, data, message in cases:
        url = reverse(name, args=["syn", round_.pk])
        page = client.post(url, data, follow=True).content.decode()
        assert message in page.replace("&#x27;", "'"), (data, message)
    assert client.post(f"/studies/syn/rounds/{draft.pk}/explode").status_code == 404, "one URL per action"
    assert not draft.items.exists() and draft.status == "draft"
    assert synthetic.rounds.get(number=1, kind="calibration").status == "closed"
    main_url = reverse("main-round-assign", args=["syn"])
    assert "double-coded share: Enter a number." in client.post(main_url, {"overlap": "lots"},
                                                                follow=True).content.decode()
    assert "double-coded share: Ensure this value is less than or equal to 1" in client.post(
        main_url, {"overlap": "2"}, follow=True).content.decode()
    assert "select the retained panel first" in client.post(main_url, {"overlap": "0.1"}, follow=True).content.decode()


# --- paged lists: consensus, workshop and feedback -------------------------------------------------------------


def rows_of(page: str) -> list[str]:
    """The item anchors of a list page, in order."""
    return re.findall(r'id="item-([^"]+)"', page)


def test_consensus_pages_say_how_many_items_match_and_link_the_next_page(client, synthetic, admin_user):
    client.force_login(admin_user)
    round_ = synthetic.rounds.get(kind="calibration", number=1)
    total = len(calibration_selectors.consensus_items(round=round_))
    pages = -(-total // PAGE_SIZE)
    assert pages > 2
    url = reverse("consensus", args=[round_.pk])
    first = client.get(url + "?show=all").content.decode()
    assert f"<strong>{total}</strong> items match · showing 1–{PAGE_SIZE}, page 1 of {pages}" in first
    assert first.count('class="gold-form"') == len(rows_of(first)) == PAGE_SIZE
    assert 'href="?show=all&amp;page=2" rel="next"' in first, "the next page keeps the filter"
    second = client.get(url + "?show=all&page=2").content.decode()
    assert f"showing {PAGE_SIZE + 1}–{2 * PAGE_SIZE}, page 2 of {pages}" in second
    assert not set(rows_of(first)) & set(rows_of(second))
    last = client.get(url + "?show=all&page=999").content.decode()
    assert f"page {pages} of {pages}" in last and len(rows_of(last)) == total - (pages - 1) * PAGE_SIZE


def test_recording_gold_comes_back_to_the_same_filter_page_and_item_saying_what_changed(client, synthetic, admin_user):
    client.force_login(admin_user)
    round_ = synthetic.rounds.get(kind="calibration", number=1)
    items = calibration_selectors.consensus_items(round=round_)
    item, following = items[PAGE_SIZE + 1], items[PAGE_SIZE + 2]
    score = next(value for value in item.attribute.scale if value != item.gold.score)
    url = reverse("consensus", args=[round_.pk])
    response = client.post(reverse("gold-record", args=[round_.pk]), {
        "attribute": item.attribute.code, "turn": item.turn.pk, "response": item.response.pk if item.response else "",
        "score": score, "version": item.gold.version, "reason": "the workshop read the anchor again",
        "back": "?show=all&page=2", "item": item.key, "following": following.key})
    assert response.status_code == 302
    assert response["Location"] == f"{url}?show=all&page=2#item-{item.key}"
    page = client.get(response["Location"]).content.decode()
    assert f"Gold {item.attribute.code} = {score} recorded for {item.turn}" in page
    assert item.key in rows_of(page) and "page 2 of" in page


def test_recording_gold_in_the_list_without_gold_comes_back_to_the_next_item(client, synthetic, admin_user):
    client.force_login(admin_user)
    round_ = synthetic.rounds.get(kind="calibration", number=1)
    judgments_purge(judgments=Judgment.objects.filter(
        pk__in=Judgment.objects.filter(round=round_, is_gold=True).values("pk")[:3]), by=None,
        reason="test: items without gold")
    open_items = [i for i in calibration_selectors.consensus_items(round=round_) if i.gold is None]
    first, second = open_items[:2]
    url = reverse("consensus", args=[round_.pk])
    assert rows_of(client.get(url).content.decode()) == [i.key for i in open_items], "without gold by default"
    response = client.post(reverse("gold-record", args=[round_.pk]), {
        "attribute": first.attribute.code, "turn": first.turn.pk,
        "response": first.response.pk if first.response else "", "score": first.attribute.scale[0],
        "reason": "decided in the workshop", "back": "?show=open&page=1", "item": first.key,
        "following": second.key})
    assert response["Location"] == f"{url}?show=open&page=1#item-{second.key}"
    page = client.get(response["Location"]).content.decode()
    assert rows_of(page) == [i.key for i in open_items[1:]] and "recorded for" in page


def test_a_refused_gold_record_comes_back_to_the_item_with_the_reason(client, synthetic, admin_user):
    client.force_login(admin_user)
    round_ = synthetic.rounds.get(kind="calibration", number=1)
    item = calibration_selectors.consensus_items(round=round_)[3]
    response = client.post(reverse("gold-record", args=[round_.pk]), {
        "attribute": item.attribute.code, "turn": item.turn.pk, "response": item.response.pk if item.response else "",
        "score": "99", "reason": "typo", "back": "?show=differ&page=1&evil=1", "item": item.key, "following": "x"})
    assert response["Location"] == f"{reverse('consensus', args=[round_.pk])}?show=differ&page=1#item-{item.key}"
    assert "outside the scale" in client.get(response["Location"]).content.decode()


def test_experts_read_a_closed_rounds_consensus_only_when_the_study_allows_it(client, synthetic, admin_user):
    round_ = synthetic.rounds.get(kind="calibration", number=1)
    expert = get_user_model().objects.get(username="syn-e1")
    url = reverse("consensus", args=[round_.pk])
    client.force_login(expert)
    assert client.get(url).status_code == 403, "off by default"
    Study.objects.filter(pk=synthetic.pk).update(experts_see_consensus=True)
    page = client.get(url)
    assert page.status_code == 200
    html = page.content.decode()
    assert "Read-only" in html and rows_of(html), "every item, read-only"
    assert 'class="gold-form"' not in html and 'name="score"' not in html and "accept-unanimous" not in html
    assert not any(f" · {model}</td>" in html for model in synthetic.model_slots), "responses named as they saw them"
    every = client.get(url + "?show=all&page=1").content.decode()
    pks = set(ModelResponse.objects.filter(turn__round_items__round=round_).values_list("pk", flat=True))
    shown = {int(m) for m in re.findall(r'id="item-\d+-(\d+)-', every) if m.isdigit()}
    assert not shown & pks, "no response id reaches the expert"
    letters = re.findall(r"· (Response [A-E])</td>\s*<td[^>]*>AUR", every)
    assert letters and letters == sorted(letters), "each turn's responses in the order the expert saw them"
    item = calibration_selectors.consensus_items(round=round_)[0]
    gold = {"attribute": item.attribute.code, "turn": item.turn.pk, "score": "0", "reason": "mine"}
    assert client.post(reverse("gold-record", args=[round_.pk]), gold).status_code == 403
    assert client.post(reverse("gold-accept-unanimous", args=[round_.pk])).status_code == 403
    client.force_login(get_user_model().objects.get(username="syn-r01"))
    assert client.get(url).status_code == 403, "reviewers never"
    client.force_login(admin_user)
    assert 'class="gold-form"' in client.get(url + "?show=all").content.decode(), "admins keep the forms"
    Round.objects.filter(pk=round_.pk).update(status="open")
    client.force_login(expert)
    assert client.get(url).status_code == 403, "not while the round is open"


def test_an_expert_gets_no_feedback_page_so_no_gold_where_the_study_keeps_the_consensus_from_experts(client,
                                                                                                    synthetic):
    """Feedback compares one's codings with gold: an expert's would show the panel's consensus, which experts see
    only on the consensus screen and only where the study lets them (``experts_see_consensus``, off here)."""
    round_ = synthetic.rounds.get(kind="calibration", number=1)
    expert = get_user_model().objects.get(username="syn-e1")
    client.force_login(expert)
    assert client.get(reverse("consensus", args=[round_.pk])).status_code == 403
    answer = client.get(reverse("feedback", args=[round_.pk]))
    assert answer.status_code == 404
    assert "gold" not in answer.content.decode().lower()
    client.force_login(get_user_model().objects.get(username="syn-r01"))
    assert "Agreement with gold over" in client.get(reverse("feedback", args=[round_.pk])).content.decode()


def test_workshop_pages_every_item_and_says_how_many_match(client, synthetic, admin_user):
    client.force_login(admin_user)
    round_ = synthetic.rounds.get(kind="calibration", number=1)
    total = len(calibration_selectors.workshop_items(round=round_))
    pages = -(-total // PAGE_SIZE)
    url = reverse("workshop", args=[round_.pk])
    first = client.get(url + "?reveal=1").content.decode()
    assert f"<strong>{total}</strong> items with gold match · showing 1–{PAGE_SIZE}, page 1 of {pages}" in first
    assert len(rows_of(first)) == PAGE_SIZE and 'href="?reveal=1&amp;page=2" rel="next"' in first
    last = client.get(url + f"?reveal=1&page={pages}").content.decode()
    assert len(rows_of(last)) == total - (pages - 1) * PAGE_SIZE, "nothing is cut off"


def test_workshop_hides_model_names_unless_the_admin_shows_them(client, synthetic, admin_user):
    client.force_login(admin_user)
    round_ = synthetic.rounds.get(kind="calibration", number=1)
    url = reverse("workshop", args=[round_.pk]) + "?attribute=AUR"
    hidden = client.get(url).content.decode()
    labels = re.findall(r"turn \d+ · ([^<]+)</span>", hidden)
    assert labels and all(label.startswith("Response ") for label in labels)
    assert not any(f" · {model}<" in hidden for model in synthetic.model_slots)
    assert re.search(r"R\d+: \d", hidden), "reviewers keep their aliases"
    shown = client.get(url + "&models=1").content.decode()
    assert set(re.findall(r"turn \d+ · ([^<]+)</span>", shown)) <= set(synthetic.model_slots)
    assert rows_of(shown) == rows_of(hidden), "the same items, only named differently"


def test_a_workshop_note_without_javascript_comes_back_to_the_same_filter_page_and_item(client, synthetic,
                                                                                         admin_user):
    client.force_login(admin_user)
    round_ = synthetic.rounds.get(kind="calibration", number=1)
    item = calibration_selectors.workshop_items(round=round_)[PAGE_SIZE]
    response = client.post(reverse("workshop-note", args=[round_.pk]), {
        "attribute": item.attribute.code, "turn": item.turn.pk, "response": item.response.pk if item.response else "",
        "text": "Hedging counts once.", "back": "?reveal=1&models=1&page=2", "item": item.key})
    assert response["Location"] == f"{reverse('workshop', args=[round_.pk])}?reveal=1&models=1&page=2#item-{item.key}"
    page = client.get(response["Location"]).content.decode()
    assert f"Note saved on {item.attribute.code} · {item.turn}." in page and "Hedging counts once." in page


def test_feedback_shows_the_reviewers_own_and_the_expert_panels_highlights_and_no_one_elses(client, synthetic):
    round_ = synthetic.rounds.get(kind="calibration", number=1)
    users = {u.username: u for u in get_user_model().objects.filter(username__in=["syn-r01", "syn-r02", "syn-e1"])}
    me = users["syn-r01"]
    differences = calibration_selectors.reviewer_feedback(round=round_, user=me).differences
    assert len(differences) > PAGE_SIZE
    index, d = next((i, d) for i, d in enumerate(differences)
                    if d["response"] is not None and d["attribute"].subcategories.exists())
    unit = {"round": round_, "is_gold": False, "turn": d["turn"], "response": d["response"],
            "attribute": d["attribute"]}
    # By id: the planner's statistics of the freshly built (uncommitted) study are empty, and the joined DELETE
    # it would plan then runs for minutes.
    judgments = list(Judgment.objects.filter(round=round_, response=d["response"]).values_list("pk", flat=True))
    Span.objects.filter(judgment_id__in=judgments).delete()
    sub = d["attribute"].subcategories.first()
    SpanFactory(judgment=Judgment.objects.get(coder=me, **unit), subcategory=sub, start=0, end=4)
    SpanFactory(judgment=Judgment.objects.get(coder=users["syn-e1"], **unit), subcategory=sub, start=2, end=8)
    SpanFactory(judgment=Judgment.objects.get(coder=users["syn-r02"], **unit), subcategory=sub, start=10, end=14)
    client.force_login(me)
    page = client.get(reverse("feedback", args=[round_.pk]) + f"?page={index // PAGE_SIZE + 1}").content.decode()
    assert f"<strong>{len(differences)}</strong> differences · showing {index // PAGE_SIZE * PAGE_SIZE + 1}–" in page
    text = d["response"].text
    assert (f'<blockquote class="response-excerpt"><span class="mark-mine" title="you: {sub.name}">{escape(text[:2])}'
            f'</span><span class="mark-mine mark-expert" title="you: {sub.name}; an expert: {sub.name}">'
            f'{escape(text[2:4])}</span><span class="mark-expert" title="an expert: {sub.name}">{escape(text[4:8])}'
            f"</span>{escape(text[8:])}</blockquote>") in page, "the other reviewer's span [10, 14) is not shown"
    assert "underlined</span> passages are your highlights" in page and "boxed</span> passages" in page
    conversation = d["turn"].conversation
    named = f"{conversation.dataset.name}/{escape(conversation.external_id)} turn {d['turn'].index}, {d['label']}"
    assert named in page, "each difference names its conversation"
    assert "syn-r02" not in page and "syn-e1" not in page, "nobody else is named"


def test_workshop_shows_the_reviewers_comments_and_flags_on_each_item_under_their_alias(client, synthetic,
                                                                                       admin_user):
    round_ = synthetic.rounds.get(kind="calibration", number=1)
    first = calibration_selectors.workshop_items(round=round_, attribute="AUR")[0]
    members = list(StudyMember.objects.filter(study=synthetic, role="reviewer").select_related("user")
                   .order_by("pk")[:3])
    # (written directly: the round is closed now, the reviewers wrote them while it was open)
    AssignmentFactory(round=round_, coder=members[0].user, turn=first.turn, comment="<b>Cut off</b> mid-sentence?",
                      flags=["discuss", "unsure"])
    AssignmentFactory(round=round_, coder=members[1].user, turn=first.turn, flags=["truncated"])
    AssignmentFactory(round=round_, coder=members[2].user, turn=first.turn)  # no note: not listed
    client.force_login(admin_user)
    url = reverse("workshop", args=[round_.pk]) + "?attribute=AUR"
    page = client.get(url).content.decode()
    section = page[page.index(f'id="item-{first.key}"'):]
    section = section[:section.index("</section>")]
    aliases = [m.alias or f"R{m.pk}" for m in members]
    assert (f"<li><strong>{aliases[0]}</strong> <span class=\"tag\">Needs discussion</span> <span class=\"tag\">"
            f"Unsure</span> <span class=\"comment\">{escape('<b>Cut off</b> mid-sentence?')}</span></li>") in section
    assert f'<li><strong>{aliases[1]}</strong> <span class="tag">Text looks truncated</span></li>' in section
    assert members[0].user.username not in section  # blinded unless the admin reveals names
    notes = section[section.index('class="reviewer-notes"'):]
    assert notes[:notes.index("</ul>")].count("<li>") == 2
    revealed = client.get(url + "&reveal=1").content.decode()
    assert f"<li><strong>{members[0].user.username}</strong> <span class=\"tag\">Needs discussion</span>" in revealed


def test_a_hand_built_set_takes_only_turns_the_sampler_could_take(client, synthetic, admin_user):
    """A turn another round of the study holds (a seen calibration item, or a hidden check item of the gold pool),
    or one with no response of a model the study codes, is refused by its line; a main round takes no set; nothing
    is written then. Before, each was put in the round."""
    from tests.factories import ModelResponseFactory

    def ref(turn) -> str:
        return f"{turn.conversation.dataset.name}/{turn.conversation.external_id}#{turn.index}"

    draft = Round.objects.create(study=synthetic, kind="calibration", number=3)
    seen = synthetic.rounds.get(kind="calibration", number=1).items.order_by("position").first().turn
    free = calibration_selectors.calibration_candidates(study=synthetic)[0]
    uncoded = ModelResponseFactory(model_slot="NotCodedHere").turn
    client.force_login(admin_user)
    page = client.post(reverse("round-refs", args=["syn", draft.pk]),
                       {"refs": "\n".join([ref(free), ref(seen), ref(uncoded)])}, follow=True)
    said = page.content.decode().replace("&#x27;", "'")
    assert f"line 2: {ref(seen)} is already in round calibration-1; a turn is in one round of a study" in said
    assert f"line 3: {ref(uncoded)} has no response of a model the study codes" in said
    assert not draft.items.exists()
    with pytest.raises(ValidationError, match="calibration sets belong to calibration rounds"):
        calibration_services.calibration_set_from_refs(round=synthetic.rounds.get(kind="main"), by=admin_user,
                                                       refs=ref(free))
    assert calibration_services.calibration_set_from_refs(round=draft, by=admin_user, refs=ref(free)) == [free]
    assert list(draft.items.values_list("turn_id", flat=True)) == [free.pk]
