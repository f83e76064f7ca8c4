"""Coding a longitudinal history (docs/care-data.md#coding-a-history-the-turn-page) on the turn page: the history as
coders read it, the user turn, the assistant reply and the session checklist saved through the ordinary autosave
(session judgments with their history), refusals in the rules' words, and the judge's labels shown or blinded per
study."""

from __future__ import annotations

import html
import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation import long_format, rules, selectors, services
from annotation.models import (
    Assignment,
    AttributeDefinition,
    Judgment,
    JudgmentRevision,
    QueueProgress,
    Round,
    Study,
)
from tests.annotation.test_views import login, with_parts

pytestmark = pytest.mark.django_db

JUDGE = "demo-care-judge"
# Turns of the demo history: 5–8 the crisis session (3), 9–10 a chat (4), 11–13 the callback (5).
CRISIS_END, CALLBACK_START = 8, 11
# The CAB turn page's 4 queries (tests/annotation/test_views_turn_page.py), plus for a history: the turn's session
# with its last turn, its sessions, the replies of its earlier turns, and whether the user may see the judges'
# labels (11 before the turn page read its rows in one statement: 7 for a page without judgments, then 4); at the end
# of a crisis or callback session also the session with its last turn and the coder's checklist judgments.
CARE_PAGE_QUERIES = 4 + 4
CHECKLIST_QUERIES = 2


@pytest.fixture(scope="module")
def care_round_id(shared_state):
    with shared_state():
        call_command("load_demo", "--quiet", "--care")
        yield Round.objects.get(study__slug="care-demo", kind="main").pk


@pytest.fixture
def care(db, care_round_id):
    return Round.objects.select_related("study").get(pk=care_round_id)


def position_of(round_, user, turn_index):
    return Assignment.objects.get(round=round_, coder=user, turn__index=turn_index).position


def save_url(round_, position):
    return reverse("judgment-save", args=[round_.pk, position])


def test_the_demo_gives_the_human_coders_the_turns_from_the_crisis_on_in_an_open_main_round(care):
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    assert care.status == Round.Status.OPEN
    assert list(Assignment.objects.filter(round=care, coder=reviewer).order_by("position")
                .values_list("turn__index", flat=True)) == list(range(5, 14))
    assert Judgment.objects.filter(round=care, coder__username=JUDGE).count() > 0


def test_a_coder_reads_the_history_with_earlier_sessions_folded_and_the_episode_highlighted(client, care):
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    login(client, "demo-reviewer")
    page = with_parts(client, client.get(reverse("turn", args=[care.pk, position_of(care, reviewer, 12)])))
    # Sessions 1–2 (chats before the crisis) are folded; 3 (the crisis) is not, and 5 (the callback) opens the
    # current episode.
    assert page.count('<details class="care-session') == 4  # sessions 1–4: before the callback's episode
    assert '<section class="care-session kind-callback episode current-session"' in page
    assert "Session 5 · Callback · Suicidal ideation" in page
    assert "current episode" in page
    # The earlier turns of the callback and the assistant's replies are readable text.
    assert "It&#x27;s been three weeks since I lost the job" in page
    assert "Thank you for telling me" in page
    # Nominal scales show their values' labels; the user turn's and the reply's codes are forms of the page.
    assert 'id="t-marker"' in page and 'id="t-crisis"' in page and 'id="t-request"' in page
    assert "Rebuilding" in page and "providing suggestions" in page
    assert '-strategy" data-code="strategy"' in page and '-safety_critical"' in page
    assert 'id="s-' not in page, "the checklist comes at the end of the session only"


def test_a_sessions_checklist_is_the_items_of_its_crisis_type_and_only_for_crisis_and_callback_sessions(care):
    items = list(AttributeDefinition.objects.filter(schema=care.study.schema, unit="session"))
    codes = {kind_type: [a.code for a in rules.session_items(items, kind=kind_type[0], crisis_type=kind_type[1])]
             for kind_type in (("crisis", "SI"), ("callback", "anxiety"), ("chat", None))}
    assert "ask_safety" in codes[("crisis", "SI")] and "grounding" not in codes[("crisis", "SI")]
    assert "grounding" in codes[("callback", "anxiety")] and "moralise" not in codes[("callback", "anxiety")]
    assert codes[("chat", None)] == []


