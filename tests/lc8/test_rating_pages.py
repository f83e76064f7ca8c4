"""The LC8 session page (docs/lc8-rating.md#rating-sessions): the turn page of a session-rated study's
assignment shows the session's transcript and its PHQ items; earlier sessions, the session's place and the stored
reference labels and predictions appear only where the study shows them; completion needs the eight items; the
page's autosave writes session judgments."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotation import rules, selectors, services
from annotation.models import (
    Assignment,
    AttributeDefinition,
    Judgment,
    Round,
    Schema,
    SessionLabel,
    Study,
    StudyMember,
)
from benchmark.models import Conversation, Dataset, ModelResponse, Session, Turn
from lc8 import assign as lc8_assign
from tests.factories import StudyFactory, StudyMemberFactory, UserFactory

pytestmark = pytest.mark.django_db

SLOT = "Counselor"
REFERENCE_VALUE = 2.71828  # distinctive stored values: found on a page only if the page shows labels
PREDICTION_VALUE = 13.37
METHOD_NAME = "DepTrackZeta"
REFERENCE_USER = "lc8-reference-qx"


# --- fixtures, shared with tests/lc8/test_assign.py and tests/functional/test_lc8_browser.py --------


def lc8_schema() -> Schema:
    """``lc8-v1``, installed by migration annotation 0015."""
    return Schema.objects.get(slug="lc8-v1")


def client_text(trajectory: int, session: int, turn: int) -> str:
    return f"I have been sleeping badly this fortnight (marker t{trajectory}s{session}u{turn})."


def reply_text(trajectory: int, session: int, turn: int) -> str:
    return f"Counselor reply t{trajectory}s{session}r{turn}: what helps you rest?"


def lc8_study(*, slug: str = "lc8-study", trajectories: int = 2, sessions: int = 5, turns_per_session: int = 2,
              status: str = "open", **settings: str) -> Study:
    """An open session-rated study owning ``trajectories`` longitudinal conversations of ``sessions`` counseling
    sessions, each with ``turns_per_session`` turns answered by the study's one model slot."""
    study = StudyFactory(slug=slug, schema=lc8_schema(), model_slots=[SLOT], status=status, **settings)
    dataset, _ = Dataset.objects.get_or_create(name="LongCounsel-8 test")
    for t in range(1, trajectories + 1):
        conversation = Conversation.objects.create(
            dataset=dataset, external_id=f"{slug}-traj-{t}", kind=Conversation.Kind.LONGITUDINAL, topic="Depression",
            title=f"Trajectory title {slug} {t}")
        index = 0
        for s in range(1, sessions + 1):
            session = Session.objects.create(conversation=conversation, index=s, kind=Session.Kind.COUNSELING)
            for u in range(1, turns_per_session + 1):
                index += 1
                turn = Turn.objects.create(conversation=conversation, session=session, index=index,
                                           client_text=client_text(t, s, u))
                ModelResponse.objects.create(turn=turn, model_slot=SLOT, text=reply_text(t, s, u))
    return study


def trajectory_sessions(study: Study) -> list[Session]:
    return list(Session.objects.filter(conversation__external_id__startswith=f"{study.slug}-traj-")
                .select_related("conversation").order_by("conversation__external_id", "index"))


def rater_round(study: Study, rater, *, sessions: list[Session] | None = None, seed: int = 0) -> Round:
    """The study's open main round with ``sessions`` (all by default) queued for ``rater``."""
    StudyMember.objects.get_or_create(study=study, user=rater, defaults={"role": StudyMember.Role.REVIEWER})
    round_, _ = Round.objects.get_or_create(study=study, kind=Round.Kind.MAIN, number=1,
                                            defaults={"status": Round.Status.OPEN})
    lc8_assign.session_assignments_create(round=round_, coder=rater, sessions=sessions or trajectory_sessions(study),
                                          seed=seed)
    return round_


def labels_store(study: Study, session: Session) -> None:
    """A reference label and a method's prediction of ``session``, with distinctive values and names."""
    schema = study.schema
    total = AttributeDefinition.objects.get(schema=schema, code=schema.definition["lc8"]["total"])
    reference = StudyMemberFactory(study=study, user=UserFactory(username=REFERENCE_USER),
                                   role=StudyMember.Role.REFERENCE)
    method = StudyMemberFactory(study=study, user=UserFactory(username="lc8-method-user"),
                                role=StudyMember.Role.METHOD, method_name=METHOD_NAME, method_version="v9")
    SessionLabel.objects.create(study=study, coder=reference, session=session, attribute=total,
                                value=REFERENCE_VALUE)
    SessionLabel.objects.create(study=study, coder=method, seed=7, session=session, attribute=total,
                                value=PREDICTION_VALUE)


