"""The judgments list API gives each judgment's ``session_index`` as the exports do (annotation.long_format): the
session a session-level judgment is on, or the one its turn is in; null for a judgment not on a session, and for a
rater of a study whose session order is blinded (docs/lc8-rating.md#rating-sessions: nothing tells a rater which
session of a trajectory it is). On the demo studies: the CARE demo's judge labels, the LC8 demo's rater, the Appendix D
demo."""

from __future__ import annotations

from collections import Counter

import pytest
from django.core.management import call_command

from annotation import long_format, services
from annotation.models import AttributeDefinition, Round, Study
from benchmark.models import Session

pytestmark = pytest.mark.django_db


@pytest.fixture
def demos(db):
    call_command("load_demo", "--care", "--lc8", "--quiet")


def _listed(api, slug: str) -> list[dict]:
    rows, url, params = [], f"/api/v1/studies/{slug}/judgments/", {"page_size": "5000"}
    while url:
        answer = api.get(url, params)
        assert answer.status_code == 200, answer.json()
        rows += answer.json()["results"]
        url, params = answer.json()["next"], None
    return rows


def _key(row: dict) -> tuple:
    return (row["round"], row["reviewer"], row["dataset"], row["conversation_id"], row["turn_index"], row["model"],
            row["attribute"])


def _with_sessions(rows) -> Counter:
    return Counter((*_key(row), row.get(long_format.SESSION_INDEX)) for row in rows)


def _exported(slug: str) -> Counter:
    return _with_sessions(long_format.judgment_rows(study=Study.objects.get(slug=slug)))


def test_each_judgment_has_the_session_index_of_the_export(demos, researcher, as_token):
    api = as_token(researcher)
    care = _listed(api, "care-demo")
    assert len(care) == 108  # the illustrative judge's labels
    assert _with_sessions(care) == _exported("care-demo")
    on_sessions = [row for row in care if row["turn_index"] is None]
    assert len(on_sessions) == 18 and all(row["session_index"] in range(1, 6) for row in on_sessions)
    in_sessions = [row for row in care if row["turn_index"] is not None]
    assert in_sessions and all(row["session_index"] is not None for row in in_sessions)
    assert {row["session_index"] for row in care} == {3, 4, 5}  # the crisis, the session after it, the callback
    # A study without sessions: null throughout.
    demo = _listed(api, "demo")
    assert demo and {row["session_index"] for row in demo} == {None}


def _rate(study: Study, rater) -> list[Session]:
    """The rater rates PHQ1 of three sessions of the first trajectory (the service the session page saves
    through)."""
    main = Round.objects.get(study=study, kind="main")
    item = AttributeDefinition.objects.get(schema=study.schema, code="PHQ1")
    sessions = list(Session.objects.filter(conversation__study=study, conversation__external_id="lc8-demo-1",
                                           index__in=(2, 3, 5)).select_related("conversation"))
    for session in sessions:
        services.judgment_save(round=main, by=rater, attribute=item, score=session.index % 4, session=session,
                               conversation=session.conversation)
    return sessions


def test_an_lc8_raters_session_judgments_give_their_session_unless_the_order_is_blinded(demos, researcher,
                                                                                         as_token):
    study = Study.objects.get(slug="lc8-demo")
    rater = study.members.get(role="reviewer").user
    sessions = _rate(study, rater)
    wanted = {(s.conversation.external_id, s.index % 4): s.index for s in sessions}
    for who in (researcher, rater):
        rows = _listed(as_token(who), "lc8-demo")
        assert {(r["conversation_id"], r["score"]): r["session_index"] for r in rows} == wanted
        assert {r["turn_index"] for r in rows} == {None}
        assert _with_sessions(rows) == _exported("lc8-demo")
    Study.objects.filter(pk=study.pk).update(session_order=Study.SessionOrder.BLINDED)
    assert {r["session_index"] for r in _listed(as_token(rater), "lc8-demo")} == {None}
    assert sorted(r["session_index"] for r in _listed(as_token(researcher), "lc8-demo")) == [2, 3, 5]
