"""A coder's comment and flags on one item (Assignment.comment / flags): the service's rules
(annotation.services.assignment_note_save), the turn-note endpoint, the admins' workshop and the items export."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from annotation import item_export, services
from annotation.models import Assignment, Round, StudyMember
from audit.models import AuditEvent
from tests.conftest import sign_in
from tests.factories import AssignmentFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def item(round_, reviewer):
    """The reviewer's first item of the open calibration round."""
    return AssignmentFactory(round=round_, coder=reviewer, position=1)


def stored(assignment) -> tuple[str, list[str]]:
    return Assignment.objects.values_list("comment", "flags").get(pk=assignment.pk)


# --- the service -------------------------------------------------------------------------------------------------


def test_a_note_is_stored_stripped_with_its_flags_sorted_once_each_and_audited(item, reviewer):
    saved = services.assignment_note_save(assignment=item, by=reviewer, comment="  Response C stops mid-word. \n",
                                          flags=["truncated", "discuss", "truncated"])
    assert stored(item) == ("Response C stops mid-word.", ["discuss", "truncated"])
    assert (saved.comment, saved.flags) == stored(item)
    event = AuditEvent.objects.get(action="assignment.note")
    assert event.actor == reviewer and event.study_id == item.round.study_id
    assert event.data == {"position": 1, "flags": ["discuss", "truncated"], "comment_chars": 26}


def test_an_unchanged_note_writes_no_audit_event_and_clearing_one_does(item, reviewer):
    for _ in range(2):
        services.assignment_note_save(assignment=item, by=reviewer, comment="unsure of TD", flags=["unsure"])
    assert AuditEvent.objects.filter(action="assignment.note").count() == 1
    services.assignment_note_save(assignment=item, by=reviewer, comment="", flags=[])
    assert stored(item) == ("", [])
    assert AuditEvent.objects.filter(action="assignment.note").count() == 2


def test_a_note_changed_since_its_base_is_refused_with_the_newer_one_and_written_over_never(item, reviewer):
    services.assignment_note_save(assignment=item, by=reviewer, comment="Cut off", flags=["truncated"], base=("", []))
    # Another tab, still on the empty note, ticks a flag: its empty comment would erase the newer one.
    with pytest.raises(services.StaleNoteError) as caught:
        services.assignment_note_save(assignment=item, by=reviewer, comment="", flags=["unsure"], base=("", []))
    assert (caught.value.comment, caught.value.flags) == ("Cut off", ["truncated"])
    assert stored(item) == ("Cut off", ["truncated"])
    assert AuditEvent.objects.filter(action="assignment.note").count() == 1
    # On the newer note (compared as stored: stripped, flags sorted), or the very note it holds, it is no conflict.
    services.assignment_note_save(assignment=item, by=reviewer, comment="Cut off", flags=["truncated"],
                                  base=("", []))
    services.assignment_note_save(assignment=item, by=reviewer, comment="Cut off", flags=["truncated", "unsure"],
                                  base=(" Cut off\n", ["truncated", "truncated"]))
    assert stored(item) == ("Cut off", ["truncated", "unsure"])


@pytest.mark.parametrize(("comment", "flags", "field", "message"), [
    ("", ["unsure", "shrug"], "flags", "unknown flag 'shrug' (known: unsure, truncated, discuss)"),
    ("x" * 5001, [], "comment", "the comment has 5,001 characters; at most 5,000 are kept"),
])
def test_unknown_flags_and_overlong_comments_are_refused_by_field(item, reviewer, comment, flags, field, message):
    with pytest.raises(ValidationError) as refused:
        services.assignment_note_save(assignment=item, by=reviewer, comment=comment, flags=flags)
    assert refused.value.message_dict == {field: [message]}
    assert stored(item) == ("", [])
    assert not AuditEvent.objects.filter(action="assignment.note").exists()


def test_a_comment_of_exactly_the_limit_is_kept(item, reviewer):
    services.assignment_note_save(assignment=item, by=reviewer, comment="x" * 5000, flags=[])
    assert len(stored(item)[0]) == 5000