def position_of(round_: Round, rater, session: Session) -> int:
    return Assignment.objects.get(round=round_, coder=rater, turn__session=session).position


def page_of(client, round_: Round, rater, session: Session) -> str:
    client.force_login(rater)
    response = client.get(reverse("turn", args=[round_.pk, position_of(round_, rater, session)]))
    assert response.status_code == 200
    return response.content.decode()


def item_codes(study: Study) -> list[str]:
    return list(study.schema.definition["lc8"]["items"])


# --- the page ---------------------------------------------------------------------------------------------------


def test_the_session_page_shows_the_whole_transcript_the_eight_items_and_the_total_never_as_a_form(client):
    study = lc8_study()
    rater = UserFactory(username="rater-a")
    round_ = rater_round(study, rater)
    session = trajectory_sessions(study)[2]  # trajectory 1, session 3
    page = page_of(client, round_, rater, session)
    assert 'class="turn-page lc8-page"' in page
    # The page's bound on an instance count is the server's (it was 0: every count refused on the page).
    assert f'data-max-count="{rules.MAX_INSTANCE_COUNT}"' in page
    # The session's whole transcript: both client messages and both replies (and nothing of later sessions).
    for u in (1, 2):
        assert client_text(1, 3, u) in page.replace("&#x27;", "'")
        assert reply_text(1, 3, u) in page.replace("&#x27;", "'")
    assert "t1s4u1" not in page and "t2s3u1" not in page
    # One form per item, the audit folded away, the total a display only.
    for code in item_codes(study):
        assert f'id="s-{code}" data-code="{code}"' in page
    assert 'id="s-PHQ_TOTAL"' not in page
    assert '<details class="lc8-optional">' in page and 'id="s-COH"' in page
    assert re.search(r'<output id="lc8-total"[^>]*>–</output> / 24', page)
    # The scale labels once on the page (the legend), the item definitions once each (behind "?").
    assert page.count("<dd>Nearly every day</dd>") == 1
    assert page.count("Anhedonia: the client describes") == 1


def test_in_order_the_page_numbers_the_session_and_names_its_trajectory(client):
    study = lc8_study(session_order=Study.SessionOrder.IN_ORDER)
    rater = UserFactory(username="rater-a")
    round_ = rater_round(study, rater)
    page = page_of(client, round_, rater, trajectory_sessions(study)[2])
    assert "Session 3 of 5" in page
    assert f"Trajectory title {study.slug} 1" in page
    assert "this trajectory" in page


def test_blinded_order_shows_no_session_number_no_trajectory_and_no_position_in_it(client):
    study = lc8_study(session_order=Study.SessionOrder.BLINDED, session_history=Study.SessionHistory.HIDDEN)
    rater = UserFactory(username="rater-a")
    round_ = rater_round(study, rater, seed=3)
    session = trajectory_sessions(study)[2]
    page = page_of(client, round_, rater, session)
    assert "This session" in page
    assert not re.search(r"Session \d", page)
    assert "of 5" not in page
    assert "Trajectory title" not in page and f"{study.slug}-traj-" not in page
    assert "this trajectory" not in page
    # Turns are numbered within the session, never by their index in the trajectory (5 and 6 here).
    assert "turn 5" not in page and "turn 6" not in page
    assert client_text(1, 3, 1) in page.replace("&#x27;", "'")


def test_history_shown_folds_the_earlier_sessions_above_and_hidden_leaves_them_out_of_the_html(client):
    shown = lc8_study(slug="lc8-shown", session_history=Study.SessionHistory.SHOWN)
    hidden = lc8_study(slug="lc8-hidden", session_history=Study.SessionHistory.HIDDEN)
    rater = UserFactory(username="rater-a")
    pages = {}
    for study in (shown, hidden):
        round_ = rater_round(study, rater)
        pages[study.slug] = page_of(client, round_, rater, trajectory_sessions(study)[2])
    page = pages["lc8-shown"]
    assert page.count('<details class="lc8-earlier">') == 2
    for s in (1, 2):
        assert f"t1s{s}u1" in page and f"t1s{s}r2" in page
    assert page.index("t1s1u1") < page.index("t1s3u1")  # above the session's own transcript
    assert "t1s4u1" not in page  # never a later session
    page = pages["lc8-hidden"]
    assert "lc8-earlier" not in page and "lc8-history" not in page
    for s in (1, 2):
        assert f"t1s{s}u" not in page and f"t1s{s}r" not in page