def test_the_checklist_comes_at_the_end_of_a_crisis_session_with_the_items_of_its_crisis_type(client, care):
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    login(client, "demo-reviewer")
    page = client.get(reverse("turn", args=[care.pk, position_of(care, reviewer, CRISIS_END)])).content.decode()
    assert 'id="h-checklist"' in page and "Checklist of session 3 · Crisis · Suicidal ideation" in page
    assert 'id="s-ask_safety"' in page and 'id="s-crisis_resources"' in page
    assert 'id="s-grounding"' not in page, "an anxiety-only item is not on a suicidal-ideation session's checklist"
    chat = client.get(reverse("turn", args=[care.pk, position_of(care, reviewer, 10)])).content.decode()
    assert 'id="h-checklist"' not in chat, "a chat session has no checklist"


def test_a_care_turn_page_needs_a_fixed_number_of_queries(client, care, django_assert_num_queries):
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    login(client, "demo-reviewer")
    middle = reverse("turn", args=[care.pk, position_of(care, reviewer, 6)])
    end = reverse("turn", args=[care.pk, position_of(care, reviewer, CRISIS_END)])
    client.get(middle)  # the schema is kept per process from here on
    with django_assert_num_queries(CARE_PAGE_QUERIES):
        assert client.get(middle).status_code == 200
    with django_assert_num_queries(CARE_PAGE_QUERIES + CHECKLIST_QUERIES):
        assert client.get(end).status_code == 200


def test_a_session_checklist_item_is_saved_with_its_history_through_the_autosave(client, care):
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    login(client, "demo-reviewer")
    url = save_url(care, position_of(care, reviewer, CRISIS_END))
    first = client.post(url, {"attribute": "ask_safety", "score": "1", "version": "0", "form_id": "s-ask_safety"})
    assert first.status_code == 200 and b'data-state="saved"' in first.content
    judgment = Judgment.objects.get(round=care, coder=reviewer, attribute__code="ask_safety")
    assert (judgment.session.index, judgment.turn_id, judgment.response_id, judgment.score) == (3, None, None, 1)
    assert judgment.conversation_id == judgment.session.conversation_id
    second = client.post(url, {"attribute": "ask_safety", "score": "0", "version": "1"})
    assert second.status_code == 200 and b'data-version="2"' in second.content
    history = list(JudgmentRevision.objects.filter(judgment=judgment).order_by("version")
                   .values_list("version", "changed_by__username", "source", "before__score", "after__score"))
    assert history == [(1, "demo-reviewer", "autosave", None, 1), (2, "demo-reviewer", "autosave", 1, 0)]
    # A stale tab's save of the same item is refused.
    assert client.post(url, {"attribute": "ask_safety", "score": "1", "version": "1"}).status_code == 409
    # The page shows the saved value, and completing the turn wants the rest of the checklist.
    page = client.get(reverse("turn", args=[care.pk, position_of(care, reviewer, CRISIS_END)])).content.decode()
    assert 'id="s-ask_safety" data-code="ask_safety" data-version="2" data-score="0"' in page
    done = client.post(reverse("turn-complete", args=[care.pk, position_of(care, reviewer, CRISIS_END)]))
    assert "crisis_resources · Offers crisis resources" in done.content.decode()


def test_a_session_item_is_refused_once_the_round_is_closed(client, care):
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    login(client, "demo-reviewer")
    url = save_url(care, position_of(care, reviewer, CRISIS_END))
    Round.objects.filter(pk=care.pk).update(status=Round.Status.CLOSED)
    refused = client.post(url, {"attribute": "ask_safety", "score": "1", "version": "0"})
    assert refused.status_code == 422 and "main is closed: judgments can no longer change" in refused.content.decode()
    assert not Judgment.objects.filter(coder=reviewer, session__isnull=False).exists()


def test_the_service_saves_a_session_unit_and_refuses_one_on_a_closed_round(care):
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    item = AttributeDefinition.objects.get(schema=care.study.schema, code="crisis_resources")
    session = Assignment.objects.get(round=care, coder=reviewer, turn__index=CRISIS_END).turn.session
    judgment = services.judgment_save(round=care, by=reviewer, attribute=item, score=1, session=session)
    assert (judgment.session_id, judgment.turn_id, judgment.version) == (session.pk, None, 1)
    assert JudgmentRevision.objects.filter(judgment=judgment).count() == 1
    # A turn-level code given a session, and a session item given a turn, are refused in the rules' words.
    marker = AttributeDefinition.objects.get(schema=care.study.schema, code="marker")
    with pytest.raises(services.ValidationError, match="marker is coded once per turn"):
        services.judgment_save(round=care, by=reviewer, attribute=marker, score=1, session=session)
    with pytest.raises(services.ValidationError, match="coded once per session"):
        services.judgment_save(round=care, by=reviewer, attribute=item, score=1, turn=session.turns.first())
    Round.objects.filter(pk=care.pk).update(status=Round.Status.CLOSED)
    care.refresh_from_db()
    with pytest.raises(services.ValidationError, match="judgments can no longer change"):
        services.judgment_save(round=care, by=reviewer, attribute=item, score=0, session=session,
                               expected_version=1)