@pytest.mark.parametrize("status", [Round.Status.CLOSED, Round.Status.DRAFT])
def test_a_note_in_a_round_that_is_not_open_is_refused(item, reviewer, status):
    Round.objects.filter(pk=item.round_id).update(status=status)
    with pytest.raises(ValidationError) as refused:
        services.assignment_note_save(assignment=item, by=reviewer, comment="late", flags=["discuss"])
    assert refused.value.message_dict == {"round": [f"calibration-1 is {status}: notes on its items can no longer "
                                                    "change"]}
    assert stored(item) == ("", [])


def test_a_note_on_an_item_compared_with_gold_in_feedback_is_refused(item, reviewer):
    Assignment.objects.filter(pk=item.pk).update(feedback_locked=True)
    with pytest.raises(ValidationError) as refused:
        services.assignment_note_save(assignment=item, by=reviewer, comment="after feedback", flags=[])
    assert list(refused.value.message_dict) == ["round"]
    assert "compared with gold in your feedback" in refused.value.message_dict["round"][0]
    assert stored(item) == ("", [])


def test_another_coder_and_a_removed_member_are_refused(item, reviewer, other_reviewer):
    with pytest.raises(ValidationError) as refused:
        services.assignment_note_save(assignment=item, by=other_reviewer, comment="not mine", flags=[])
    assert list(refused.value.message_dict) == ["coder"]
    StudyMember.objects.filter(study=item.round.study, user=reviewer).delete()
    with pytest.raises(ValidationError) as refused:
        services.assignment_note_save(assignment=item, by=reviewer, comment="removed", flags=[])
    assert list(refused.value.message_dict) == ["coder"]
    assert stored(item) == ("", [])


# --- the turn-note endpoint --------------------------------------------------------------------------------------

SAVED = '<span class="state state-saved" data-state="saved">Saved</span>'


def note_url(assignment) -> str:
    return reverse("turn-note", args=[assignment.round_id, assignment.position])


def test_the_coder_saves_a_note_through_the_endpoint(client, item, reviewer):
    assert sign_in(client, "reviewer", "pw-for-tests")
    response = client.post(note_url(item), {"comment": "Looks cut off", "flags": ["truncated", "unsure"]})
    assert response.status_code == 200 and response.content.decode() == SAVED
    assert stored(item) == ("Looks cut off", ["truncated", "unsure"])


def test_a_refused_note_answers_422_with_the_reason_escaped(client, item):
    assert sign_in(client, "reviewer", "pw-for-tests")
    response = client.post(note_url(item), {"comment": "ok", "flags": ["<b>bold</b>"]})
    assert response.status_code == 422
    assert response.content.decode() == (
        '<span class="state state-refused" data-state="refused">Not saved: unknown flag '
        "&#x27;&lt;b&gt;bold&lt;/b&gt;&#x27; (known: unsure, truncated, discuss)</span>")
    Round.objects.filter(pk=item.round_id).update(status=Round.Status.CLOSED)
    closed = client.post(note_url(item), {"comment": "ok"})
    assert closed.status_code == 422 and "Not saved: calibration-1 is closed" in closed.content.decode()
    assert stored(item) == ("", [])


def test_a_note_changed_since_the_page_had_it_answers_409_with_the_newer_one(client, item, reviewer):
    assert sign_in(client, "reviewer", "pw-for-tests")
    assert client.post(note_url(item), {"comment": 'Says "stop"', "flags": ["discuss", "unsure"]}).status_code == 200
    stale = client.post(note_url(item), {"comment": "", "flags": ["truncated"]})  # no base: an empty note
    assert stale.status_code == 409
    assert stale.content.decode() == (
        '<span class="state state-stale" data-state="stale" data-comment="Says &quot;stop&quot;" '
        'data-flags="discuss unsure">Not saved: changed in another tab or device — showing the newer note</span>')
    assert stored(item) == ('Says "stop"', ["discuss", "unsure"])
    saved = client.post(note_url(item), {"comment": "", "flags": ["truncated"], "base_comment": 'Says "stop"',
                                         "base_flags": ["unsure", "discuss"]})
    assert saved.status_code == 200 and stored(item) == ("", ["truncated"])


