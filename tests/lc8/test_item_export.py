"""The items export (annotation.item_export) of a session-rated study: each item is a session, keyed by its first
turn, and its row gives the session's ``session_index`` (CSV and JSON Lines alike), so a rater's comment on a
session meets the session's judgments, which the long format names by session_index with turn_index empty. Before,
the file had no session column."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.urls import reverse

from annotation import item_export, long_format, services
from annotation.models import Assignment, AttributeDefinition, Study
from tests.factories import UserFactory
from tests.lc8.test_rating_pages import lc8_study, rater_round, trajectory_sessions

pytestmark = pytest.mark.django_db


def test_each_item_of_a_session_rated_study_names_its_session(client, researcher):
    study = lc8_study(trajectories=1, sessions=3)
    rater = UserFactory(username="rater-1")
    main = rater_round(study, rater)
    sessions = trajectory_sessions(study)
    item = AttributeDefinition.objects.get(schema=study.schema, code="PHQ1")
    for session in sessions:
        services.judgment_save(round=main, by=rater, attribute=item, score=session.index, session=session,
                               conversation=session.conversation)
        note = Assignment.objects.get(round=main, coder=rater, turn__session=session)
        services.assignment_note_save(assignment=note, by=rater, comment=f"about session {session.index}", flags=[])
    client.force_login(researcher)

    def download(fmt: str) -> str:
        answer = client.get(reverse("export-items", args=[study.slug, fmt]))
        assert answer.status_code == 200
        return b"".join(answer.streaming_content).decode()

    from_csv = list(csv.DictReader(io.StringIO(download("csv"), newline="")))
    from_jsonl = [json.loads(line) for line in download("jsonl").splitlines()]
    assert list(from_csv[0]) == list(from_jsonl[0]) == [*item_export.COLUMNS, "session_index"]
    comments = {(r["conversation_id"], int(r["session_index"])): r["comment"] for r in from_csv}
    assert comments == {(r["conversation_id"], r["session_index"]): r["comment"] for r in from_jsonl}
    # Each comment meets its session's judgment in the long format.
    judged = {(r["conversation_id"], r["session_index"]): r["score"]
              for r in long_format.judgment_rows(study=Study.objects.get(pk=study.pk))}
    assert {key: comment.removeprefix("about session ") for key, comment in comments.items()} == {
        key: str(score) for key, score in judged.items()}
    assert len(comments) == len(sessions) == 3
