"""The Django admin keeps the frozen text rule of every ingestion (benchmark/material_rules.py): a turn or a reply of
a rated LongCounsel-8 session, of a CARE session with a checklist code, of a session in a session-rated study's open
round, or of a conversation with a conversation-level judgment is not deleted, one at a time or by "delete
selected"; the confirmation page says why and nothing is deleted. Before, only judged responses (and the turns
that items and judgments point at) were kept: the other turns of a rated session and their replies were deleted,
and its rating stood on a transcript that was no longer there. Nothing is changed in the admin either."""

from __future__ import annotations

import html

import pytest
from django.urls import reverse

from annotation.models import AttributeDefinition, Judgment
from benchmark.models import Conversation, ModelResponse, Session, Turn
from tests.annotation.test_import_conversation_level import _schema_with_a_conversation_attribute
from tests.care.test_coded_session_grows import coded  # noqa: F401 - a fixture
from tests.factories import (
    JudgmentFactory,
    ModelResponseFactory,
    RoundFactory,
    StudyFactory,
    TurnFactory,
    UserFactory,
)
from tests.lc8.test_rated_session_grows import WHY, rated  # noqa: F401 - a fixture
from tests.lc8.test_rating_pages import SLOT, lc8_study, rater_round, trajectory_sessions

pytestmark = pytest.mark.django_db

LC8 = "LongCounsel-8 test/lc8-study-traj-1"


def _delete_one(client, obj) -> str:
    """The admin's delete view of ``obj``, confirmed: the page it answers with (a refusal), or "" (deleted)."""
    name = f"admin:benchmark_{obj._meta.model_name}_delete"
    answer = client.post(reverse(name, args=[obj.pk]), {"post": "yes"})
    assert answer.status_code in (200, 302), answer.status_code
    return html.unescape(answer.content.decode()) if answer.status_code == 200 else ""


def _delete_selected(client, model, pks) -> str:
    answer = client.post(reverse(f"admin:benchmark_{model._meta.model_name}_changelist"),
                         {"action": "delete_selected", "_selected_action": [str(pk) for pk in pks], "post": "yes"})
    assert answer.status_code in (200, 302), answer.status_code
    return html.unescape(answer.content.decode()) if answer.status_code == 200 else ""


def test_the_turns_and_replies_of_a_rated_lc8_session_are_not_deleted(client, admin_user, rated):  # noqa: F811
    study, last, assignment = rated
    client.force_login(admin_user)
    turn_10 = Turn.objects.get(session=last, index=10)  # no item, judgment or reply points at it
    reply_9 = ModelResponse.objects.get(turn__session=last, turn__index=9)
    page = _delete_one(client, turn_10)
    assert (f"turn 10 of {LC8} is in the transcript session 5 was judged on {WHY}; it cannot be deleted") in page
    page = _delete_one(client, reply_9)
    assert (f"the {SLOT} reply of turn 9 of {LC8} is in the transcript session 5 was judged on {WHY}; it cannot be "
            "deleted") in page
    page = _delete_selected(client, Turn, [turn_10.pk])
    assert f"turn 10 of {LC8} is in the transcript session 5 was judged on" in page
    page = _delete_selected(client, ModelResponse, [reply_9.pk])
    assert f"turn 9 of {LC8} is in the transcript session 5 was judged on" in page
    assert list(last.turns.order_by("index").values_list("index", flat=True)) == [9, 10]
    assert ModelResponse.objects.filter(pk=reply_9.pk).exists()
    assert Judgment.objects.filter(session=last).count() == 8


def test_a_session_in_an_open_round_keeps_its_turns_before_it_is_rated(client, admin_user):
    study = lc8_study(slug="lc8-open", trajectories=1)
    session = trajectory_sessions(study)[1]  # turns 3 and 4: the item is keyed by turn 3
    rater_round(study, UserFactory(username="rater-b"), sessions=[session])
    client.force_login(admin_user)
    page = _delete_one(client, Turn.objects.get(session=session, index=4))
    assert ("turn 4 of LongCounsel-8 test/lc8-open-traj-1 is in the transcript session 2 is coded on in an open round "
            f"{WHY}; it cannot be deleted") in page
    assert session.turns.count() == 2
    # A session no round holds, and no judgment, is the admin's to delete from.
    free = trajectory_sessions(study)[3]
    reply = ModelResponse.objects.filter(turn__session=free).first()
    assert _delete_one(client, reply) == ""
    assert not ModelResponse.objects.filter(pk=reply.pk).exists()


def test_the_replies_of_a_care_session_with_a_checklist_code_are_not_deleted(client, admin_user, coded):  # noqa: F811
    study, crisis, items = coded
    client.force_login(admin_user)
    reply = ModelResponse.objects.get(turn__session=crisis, turn__index=1)
    page = _delete_selected(client, ModelResponse, [reply.pk])
    assert (f"the Assistant reply of turn 1 of CARE-grow/h1 is in the transcript session 1 was judged on {WHY}; it "
            "cannot be deleted") in page
    assert ModelResponse.objects.filter(pk=reply.pk).exists()


def test_the_turns_of_a_conversation_judged_as_a_whole_are_not_deleted(client, admin_user):
    schema = _schema_with_a_conversation_attribute()
    study = StudyFactory(slug="conv-admin", schema=schema)
    first = TurnFactory(index=1)
    conversation = first.conversation
    second = TurnFactory(conversation=conversation, index=2)
    JudgmentFactory(round=RoundFactory(study=study, kind="main", status="closed"), coder=UserFactory(),
                    attribute=AttributeDefinition.objects.get(schema=schema, code="ARC"), response=None, turn=None,
                    conversation=conversation, score=1)
    client.force_login(admin_user)
    label = f"{conversation.dataset.name}/{conversation.external_id}"
    page = _delete_one(client, second)
    assert (f"turn 2 of {label} is in {label}, which has judgments of the conversation or of a session as a whole; "
            "none of its turns can be deleted") in page
    assert Turn.objects.filter(conversation=conversation).count() == 2
    reply = ModelResponseFactory(turn=second, model_slot="GPT")
    page = _delete_selected(client, ModelResponse, [reply.pk])
    # Its own reason, not an open round's: no round is open, the judgment is of the whole conversation.
    assert (f"the GPT reply of turn 2 of {label} is in the transcript of {label}'s conversation-level judgment; it "
            "cannot be deleted") in page
    assert ModelResponse.objects.filter(pk=reply.pk).exists()


def test_the_admin_changes_no_turn_or_session(client, admin_user, rated):  # noqa: F811
    """Shown, never changed: a change posted is refused (403) and nothing changes."""
    study, last, assignment = rated
    client.force_login(admin_user)
    turn = Turn.objects.get(session=last, index=9)
    answer = client.post(reverse("admin:benchmark_turn_change", args=[turn.pk]),
                         {"index": 9, "client_text": "Changed words.", "therapist_reference": ""})
    assert answer.status_code == 403
    assert Turn.objects.get(pk=turn.pk).client_text != "Changed words."
    assert Session.objects.filter(conversation=Conversation.objects.get(external_id="lc8-study-traj-1")).count() == 5