def test_reference_labels_and_predictions_are_absent_when_blinded_and_present_when_shown(client):
    study = lc8_study()
    rater = UserFactory(username="rater-a")
    round_ = rater_round(study, rater)
    session = trajectory_sessions(study)[1]
    labels_store(study, session)
    assert (study.reference_labels, study.method_labels) == (Study.MethodLabels.BLINDED, Study.MethodLabels.BLINDED)
    page = page_of(client, round_, rater, session)
    for secret in (str(REFERENCE_VALUE), str(PREDICTION_VALUE), METHOD_NAME, REFERENCE_USER, "lc8-method-user",
                   "Reference", "seed 7", "lc8-labels"):
        assert secret not in page, secret

    Study.objects.filter(pk=study.pk).update(reference_labels=Study.MethodLabels.SHOWN)
    page = page_of(client, round_, rater, session)
    assert str(REFERENCE_VALUE) in page and "Reference" in page
    assert str(PREDICTION_VALUE) not in page and METHOD_NAME not in page

    Study.objects.filter(pk=study.pk).update(reference_labels=Study.MethodLabels.BLINDED,
                                             method_labels=Study.MethodLabels.SHOWN)
    page = page_of(client, round_, rater, session)
    assert str(PREDICTION_VALUE) in page and f"{METHOD_NAME} v9 (seed 7)" in page
    assert str(REFERENCE_VALUE) not in page
    # Another session's page shows none of this session's labels.
    page = page_of(client, round_, rater, trajectory_sessions(study)[0])
    assert str(PREDICTION_VALUE) not in page


def test_a_rating_saved_through_the_pages_autosave_is_a_session_judgment(client):
    study = lc8_study()
    rater = UserFactory(username="rater-a")
    round_ = rater_round(study, rater)
    session = trajectory_sessions(study)[3]
    client.force_login(rater)
    url = reverse("judgment-save", args=[round_.pk, position_of(round_, rater, session)])
    answer = client.post(url, {"form_id": "s-PHQ2", "attribute": "PHQ2", "score": "3", "version": "0"},
                         HTTP_HX_REQUEST="true")
    assert answer.status_code == 200, answer.content
    assert 'data-state="saved"' in answer.content.decode()
    judgment = Judgment.objects.get(round=round_, coder=rater)
    assert (judgment.attribute.code, judgment.score, judgment.session_id, judgment.turn_id, judgment.response_id) \
        == ("PHQ2", 3, session.pk, None, None)
    assert judgment.conversation_id == session.conversation_id
    # A value outside 0–3 is refused in words, nothing written.
    answer = client.post(url, {"form_id": "s-PHQ3", "attribute": "PHQ3", "score": "4", "version": "0"})
    assert answer.status_code == 422 and 'data-state="refused"' in answer.content.decode()
    assert Judgment.objects.filter(round=round_, coder=rater).count() == 1
    # The derived total is never a judgment, whoever posts it (annotation.rules.derived_problem).
    answer = client.post(url, {"form_id": "s-PHQ_TOTAL", "attribute": "PHQ_TOTAL", "score": "9", "version": "0"})
    assert answer.status_code == 422 and "derived" in answer.content.decode()
    assert Judgment.objects.filter(round=round_, coder=rater).count() == 1
    # The page shows the saved value and the optional audit saves the same way.
    answer = client.post(url, {"form_id": "s-COH", "attribute": "COH", "score": "4", "version": "0"})
    assert answer.status_code == 200
    page = client.get(reverse("turn", args=[round_.pk, position_of(round_, rater, session)])).content.decode()
    assert 'id="s-PHQ2" data-code="PHQ2" data-version="1" data-score="3"' in page
    assert 'id="s-COH" data-code="COH" data-version="1" data-score="4"' in page


def test_completion_needs_all_eight_items_and_neither_the_audit_nor_the_total(client):
    study = lc8_study()
    rater = UserFactory(username="rater-a")
    round_ = rater_round(study, rater)
    session = trajectory_sessions(study)[0]
    assignment = Assignment.objects.get(round=round_, coder=rater, turn__session=session)
    items = {a.code: a for a in AttributeDefinition.objects.filter(schema=study.schema)}
    codes = item_codes(study)
    for code in codes[:-1]:
        services.judgment_save(round=round_, by=rater, attribute=items[code], session=session, score=1)
    check = services.assignment_complete(assignment=assignment, by=rater)
    assert not check.completed
    assert len(check.missing) == 1 and check.missing[0].startswith(codes[-1])
    services.judgment_save(round=round_, by=rater, attribute=items[codes[-1]], session=session, score=0)
    check = services.assignment_complete(assignment=assignment, by=rater)
    assert check.completed and not check.missing
    assignment.refresh_from_db()
    assert assignment.completed_at is not None
    # The page then shows the derived total of the saved items.
    page = page_of(client, round_, rater, session)
    assert re.search(r'<output id="lc8-total"[^>]*>7</output>', page)