def test_a_nominal_value_out_of_range_is_refused_with_its_values_named(client, care):
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    login(client, "demo-reviewer")
    refused = client.post(save_url(care, position_of(care, reviewer, 6)), {"attribute": "marker", "score": "7"})
    assert refused.status_code == 422
    assert ("marker: score 7 is not one of its values (0 none, 1 Acute, 2 Settling, 3 Open, 4 Rebuilding)"
            in refused.content.decode())
    assert not Judgment.objects.filter(coder=reviewer, attribute__code="marker").exists()


def test_user_turn_and_reply_codes_are_saved_on_their_units(client, care):
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    login(client, "demo-reviewer")
    position = position_of(care, reviewer, 6)
    assignment = Assignment.objects.get(round=care, coder=reviewer, position=position)
    response = assignment.turn.responses.get()
    handle = selectors.response_handle(study=care.study, coder_id=reviewer.pk, turn_id=assignment.turn_id,
                                       response_id=response.pk)
    assert client.post(save_url(care, position), {"attribute": "marker", "score": "1"}).status_code == 200
    assert client.post(save_url(care, position), {"attribute": "strategy", "response": handle,
                                                  "score": "5"}).status_code == 200
    saved = {j.attribute.code: (j.turn_id, j.response_id, j.session_id, j.score)
             for j in Judgment.objects.filter(coder=reviewer).select_related("attribute")}
    assert saved == {"marker": (assignment.turn_id, None, None, 1),
                     "strategy": (assignment.turn_id, response.pk, None, 5)}


def judge_values(round_, turn_index):
    return list(Judgment.objects.filter(round=round_, coder__username=JUDGE, turn__index=turn_index)
                .values_list("attribute__code", "score"))


def test_a_blinded_coder_gets_nothing_of_the_judge_in_the_page(client, care):
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    assert care.study.method_labels == Study.MethodLabels.BLINDED
    Judgment.objects.filter(round=care, coder__username=JUDGE).update(note="EVIDENCE-ITEM-7")
    login(client, "demo-reviewer")
    page = client.get(reverse("turn", args=[care.pk, position_of(care, reviewer, CRISIS_END)])).content.decode()
    assert judge_values(care, CRISIS_END), "the judge labelled this turn"
    assert JUDGE not in page
    assert 'id="judge-labels"' not in page and '"judge":' not in page and "judge-label" not in page
    assert "EVIDENCE-ITEM-7" not in page


def test_a_coder_of_a_study_that_shows_the_judge_sees_its_labels_to_confirm_or_correct(client, care, admin_user):
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    services.study_method_labels_set(study=care.study, value=Study.MethodLabels.SHOWN, by=admin_user)
    Judgment.objects.filter(round=care, coder__username=JUDGE, attribute__code="marker").update(
        note="EVIDENCE-ITEM-7")
    login(client, "demo-reviewer")
    position = position_of(care, reviewer, CRISIS_END)
    page = client.get(reverse("turn", args=[care.pk, position])).content.decode()
    assert 'id="judge-labels"' in page and "js/care/coding.js" in page
    marker = dict(judge_values(care, CRISIS_END))["marker"]
    labels = AttributeDefinition.objects.get(schema=care.study.schema, code="marker").scale_labels
    assert f'"t-marker": [{{"judge": "{JUDGE}", "score": {marker}, "label": "{labels[str(marker)]}", ' in page
    assert "EVIDENCE-ITEM-7" in page
    assert '"s-ask_safety"' in page, "the session checklist's labels too"
    # Confirming is saving the judge's value as one's own: the ordinary autosave.
    assert client.post(save_url(care, position), {"attribute": "marker", "score": str(marker)}).status_code == 200
    assert Judgment.objects.get(coder=reviewer, attribute__code="marker").score == marker


