"""Every data-protection rule of the data model, enforced by the database even when the service is bypassed
(tests/annotation/test_services.py has the service's side, with the message the user sees)."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from annotation import services
from annotation.models import AttributeDefinition, Schema
from tests.factories import JudgmentFactory, SpanFactory, StudyFactory, TurnFactory, attribute

pytestmark = pytest.mark.django_db


def _db_refuses(match: str):
    """The database raises an IntegrityError whose message contains ``match``; the transaction is rolled back."""
    return pytest.raises(IntegrityError, match=match)


# --- one judgment per (round, coder, unit, attribute) ---------------------------------------------------------


@pytest.mark.parametrize("code", ["AUR", "U1"])
def test_database_refuses_a_second_judgment_of_the_same_unit(round_, reviewer, response, code):
    attr = attribute(code)
    unit = {"response": response} if attr.unit == "response" else {"response": None}
    JudgmentFactory(round=round_, coder=reviewer, attribute=attr, turn=response.turn, score=1, **unit)
    with _db_refuses("judgment_unique"), transaction.atomic():
        JudgmentFactory(round=round_, coder=reviewer, attribute=attr, turn=response.turn, score=0, **unit)


def test_database_refuses_a_second_gold_judgment_of_a_unit(round_, expert, admin_user, response):
    JudgmentFactory(round=round_, coder=expert, is_gold=True, response=response)
    with _db_refuses("gold_unique_response_unit"), transaction.atomic():
        JudgmentFactory(round=round_, coder=admin_user, is_gold=True, response=response)


# --- response text is immutable once judged -------------------------------------------------------------------


def test_unjudged_response_text_can_be_corrected(response):
    response.text = "A corrected text."
    response.save()
    response.refresh_from_db()
    assert response.text == "A corrected text."


def test_database_refuses_to_change_judged_response_text(round_, reviewer, response):
    services.judgment_save(round=round_, by=reviewer, attribute=attribute("AUR"), response=response, score=1)
    response.text = "Rewritten after judging."
    with _db_refuses("cannot change once the response has judgments"), transaction.atomic():
        response.save()
    response.refresh_from_db()
    assert response.text.startswith("Have you tried")


# --- schema frozen once a study using it is open --------------------------------------------------------------


def test_schema_can_change_while_no_study_using_it_is_open(db):
    StudyFactory(status="setup")
    aur = attribute("AUR")
    aur.definition = "Edited during set-up."
    aur.save()
    assert AttributeDefinition.objects.get(pk=aur.pk).definition == "Edited during set-up."


def test_database_refuses_to_change_a_frozen_schema(round_):
    aur = attribute("AUR")
    aur.scale_max = 3
    with _db_refuses("frozen, a study using it is open"), transaction.atomic():
        aur.save()
    with _db_refuses("frozen"), transaction.atomic():
        aur.subcategories.first().delete()
    with _db_refuses("frozen"), transaction.atomic():
        Schema.objects.filter(slug="cab-v1").update(name="renamed")


def test_database_refuses_to_swap_the_schema_of_an_open_study(round_):
    other = Schema.objects.create(slug="other", name="Other", definition={})
    study = round_.study
    study.schema = other
    with _db_refuses("the schema cannot change once the study is open"), transaction.atomic():
        study.save()


# --- scores inside the attribute's scale, on the attribute's unit ----------------------------------------------


def test_database_refuses_a_score_outside_the_scale(round_, reviewer, response):
    with _db_refuses("score 5 is outside the scale 0–2 of attribute AUR"), transaction.atomic():
        JudgmentFactory(round=round_, coder=reviewer, response=response, score=5)


def test_database_refuses_a_judgment_on_the_wrong_unit(round_, reviewer, response):
    with _db_refuses("attribute U1 is coded once per turn"), transaction.atomic():
        JudgmentFactory(round=round_, coder=reviewer, attribute=attribute("U1"), response=response)
    with pytest.raises(ValidationError, match="U1 is coded once per turn"):
        services.judgment_save(round=round_, by=reviewer, attribute=attribute("U1"), response=response, score=1)


def test_database_refuses_a_response_of_another_turn(round_, reviewer, response):
    elsewhere = TurnFactory()
    with _db_refuses("is not part of turn"), transaction.atomic():
        JudgmentFactory(round=round_, coder=reviewer, response=response, turn=elsewhere,
                        conversation=elsewhere.conversation)


# --- spans inside the text and of the judgment's own attribute ------------------------------------------------


def test_database_refuses_spans_outside_the_text_or_of_another_attribute(round_, reviewer, response):
    judgment = JudgmentFactory(round=round_, coder=reviewer, response=response)
    length = len(response.text)
    with _db_refuses(rf"span: \[0, {length + 1}\) is outside the response text \({length} characters\)"), \
            transaction.atomic():
        SpanFactory(judgment=judgment, start=0, end=length + 1)
    directive = attribute("TD").subcategories.get(slug="directive")
    with _db_refuses("belongs to another attribute"), transaction.atomic():
        SpanFactory(judgment=judgment, subcategory=directive)
    with _db_refuses("span_not_empty"), transaction.atomic():
        SpanFactory(judgment=judgment, start=4, end=4)
    SpanFactory(judgment=judgment, start=length - 1, end=length)
    assert judgment.spans.count() == 1