def test_the_turn_view_of_a_session_rated_study_requires_exactly_the_items(client):
    study = lc8_study(trajectories=1)
    rater = UserFactory(username="rater-a")
    round_ = rater_round(study, rater)
    view = selectors.turn_view(round_id=round_.pk, user=rater, position=1)
    assert view is not None
    assert [f.attribute.code for f in view.all_forms()] == item_codes(study)


def test_a_session_page_is_the_raters_own(client):
    study = lc8_study(trajectories=1)
    rater, other = UserFactory(username="rater-a"), UserFactory(username="rater-b")
    round_ = rater_round(study, rater)
    StudyMember.objects.create(study=study, user=other, role=StudyMember.Role.REVIEWER)
    client.force_login(other)
    assert client.get(reverse("turn", args=[round_.pk, 1])).status_code == 404


def test_blinded_order_keeps_the_trajectory_and_the_turn_index_out_of_the_queue_and_the_api(client):
    """The queue page and the assignments and judgments API name no trajectory and no conversation-wide turn index
    (which would date the session) to a rater of a study whose session order is blinded; in order they do."""
    study = lc8_study(session_order=Study.SessionOrder.BLINDED, session_history=Study.SessionHistory.HIDDEN)
    rater = UserFactory(username="rater-a")
    round_ = rater_round(study, rater, seed=3)
    session = trajectory_sessions(study)[2]
    item = AttributeDefinition.objects.get(schema=study.schema, code=item_codes(study)[0])
    services.judgment_save(round=round_, by=rater, attribute=item, score=1, session=session,
                           conversation=session.conversation)
    client.force_login(rater)
    queue = client.get(reverse("queue", args=[round_.pk]))
    assert queue.status_code == 200
    assert f"{study.slug}-traj-" not in queue.content.decode()
    assert "<th>Turn</th>" not in queue.content.decode()
    assignments = client.get(f"/api/v1/studies/{study.slug}/rounds/main/assignments/").json()["results"]
    assert assignments and {(a["conversation_id"], a["turn_index"]) for a in assignments} == {(None, None)}
    judgments = client.get(f"/api/v1/studies/{study.slug}/judgments/").json()["results"]
    assert [(j["conversation_id"], j["turn_index"], j["session_index"]) for j in judgments] == [(None, None, None)]
    Study.objects.filter(pk=study.pk).update(session_order=Study.SessionOrder.IN_ORDER)
    assert f"{study.slug}-traj-1" in client.get(reverse("queue", args=[round_.pk])).content.decode()
    assignments = client.get(f"/api/v1/studies/{study.slug}/rounds/main/assignments/").json()["results"]
    assert {a["turn_index"] for a in assignments} == {1, 3, 5, 7, 9}
    judgments = client.get(f"/api/v1/studies/{study.slug}/judgments/").json()["results"]
    assert [(j["conversation_id"], j["session_index"]) for j in judgments] == [(f"{study.slug}-traj-1", 3)]


def test_feedback_compares_each_session_rating_with_that_sessions_gold_and_names_no_session_when_blinded(client):
    """A rater's feedback pairs each session's rating with the gold of that session (a session's code has no turn:
    pairing by turn gave every session the gold of one of them, and a differing one answered 500), and in a study
    whose session order is blinded names neither the trajectory nor the session's number."""
    study = lc8_study(session_order=Study.SessionOrder.BLINDED)
    rater = UserFactory(username="rater-a")
    round_ = Round.objects.create(study=study, kind=Round.Kind.CALIBRATION, number=1, status=Round.Status.OPEN)
    StudyMember.objects.create(study=study, user=rater, role=StudyMember.Role.REVIEWER)
    sessions = trajectory_sessions(study)[:3]
    lc8_assign.session_assignments_create(round=round_, coder=rater, sessions=sessions, seed=0)
    item = AttributeDefinition.objects.get(schema=study.schema, code=item_codes(study)[0])
    panel = UserFactory(username="gold-panel")
    for session, gold in zip(sessions, (1, 2, 1), strict=True):  # the rater says 1 each time: one differs
        services.judgment_save(round=round_, by=rater, attribute=item, score=1, session=session,
                               conversation=session.conversation)
        Judgment.objects.create(round=round_, coder=panel, is_gold=True, attribute=item, session=session,
                                conversation=session.conversation, score=gold)
    Round.objects.filter(pk=round_.pk).update(status=Round.Status.CLOSED)
    client.force_login(rater)
    answer = client.get(reverse("feedback", args=[round_.pk]))
    assert answer.status_code == 200
    page = answer.content.decode()
    assert "Agreement with gold over 3 items" in page and "Where you differed from gold (1)" in page
    assert "a session" in page and f"{study.slug}-traj-" not in page and not re.search(r"session \d", page)
    position = position_of(round_, rater, sessions[1])
    assert reverse("turn", args=[round_.pk, position]) in page, "the differing session links to its item"