def test_an_action_turn_without_a_primary_horizon_is_not_complete_and_says_why(client, care):
    """A reply coded providing suggestions with horizon none gets no alignment label (docs/care.md A4): completing
    the turn names the horizon and why, and the turn completes once a horizon is chosen."""
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    login(client, "demo-reviewer")
    position = position_of(care, reviewer, 6)
    view = selectors.turn_view(round_id=care.pk, user=reviewer, position=position)
    response = view.turn.responses.get()
    chosen = {"strategy": 5, "horizon": 0}  # providing suggestions, none
    for form in view.all_forms():
        on_response = form.response_handle is not None
        services.judgment_save(round=care, by=reviewer, attribute=form.attribute,
                               score=chosen.get(form.attribute.code, 0), turn=view.turn,
                               response=response if on_response else None)
    url = reverse("turn-complete", args=[care.pk, position])
    refused = client.post(url).content.decode()
    label = next(card.label for card in view.cards)
    assert (f"{label} · horizon: the strategy is providing suggestions, which needs a primary horizon (Regulate, "
            "Bridge, Sustain); without one the turn gets no alignment label") in refused
    assert Assignment.objects.get(round=care, coder=reviewer, position=position).completed_at is None
    horizon = AttributeDefinition.objects.get(schema=care.study.schema, code="horizon")
    services.judgment_save(round=care, by=reviewer, attribute=horizon, score=1, turn=view.turn, response=response,
                           expected_version=1)
    assert client.post(url).status_code == 302
    assert Assignment.objects.get(round=care, coder=reviewer, position=position).completed_at is not None


def code_turn(care, reviewer, turn_index, chosen):
    """Every form of the coder's page of the turn scored (``chosen`` by attribute code, else 0), through the
    service; the page's view and its reply."""
    view = selectors.turn_view(round_id=care.pk, user=reviewer, position=position_of(care, reviewer, turn_index))
    response = view.turn.responses.get()
    for form in view.all_forms():
        services.judgment_save(round=care, by=reviewer, attribute=form.attribute,
                               score=chosen.get(form.attribute.code, 0), turn=view.turn,
                               response=response if form.response_handle is not None else None)
    return view, response


def test_a_reply_of_no_action_strategy_given_a_primary_horizon_is_not_complete_and_says_why(client, care):
    """The horizon is the advice's: a reply coded question takes horizon none (the schema's "none otherwise", A5 of
    docs/care.md). Coded question with horizon Bridge, completing the turn names the horizon and why; with horizon
    none it completes."""
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    login(client, "demo-reviewer")
    view, response = code_turn(care, reviewer, 7, {"strategy": 0, "horizon": 2})  # question, Bridge
    url = reverse("turn-complete", args=[care.pk, view.position])
    refused = client.post(url).content.decode()
    label = next(card.label for card in view.cards)
    assert (f"{label} · horizon: the strategy is question, which gives no advice, so its horizon is none (not "
            "Bridge); a primary horizon is for providing suggestions or information alone") in refused
    assert Assignment.objects.get(round=care, coder=reviewer, position=view.position).completed_at is None
    horizon = AttributeDefinition.objects.get(schema=care.study.schema, code="horizon")
    services.judgment_save(round=care, by=reviewer, attribute=horizon, score=0, turn=view.turn, response=response,
                           expected_version=1)
    assert client.post(url).status_code == 302
    assert Assignment.objects.get(round=care, coder=reviewer, position=view.position).completed_at is not None


@pytest.mark.parametrize("horizon", ["0", ""], ids=["none", "cleared"])
def test_a_completed_action_turn_given_horizon_none_by_a_later_save_is_no_longer_completed(client, care, horizon):
    """A completed turn's save that leaves it short of what completing it wants (an action turn's horizon set to
    none or cleared, docs/care.md A4) is kept, and the turn is no longer completed, its queue's counters with it
    (one transaction); the save's answer says what the turn wants again. A later save that mends it does not
    complete it again: completing is the coder's."""
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    login(client, "demo-reviewer")
    view, response = code_turn(care, reviewer, 6, {"strategy": 5, "horizon": 1})  # providing suggestions, Regulate
    assert client.post(reverse("turn-complete", args=[care.pk, view.position])).status_code == 302
    done = QueueProgress.objects.get(round=care, coder=reviewer).done
    card = next(iter(view.cards))
    answer = client.post(save_url(care, view.position), {"attribute": "horizon", "response": card.handle,
                                                         "score": horizon, "version": "1"})
    assert answer.status_code == 200
    text = answer.content.decode()
    assert "Saved: this turn is no longer completed" in text
    wanted = (f"{card.label} · horizon: the strategy is providing suggestions, which needs a primary horizon"
              if horizon else f"{card.label} · horizon · Primary horizon")
    assert wanted in html.unescape(text)
    saved = Judgment.objects.get(round=care, coder=reviewer, response=response, attribute__code="horizon")
    assert (saved.score, saved.version) == (int(horizon) if horizon else None, 2)
    assert Assignment.objects.get(round=care, coder=reviewer, position=view.position).completed_at is None
    assert QueueProgress.objects.get(round=care, coder=reviewer).done == done - 1
    mended = client.post(save_url(care, view.position), {"attribute": "horizon", "response": card.handle,
                                                         "score": "1", "version": "2"})
    assert "data-reopened" not in mended.content.decode()
    assert Assignment.objects.get(round=care, coder=reviewer, position=view.position).completed_at is None