def test_another_reviewer_an_outsider_and_a_removed_member_get_404(client, item, reviewer, other_reviewer, outsider):
    for user in (other_reviewer, outsider):
        client.force_login(user)
        assert client.post(note_url(item), {"comment": "mine?"}).status_code == 404
    # The URL names the signed-in coder's own item at that position, never someone else's.
    theirs = AssignmentFactory(round=item.round, coder=other_reviewer, turn=item.turn, position=1)
    client.force_login(other_reviewer)
    assert client.post(note_url(item), {"comment": "mine"}).status_code == 200
    assert stored(item) == ("", []) and stored(theirs) == ("mine", [])
    StudyMember.objects.filter(study=item.round.study, user=reviewer).delete()
    client.force_login(reviewer)
    assert client.post(note_url(item), {"comment": "removed"}).status_code == 404
    assert stored(item) == ("", [])


def test_the_endpoint_needs_a_post_a_session_and_the_csrf_token(item, reviewer):
    browser = Client(enforce_csrf_checks=True)
    assert browser.post(note_url(item), {"comment": "no token"}).status_code == 403
    browser.get(reverse("login"))  # sets the CSRF cookie, as any page with a form does
    token = browser.cookies["csrftoken"].value
    anonymous = browser.post(note_url(item), {"comment": "who?"}, HTTP_X_CSRFTOKEN=token)
    assert anonymous.status_code == 401  # the page opens its sign-in dialog, as for an autosave
    browser.force_login(reviewer)
    assert browser.get(note_url(item)).status_code == 405
    assert browser.post(note_url(item), {"comment": "no token"}).status_code == 403
    token = browser.cookies["csrftoken"].value  # a sign-in rotates the token
    response = browser.post(note_url(item), {"comment": "with token"}, HTTP_X_CSRFTOKEN=token)
    assert response.status_code == 200
    assert stored(item) == ("with token", [])


# --- the items export ---------------------------------------------------------------------------------------------


def test_the_items_export_has_every_assignment_with_its_note_and_neutralises_formulas(client, item, reviewer,
                                                                                        other_reviewer, researcher):
    services.assignment_note_save(assignment=item, by=reviewer, comment='=HYPERLINK("http://x","y")',
                                  flags=["unsure", "discuss"])
    AssignmentFactory(round=item.round, coder=other_reviewer, turn=item.turn, position=1, active_seconds=42)
    client.force_login(researcher)
    slug = item.round.study.slug
    exports = client.get(reverse("exports")).content.decode()
    for fmt in ("csv", "jsonl"):
        assert f'href="{reverse("export-items", args=[slug, fmt])}" download' in exports
    download = client.get(reverse("export-items", args=[slug, "csv"]))
    assert download["Content-Disposition"] == f'attachment; filename="{slug}-items.csv"'
    text = b"".join(download.streaming_content).decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0]) == list(item_export.COLUMNS)  # a study that codes no sessions: no session_index
    assert [(r["reviewer"], r["comment"], r["flags"], r["active_seconds"]) for r in rows] == [
        ("other-reviewer", "", "", "42"),
        ("reviewer", "'=HYPERLINK(\"http://x\",\"y\")", '["discuss", "unsure"]', "0"),
    ]
    assert rows[1]["round"] == "calibration-1" and rows[1]["position"] == "1"
    assert rows[1]["conversation_id"] == item.turn.conversation.external_id
    lines = b"".join(client.get(reverse("export-items", args=[slug, "jsonl"])).streaming_content).splitlines()
    noted = json.loads(lines[1])
    assert noted["comment"] == '=HYPERLINK("http://x","y")' and noted["flags"] == ["discuss", "unsure"]
    assert noted["completed_at"] is None and noted["turn_index"] == item.turn.index


def test_reviewers_cannot_download_the_items_export(client, item, reviewer):
    client.force_login(reviewer)
    assert client.get(reverse("export-items", args=[item.round.study.slug, "csv"])).status_code in (403, 404)
