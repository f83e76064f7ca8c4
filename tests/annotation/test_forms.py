"""The autosave endpoint (annotation.forms.JudgmentSaveForm behind ``judgment-save``): bad input is a 422 with a
specific message and writes nothing; never a 500."""

from __future__ import annotations

import html
import re

import pytest
from django.urls import reverse

from annotation.models import Judgment, Span
from annotation.selectors import response_handle
from tests.factories import (
    AssignmentFactory,
    ModelResponseFactory,
    RoundFactory,
    StudyFactory,
    StudyMemberFactory,
    TurnFactory,
)

pytestmark = pytest.mark.django_db

TEXT = "That sounds exhausting. What do you notice when the worry starts?"
SPANS_MESSAGE = "spans must be a JSON list of {start, end, subcategory} with whole-number offsets"
COUNT_MESSAGE = "AUR: instance count must be a whole number from 0 to 2147483647"


@pytest.fixture
def turn_setup(client, reviewer):
    """An open calibration round with one turn (two responses) queued for the signed-in reviewer, a second turn
    with a response of its own, and one saved judgment that bad saves must leave alone."""
    study = StudyFactory(slug="forms")
    StudyMemberFactory(study=study, user=reviewer, role="reviewer")
    round_ = RoundFactory(study=study, kind="calibration", number=1, status="open")
    turn = TurnFactory()
    gpt = ModelResponseFactory(turn=turn, model_slot="GPT", text=TEXT)
    ModelResponseFactory(turn=turn, model_slot="Claude", text=TEXT)
    elsewhere = ModelResponseFactory(turn=TurnFactory(), model_slot="GPT", text=TEXT)
    AssignmentFactory(round=round_, coder=reviewer, turn=turn, position=1)
    client.force_login(reviewer)
    url = reverse("judgment-save", args=[round_.pk, 1])
    handle = response_handle(study=study, coder_id=reviewer.pk, turn_id=turn.pk, response_id=gpt.pk)
    saved = client.post(url, {"attribute": "AUR", "response": handle, "score": "1", "instance_count": "1",
                              "spans": '[{"start": 0, "end": 4, "subcategory": "assumes"}]', "version": "0"})
    assert saved.status_code == 200, saved.content
    # The reviewer's handle for a response of a turn they are not assigned (were it on a page of theirs).
    elsewhere_handle = response_handle(study=study, coder_id=reviewer.pk, turn_id=elsewhere.turn_id,
                                       response_id=elsewhere.pk)
    return {"url": url, "gpt": gpt, "handle": handle, "elsewhere": elsewhere_handle,
            "judgment": Judgment.objects.get()}


def message_of(response) -> str:
    """The message of the save-result partial ("Not saved: …"), unescaped."""
    found = re.search(r"Not saved: (.*?)</span>", response.content.decode(), re.S)
    assert found, response.content
    return html.unescape(found.group(1))


def snapshot():
    return (list(Judgment.objects.values_list("id", "score", "instance_count", "version", "updated_at").order_by("id")),
            list(Span.objects.values_list("judgment_id", "start", "end", "subcategory__slug").order_by("id")))


def post(client, setup, **fields):
    data = {"form_id": "r-AUR", "attribute": "AUR", "response": setup["handle"], "score": "1", "version": "1"}
    return client.post(setup["url"], data | {k: str(v) for k, v in fields.items()})


@pytest.mark.parametrize(("fields", "message"), [
    ({"score": "1.5"}, "score: is not a whole number"),
    ({"score": "x"}, "score: is not a whole number"),
    ({"score": "1e3"}, "score: is not a whole number"),
    ({"instance_count": "1.5"}, "instance_count: is not a whole number"),
    ({"instance_count": "-1"}, COUNT_MESSAGE),
    ({"spans": "not json"}, SPANS_MESSAGE),
    ({"spans": '[{"start": 0, "end": Infinity, "subcategory": "assumes"}]'}, SPANS_MESSAGE),
    ({"spans": '[{"start": 0, "end": NaN, "subcategory": "assumes"}]'}, SPANS_MESSAGE),
    ({"spans": "[" * 100_000 + "]" * 100_000}, SPANS_MESSAGE),
    ({"spans": '[{"start": false, "end": true, "subcategory": "assumes"}]'}, SPANS_MESSAGE),
    ({"spans": '[{"start": 0.0, "end": 4.0, "subcategory": "assumes"}]'}, SPANS_MESSAGE),
    ({"spans": '[{"start": 0, "end": 4}]'}, SPANS_MESSAGE),
    ({"spans": '{"start": 0, "end": 4, "subcategory": "assumes"}'}, SPANS_MESSAGE),
    ({"spans": '[{"start": 0, "end": 99999999999, "subcategory": "assumes"}]'}, SPANS_MESSAGE),
    ({"spans": '[{"start": 0, "end": 66, "subcategory": "assumes"}]'},
     f"AUR: span [0, 66) is outside the response text (0–{len(TEXT)} characters)"),
    ({"spans": '[{"start": 0, "end": 4, "subcategory": "directive"}]'},
     "AUR: subcategory 'directive' is not one of this attribute's (assumes, explores)"),
    ({"attribute": "NOPE"}, "unknown attribute"),
    ({"attribute": ""}, "unknown attribute"),
    ({"attribute": "U1"}, "U1 is coded once per turn: give the turn and no model response"),
    ({"response": "abc"}, "that response is not part of this turn"),
    ({"response": "0123456789abcdef"}, "that response is not part of this turn"),
    ({"response": "x" * 65}, "that response is not part of this turn"),
    ({"response": "999999999"}, "that response is not part of this turn"),
    ({"score": "7"}, "AUR: score 7 is outside the scale 0–2"),
])
def test_bad_input_is_a_422_with_its_specific_message_and_writes_nothing(client, turn_setup, fields, message):
    before = snapshot()
    response = post(client, turn_setup, **fields)
    assert response.status_code == 422
    assert message_of(response) == message
    assert snapshot() == before