def test_a_completed_turn_stays_completed_through_a_save_that_keeps_it_complete(client, care):
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    login(client, "demo-reviewer")
    view, _ = code_turn(care, reviewer, 6, {"strategy": 5, "horizon": 1})
    assert client.post(reverse("turn-complete", args=[care.pk, view.position])).status_code == 302
    card = next(iter(view.cards))
    answer = client.post(save_url(care, view.position), {"attribute": "horizon", "response": card.handle,
                                                         "score": "2", "version": "1"})
    assert answer.status_code == 200 and "data-reopened" not in answer.content.decode()
    assert Assignment.objects.get(round=care, coder=reviewer, position=view.position).completed_at is not None


def test_complete_on_a_completed_turn_short_since_takes_it_out_of_the_completed_ones(client, care):
    """A completed turn whose codes changed by another path than the page (``judgment_save`` alone, as saves did
    before ``item_judgment_save``; an import cannot change them: the test below) is taken out of the completed ones
    when Complete is clicked on it again, with what it wants."""
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    login(client, "demo-reviewer")
    view, response = code_turn(care, reviewer, 6, {"strategy": 5, "horizon": 1})
    url = reverse("turn-complete", args=[care.pk, view.position])
    assert client.post(url).status_code == 302
    horizon = AttributeDefinition.objects.get(schema=care.study.schema, code="horizon")
    services.judgment_save(round=care, by=reviewer, attribute=horizon, score=0, turn=view.turn, response=response)
    assert "which needs a primary horizon" in client.post(url).content.decode()
    assert Assignment.objects.get(round=care, coder=reviewer, position=view.position).completed_at is None


@pytest.mark.parametrize("path", ["command", "api"])
@pytest.mark.parametrize(("horizon", "said"), [
    (0, "score: the study already has a different horizon judgment for this unit (score 1); an import never "
        "overwrites a judgment"),
    (None, "score: required"),
], ids=["none", "cleared"])
def test_an_import_cannot_leave_a_completed_turn_short(client, care, admin_user, as_token, tmp_path, path, horizon,
                                                       said):
    """What the autosave does to a completed turn its save leaves short has no counterpart in an import of judgments
    (docs/api.md#importing-judgments): every form of a completed turn holds its coder's scored judgment, and an import
    only adds scored judgments, so a row that would set the coder's horizon to none is refused by its line (an import
    never overwrites), one that would clear it too (a row's score is required), the turn stays completed, and its
    codes stay as the coder left them."""
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    view, response = code_turn(care, reviewer, 6, {"strategy": 5, "horizon": 1})  # providing suggestions, Regulate
    login(client, "demo-reviewer")
    assert client.post(reverse("turn-complete", args=[care.pk, view.position])).status_code == 302
    exported = [json.loads(line) for line in "".join(long_format.WRITERS["jsonl"](study=care.study)).splitlines()]
    row = next(r for r in exported if (r["reviewer"], r["round"], r["conversation_id"], r["turn_index"],
                                       r["attribute"]) == ("demo-reviewer", "main", view.turn.conversation.external_id,
                                                           view.turn.index, "horizon"))
    body = json.dumps({**row, "score": horizon}) + "\n"
    if path == "command":
        (tmp_path / "judgments.jsonl").write_text(body, encoding="utf-8")
        with pytest.raises(CommandError) as refused:
            call_command("import_judgments", str(tmp_path / "judgments.jsonl"), "--study", care.study.slug)
        assert f"line 1: {said}" in str(refused.value)
    else:
        answer = as_token(admin_user, scopes=["import"]).generic(
            "POST", f"/api/v1/studies/{care.study.slug}/judgments/import/", body.encode(),
            content_type="application/x-ndjson")
        assert answer.status_code == 400
        assert [(e["line"], f"{e['field']}: {e['message']}") for e in answer.json()["errors"]] == [(1, said)]
    saved = Judgment.objects.get(round=care, coder=reviewer, response=response, attribute__code="horizon")
    assert (saved.score, saved.version) == (1, 1)
    assert Assignment.objects.get(round=care, coder=reviewer, position=view.position).completed_at is not None