def test_a_response_of_another_turn_is_refused_and_writes_nothing(client, turn_setup):
    before = snapshot()
    response = post(client, turn_setup, response=turn_setup["elsewhere"])
    assert response.status_code == 422
    assert message_of(response) == "that response is not part of this turn"
    assert snapshot() == before


@pytest.mark.parametrize("score", [2**31, 10**20, -(2**31)])
def test_a_score_too_large_for_any_column_is_a_422_that_names_the_score(client, turn_setup, score):
    before = snapshot()
    response = post(client, turn_setup, score=score)
    assert response.status_code == 422
    message = message_of(response)
    assert "score" in message, message  # which of the fields was wrong
    assert snapshot() == before


@pytest.mark.parametrize("count", [99999999999, 2**31])
def test_an_instance_count_too_large_gets_the_same_words_as_any_other_bad_count(client, turn_setup, count):
    """forms.py: "Its range is a judgment rule (annotation.rules), reported with the same words on every path"."""
    before = snapshot()
    response = post(client, turn_setup, instance_count=count)
    assert response.status_code == 422
    assert message_of(response) == COUNT_MESSAGE
    assert snapshot() == before


def test_no_bad_save_of_any_kind_adds_or_changes_a_judgment(client, turn_setup):
    before = snapshot()
    bad = [{"score": "1.5"}, {"score": "x"}, {"score": 2**31}, {"score": 10**20}, {"instance_count": -1},
           {"instance_count": "1.5"}, {"instance_count": 99999999999}, {"instance_count": 2**31},
           {"spans": "not json"}, {"spans": '[{"start": 0, "end": Infinity, "subcategory": "assumes"}]'},
           {"spans": "[" * 100_000 + "]" * 100_000},
           {"spans": '[{"start": true, "end": 3, "subcategory": "assumes"}]'},
           {"spans": '[{"start": 0, "end": 1000, "subcategory": "assumes"}]'}, {"attribute": "NOPE"},
           {"response": turn_setup["elsewhere"]}, {"response": turn_setup["gpt"].pk}]
    statuses = [post(client, turn_setup, **fields).status_code for fields in bad]
    assert statuses == [422] * len(bad)
    assert Judgment.objects.count() == 1
    assert snapshot() == before


def test_a_good_save_after_bad_ones_still_works(client, turn_setup):
    post(client, turn_setup, score="x")
    response = post(client, turn_setup, score="2", instance_count="0", spans="[]")
    assert response.status_code == 200 and b"Saved" in response.content
    judgment = Judgment.objects.get()
    assert (judgment.score, judgment.instance_count, judgment.version, judgment.spans.count()) == (2, 0, 2, 0)


def test_forms_sharing_their_fields_keep_their_own_data_and_errors(turn_setup):
    """The autosave form's fields are shared by its instances, not copied for each (issue 34): one form's input,
    cleaning and errors never reach another's."""
    from annotation.forms import JudgmentSaveForm

    assignment = turn_setup["judgment"].round.assignments.get()
    bad = JudgmentSaveForm({"attribute": "AUR", "score": "x", "version": "-1"}, assignment=assignment)
    good = JudgmentSaveForm({"attribute": "AUR", "score": "2", "version": "3"}, assignment=assignment)
    assert good.fields["score"] is bad.fields["score"] is JudgmentSaveForm.base_fields["score"]
    assert not bad.is_valid() and set(bad.errors) == {"score", "version"}
    assert good.is_valid(), good.errors
    assert (good.cleaned_data["score"], good.cleaned_data["version"]) == (2, 3)
    assert bad.errors["score"] == ["is not a whole number"] and not good.errors
